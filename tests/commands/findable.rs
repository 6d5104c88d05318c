//! Every slow request findable, end to end: the per-request log (`--log-requests`) has one row
//! per request of the record, read by Python's `csv`, and its phase columns add up to the
//! record's; memory stays flat with it; `--log-sample N` keeps one row in N; a disk that fills
//! during the run cuts the log where it says, and the run goes on; and every bad input of the
//! trace context and the log gets one line and exit 2 before the run.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// Runs `reqlife ARGS` under Python, which then reads the CSV log `log` (when given) with its
/// `csv` module: (the run's peak RSS in KiB, the log's rows, per column: the sum and count of
/// its non-empty cells).
fn run_and_read(args: &[&str], log: Option<&Path>) -> serde_json::Value {
    let script = r#"
import csv, json, resource, subprocess, sys
args, log = json.loads(sys.argv[1]), sys.argv[2]
done = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if done.returncode != 0:
    sys.exit(done.stderr.decode())
out = {"rss_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}
if log:
    with open(log, newline="") as f:
        rows = list(csv.DictReader(f))
    out["rows"] = len(rows)
    out["columns"] = {
        k: {"sum": sum(int(r[k]) for r in rows if r[k]), "count": sum(1 for r in rows if r[k])}
        for k in rows[0] if k.endswith("_ns")
    }
print(json.dumps(out))
"#;
    let mut argv = vec![env!("CARGO_BIN_EXE_reqlife").to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let out = Command::new("python3")
        .args(["-c", script, &serde_json::to_string(&argv).unwrap()])
        .arg(log.map_or(String::new(), |l| l.display().to_string()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_request_log_has_a_row_per_request_and_its_phases_add_up() {
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("log.csv"), dir.path().join("run.json"));
    let load = ["run", "-R", "2000", "-d", "3s", "-c", "8", "-q"];
    let logged = run_and_read(
        &[
            &load[..],
            &["--trace-context", "--log-requests", log.to_str().unwrap()],
            &["-o", rec.to_str().unwrap()],
        ]
        .concat(),
        Some(&log),
    );
    let plain = run_and_read(&load, None);
    let r = read_json(&rec);
    let requests = count(&r, "summary.requests.total");
    assert_eq!(logged["rows"].as_u64().unwrap(), requests);
    assert_eq!(count(&r, "request_log.rows"), requests);
    assert_eq!(count(&r, "request_log.dropped"), 0);
    // Each phase: as many cells as the record counts, their sum its mean × count (the
    // histogram's mean is within 0.1% of the exact one).
    let latency = &r["summary"]["latency"];
    let mut checked = 0;
    for (column, cells) in logged["columns"].as_object().unwrap() {
        let phase = column.strip_suffix("_ns").unwrap();
        if phase == "due" || phase == "start" {
            continue;
        }
        let stats = match phase {
            "total" | "uncorrected" | "schedule_lag" => &latency[phase],
            _ => &latency["phases"][phase],
        };
        let n = cells["count"].as_u64().unwrap();
        if stats["count"].as_u64().unwrap_or(0) == 0 {
            assert_eq!(n, 0, "{phase}: logged, not in the record");
            continue;
        }
        // An open loop opens its connections before the schedule starts: their connect is in
        // the record and in no request's row.
        if phase == "connect" {
            assert_eq!(n, 0, "connect: no request of an open loop opened one");
            continue;
        }
        assert_eq!(n, stats["count"].as_u64().unwrap(), "{phase}: cells");
        let sum_us = cells["sum"].as_f64().unwrap() / 1e3;
        let want = stats["mean_us"].as_f64().unwrap() * n as f64;
        assert!(
            (sum_us - want).abs() <= want * 0.002 + n as f64 * 0.01,
            "{phase}: the log sums to {sum_us} us, the record to {want}"
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} phases checked");
    let (with, without) = (
        logged["rss_kib"].as_f64().unwrap(),
        plain["rss_kib"].as_f64().unwrap(),
    );
    eprintln!("{requests} rows; peak RSS {with} KiB with the log, {without} KiB without");
    assert!(
        with <= without + 16_384.0,
        "the log held rows in memory: {with} vs {without} KiB"
    );
}

#[test]
fn a_sampled_log_keeps_one_row_in_n() {
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("log.csv"), dir.path().join("run.json"));
    let out = run_and_read(
        &[
            "run",
            "-n",
            "5000",
            "-c",
            "4",
            "-t",
            "2",
            "-q",
            "--log-sample",
            "10",
            "--log-requests",
            log.to_str().unwrap(),
            "-o",
            rec.to_str().unwrap(),
        ],
        Some(&log),
    );
    let rows = out["rows"].as_u64().unwrap();
    // Each of the 2 threads logs its 10th, 20th, … request.
    // (and its first: a thread's share may be one more or less than half)
    assert!((498..=502).contains(&rows), "{rows} rows");
    let r = read_json(&rec);
    assert_eq!(count(&r, "request_log.rows"), rows);
    assert_eq!(count(&r, "request_log.every"), 10);
}

#[test]
fn a_disk_that_fills_cuts_the_log_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&mount)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        missing("a small tmpfs (root)", "run the test as root");
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&mount);
    let log = mount.join("log.csv");
    let rec = dir.path().join("run.json");
    let out = run(&[
        "run",
        "-R",
        "2000",
        "-d",
        "3s",
        "-q",
        "--log-requests",
        log.to_str().unwrap(),
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = read_json(&rec);
    let cut = r["request_log"]["cut"]
        .as_str()
        .expect("the record says the log was cut");
    assert!(cut.contains("No space left on device"), "{cut}");
    let text = std::fs::read_to_string(&log).unwrap();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("# reqlife: the log was cut after"),
        "{last}"
    );
    // The rows before the cut are whole, and as many as the record says.
    let rows = text.lines().count() as u64 - 2;
    assert_eq!(rows, count(&r, "request_log.rows"));
    assert!(count(&r, "request_log.dropped") > 0);
    assert_eq!(
        count(&r, "request_log.rows") + count(&r, "request_log.dropped"),
        count(&r, "summary.requests.total"),
        "every request logged or counted as dropped"
    );
    eprintln!("{cut}");
}

#[test]
fn bad_trace_and_log_input_gets_one_line_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let unwritable = dir.path().join("no/such/dir/log.csv");
    let cases: [(&[&str], &str); 8] = [
        (
            &["--trace-context", "--tracestate", "Bad Key=1"],
            "tracestate member",
        ),
        (
            &["--trace-context", "--tracestate", ""],
            "tracestate is empty",
        ),
        (
            &["--trace-context", "--trace-link", "http://tempo/trace"],
            "has no {trace_id}",
        ),
        (
            &["--trace-link", "http://tempo/{trace_id}"],
            "give --trace-context too",
        ),
        (&["--trace-context", "--trace-sample", "1.5"], "give 0 to 1"),
        (&["--tracestate", "a=1"], "go with --trace-context"),
        (
            &["--log-requests", unwritable.to_str().unwrap()],
            "cannot write it",
        ),
        (
            &["--log-requests", "x.csv", "--log-sample", "0"],
            "--log-sample must be at least 1",
        ),
    ];
    for (flags, says) in cases {
        let out = run(&[&["run", "-n", "10"], flags].concat());
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains(says), "{flags:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{flags:?}: {err}");
        assert!(!err.contains("panicked"), "{flags:?}: {err}");
    }
    assert!(!Path::new("x.csv").exists() || std::fs::remove_file("x.csv").is_ok());
}
