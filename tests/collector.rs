//! The interval collector: an interval's close costs the worker no allocation (counted by a
//! global allocator, on the worker's thread only); a long run with a short interval keeps at
//! most 2,000 (wider) intervals whose counts add up to the run's exactly, in a bounded record; an
//! interrupted run leaves its `--hdr-log` written as it went.

mod common;

use reqlife::model::{Phase, Sample, Timestamps};
use reqlife::recorder::collector::{most_sets, CollectorThread, IntervalSet, Sinks, Start};
use reqlife::recorder::Recorder;
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Allocations are counted on the threads that set this (the test's worker).
    static COUNTED: Cell<bool> = const { Cell::new(false) };
}

fn count() {
    if COUNTED.try_with(|c| c.get()).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations_in(f: impl FnOnce()) -> u64 {
    COUNTED.with(|c| c.set(true));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    f();
    let n = ALLOCATIONS.load(Ordering::Relaxed) - before;
    COUNTED.with(|c| c.set(false));
    n
}

/// A response intended at `at`, ending `total_us` later.
fn sample(at: Instant, total_us: u64) -> Sample {
    let mut st = Timestamps::new(at, at);
    st.written = Some(at + Duration::from_micros(1));
    st.first_byte = Some(at + Duration::from_micros(total_us - 1));
    st.done = Some(at + Duration::from_micros(total_us));
    common::ok_sample(st)
}

/// Records `per` samples in each of `intervals` intervals of 1 ms from `from` (a close at
/// each boundary); latencies cycle over 10 µs .. 10 ms.
fn record_intervals(r: &mut Recorder, base: Instant, from: u64, intervals: u64, per: u64) {
    for i in from..from + intervals {
        for k in 0..per {
            let at = base + Duration::from_micros(i * 1000 + k * (900 / per));
            r.record(&sample(at, 10 + (i * 7 + k * 131) % 10_000));
        }
    }
}

#[test]
fn an_interval_close_allocates_nothing_on_the_worker() {
    let base = Instant::now();
    let interval = Duration::from_millis(1);
    let sinks = Sinks {
        live: None,
        log: None,
        on_interval: None,
        join: None,
    };
    let start = Start {
        gate: std::sync::Arc::new(reqlife::load::StartGate::opened_at(base)),
        warmup: Duration::ZERO,
    };
    let (collector, mut links) =
        CollectorThread::spawn(1, "total", &[], start, interval, sinks).unwrap();
    let mut r = Recorder::new(base, interval).collector(links.remove(0));
    // Warm-up: the pool's histograms grow to the latencies' range.
    record_intervals(&mut r, base, 0, 200, 5);
    // What one set the worker would make if none came back costs, grown to the same range.
    let per_set = allocations_in(|| {
        let mut s = IntervalSet::new(0, "total", &[]);
        for v in [10_000u64, 10_000_000] {
            for h in &mut s.hists.0 {
                let _ = h.record(v);
            }
        }
    });
    let bound = most_sets(1) as u64 * per_set;
    let few = allocations_in(|| record_intervals(&mut r, base, 200, 300, 5));
    let many = allocations_in(|| record_intervals(&mut r, base, 500, 2500, 5));
    eprintln!(
        "worker allocations: {few} over 300 closes, {many} over 2,500 (a new set: {per_set})"
    );
    // None per close: at most the sets a worker can ever be short of, however many closes.
    assert!(
        many <= bound,
        "{many} allocations over 2,500 closes (bound {bound})"
    );
    assert!(
        few <= bound,
        "{few} allocations over 300 closes (bound {bound})"
    );
    let measured = r.finish();
    let series = collector.join().series;
    // Every sample is in the series, exactly.
    let total: u64 = series.entries.iter().map(|e| e.counters.requests).sum();
    assert_eq!(total, measured.counts.counters.requests);
    assert_eq!(total, 3000 * 5);
    assert!(series.entries.len() <= 2000);
}

fn run(args: &[&str]) -> i32 {
    let mut argv = vec!["reqlife"];
    argv.extend_from_slice(args);
    reqlife::app::main_with(argv.iter().map(Into::into).collect())
}

#[test]
fn a_long_series_is_capped_exact_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    // 2,100 intervals of 10 ms (the shortest allowed).
    let code = run(&[
        "run",
        "-R",
        "2000",
        "-c",
        "8",
        "-t",
        "2",
        "-d",
        "21s",
        "--interval",
        "10ms",
        "--quiet",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let size = std::fs::metadata(&path).unwrap().len();
    let r: Value = common::read_json(&path);
    let intervals = r["intervals"].as_array().unwrap();
    assert!(intervals.len() <= 2000, "{} intervals", intervals.len());
    // Neighbours merged: each interval is 10 ms times a power of two, at least 2 (the last
    // one ends with the run).
    assert!(intervals.len() >= 100, "{} intervals", intervals.len());
    let width = intervals[0]["duration_s"].as_f64().unwrap() / 0.01;
    assert!(
        width >= 2.0 && (width.log2() - width.log2().round()).abs() < 1e-9,
        "{width}"
    );
    let n = intervals.len();
    assert!(intervals[..n - 1]
        .iter()
        .all(|i| i["duration_s"].as_f64() == intervals[0]["duration_s"].as_f64()));
    let sum = |key: &str| -> u64 { intervals.iter().map(|i| i[key].as_u64().unwrap()).sum() };
    assert_eq!(
        sum("requests"),
        r["summary"]["requests"]["total"].as_u64().unwrap()
    );
    assert_eq!(
        sum("errors"),
        r["summary"]["requests"]["errors"].as_u64().unwrap()
    );
    // The intervals' total histograms add up to the run's.
    let counted: u64 = intervals
        .iter()
        .filter_map(|i| i["latency"]["total"]["count"].as_u64())
        .sum();
    assert_eq!(
        counted,
        r["summary"]["latency"]["total"]["count"].as_u64().unwrap()
    );
    // Each carries the generator's health: its lag and its busiest worker.
    let busy = intervals
        .iter()
        .filter(|i| i["requests"].as_u64() > Some(0))
        .all(|i| {
            i["generator"]["busy_max"]
                .as_f64()
                .is_some_and(|b| (0.0..=1.0).contains(&b))
        });
    assert!(busy, "{}", intervals[1]["generator"]);
    assert!(size < 8_000_000, "a record of {size} bytes");
}

/// Interval lines of an HdrHistogram log: (tag, start s, count).
fn log_lines(path: &std::path::Path) -> Vec<(String, f64, u64)> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let text = std::fs::read(path).unwrap_or_default();
    IntervalLogIterator::new(&text)
        .filter_map(|e| match e {
            Ok(LogEntry::Interval(h)) => Some(h),
            _ => None,
        })
        .map(|h| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(h.encoded_histogram())
                .unwrap();
            let hist: hdrhistogram::Histogram<u64> =
                hdrhistogram::serialization::Deserializer::new()
                    .deserialize(&mut &bytes[..])
                    .unwrap();
            let tag = h.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
            (tag, h.start_timestamp().as_secs_f64(), hist.len())
        })
        .collect()
}

#[test]
fn an_interrupted_run_leaves_its_interval_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("run.hlog");
    let out = dir.path().join("run.json");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_reqlife"))
        .args([
            "run",
            "-R",
            "500",
            "-c",
            "4",
            "-d",
            "60s",
            "--interval",
            "100ms",
            "--quiet",
        ])
        .arg("--hdr-log")
        .arg(&log)
        .arg("-o")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The log grows while the run goes on: waited on until it holds 10 intervals (at most
    // 20 s; the count is asserted below, once the child is stopped).
    let totals = |p: &std::path::Path| log_lines(p).into_iter().filter(|l| l.0 == "total").count();
    common::within(Duration::from_secs(20), || totals(&log) >= 10);
    let while_running = totals(&log);
    common::send_signal(&child, libc::SIGINT);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(
        while_running >= 10,
        "{while_running} intervals written while running"
    );
    let lines = log_lines(&log);
    let logged: u64 = lines.iter().filter(|l| l.0 == "total").map(|l| l.2).sum();
    let r: Value = common::read_json(&out);
    assert_eq!(r["interrupted"], Value::Bool(true));
    // Every response of the record is in the log, interval by interval.
    assert_eq!(
        logged,
        r["summary"]["latency"]["total"]["count"].as_u64().unwrap()
    );
    let last = lines.iter().map(|l| l.1).fold(0.0, f64::max);
    assert!(last >= 0.9, "the last interval starts at {last} s");
}

#[test]
fn a_workers_sets_start_the_runs_phases_full_size_and_the_rest_small() {
    let sinks = Sinks {
        live: None,
        log: None,
        on_interval: None,
        join: None,
    };
    let start = Start {
        gate: std::sync::Arc::new(reqlife::load::StartGate::opened_at(Instant::now())),
        warmup: Duration::ZERO,
    };
    let (collector, links) = CollectorThread::spawn(
        1,
        "total",
        &[Phase::Connect, Phase::Tls],
        start,
        Duration::from_millis(100),
        sinks,
    )
    .unwrap();
    let full = IntervalSet::new(0, "total", &Phase::ALL);
    // The pool's sets, then one the link makes when none is back: the same sizes.
    for _ in 0..4 {
        let set = links[0].spare("total");
        for p in Phase::ALL {
            let counts = set.hists.get(p).distinct_values();
            if Phase::EVERY_REQUEST.contains(&p) || [Phase::Connect, Phase::Tls].contains(&p) {
                assert_eq!(counts, full.hists.get(p).distinct_values(), "{p:?}");
            } else {
                assert_eq!(counts, 2048, "{p:?}");
            }
        }
    }
    drop(links);
    collector.join();
}
