//! The open loop (`-R`): requests leave on schedule whatever the answers, latency is measured
//! from the intended send time (corrected) and from the actual send (uncorrected), and a
//! server stall shows in the corrected tail but hides from the uncorrected one (coordinated
//! omission). The stall route pauses every in-process target of this test binary: the other
//! tests use the embedded target of the reqlife child process, or assert only lower bounds.

mod common;

use common::*;
use reqlife::server::ServerTls;
use serde_json::Value;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_stall_shows_in_the_corrected_tail_and_not_in_the_uncorrected_one() {
    let s = embedded(ServerTls::None);
    let addr = s.addr();
    // 0.5 s into the run, the server stops answering for 300 ms.
    let staller = std::thread::spawn(move || {
        // Kept: where the stall falls in the 2 s run is the test's design (after the start,
        // well before the end), not a wait for something.
        std::thread::sleep(Duration::from_millis(500));
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        write!(
            c,
            "GET /stall/300 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    });
    let out = run(&[
        "run",
        "-R",
        "1000",
        "-d",
        "2s",
        "-c",
        "2",
        "-t",
        "1",
        "--json",
        &s.url("/"),
    ]);
    staller.join().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let j = summary(&out);
    let corrected_p99 = num(&j, "latency.total.p99_us");
    let uncorrected_p99 = num(&j, "latency.uncorrected.p99_us");
    let queue_p99 = num(&j, "latency.phases.queue.p99_us");
    // About 300 of the 2000 requests were due during the stall: more than 1% waited up to
    // 300 ms from their intended send time. Only the 2 in flight saw it after being sent.
    assert!(
        corrected_p99 > 100_000.0,
        "corrected p99 {corrected_p99} us"
    );
    assert!(
        uncorrected_p99 < 50_000.0,
        "uncorrected p99 {uncorrected_p99} us"
    );
    assert!(queue_p99 > 100_000.0, "queue p99 {queue_p99} us");
    // The wait is the server's: the generator kept its schedule, and its lag is apart.
    let lag_p99 = num(&j, "latency.schedule_lag.p99_us");
    assert!(lag_p99 < queue_p99 / 10.0, "lag p99 {lag_p99} us");
    assert!(
        num(&j, "latency.uncorrected.max_us") > 200_000.0,
        "the in-flight ones saw it"
    );
}

/// Each wait is booked to whose it is: at a rate the server easily keeps, a request finds an
/// idle connection, so it has no queue (the server's) and all its lateness is the generator's
/// lag; the phases that tile a request (lag, queue, write, wait, read) add up to its total.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_generators_lateness_is_its_lag_never_the_servers_queue() {
    let out = run_ok(&[
        "run", "-R", "1000", "-d", "1s", "-c", "10", "-t", "1", "--json",
    ]);
    let j = summary(&out);
    let queue_p50 = num(&j, "latency.phases.queue.p50_us");
    let lag_p50 = num(&j, "latency.schedule_lag.p50_us");
    assert!(
        queue_p50 < 1.0,
        "queue p50 {queue_p50} us (lag p50 {lag_p50} us)"
    );
    assert!(lag_p50 > queue_p50, "lag p50 {lag_p50} us");
    assert_open_loop_phases_add_up(&j);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_requests_leave_on_schedule_at_the_total_rate() {
    let out = run_ok(&[
        "run", "-R", "2000", "-d", "1s", "-c", "4", "-t", "2", "--json",
    ]);
    let j = summary(&out);
    let total = num(&j, "requests.total");
    // 2000 due in the second, over both threads together (not per connection or thread);
    // those still in flight at the end are not counted (more of them on a loaded machine).
    assert!((1900.0..=2000.0).contains(&total), "total {total}");
    assert_eq!(num(&j, "generator.offered_rps"), 2000.0);
    assert_eq!(num(&j, "latency.phases.queue.count"), total);
    assert_eq!(num(&j, "latency.schedule_lag.count"), total);
    assert_eq!(num(&j, "latency.uncorrected.count"), total);
    assert!(num(&j, "latency.total.p50_us") >= num(&j, "latency.uncorrected.p50_us"));
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_request_count_is_exact_in_an_open_loop() {
    let out = run_ok(&[
        "run", "-R", "5000", "-n", "1000", "-c", "4", "-t", "2", "--json",
    ]);
    let j = summary(&out);
    assert_eq!(num(&j, "requests.total"), 1000.0);
    // 1000 at 5000/s take 0.2 s.
    let d = num(&j, "duration_s");
    assert!((0.19..0.5).contains(&d), "{d} s");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_pacer_slack_holds_requests_back_and_the_lag_shows_it() {
    // One request per ms and a 5 ms slack: a wake-up comes 5 ms after the first request
    // due and sends the six due by then, late by 5, 4, .., 0 ms (more on a loaded machine,
    // never less), so the lag's median is about 2.5 ms and the rate is kept.
    let out = run_ok(&[
        "run",
        "-R",
        "1000",
        "-d",
        "1s",
        "-c",
        "8",
        "-t",
        "1",
        "--pacer-slack",
        "5ms",
        "--json",
    ]);
    let j = summary(&out);
    let total = num(&j, "requests.total");
    assert!((900.0..=1000.0).contains(&total), "total {total}");
    let lag_p50 = num(&j, "latency.schedule_lag.p50_us");
    assert!(
        lag_p50 >= 1500.0,
        "lag p50 {lag_p50} us: the slack was not applied"
    );
    assert!(num(&j, "latency.total.p50_us") >= lag_p50);
}

/// An open loop's lag, queue, write, wait and read add up to its corrected total.
fn assert_open_loop_phases_add_up(j: &Value) {
    let parts = [
        "schedule_lag",
        "phases.queue",
        "phases.write",
        "phases.wait",
        "phases.read",
    ];
    assert_phases_add_up(j, &parts, 0.01, 0.1);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_slack_batch_never_queues_behind_itself() {
    // Two requests due per ms on two connections and a 5 ms slack: a batch holds at most two
    // requests (one per connection), so none waits behind another of its own batch; the
    // batching shows in the lag (the first of each pair 0.5 ms late), not in the queue. With
    // batches of every request due within the slack (eleven), nine of each waited for the
    // replies to the first two and that wait was booked as the server's queue (queue p50
    // 65-98 us at 20,000 req/s, -c 10, `--pacer-slack 1ms`, on the 2-core VM).
    let flags = "-R 2000 -d 1s -c 2 -t 1 --pacer-slack 5ms --json";
    let out = run_ok(&[&["run"], &flags.split(' ').collect::<Vec<_>>()[..]].concat());
    let j = summary(&out);
    let total = num(&j, "requests.total");
    assert!((1900.0..=2000.0).contains(&total), "total {total}");
    let queue_p50 = num(&j, "latency.phases.queue.p50_us");
    let lag_p50 = num(&j, "latency.schedule_lag.p50_us");
    assert!(
        queue_p50 < 1.0,
        "queue p50 {queue_p50} us: a batch queued behind itself (lag p50 {lag_p50} us)"
    );
    assert!(
        lag_p50 < 1500.0,
        "lag p50 {lag_p50} us: a batch held more requests than connections"
    );
    assert_open_loop_phases_add_up(&j);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_poisson_arrivals_keep_the_mean_rate() {
    let out = run_ok(&[
        "run",
        "-R",
        "2000",
        "-d",
        "1s",
        "--arrival",
        "poisson",
        "--seed",
        "3",
        "-c",
        "4",
        "-t",
        "2",
        "--json",
    ]);
    let total = num(&summary(&out), "requests.total");
    // Poisson count over 1 s at 2000/s: sd = sqrt(2000) ≈ 45; ±10% is > 4 sd.
    assert!((1800.0..=2200.0).contains(&total), "total {total}");
}

/// The pacer spins within its budget to send on time, and the record and the report say what
/// it spent: `--pacer-spin 5` keeps each thread's spin under 5% of the run (the token bucket
/// never lends ahead); `--pacer-spin 0` never spins.
#[test]
fn the_pacer_spins_within_its_budget_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("spin.json");
    let out = run_ok(&[
        "run",
        "-R",
        "2000",
        "-d",
        "1s",
        "-c",
        "4",
        "-t",
        "2",
        "--pacer-spin",
        "5%",
        "-o",
        rec.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    assert!(text.contains("  Pacer        lag p50 "), "{text}");
    assert!(text.contains("% of a core (5% allowed)"), "{text}");
    let r = read_json(&rec);
    assert_eq!(r["config"]["pacer_spin"], 0.05);
    let spins = r["summary"]["generator"]["pacer_spin"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(spins.len(), 2, "one per thread: {spins:?}");
    for s in &spins {
        let s = s.as_f64().unwrap();
        assert!((0.0..=0.051).contains(&s), "spun {s} of the run");
    }
    let rec0 = dir.path().join("nospin.json");
    run_ok(&[
        "run",
        "-R",
        "500",
        "-d",
        "300ms",
        "-c",
        "2",
        "-t",
        "1",
        "--pacer-spin",
        "0",
        "-o",
        rec0.to_str().unwrap(),
    ]);
    let r = read_json(&rec0);
    assert_eq!(r["config"]["pacer_spin"], 0.0);
    assert!(r["summary"]["generator"].get("pacer_spin").is_none());
}

#[test]
fn the_text_report_shows_both_latencies_and_the_lag() {
    let out = run_ok(&["run", "-R", "500", "-d", "500ms", "-c", "2", "-t", "1"]);
    let text = stdout(&out);
    for row in [
        "open loop",
        "offered 500 req/s",
        "queue",
        "uncorrected",
        "schedule_lag",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_rate_stages_ramp_and_hold_and_are_kept_apart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stages.json");
    let out = run_ok(&[
        "run",
        "--stages",
        "1s:0->2000, 1s:2000",
        "-c",
        "4",
        "-t",
        "2",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(stdout(&out).contains("0->2000 req/s"), "{}", stdout(&out));
    let r: Value = read_json(&path);
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2);
    // The ramp's area is 1000 requests, the hold's 2000 (a few in flight at the end are cut).
    let n0 = num(&stages[0], "requests.total");
    let n1 = num(&stages[1], "requests.total");
    assert!((990.0..=1000.0).contains(&n0), "ramp {n0}");
    assert!((1900.0..=2000.0).contains(&n1), "hold {n1}");
    assert_eq!(num(&stages[0], "offered_rps"), 1000.0);
    assert_eq!(n0 + n1, num(&r, "summary.requests.total"));
    assert!(num(&stages[1], "latency.total.count") > 0.0);
}

#[test]
fn connection_stages_ramp_the_closed_loop() {
    let out = run_ok(&[
        "run",
        "--stages",
        "500ms:1->4c, 500ms:4c",
        "-t",
        "2",
        "--json",
    ]);
    let j = summary(&out);
    // Four connections at most, all of them reached by the ramp.
    assert_eq!(num(&j, "connections.opened"), 4.0);
    assert!(num(&j, "requests.ok") > 0.0);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_sweep_runs_each_level_and_keeps_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep.json");
    let out = run_ok(&[
        "run",
        "-R",
        "500,1000",
        "-d",
        "500ms",
        "--pause",
        "100ms",
        "-c",
        "4",
        "-t",
        "1",
        "-o",
        path.to_str().unwrap(),
    ]);
    let text = stdout(&out);
    for row in [
        "a sweep of rate over 2 levels: 500, 1000",
        "500 req/s",
        "1000 req/s",
        "achieved",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
    let r: Value = read_json(&path);
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    let n: Vec<f64> = levels
        .iter()
        .map(|l| num(l, "summary.requests.total"))
        .collect();
    assert!(
        (235.0..=250.0).contains(&n[0]) && (470.0..=500.0).contains(&n[1]),
        "{n:?}"
    );
    // Every level keeps its histograms; the top level merges them exactly.
    assert!(levels[1]["histograms"]["total"].as_str().unwrap().len() > 10);
    assert_eq!(num(&r, "summary.requests.total"), n[0] + n[1]);
    assert_eq!(num(&r, "summary.latency.total.count"), n[0] + n[1]);
}

#[test]
fn a_connection_sweep_through_json() {
    let out = run_ok(&["run", "-c", "1,2", "-n", "200", "--pause", "0s", "--json"]);
    let j = summary(&out);
    let levels = j["levels"].as_array().unwrap();
    let conns: Vec<f64> = levels.iter().map(|l| num(l, "connections")).collect();
    assert_eq!(conns, vec![1.0, 2.0]);
    for l in levels {
        assert_eq!(num(l, "summary.requests.total"), 200.0);
    }
}

#[test]
fn bursts_time_the_dispatch_and_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bursts.json");
    // A 50 ms server, 20 requests at once, 3 times, each on a new connection.
    let s = embedded(ServerTls::None);
    let out = run_ok(&[
        "run",
        "--burst",
        "20",
        "--bursts",
        "3",
        "--burst-interval",
        "5ms",
        "--no-keepalive",
        "-o",
        path.to_str().unwrap(),
        &s.url("/delay/50"),
    ]);
    let text = stdout(&out);
    assert!(text.contains("3 bursts of 20 requests"), "{text}");
    assert!(text.contains("dispatch all (connect+write)"), "{text}");
    let r: Value = read_json(&path);
    let b = &r["summary"]["bursts"];
    assert_eq!(num(b, "count"), 3.0);
    assert_eq!(num(&r, "summary.requests.total"), 60.0);
    assert_eq!(
        num(&r, "summary.connections.opened"),
        60.0,
        "new connections each burst"
    );
    // Every answer takes at least 50 ms after its request was written.
    assert!(num(b, "wait.p50_us") >= 40_000.0, "{b}");
    assert!(num(b, "dispatch.p50_us") > 0.0, "{b}");
    assert!(num(&r, "summary.latency.total.p50_us") >= 50_000.0);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_every_prints_a_line_per_interval_while_running() {
    let out = run_ok(&[
        "run", "-R", "1000", "-d", "2s", "-c", "2", "-t", "1", "--every", "500ms",
    ]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(lines.len(), 4, "{text}");
    let mut counted = 0.0;
    for (i, l) in lines.iter().enumerate() {
        assert!(l.contains(&format!("{:.1}s]", i as f64 * 0.5)), "{l}");
        // 500 requests due per half second, counted when they end: on a loaded machine some
        // end in the next interval (CI, two test runs at once: 506 in the last one).
        let rate: f64 = l.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!((800.0..=1200.0).contains(&rate), "{l}");
        counted += rate * 0.5;
        assert!(
            l.contains("total p50") && l.contains("server total p50"),
            "{l}"
        );
    }
    // Every request the report counts is in one line, once.
    let total: f64 = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no Requests line: {text}"));
    assert_eq!(counted, total, "{text}");
    // The lines come before the final report.
    assert!(text.find("[     1.5s]").unwrap() < text.find("Running").unwrap());
}

/// The corrected latency p99 of each interval that has one, in µs.
fn interval_p99s(record: &Value) -> Vec<f64> {
    record["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["latency"]["total"]["p99_us"].as_f64())
        .collect()
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_an_open_loop_starts_once_its_connections_are_open() {
    // 100 connections opened at 500 a second on one thread (200 ms): requests due while they
    // were opening used to wait for them (before, release build: a first interval with
    // corrected p99 74 ms, the second 147 ms, the median under 1 ms). The schedule starts once
    // they are open (after, debug build: 0.8-1.8 ms), and their connect times are still
    // measured.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("start.json");
    let out = run(&[
        "run",
        "-R",
        "2000",
        "-c",
        "100",
        "--max-connections-per-second",
        "500",
        "-t",
        "1",
        "-d",
        "1s",
        "--interval",
        "100ms",
        "--quiet",
        "-o",
        path.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let record: Value = read_json(&path);
    let s = &record["summary"];
    assert_eq!(num(s, "connections.opened"), 100.0);
    assert_eq!(num(s, "latency.phases.connect.count"), 100.0);
    let mut p99s = interval_p99s(&record);
    assert!(p99s.len() >= 8, "{p99s:?}");
    let first = p99s[0];
    p99s.sort_by(f64::total_cmp);
    let median = p99s[p99s.len() / 2];
    // The target is 3x the median + 300 us. A shared 2-core CI machine gave a first
    // interval of 7.2 ms over a median of 0.7 ms once (scheduling, not the connections): the
    // bound keeps 20 ms for that, still far under the fault's size (74-147 ms, the 200 ms the
    // connections take to open).
    assert!(
        first <= 3.0 * median + 20_000.0,
        "first interval corrected p99 {first} us, median interval {median} us: {p99s:?}"
    );
}

/// `summary.end.<field>` as a count.
fn end(j: &Value, field: &str) -> u64 {
    count(j, &format!("end.{field}"))
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_requests_in_flight_at_the_end_are_drained_and_counted() {
    let s = embedded(ServerTls::None);
    let url = s.url("/delay/500");
    // 40 requests due in the second (constant arrivals: at 0, 25, ..., 975 ms), each answered
    // after 500 ms: 20 end within the window, 20 in the drain that follows it.
    let args = |drain: &'static str| {
        vec![
            "run", "-R", "40", "-d", "1s", "-c", "40", "-t", "1", "--drain", drain, "--json", &url,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let a = args("5s");
    let out = run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let j = summary(&out);
    assert_eq!(
        count(&j, "requests.total"),
        40,
        "every request the server saw"
    );
    assert_eq!(count(&j, "requests.ok"), 40);
    let drained = end(&j, "drained");
    assert!((18..=22).contains(&drained), "drained {drained}");
    assert_eq!(end(&j, "in_flight"), 0);
    assert_eq!(end(&j, "not_sent"), 0);
    // The throughput divides the requests that ended within the window by it.
    assert_eq!(num(&j, "throughput_rps"), (40 - drained) as f64);
    assert_eq!(num(&j, "generator.sent_rps"), 40.0);
    // The slow ones are in the tail: every total is about 500 ms.
    assert!(num(&j, "latency.total.p50_us") > 490_000.0);
    assert!(
        !j["warnings"].to_string().contains("achieved"),
        "{}",
        j["warnings"]
    );

    // A drain too short: those still in flight are counted, and the warning names the fix.
    let a = args("100ms");
    let out = run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let j = summary(&out);
    let (total, in_flight) = (count(&j, "requests.total"), end(&j, "in_flight"));
    assert_eq!(
        total + in_flight,
        40,
        "total {total}, in flight {in_flight}"
    );
    assert!(in_flight >= 15, "in flight {in_flight}");
    assert!(
        j["warnings"]
            .to_string()
            .contains("still in flight when the drain ended"),
        "{}",
        j["warnings"]
    );
}

#[test]
fn requests_due_while_every_connection_was_busy_are_counted_as_not_sent() {
    let s = embedded(ServerTls::None);
    // 2 connections answering in 400 ms carry 5 req/s of the 100 due: most wait, and those
    // still waiting at the end of the window are never sent.
    let out = run_ok(&[
        "run",
        "-R",
        "100",
        "-d",
        "1s",
        "-c",
        "2",
        "-t",
        "1",
        "--json",
        &s.url("/delay/400"),
    ]);
    let j = summary(&out);
    let (total, in_flight, not_sent) = (
        count(&j, "requests.total"),
        end(&j, "in_flight"),
        end(&j, "not_sent"),
    );
    assert_eq!(total + in_flight + not_sent, 100, "{}", j["end"]);
    assert!(not_sent >= 85, "not sent {not_sent}");
    let w = j["warnings"].to_string();
    // Each connection busy 400 ms a request carries 2.5 req/s: the limit is the connections'.
    assert!(w.contains("2 connections at 4"), "{w}");
    assert!(w.contains("req/s, under the 100 req/s offered"), "{w}");
    assert!(w.contains("raise -c or lower -R"), "{w}");
    assert!(w.contains("requests due were never sent"), "{w}");
    assert!(!w.contains("the client, not the server"), "{w}");
}

/// A child reqlife run, its output collected as it comes, its peak resident memory followed
/// while it runs.
struct Child {
    child: std::process::Child,
    out: Collected,
    err: Collected,
    spawned: Instant,
}

/// What became of a [`Child`]: its exit code, its peak resident set (MB), how long after the
/// call to [`Child::reap`] it exited, its stdout and stderr, and when (from its spawn) a line
/// of its stderr first held the text looked for.
struct Reaped {
    code: Option<i32>,
    peak_mb: f64,
    took: Duration,
    out: String,
    err: String,
    said_at: Option<Duration>,
}

/// The high-water mark of `pid`'s resident set, kB (`VmHWM`: the kernel's own peak of the
/// process's memory since its exec; `None` once it has exited). Not `wait4`'s `ru_maxrss`:
/// Linux carries a parent's high-water mark into a child across fork and exec, so a child
/// of a test binary that has grown to 200 MB would report 200 MB, whatever it used.
fn peak_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

impl Child {
    fn spawn(args: &[&str]) -> Child {
        let mut child = reqlife()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = collected(child.stdout.take().unwrap());
        let err = collected(child.stderr.take().unwrap());
        Child {
            child,
            out,
            err,
            spawned: Instant::now(),
        }
    }

    /// Waits for the child's exit, at most `timeout`, reading its peak memory every 10 ms
    /// until then (what it grows by in its last 10 ms goes unseen: a bound of 100 MB is not
    /// met by a leak of gigabytes that stops in time), and watching its stderr for `said`.
    fn reap(mut self, timeout: Duration, said: &str) -> Reaped {
        let (pid, started) = (self.child.id(), Instant::now());
        let (mut peak, mut said_at) = (0, None);
        let exited = within(timeout, || {
            if let Some(kb) = peak_kb(pid) {
                peak = peak.max(kb);
            }
            if said_at.is_none() && self.err.text().contains(said) {
                said_at = Some(self.spawned.elapsed());
            }
            self.child.try_wait().unwrap().is_some()
        });
        let took = started.elapsed();
        if !exited {
            let _ = self.child.kill();
        }
        let status = self.child.wait().unwrap();
        let out = String::from_utf8_lossy(&self.out.all(Duration::from_secs(10))).into_owned();
        let err = String::from_utf8_lossy(&self.err.all(Duration::from_secs(10))).into_owned();
        let mb = peak as f64 / 1024.0;
        assert!(
            exited,
            "not exited within {timeout:?} (peak RSS {mb:.1} MB): {err}"
        );
        Reaped {
            code: status.code(),
            peak_mb: mb,
            took,
            out,
            err,
            said_at,
        }
    }
}

/// The figures of the line that names the connections' limit (`2 connections at 97.00us carry
/// at most ~20.6k req/s`): the latency (µs) and the rate it says they carry (req/s).
fn carry_figures(line: &str) -> (f64, f64) {
    let after = |key: &str| line.split(key).nth(1).unwrap_or_default();
    let latency = after(" connections at ")
        .split(' ')
        .next()
        .unwrap_or_default();
    let (digits, scale) = match latency {
        l if l.ends_with("us") => (&l[..l.len() - 2], 1.0),
        l if l.ends_with("ms") => (&l[..l.len() - 2], 1e3),
        l if l.ends_with("ns") => (&l[..l.len() - 2], 1e-3),
        l => panic!("no latency in {l:?}: {line}"),
    };
    let us = digits.parse::<f64>().unwrap() * scale;
    let rate = after("carry at most ~")
        .split(' ')
        .next()
        .unwrap_or_default();
    let (digits, scale) = match rate.as_bytes().last() {
        Some(b'k') => (&rate[..rate.len() - 1], 1e3),
        Some(b'M') => (&rate[..rate.len() - 1], 1e6),
        _ => (rate, 1.0),
    };
    (us, digits.parse::<f64>().unwrap() * scale)
}

/// 100 million requests a second on 2 connections (issue 46): the run took 17.5 s and 7.3 GB
/// for its 3 s, storing each request due and not sent. Now they are counted, not stored:
/// the run ends on time in under 100 MB, says while it runs, once the first second shows it,
/// that the rate is out of reach and why (the limit is the connections': 2 at their latency),
/// and counts every request due as sent or not sent. Against a target of this test process,
/// so that the child's memory is the client's alone.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_rate_the_connections_cannot_carry_keeps_memory_flat() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("big.json");
    let url = s.url("/");
    let args = ["run", "-R", "100M", "-d", "3s", "-c", "2"];
    let run = Child::spawn(&[&args[..], &["-o", rec.to_str().unwrap(), &url]].concat());
    let r = run.reap(Duration::from_secs(30), "carry at most");
    let took = r.took;
    eprintln!(
        "-R 100M -c 2 -d 3s: exited after {took:?}, peak RSS {:.1} MB, the limit said {:?} \
         after the start",
        r.peak_mb, r.said_at
    );
    assert_eq!(r.code, Some(0), "{}", r.err);
    assert!(r.peak_mb < 100.0, "peak RSS {:.1} MB", r.peak_mb);
    assert!(r.peak_mb > 1.0, "the peak was read: {:.1} MB", r.peak_mb);
    assert!(took < Duration::from_secs(6), "took {took:?}");
    // Said as it ran, once the first second showed it (well before the run ended), naming
    // the connections' limit.
    let said: Vec<&str> = r
        .err
        .lines()
        .filter(|l| l.contains("carry at most"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.err);
    let said_at = r.said_at.expect("said while it ran");
    assert!(
        said_at + Duration::from_secs(1) < took,
        "said {said_at:?}, exited {took:?}"
    );
    assert!(said[0].contains("reqlife: 2 connections at "), "{}", r.err);
    assert!(
        said[0].contains("under the 100M req/s asked: raise -c or lower -R"),
        "{}",
        r.err
    );
    // The limit named is 2 connections at the latency named, and the run sent no more than
    // it: the connections' limit, not the generator's.
    let (latency_us, carry) = carry_figures(said[0]);
    let expected = 2.0 * 1e6 / latency_us;
    assert!(
        (carry / expected - 1.0).abs() < 0.01,
        "{carry} for {expected:.0}: {}",
        said[0]
    );
    let j = read_json(&rec);
    let sent = num(&j, "summary.throughput_rps");
    eprintln!("the limit said: ~{carry:.0} req/s at {latency_us} us; sent {sent:.0} req/s");
    assert!(
        sent <= 1.5 * carry,
        "sent {sent} req/s, said at most ~{carry}"
    );
    assert!(
        unwrapped(&r.out).contains("raise -c or lower -R"),
        "{}",
        r.out
    );
    let total = count(&j, "summary.requests.total")
        + count(&j, "summary.end.in_flight")
        + count(&j, "summary.end.not_sent");
    // 300 million due in the 3 s window, each sent or counted (to the rounding of N(t)).
    assert!(total.abs_diff(300_000_000) <= 2, "{total}");
}

/// SIGTERM and SIGINT stop a run at a rate its connections cannot carry within a second, its
/// record written (issue 46: it went on 19 s after the signal, its memory growing). What the
/// binary needs after any signal to build its report and record (some 0.1 s in a release
/// build; 0.2-0.9 s for the tests' debug build on the loaded 2-core VM) is measured alike at
/// a rate the connections carry, and the second counts beyond it; a release build of the
/// tests (`cargo test --release`) is held to the second itself.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_sigterm_stops_an_unreachable_rate_within_a_second() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let stopped = |rate: &str, signal: i32| {
        let args = ["run", "-R", rate, "-d", "10s", "-c", "2"];
        let run = Child::spawn(&[&args[..], &["-o", rec.to_str().unwrap(), &url]].concat());
        // Where the signal falls is the test's design: 2 s into the run, well within it.
        std::thread::sleep(Duration::from_secs(2));
        send_signal(&run.child, signal);
        let r = run.reap(Duration::from_secs(60), "carry at most");
        eprintln!(
            "-R {rate}: exited {:?} after signal {signal}, peak RSS {:.1} MB",
            r.took, r.peak_mb
        );
        assert_eq!(r.code, Some(128 + signal), "{}", r.err);
        assert_eq!(read_json(&rec)["interrupted"], true);
        (r.took, r.peak_mb)
    };
    for signal in [libc::SIGTERM, libc::SIGINT] {
        let (baseline, _) = stopped("1000", signal);
        let (took, peak_mb) = stopped("100M", signal);
        let bound = match cfg!(debug_assertions) {
            true => baseline + Duration::from_secs(1),
            false => Duration::from_secs(1),
        };
        assert!(
            took < bound,
            "exited {took:?} after signal {signal} (at 1000 req/s: {baseline:?})"
        );
        assert!(peak_mb < 100.0, "peak RSS {peak_mb:.1} MB");
    }
}

/// At a rate beyond what its connections carry, the open loop sends as fast as they carry
/// it, as the closed loop does on the same connections, and its thread does no more work to
/// send (issue 46: `-R 200k -c 2` sent 8.9k req/s where the closed loop sent 20k, its thread
/// busy queueing 200,000 tickets a second). A server answering in 5 ms: the connections
/// carry some 400 req/s, whatever the build's speed (the tests' debug build is several times
/// slower than a release one), so what differs is the generator's own work. Before: the open
/// loop sent 0.88x the closed loop's rate with its thread on a CPU 65% of the run, against
/// 12%.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_an_open_loop_behind_sends_as_fast_as_the_closed_loop() {
    let s = embedded(ServerTls::None);
    let url = s.url("/delay/5");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-d", "2s", "-c", "2", "-t", "1", "--json"];
        args.extend_from_slice(extra);
        args.push(&url);
        let j = summary(&run_ok(&args));
        let busy = j["generator"]["thread_busy"][0].as_f64().unwrap();
        (num(&j, "throughput_rps"), busy)
    };
    // The best of two rounds each, taking turns: the machine's noise falls on both.
    let (mut closed, mut open) = ((0.0f64, 1.0f64), (0.0f64, 1.0f64));
    for _ in 0..2 {
        let (c, o) = (run(&[]), run(&["-R", "200k"]));
        closed = (closed.0.max(c.0), closed.1.min(c.1));
        open = (open.0.max(o.0), open.1.min(o.1));
    }
    eprintln!(
        "closed loop {:.0} req/s (thread busy {:.2}), open loop at 200k req/s {:.0} req/s \
         (thread busy {:.2})",
        closed.0, closed.1, open.0, open.1
    );
    assert!(
        open.0 >= 0.95 * closed.0,
        "open {open:?}, closed {closed:?}"
    );
    assert!(open.1 <= closed.1 + 0.2, "open {open:?}, closed {closed:?}");
}

/// The same against a server that answers at once, where the client's own work is the limit
/// (issue 46: `-R 200k -c 2` sent 8.9k req/s where the closed loop sent 20k): a rate no
/// connection can reach (`-R 1M` on 2) sends at least 0.7 times what the closed loop sends on
/// the same 2 connections, one thread each. The best of three rounds each, taking turns. On
/// the 2-core VM under two other builds (load average 7-8, the tests' debug build, three runs
/// of the test): 0.82-1.19x, and 0.32-0.48x with the build before (e8556ea).
/// bench/unreachable_rate.py measures it on a release build, the server on a core of its own.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_an_unreachable_rate_sends_no_slower_than_the_closed_loop() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "-d", "2s", "-c", "2", "-t", "1", "--json"];
        args.extend_from_slice(extra);
        args.push(&url);
        num(&summary(&run_ok(&args)), "throughput_rps")
    };
    let (mut closed, mut open) = (0.0f64, 0.0f64);
    for _ in 0..3 {
        closed = closed.max(run(&[]));
        open = open.max(run(&["-R", "1M"]));
    }
    let ratio = open / closed;
    eprintln!("closed loop {closed:.0} req/s, -R 1M {open:.0} req/s: {ratio:.2}x");
    assert!(
        ratio >= 0.7,
        "open {open:.0} req/s, closed {closed:.0}: {ratio:.2}x"
    );
}

/// The open loop's thread sleeps through responses (one wake-up per request due, not one more
/// per response) and still times them: a server answering in 2 ms, one request due every 5 ms.
/// The thread sleeps from one due time to the next, so it reads each response about 3 ms after
/// it came; its `wait` is the kernel's arrival stamp, 2 ms, not the reading's 5 ms. With
/// `--pacer-naps off` (the thread woken by each response: the before figure) the times are
/// the same and the thread blocks about twice as often.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_thread_sleeps_through_responses_and_still_times_them() {
    let addr = raw_server(|mut s| {
        while read_request(&mut s) {
            // The server's 2 ms per answer: what the test measures.
            std::thread::sleep(Duration::from_millis(2));
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if s.write_all(reply).is_err() {
                return;
            }
        }
    });
    let url = format!("http://{addr}/");
    let run = |naps: bool| {
        let mut cmd = reqlife();
        cmd.args(["run", "-R", "200", "-d", "1s", "-c", "4", "-t", "1"])
            .args(["--pacer-slack", "0", "--json", &url])
            .args(["--pacer-naps", if naps { "on" } else { "off" }]);
        json_and_blocks(cmd)
    };
    let (napping, blocks) = run(true);
    let (woken, blocks_before) = run(false);
    for (j, what) in [(&napping, "napping"), (&woken, "woken by each response")] {
        assert_eq!(count(j, "requests.total"), 200, "{what}");
        assert_eq!(count(j, "requests.errors"), 0, "{what}");
        let wait = num(j, "latency.phases.wait.p50_us");
        assert!(
            (1900.0..3000.0).contains(&wait),
            "{what}: wait p50 {wait} us"
        );
        let total = num(j, "latency.total.p50_us");
        assert!(
            (1900.0..3500.0).contains(&total),
            "{what}: total p50 {total} us"
        );
    }
    eprintln!("blocking waits: {blocks} napping, {blocks_before} woken by each response");
    assert!(
        blocks < 0.75 * blocks_before,
        "napping blocked {blocks} times, woken by each response {blocks_before}"
    );
}
