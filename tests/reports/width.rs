//! The default text report fits 80 columns, as wrk's does (issue 37): every line of real
//! reports, with the life-of-a-request table (the embedded target's Server-Timing), an open
//! loop's extra rows, thresholds, a warning and an error's first words, is at most 80
//! characters; `--detail` is where the wide tables are.

use crate::common::*;
use reqlife::server::ServerTls;

/// The lines of `text` over 80 characters (counted as characters, not bytes).
fn too_wide(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.chars().count() > 80)
        .map(|l| format!("{} chars: {l}", l.chars().count()))
        .collect()
}

#[test]
fn every_line_of_the_default_report_fits_80_columns() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("open.json");
    // An open loop (queue, uncorrected and schedule-lag rows), Server-Timing (the life of a
    // request), a threshold that fails (its table and banner; exit 99).
    let open = Run::new()
        .args(["-R", "400", "-d", "1s", "-c", "4", "-t", "1"])
        .args(["--threshold", "p99<1us", "-o", rec.to_str().unwrap()])
        .url(s.url("/delay/1"))
        .exits(99);
    // Every response a 503: a warning longer than a line.
    let errors = Run::new()
        .n(20)
        .c(2)
        .t(1)
        .url(s.url("/status/503"))
        .output();
    // Every connection refused: the errors' list with the first error in words.
    let refused = Run::new()
        .n(5)
        .c(1)
        .t(1)
        .url(format!("http://{}/", refused_addr()))
        .output();
    let reports = [
        ("open loop", stdout(&open)),
        ("503s", stdout(&errors)),
        ("refused", stdout(&refused)),
    ];
    let text = &reports[0].1;
    for shows in [
        "Life of a request",
        "server total",
        "network+client",
        "schedule_lag",
        "Pacer",
        "Threshold",
    ] {
        assert!(text.contains(shows), "no {shows:?} in\n{text}");
    }
    assert!(
        reports[1].1.contains("WARNING: every response was 503"),
        "{}",
        reports[1].1
    );
    assert!(reports[2].1.contains("first:"), "{}", reports[2].1);
    for (what, text) in &reports {
        let wide = too_wide(text);
        assert!(wide.is_empty(), "{what}: {wide:#?}\n{text}");
    }
    // The wide tables are --detail's: the same record, every figure (exit 99 again: its
    // threshold failed).
    let detail = run(&["report", rec.to_str().unwrap(), "--detail"]);
    assert_eq!(detail.status.code(), Some(99), "{}", stderr(&detail));
    let detail = stdout(&detail);
    assert!(detail.contains("p99.99"), "{detail}");
    assert!(!too_wide(&detail).is_empty(), "{detail}");
}
