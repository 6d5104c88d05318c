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
        (vec!["stats", f, "--column", "2"], "line 1: has no column 2"),
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
