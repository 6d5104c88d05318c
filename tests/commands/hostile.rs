//! reqlife against the fault target (`reqlife serve --faults`): for every way a server
//! misbehaves, the run counts a specific error kind, ends within its duration plus one
//! `--timeout`, keeps its memory bounded, and still writes its report and record.

use crate::common::*;
use reqlife::server::faults;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest a faulty run of `-d 1500ms --timeout 500ms` may take, start-up included.
const BOUND: Duration = Duration::from_secs(6);

/// What a run against a fault gave: its summary, its wall time and its largest resident set.
struct Outcome {
    summary: Value,
    took: Duration,
    max_rss_kb: u64,
    code: Option<i32>,
    record_written: bool,
}

fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn against(url: &str, extra: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let started = Instant::now();
    let mut child = reqlife()
        .args([
            "run",
            "-d",
            "1500ms",
            "-c",
            "2",
            "-t",
            "1",
            "--timeout",
            "500ms",
            "--json",
        ])
        .args(["-o", rec.to_str().unwrap()])
        .args(extra)
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut max_rss_kb = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{url}: the run hangs"
        );
        if let Some(kb) = rss_kb(pid) {
            max_rss_kb = max_rss_kb.max(kb);
        }
        // The sampling period of the peak RSS, not a wait for anything.
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = started.elapsed();
    let out = child.wait_with_output().unwrap();
    assert!(
        !stderr(&out).contains("panicked"),
        "{url}: {}",
        stderr(&out)
    );
    Outcome {
        summary: summary(&out),
        took,
        max_rss_kb,
        code: out.status.code(),
        record_written: rec.exists(),
    }
}

fn n(v: &Value, path: &str) -> u64 {
    path.split('.').fold(v, |v, k| &v[k]).as_u64().unwrap_or(0)
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_every_http1_fault_is_counted_by_kind_and_bounded() {
    let f = faults::spawn("127.0.0.1:0".parse().unwrap()).unwrap();
    // (fault, the error kind every request gets)
    let rows = [
        ("close-before", "closed"),
        ("close-mid", "closed"),
        ("garbage", "protocol"),
        ("huge-headers", "protocol"),
        ("short-length", "protocol"),
        ("long-length", "timeout"),
        ("endless-chunked", "timeout"),
        ("drip", "timeout"),
        ("stall", "timeout"),
        ("reset", "read"),
    ];
    for (fault, kind) in rows {
        let o = against(&f.url(fault), &[]);
        let s = &o.summary;
        let errors = n(s, "requests.errors");
        assert!(errors > 0, "{fault}: {s}");
        assert_eq!(
            n(s, &format!("errors.{kind}")),
            errors,
            "{fault}: all {kind}: {}",
            s["errors"]
        );
        assert_eq!(n(s, "requests.ok"), 0, "{fault}");
        assert!(o.took < BOUND, "{fault} took {:?}", o.took);
        // No request succeeded: the run failed, and said so, with its report and record.
        assert_eq!(o.code, Some(1), "{fault}");
        assert!(o.record_written, "{fault}");
        // Bodies and heads are never kept whole: the endless body and the 1 MiB head cost
        // no more memory than a quiet run (which takes about 15 MB here).
        assert!(o.max_rss_kb < 64 * 1024, "{fault}: {} kB", o.max_rss_kb);
    }
    // A path that is not a fault is answered: a run can mix them.
    let o = against(&f.url("none"), &[]);
    assert!(n(&o.summary, "requests.ok") > 100, "{}", o.summary);
    assert_eq!(n(&o.summary, "requests.errors"), 0);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_every_http2_fault_is_counted_and_bounded() {
    let f = faults::spawn("127.0.0.1:0".parse().unwrap()).unwrap();
    let h2 = ["--http2", "--streams", "4"];
    // GOAWAY(INTERNAL_ERROR) after 5 streams: those answered, the ones in flight closed.
    let o = against(&f.h2_url("goaway").unwrap(), &h2);
    let s = &o.summary;
    assert!(n(s, "requests.ok") >= 5, "{s}");
    assert!(n(s, "errors.closed") > 0, "{}", s["errors"]);
    assert!(o.took < BOUND);
    // Every stream reset: kind reset, counted by code.
    let o = against(&f.h2_url("rst").unwrap(), &h2);
    let s = &o.summary;
    assert_eq!(
        n(s, "errors.reset"),
        n(s, "requests.errors"),
        "{}",
        s["errors"]
    );
    assert!(n(s, "resets.INTERNAL_ERROR") > 0, "{}", s["resets"]);
    assert!(o.took < BOUND);
    // 1000 SETTINGS frames on each connection: acknowledged, and every request answered.
    let o = against(&f.h2_url("settings-flood").unwrap(), &h2);
    let s = &o.summary;
    assert!(n(s, "requests.ok") > 100, "{s}");
    assert_eq!(n(s, "requests.errors"), 0, "{}", s["errors"]);
    assert!(o.took < BOUND);
    // A window that never opens: a request body can never be sent.
    let o = against(
        &f.h2_url("no-window").unwrap(),
        &["--http2", "-m", "POST", "--body", "hello"],
    );
    let s = &o.summary;
    assert!(n(s, "errors.timeout") > 0, "{}", s["errors"]);
    assert_eq!(n(s, "requests.ok"), 0);
    assert!(o.took < BOUND, "{:?}", o.took);
}

#[test]
fn serve_faults_prints_where_each_fault_is() {
    let mut child = reqlife()
        .args(["serve", "--faults", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    for _ in 0..7 {
        std::io::BufRead::read_line(&mut reader, &mut text).unwrap();
    }
    for name in faults::HTTP1_FAULTS.iter().chain(faults::H2_FAULTS.iter()) {
        assert!(text.contains(name), "{name}: {text}");
    }
    send_signal(&child, libc::SIGTERM);
    assert!(child.wait().unwrap().success());
    let out = Command::new(env!("CARGO_BIN_EXE_reqlife"))
        .args(["serve", "--faults", "--tls"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
