//! Streamed responses against the embedded target (`/sse/{n}/{gap_ms}`, `/chunks/…`): the
//! known truth of `first_event`, `event_gap` and `events` over HTTP/1.1 and h2c, keep-alive
//! or not, closed or open loop (every combination); `--stream chunks|lines`; a stream that
//! never ends is bounded by `--timeout` and by `--max-body`, and counted; a run without
//! streams has no stream phases.
//!
//! The truth: `/sse/20/5` sends 20 events, the first 5 ms after the response was made and
//! each next one 5 ms after the one before, on a fixed schedule. So every response has 20
//! events and 19 gaps of 5 ms (p50 within 10%: the schedule is fixed, so a late event makes
//! the next gap shorter); the first event comes one gap after the request reached the server,
//! plus the exchange and the server's timer lateness (tokio's timers tick every millisecond;
//! a debug build on a loaded machine adds more): at least 5 ms, at most 10 ms at the median.

use crate::common::*;
use reqlife::server::ServerTls;

const GAP_US: f64 = 5000.0;

fn stream_run(url: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", "-t", "1", "--json"];
    args.extend_from_slice(extra);
    args.push(url);
    summary(&run_ok(&args))
}

/// The figures of `/sse/20/5` (or `/chunks/20/5`) every run must show: `n` responses.
fn assert_known_truth(j: &serde_json::Value, n: u64, what: &str) {
    assert_truth(j, (n, 20, GAP_US), what);
}

/// The figures of `/sse/{events}/{gap}`: `n` responses of `events` events, `gap_us` apart.
fn assert_truth(j: &serde_json::Value, (n, events, gap_us): (u64, u64, f64), what: &str) {
    assert_eq!(count(j, "requests.ok"), n, "{what}");
    // `events` events in every response.
    assert_eq!(count(j, "latency.phases.events.count"), n, "{what}");
    assert_eq!(
        num(j, "latency.phases.events.min_us"),
        events as f64,
        "{what}"
    );
    assert_eq!(
        num(j, "latency.phases.events.max_us"),
        events as f64,
        "{what}"
    );
    // events − 1 gaps per response, one gap at the median (within 10%).
    let gaps = events - 1;
    assert_eq!(
        count(j, "latency.phases.event_gap.count"),
        gaps * n,
        "{what}"
    );
    let gap = num(j, "latency.phases.event_gap.p50_us");
    assert!(
        (gap - gap_us).abs() <= 0.1 * gap_us,
        "{what}: event_gap p50 {gap} us, not {gap_us} us within 10%"
    );
    // One gap before the first event.
    assert_eq!(count(j, "latency.phases.first_event.count"), n, "{what}");
    let first = num(j, "latency.phases.first_event.p50_us");
    assert!(
        (gap_us..=2.0 * gap_us).contains(&first),
        "{what}: first_event p50 {first} us, not one to two gaps of {gap_us} us"
    );
    eprintln!("{what}: first_event p50 {first} us, event_gap p50 {gap} us, events {events} x {n}");
    // read runs to the stream's end (about `events` gaps after the head), total is unchanged.
    let read = num(j, "latency.phases.read.p50_us");
    assert!(read >= gaps as f64 * gap_us, "{what}: read p50 {read} us");
    assert!(num(j, "latency.total.p50_us") >= read, "{what}");
}

#[test]
fn sse_known_truth_over_http1() {
    let s = embedded(ServerTls::None);
    let url = s.url("/sse/20/5");
    // Detected by its content type; and with --stream sse, no keep-alive.
    for extra in [
        vec!["-n", "60", "-c", "4"],
        vec!["-n", "40", "-c", "4", "--stream", "sse", "--no-keepalive"],
    ] {
        let n: u64 = extra[1].parse().unwrap();
        assert_known_truth(&stream_run(&url, &extra), n, &format!("{extra:?}"));
    }
}

#[test]
fn sse_known_truth_over_h2c() {
    let s = embedded(ServerTls::None);
    let url = s.url("/sse/20/5");
    let j = stream_run(&url, &["-n", "60", "-c", "4", "--http2"]);
    assert_known_truth(&j, 60, "h2c");
    // The stream's own time comes as a Server-Timing trailer (HTTP/2 allows them).
    assert_eq!(count(&j, "server_timing.stream.count"), 60);
    assert!(num(&j, "server_timing.stream.p50_us") >= 20.0 * GAP_US * 0.95);
}

#[test]
fn sse_known_truth_in_an_open_loop() {
    let s = embedded(ServerTls::None);
    let url = s.url("/sse/20/5");
    let j = stream_run(&url, &["-R", "20", "-d", "2s", "-c", "8"]);
    let n = count(&j, "requests.ok");
    assert!(n >= 30, "{n} responses at 20/s for 2 s");
    assert_known_truth(&j, n, "open loop");
}

#[test]
fn sse_known_truth_in_the_other_combinations() {
    // The tests above run HTTP/1.1 chunks kept and not, closed loop; h2c kept, closed loop;
    // HTTP/1.1 kept, open loop. The rest of {HTTP/1.1 chunks, h2c DATA frames} x {keep-alive,
    // a connection per request} x {closed, open loop}, with gaps of 20 ms (10 events): a
    // millisecond of lateness on a loaded machine stays well within the 10%.
    let s = embedded(ServerTls::None);
    let url = s.url("/sse/10/20");
    for extra in [
        vec!["--http2", "--no-keepalive", "-n", "20", "-c", "4"],
        vec!["--http2", "-R", "20", "-d", "1s", "-c", "8"],
        vec![
            "--http2",
            "--no-keepalive",
            "-R",
            "20",
            "-d",
            "1s",
            "-c",
            "8",
        ],
        vec!["--no-keepalive", "-R", "20", "-d", "1s", "-c", "8"],
    ] {
        let j = stream_run(&url, &extra);
        let n = count(&j, "requests.ok");
        assert!(n >= 15, "{extra:?}: {n} responses");
        assert_truth(&j, (n, 10, 20_000.0), &format!("{extra:?}"));
        // Without keep-alive, a connection per request (over HTTP/2 too).
        let opened = count(&j, "connections.opened");
        if extra.contains(&"--no-keepalive") {
            assert_eq!(opened, n, "{extra:?}");
        } else {
            assert_eq!(opened, 8, "{extra:?}");
        }
    }
}

#[test]
fn chunks_and_lines_count_what_they_say() {
    let s = embedded(ServerTls::None);
    // Each chunk of /chunks/10/5 is one line: either mode counts 10, over HTTP/1.1 and h2c.
    for extra in [
        vec!["--stream", "chunks"],
        vec!["--stream", "lines"],
        vec!["--stream", "chunks", "--http2"],
        vec!["--stream", "lines", "--http2"],
    ] {
        let mut args = vec!["-n", "20", "-c", "2"];
        args.extend_from_slice(&extra);
        let j = stream_run(&s.url("/chunks/10/5"), &args);
        assert_eq!(count(&j, "requests.ok"), 20, "{extra:?}");
        assert_eq!(num(&j, "latency.phases.events.min_us"), 10.0, "{extra:?}");
        assert_eq!(num(&j, "latency.phases.events.max_us"), 10.0, "{extra:?}");
        assert_eq!(
            count(&j, "latency.phases.event_gap.count"),
            9 * 20,
            "{extra:?}"
        );
    }
    // Server-Sent Events read as chunks: each event is one chunk here, so the same count.
    let j = stream_run(&s.url("/sse/5/2"), &["-n", "10", "--stream", "chunks"]);
    assert_eq!(num(&j, "latency.phases.events.p50_us"), 5.0);
}

#[test]
fn an_endless_stream_is_bounded_by_the_timeout_and_counted() {
    let s = embedded(ServerTls::None);
    let started = std::time::Instant::now();
    // A million events 10 ms apart: the stream outlives any run.
    let out = run(&[
        "run",
        "-n",
        "4",
        "-c",
        "2",
        "-t",
        "1",
        "--timeout",
        "300ms",
        "--json",
        &s.url("/sse/1000000/10"),
    ]);
    assert!(started.elapsed().as_secs() < 20, "the run was bounded");
    let j = summary(&out);
    assert_eq!(count(&j, "errors.timeout"), 4);
    assert_eq!(count(&j, "requests.ok"), 0);
}

#[test]
fn an_endless_stream_is_cut_at_max_body_and_counted() {
    let s = embedded(ServerTls::None);
    // Ten million events with no gap: 2 KiB comes in milliseconds, the stream never ends.
    // (URL, flags): SSE by its content type over HTTP/1.1 chunks and over h2c DATA frames,
    // and chunks counted as events.
    for (path, extra) in [
        ("/sse/10000000/0", vec![]),
        ("/sse/10000000/0", vec!["--http2"]),
        ("/chunks/10000000/0", vec!["--stream", "chunks"]),
    ] {
        let started = std::time::Instant::now();
        let mut args = vec!["run", "-n", "4", "-c", "2", "-t", "1", "--json"];
        args.extend_from_slice(&["--max-body", "2k", "--timeout", "30s"]);
        args.extend_from_slice(&extra);
        let url = s.url(path);
        args.push(&url);
        let out = run(&args);
        assert!(
            started.elapsed().as_secs() < 10,
            "{extra:?}: cut at --max-body, long before --timeout"
        );
        // Every request failed: exit 1, each a counted protocol error that says why.
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stderr(&out));
        let j = summary(&out);
        assert_eq!(count(&j, "errors.protocol"), 4, "{extra:?}: {j}");
        assert_eq!(count(&j, "requests.total"), 4, "{extra:?}");
        assert!(
            stderr(&out).contains("streamed body longer than --max-body"),
            "{extra:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_run_without_streams_has_no_stream_phases() {
    let s = embedded(ServerTls::None);
    let j = stream_run(&s.url("/"), &["-n", "50", "-c", "2"]);
    for phase in ["first_event", "event_gap", "events"] {
        assert!(
            j["latency"]["phases"].get(phase).is_none(),
            "{phase} in a run without streams"
        );
    }
}

#[test]
fn the_text_report_has_a_row_per_stream_phase() {
    let s = embedded(ServerTls::None);
    let out = run_ok(&["run", "-n", "10", "-c", "2", "-t", "1", &s.url("/sse/3/2")]);
    let text = stdout(&out);
    for row in ["first_event", "event_gap", "events"] {
        assert!(text.contains(&format!("  {row} ")), "no {row} row:\n{text}");
    }
    let events = text
        .lines()
        .find(|l| l.trim_start().starts_with("events "))
        .unwrap();
    // A count, not a duration.
    assert!(events.contains(" 3 ") && !events.contains("us"), "{events}");
}

#[test]
fn the_html_report_shows_the_gaps() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("stream.html");
    let page_of = |path: &str| {
        let html_arg = html.to_str().unwrap();
        run_ok(&[
            "run",
            "-n",
            "10",
            "-c",
            "2",
            "-t",
            "1",
            "--html",
            html_arg,
            &s.url(path),
        ]);
        std::fs::read_to_string(&html).unwrap()
    };
    let page = page_of("/sse/4/2");
    // The gap distribution as a histogram and over time in a section of its own, and a
    // table row per stream phase.
    for part in [
        "<section id=\"streams\">",
        "aria-label=\"log2 histogram of event gap\"",
        "aria-label=\"event gap over time\"",
        "first event",
        ">first_event<",
        ">event_gap<",
        ">events<",
        "30 gaps between events of 10 streamed responses",
    ] {
        assert!(page.contains(part), "no {part:?} in the page");
    }
    // A run without streams has none of it.
    let page = page_of("/");
    for part in ["id=\"streams\"", "event gap", "first_event"] {
        assert!(!page.contains(part), "{part:?} in a page without streams");
    }
}

/// An event-stream split across chunks, several events in one chunk, CR and CRLF line ends
/// and a comment: 3 events in 4 chunks.
const SPLIT_SSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\
Transfer-Encoding: chunked\r\n\r\n\
7\r\ndata: a\r\n\
16\r\n\r\n\r\ndata: b\n\ndata: c\r\r\r\n\
A\r\n: comment\n\r\n\
6\r\nid: 1\n\r\n\
0\r\n\r\n";

#[test]
fn a_chunk_is_not_an_event() {
    let addr = canned_server(SPLIT_SSE, false);
    let url = format!("http://{addr}/");
    // (flags, events per response): SSE by the content type, or the chunks themselves.
    for (extra, events) in [(vec![], 3.0), (vec!["--stream", "chunks"], 4.0)] {
        let mut args = vec!["-n", "20", "-c", "2"];
        args.extend_from_slice(&extra);
        let j = stream_run(&url, &args);
        assert_eq!(count(&j, "requests.ok"), 20, "{extra:?}");
        assert_eq!(num(&j, "latency.phases.events.min_us"), events, "{extra:?}");
        assert_eq!(num(&j, "latency.phases.events.max_us"), events, "{extra:?}");
    }
    // The same stream framed by Content-Length, read as lines: 6 LF-ended lines.
    let body = b"data: a\r\n\r\ndata: b\n\ndata: c\r\r: comment\nid: 1\n";
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let response: &'static [u8] = [head.as_bytes(), body].concat().leak();
    let addr = canned_server(response, false);
    let j = stream_run(&format!("http://{addr}/"), &["-n", "10", "-c", "1"]);
    assert_eq!(num(&j, "latency.phases.events.p50_us"), 3.0);
    let j = stream_run(
        &format!("http://{addr}/"),
        &["-n", "10", "-c", "1", "--stream", "lines"],
    );
    assert_eq!(num(&j, "latency.phases.events.p50_us"), 6.0);
}
