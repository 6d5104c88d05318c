//! `reqlife stats`: exact summaries of raw numbers, equal to R's `summary()` and default
//! `quantile()` (type 7). The expected values were computed independently, with
//! numpy.percentile (whose default, "linear", is R's type 7), on `tests/data/lognorm.txt`
//! (1001 log-normal values), and with R 4.2.2 itself for the other fixtures: each figure as R
//! prints it (`format(x, digits = 7)`, R's `print()` default) of `scan(FILE)` (with
//! `file(FILE, encoding = "UTF-8-BOM")` for `bom_cr.txt`), `quantile(x)`, `mean(x)`, `sd(x)`,
//! NA's left out as `summary()` does.

use crate::common::*;
use std::io::Write;
use std::process::Stdio;

/// The numbers on the line after the line that starts with `head`.
fn row_after(text: &str, head: &str) -> Vec<f64> {
    let mut lines = text.lines();
    lines
        .find(|l| l.trim_start().starts_with(head))
        .expect(head);
    lines
        .next()
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[test]
fn summary_and_quantiles_equal_r_type_7() {
    let out = run_ok(&["stats", "tests/data/lognorm.txt"]);
    let text = stdout(&out);
    // Min, 1st Qu., Median, Mean, 3rd Qu., Max (the count follows in the same row)
    let s = row_after(&text, "Min.");
    let want = [0.796, 9.87, 19.326, 32.571_848_151_848_15, 36.916, 672.661];
    for (got, want) in s.iter().zip(want) {
        assert!((got - want).abs() <= 1e-5 * want, "summary {s:?}");
    }
    assert!(text.contains("(1001 values)"));
    // 50, 90, 99, 99.9, 99.99 %
    let q = row_after(&text, "50%");
    let want = [19.326, 72.359, 216.906, 382.708, 643.6657];
    for (got, want) in q.iter().zip(want) {
        assert!((got - want).abs() <= 1e-5 * want, "quantiles {q:?}");
    }
    let bucket = text
        .lines()
        .find(|l| l.trim_start().starts_with("[16, 32)"))
        .unwrap();
    assert_eq!(bucket.split_whitespace().nth(2), Some("271"), "{text}");
}

/// The words on the line after the line that starts with `head`.
fn words_after<'a>(text: &'a str, head: &str) -> Vec<&'a str> {
    let mut lines = text.lines();
    lines
        .find(|l| l.trim_start().starts_with(head))
        .expect(head);
    lines.next().unwrap().split_whitespace().collect()
}

/// Summary row, quantile row and sd of `reqlife stats FILE`, as printed.
fn printed(file: &str) -> (String, Vec<String>, Vec<String>, String) {
    let out = run_ok(&["stats", file]);
    let text = stdout(&out);
    let own = |v: Vec<&str>| v.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let summary = own(words_after(&text, "Min."));
    let quantiles = own(words_after(&text, "50%"));
    let sd = words_after(&text, "sd")[0].to_string();
    (text, summary, quantiles, sd)
}

#[test]
fn figures_print_as_r_prints_them() {
    // (file, Min. … Max., the count part, 50% … 99.99%, sd): R 4.2.2's format(x, digits = 7)
    #[allow(clippy::type_complexity)]
    let rows: [(&str, [&str; 6], &str, [&str; 5], &str); 4] = [
        (
            // tiny values: significant digits, scientific when narrower (never 0.000000001235)
            "tests/data/tiny.txt",
            [
                "3.3e-15",
                "1.985e-12",
                "4.186e-10",
                "5.077956e-10",
                "9.907407e-10",
                "1.234567e-09",
            ],
            "(8 values)",
            [
                "4.186e-10",
                "1.07037e-09",
                "1.218147e-09",
                "1.232925e-09",
                "1.234403e-09",
            ],
            "5.403868e-10",
        ),
        (
            // a byte order mark, lines ended by lone CRs and one CRLF, a blank line, NA and NaN
            "tests/data/bom_cr.txt",
            ["0.125", "9.875", "33", "170.6964", "71", "1000"],
            "(7 values, 2 NA's)",
            ["33", "460", "946", "994.6", "999.46"],
            "367.2195",
        ),
        (
            // Inf and -Inf: R's mean is NaN, its quantiles Inf past the last finite value
            "tests/data/inf.txt",
            ["-Inf", "1.25", "2.5", "NaN", "3.75", "Inf"],
            "(6 values)",
            ["2.5", "Inf", "Inf", "Inf", "Inf"],
            "NaN",
        ),
        (
            "tests/data/lognorm.txt",
            ["0.796", "9.87", "19.326", "32.57185", "36.916", "672.661"],
            "(1001 values)",
            ["19.326", "72.359", "216.906", "382.708", "643.6657"],
            "44.58465",
        ),
    ];
    for (file, summary, count, quantiles, sd) in rows {
        let (text, s, q, d) = printed(file);
        assert_eq!(&s[..6], summary, "{file}:\n{text}");
        assert_eq!(s[6..].join(" "), count, "{file}:\n{text}");
        assert_eq!(q, quantiles, "{file}:\n{text}");
        assert_eq!(d, sd, "{file}:\n{text}");
    }
}

#[test]
fn json_has_r_full_precision_values() {
    // R 4.2.2, sprintf("%.17g") of quantile(x, c(0, .25, .5, .75, 1)), mean(x), sd(x) and
    // quantile(x, c(.5, .9, .99, .999, .9999)) of tests/data/bom_cr.txt (NA's left out).
    let out = run_ok(&["stats", "tests/data/bom_cr.txt", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let want = [
        ("min", 0.125),
        ("q1", 9.875),
        ("median", 33.0),
        ("mean", 170.69642857142858),
        ("q3", 71.0),
        ("max", 1000.0),
        ("sd", 367.21949227397005),
    ];
    for (k, v) in want {
        let got = j[k].as_f64().unwrap();
        assert!((got - v).abs() <= 1e-12 * v, "{k}: {got} vs {v}");
    }
    for (k, v) in [
        ("50", 33.0),
        ("90", 460.000_000_000_000_3),
        ("99", 945.999_999_999_999_5),
        ("99.9", 994.5999999999998),
        ("99.99", 999.4599999999997),
    ] {
        let got = j["quantiles"][k].as_f64().unwrap();
        assert!((got - v).abs() <= 1e-12 * v, "{k}%: {got} vs {v}");
    }
    assert_eq!(j["count"], 7);
    assert_eq!(j["na"], 2);
    // Non-finite figures as R writes them; sd of one value is R's NA (null).
    let out = run_ok(&["stats", "tests/data/inf.txt", "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&j["min"], &j["mean"], &j["max"]),
        (&"-Inf".into(), &"NaN".into(), &"Inf".into())
    );
    assert_eq!(j["log2_histogram"]["infinite"], 1);
    assert_eq!(j["log2_histogram"]["nonpositive"], 1);
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one.txt");
    std::fs::write(&one, "5\n").unwrap();
    let out = run_ok(&["stats", one.to_str().unwrap(), "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["sd"], serde_json::Value::Null);
    assert_eq!(j["median"], 5.0);
}

#[test]
fn a_column_from_standard_input() {
    let mut child = reqlife()
        .args(["stats", "-", "--column", "2", "--skip-invalid"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"name,ms\na,2\nb,4\nc,x\nd,4\ne,5\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let s = row_after(&String::from_utf8_lossy(&out.stdout), "Min.");
    // 2, 4, 4, 5: Min 2, Q1 3.5, Median 4, Mean 3.75, Q3 4.25, Max 5
    assert_eq!(&s[..6], &[2.0, 3.5, 4.0, 3.75, 4.25, 5.0]);
}

#[test]
fn bad_input_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.txt");
    std::fs::write(&p, "1\n2\nthree\n4\n").unwrap();
    let f = p.to_str().unwrap();
    // (arguments, message part)
    let empty = dir.path().join("empty.txt");
    std::fs::write(&empty, "\n\n").unwrap();
    let rows: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["stats", f],
            "line 3: 'three' is not a number (use --skip-invalid",
        ),
        (
            vec!["stats", f, "--column", "2"],
            "--column 2: line 1 has 1 field (separated by spaces): give 1 to 1",
        ),
        (vec!["stats", f, "--column", "0"], "--column counts from 1"),
        (vec!["stats", empty.to_str().unwrap()], "no values in"),
        (
            vec!["stats", "/no/such/file"],
            "cannot read '/no/such/file'",
        ),
    ];
    for (args, want) in rows {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
    let out = run(&["stats", f, "--skip-invalid"]);
    assert!(out.status.success());
    assert!(stdout(&out).contains("(3 values)"));
    assert!(
        stderr(&out)
            .contains("skipped 1 line that is not a number (--skip-invalid; the first: line 3)"),
        "{}",
        stderr(&out)
    );
    // Only NA's: nothing to summarise.
    let na = dir.path().join("na.txt");
    std::fs::write(&na, "NA\nNaN\n").unwrap();
    let out = run(&["stats", na.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("(only 2 NA's)"), "{}", stderr(&out));
}

/// `reqlife stats ARGS` with `input` on standard input.
fn with_stdin(args: &[&str], input: &[u8]) -> std::process::Output {
    run_with_input(args, input)
}

#[test]
fn a_csv_keeps_its_empty_fields_and_its_columns_have_names() {
    // reqlife's own request log: most phases are empty fields (no TLS, no HTTP/2 handshake).
    // Before, the default delimiter merged the commas, so `--column 10` read the status
    // column (200 200 200 ...) as total_ns, and `--column 4` of `1,,,3` had no column 4.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("req.csv");
    run_ok(&[
        "run",
        "-n",
        "300",
        "-c",
        "2",
        "--quiet",
        "--log-requests",
        log.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(&log).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "total_ns").unwrap();
    // The column as the file has it, read apart: no field of this log is quoted.
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // Empty fields before total_ns: what a run of commas merged into one lost.
    assert!(
        rows.iter().all(|r| r[..at].contains(&"")),
        "no empty field before total_ns: {:?}",
        rows[0]
    );
    let mut total: Vec<f64> = rows.iter().map(|r| r[at].parse().unwrap()).collect();
    total.sort_by(f64::total_cmp);
    assert_eq!(total.len(), 300);
    let number = (at + 1).to_string();
    for column in [number.as_str(), "total_ns", "TOTAL_NS"] {
        let out = run_ok(&["stats", log.to_str().unwrap(), "--column", column, "--json"]);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["count"], 300, "--column {column}: {j}");
        assert_eq!(j["min"].as_f64(), Some(total[0]), "--column {column}");
        assert_eq!(j["max"].as_f64(), Some(total[299]), "--column {column}");
        assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    }
    // Empty fields count: the 4th field of 1,,,3 is 3; an empty field is no number.
    let out = with_stdin(&["stats", "-", "--column", "4", "--json"], b"1,,,3\n");
    assert!(out.status.success(), "{}", stderr(&out));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (j["count"].as_u64(), j["max"].as_f64()),
        (Some(1), Some(3.0))
    );
    // Quotes as CSV writes them (a request's name with a comma) and a tab-separated file.
    let out = with_stdin(
        &["stats", "-", "--column", "ms", "--json"],
        b"name,ms\n\"GET /a,b\",2\n\"say \"\"hi\"\"\",4\n",
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (j["count"].as_u64(), j["mean"].as_f64()),
        (Some(2), Some(3.0)),
        "{j}"
    );
    let out = with_stdin(
        &["stats", "-", "--column", "3", "--json"],
        b"a\t\t5\nb\t\t7\n",
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mean"].as_f64(), Some(6.0), "{j}");
}

#[test]
fn a_row_of_another_width_or_an_unknown_column_is_named() {
    // (input, arguments after `stats -`, the message)
    let rows: [(&[u8], &[&str], &str); 6] = [
        (
            b"a,b,c\n1,2,3\n4,5\n",
            &["--column", "2"],
            "line 3 has 2 fields where line 1 has 3 (comma-separated): every row needs the same number",
        ),
        // --skip-invalid skips what is not a number, never a row cut short
        (
            b"1,2,3\n4,5,6,7\n",
            &["--column", "1", "--skip-invalid"],
            "line 2 has 4 fields where line 1 has 3",
        ),
        (
            b"due_ns,total_ns\n1,2\n",
            &["--column", "totl_ns"],
            "--column totl_ns: no such column; the header (line 1) has due_ns, total_ns",
        ),
        (
            b"1,2\n3,4\n",
            &["--column", "total_ns"],
            "--column total_ns: the file has no header line (line 1 has numbers): give the column's number, 1 to 2",
        ),
        (b"1,2\n", &["--column", "3"], "--column 3: line 1 has 2 fields (comma-separated): give 1 to 2"),
        // one number a line asked of a file with several fields: the flag that picks one
        (
            b"1,2\n",
            &[],
            "line 1: '1,2' is not a number; it has 2 fields (comma-separated): choose one with --column N or --column NAME",
        ),
    ];
    for (input, args, want) in rows {
        let mut all = vec!["stats", "-"];
        all.extend_from_slice(args);
        let out = with_stdin(&all, input);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // A header of one column, a comment line and a quote that never closes.
    let out = with_stdin(&["stats", "-", "--json"], b"latency_ms\n# a note\n1\n3\n");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["mean"].as_f64(), Some(2.0), "{}", stderr(&out));
    let out = with_stdin(&["stats", "-", "--column", "1"], b"\"1,2\n3\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("line 1: a quote opened on this line is never closed"));
}

#[test]
fn detail_prints_every_phase_and_server_metric() {
    let out = run_ok(&["run", "-n", "500", "-c", "2", "-t", "1", "--detail"]);
    let text = stdout(&out);
    for part in [
        "wait (microseconds; histogram in nanoseconds)",
        "server handler (microseconds",
        "1st Qu.",
        "99.99%",
        "K, ",
    ] {
        assert!(text.contains(part), "no {part:?} in\n{text}");
    }
}
