//! `reqlife stats`: exact summaries of raw numbers, equal to R's `summary()` and default
//! `quantile()` (type 7). The expected values were computed independently, with
//! numpy.percentile (whose default, "linear", is R's type 7), on `tests/data/lognorm.txt`
//! (1001 log-normal values).

mod common;

use common::*;
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
