//! Thresholds (`--threshold`): checked at the end of a run, of a merge and of a re-report,
//! a table of each with its measured figure, exit code 99 when one fails (k6's convention),
//! `--abort-on-fail` stopping a run early, and a malformed expression refused with the valid
//! figures named.

use crate::common::*;
use std::time::{Duration, Instant};

#[test]
fn thresholds_that_hold_pass_and_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let out = run_ok(&[
        "run",
        "-n",
        "500",
        "-c",
        "2",
        "-o",
        rec.to_str().unwrap(),
        "--threshold",
        "p99<10s",
        "--threshold",
        "wait.p90<10s",
        "--threshold",
        "server.handler.p99<10s",
        "--threshold",
        "errors<1%",
        "--threshold",
        "rps>1",
    ]);
    let text = unwrapped(&stdout(&out));
    assert!(text.contains("Threshold"), "{text}");
    assert_eq!(text.matches(" pass").count(), 5, "{text}");
    // The record keeps the checks.
    let r: serde_json::Value = read_json(&rec);
    let checks = r["summary"]["thresholds"].as_array().unwrap();
    assert_eq!(checks.len(), 5);
    assert!(checks.iter().all(|c| c["pass"] == true));
    assert_eq!(checks[0]["threshold"], "p99<10s");
    assert!(checks[0]["measured"].as_f64().unwrap() > 0.0);
    // Re-checked later against the saved record: a bar it does not meet exits 99.
    let out = run(&["report", rec.to_str().unwrap(), "--threshold", "p50<1ns"]);
    assert_eq!(out.status.code(), Some(99), "{}", stdout(&out));
    assert!(stdout(&out).contains("FAIL"));
}

#[test]
fn a_failed_threshold_exits_99_with_the_table() {
    let out = run(&[
        "run",
        "-n",
        "200",
        "-c",
        "2",
        "--threshold",
        "p50<1ns",
        "--threshold",
        "errors<=0",
        "--threshold",
        "server.nope.p99<1ms",
    ]);
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
    let text = unwrapped(&stdout(&out));
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("FAIL") || l.contains(" pass"))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(rows[0].starts_with("  p50<1ns") && rows[0].contains("FAIL"));
    assert!(rows[1].contains("pass"));
    // A metric the server does not send: failed, saying which it does send.
    assert!(
        rows[2].contains("FAIL") && rows[2].contains("parse"),
        "{}",
        rows[2]
    );
    assert!(
        text.contains("2 of 3 thresholds failed (exit code 99)"),
        "{text}"
    );
}

#[test]
fn a_threshold_over_no_data_is_neither_pass_nor_fail() {
    // A plain-HTTP run has no TLS handshake: `tls.p99` has zero samples.
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let out = run(&[
        "run",
        "-n",
        "100",
        "-c",
        "2",
        "-o",
        rec.to_str().unwrap(),
        "--threshold",
        "tls.p99<1ms",
        "--threshold",
        "p99<10s",
    ]);
    // Nothing failed: exit 0, and the banner says what could not be checked.
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = unwrapped(&stdout(&out));
    let tls = text
        .lines()
        .find(|l| l.starts_with("  tls.p99<1ms"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        tls.contains("no data") && !tls.contains("FAIL") && !tls.contains("pass"),
        "{tls}"
    );
    let banner = "1 of 2 thresholds passed; 1 had no data (neither passed nor failed";
    assert!(text.contains(banner), "{text}");
    let r: serde_json::Value = read_json(&rec);
    let t = &r["summary"]["thresholds"][0];
    assert_eq!(
        (t["no_data"].as_bool(), t["pass"].as_bool()),
        (Some(true), Some(false))
    );
    let v = &r["summary"]["threshold_verdict"];
    assert_eq!(v["state"], "no_data", "{v}");
    assert_eq!(v["exit_code"], 0, "{v}");
    assert!(text.contains(v["banner"].as_str().unwrap()), "{v}");
    // With a failure beside it: the verdict is fail, and the JSON, the banner and the exit
    // code say the same.
    let out = run(&[
        "report",
        rec.to_str().unwrap(),
        "--json",
        "--threshold",
        "tls.p99<1ms",
        "--threshold",
        "p50<1ns",
    ]);
    assert_eq!(out.status.code(), Some(99));
    let v = &summary(&out)["threshold_verdict"];
    assert_eq!(
        (v["state"].as_str(), v["exit_code"].as_i64()),
        (Some("fail"), Some(99)),
        "{v}"
    );
    assert_eq!(
        (v["failed"].as_u64(), v["no_data"].as_u64()),
        (Some(1), Some(1))
    );
    let out = run(&[
        "report",
        rec.to_str().unwrap(),
        "--threshold",
        "tls.p99<1ms",
        "--threshold",
        "p50<1ns",
    ]);
    assert!(
        unwrapped(&stdout(&out)).contains(v["banner"].as_str().unwrap()),
        "{}",
        stdout(&out)
    );
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_abort_on_fail_stops_the_run_when_a_threshold_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let started = Instant::now();
    let out = run(&[
        "run",
        "-d",
        "20s",
        "-c",
        "2",
        "--interval",
        "200ms",
        "--threshold",
        "p50<1ns",
        "--abort-on-fail",
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(99));
    let r: serde_json::Value = read_json(&rec);
    let reason = r["stop_reason"].as_str().unwrap();
    assert!(reason.starts_with("threshold lost: p50<1ns"), "{reason}");
    assert!(r["summary"]["requests"]["total"].as_u64().unwrap() > 0);
    // Without a threshold, --abort-on-fail has nothing to watch.
    let out = run(&["run", "-n", "10", "--abort-on-fail"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--abort-on-fail"));
}

#[test]
fn thresholds_apply_to_merged_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = embedded(reqlife::server::ServerTls::None);
    let mut parts = Vec::new();
    for i in 1..=2 {
        let p = dir.path().join(format!("s{i}.json"));
        run_ok(&[
            "run",
            "-n",
            "200",
            "-c",
            "2",
            "-t",
            "1",
            "--segment",
            &format!("{i}/2"),
            "--quiet",
            "-o",
            p.to_str().unwrap(),
            &s.url("/"),
        ]);
        parts.push(p.to_str().unwrap().to_string());
    }
    let ok = run(&[
        "merge",
        &parts[0],
        &parts[1],
        "--threshold",
        "wait.count>=200",
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stdout(&ok));
    let bad = run(&[
        "merge",
        &parts[0],
        &parts[1],
        "--threshold",
        "wait.count>200",
    ]);
    assert_eq!(bad.status.code(), Some(99), "{}", stdout(&bad));
}

#[test]
fn a_malformed_threshold_names_the_valid_figures() {
    // (expression, parts of the error)
    let rows = [
        ("p99x<5ms", vec!["unknown figure 'p99x'", "pNN", "errors"]),
        ("p99<5", vec!["needs a unit", "ns, us, ms or s"]),
        ("p99 5ms", vec!["no comparison"]),
        (
            "nope.p99<1ms",
            vec!["unknown scope 'nope'", "server.METRIC"],
        ),
    ];
    for (expr, parts) in rows {
        let out = run(&["run", "-n", "1", "--threshold", expr]);
        assert_eq!(out.status.code(), Some(2), "{expr}");
        let err = stderr(&out);
        for p in parts {
            assert!(err.contains(p), "{expr}: {err}");
        }
    }
}
