//! Bad input, misbehaving servers and interruption: each gets one clear message and the
//! right exit code, never a panic and never a hang; an interrupted run still writes what it
//! measured.

use crate::common::*;
use serde_json::Value;
use std::time::{Duration, Instant};

#[test]
fn bad_input_is_one_clear_line_and_exit_2() {
    // (arguments, a part of the message)
    let rows: &[(&[&str], &str)] = &[
        (&["run", "not a url"], "invalid URL 'not a url'"),
        (&["run", "ftp://127.0.0.1/"], "unsupported scheme 'ftp'"),
        (
            &["run", "ftp://127.0.0.1/"],
            "reqlife speaks http://, https://, tcp://, ws:// and wss://",
        ),
        // No scheme: the same line with or without a path (a path said "invalid format").
        (
            &["run", "localhost:8080/"],
            "invalid URL 'localhost:8080/': no scheme; did you mean http://localhost:8080/?",
        ),
        (
            &["run", "127.0.0.1:8080"],
            "invalid URL '127.0.0.1:8080': no scheme; did you mean http://127.0.0.1:8080?",
        ),
        (
            &["run", "http://no-such-host.invalid/"],
            "cannot resolve host",
        ),
        (
            &["run", "-c", "0", "http://127.0.0.1:9/"],
            "-c/--connections must be at least 1",
        ),
        (
            &["run", "-d", "10parsecs", "http://127.0.0.1:9/"],
            "invalid duration '10parsecs'",
        ),
        (
            &["run", "-n", "many", "http://127.0.0.1:9/"],
            "invalid count 'many'",
        ),
        (
            &["run", "--body-file", "/no/such/body", "http://127.0.0.1:9/"],
            "cannot read body file '/no/such/body'",
        ),
        (
            &["run", "-d", "1s", "-n", "10", "http://127.0.0.1:9/"],
            "conflict",
        ),
        (
            &["run", "-H", "bad header", "http://127.0.0.1:9/"],
            "invalid header",
        ),
        (
            &["run", "--frobnicate", "http://127.0.0.1:9/"],
            "--frobnicate",
        ),
        (
            &["run", "--max-header-list", "lots", "http://127.0.0.1:9/"],
            "invalid size 'lots'",
        ),
        (
            &["run", "--max-header-list", "100", "http://127.0.0.1:9/"],
            "--max-header-list must be from 1KiB to 16MiB (got 100 bytes",
        ),
        (
            &["report", "/no/such/record.json"],
            "cannot read '/no/such/record.json'",
        ),
    ];
    for (args, want) in rows {
        let started = Instant::now();
        let out = run(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.starts_with("error:"), "{args:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?} took too long"
        );
    }
}

#[test]
fn a_report_of_something_that_is_not_a_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.json");
    std::fs::write(&p, "{\"hello\": 1}").unwrap();
    let out = run(&["report", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("not a reqlife RunRecord"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn refused_connections_are_counted_and_the_run_ends() {
    let addr = refused_addr();
    // Every connection refused before any request succeeded: the fail-fast rule stops the
    // run after the first 3 attempts (tests/commands/failfast.rs), exit 3, the errors counted.
    let (out, j) = Run::new()
        .n(100)
        .c(2)
        .t(1)
        .url(format!("http://{addr}/"))
        .json_exits(3);
    let refused = count(&j, "errors.connect");
    assert!((3..100).contains(&refused), "{refused}");
    assert_eq!(count(&j, "requests.errors"), refused);
    assert!(stderr(&out).contains("connect"), "{}", stderr(&out));
    assert!(stderr(&out).contains("refused"), "{}", stderr(&out));
}

#[test]
fn garbage_is_a_protocol_error() {
    let addr = canned_server(b"SSH-2.0-OpenSSH_9.2\r\n\r\n", false);
    let (out, j) = Run::new()
        .n(20)
        .c(1)
        .t(1)
        .url(format!("http://{addr}/"))
        .json_exits(1);
    assert_counts(&j, &[("errors.protocol", 20)]);
    assert!(
        stderr(&out).contains("invalid HTTP response"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn close_in_the_middle_of_a_response_is_counted() {
    let addr = canned_server(
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part",
        true,
    );
    let (out, j) = Run::new()
        .n(20)
        .c(1)
        .t(1)
        .url(format!("http://{addr}/"))
        .json_exits(1);
    assert_counts(&j, &[("errors.closed", 20)]);
    assert!(
        stderr(&out).contains("closed after 9 of 100 body bytes"),
        "{}",
        stderr(&out)
    );
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_stalled_server_times_out_within_the_timeout() {
    let addr = stalling_server(Duration::from_secs(30));
    let started = Instant::now();
    let (_, j) = Run::new()
        .n(4)
        .c(2)
        .t(1)
        .args(["--timeout", "300ms"])
        .url(format!("http://{addr}/"))
        .json_exits(1);
    let took = started.elapsed();
    assert_counts(&j, &[("errors.timeout", 4)]);
    // 4 requests on 2 connections: two rounds of 300 ms, far from the server's 30 s.
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_stall_during_a_timed_run_ends_within_the_drain() {
    let addr = stalling_server(Duration::from_secs(30));
    let url = format!("http://{addr}/");
    // The two requests in flight at the end of the second are drained for up to the timeout
    // (the --drain default): they time out in the drain, and are counted.
    let started = Instant::now();
    let (out, j) = Run::new()
        .args(["-d", "1s"])
        .c(2)
        .t(1)
        .args(["--timeout", "1s"])
        .url(&url)
        .json_exits(1);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_counts(
        &j,
        &[
            ("requests.total", 2),
            ("errors.timeout", 2),
            ("end.drained", 2),
            ("end.drain_timeouts", 2),
        ],
    );
    assert!(
        stderr(&out).contains("no request succeeded"),
        "{}",
        stderr(&out)
    );
    // --drain 0s: the run ends with the duration, and the two are counted as in flight.
    let started = Instant::now();
    let (out, j) = Run::new()
        .args(["-d", "1s"])
        .c(2)
        .t(1)
        .args(["--drain", "0s"])
        .url(&url)
        .json_exits(1);
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_counts(&j, &[("requests.total", 0), ("end.in_flight", 2)]);
    assert!(stderr(&out).contains("no response"), "{}", stderr(&out));
}

fn sigint_run(extra: &[&str], signal: i32, expect_code: i32) {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("run.json");
    let mut args = vec![
        "run",
        "-d",
        "60s",
        "-c",
        "2",
        "-t",
        "1",
        "-o",
        out_path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let child = reqlife()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Kept: the time measured before the signal (the record's duration is checked below).
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(&child, signal);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no prompt exit after the signal"
    );
    assert_eq!(out.status.code(), Some(expect_code), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("INTERRUPTED"), "{text}");
    let record: Value = read_json(&out_path);
    assert_eq!(record["interrupted"], Value::Bool(true));
    assert!(
        count(&record, "summary.requests.total") > 0,
        "nothing measured was kept"
    );
    let d = record["summary"]["duration_s"].as_f64().unwrap();
    assert!(d > 0.5 && d < 10.0, "recorded {d} s");
}

#[test]
fn ctrl_c_writes_the_partial_record_and_exits_130() {
    sigint_run(&[], libc::SIGINT, 130);
}

#[test]
fn sigterm_writes_the_partial_record_and_exits_143() {
    sigint_run(&["--quiet"], libc::SIGTERM, 143);
}

/// A server whose accept queue is full and never drained: new connections hang in the
/// handshake (the kernel drops their SYNs), as with a dead host, but on loopback.
fn blackhole() -> (
    std::net::SocketAddr,
    Vec<std::net::TcpStream>,
    socket2::Socket,
) {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    s.bind(
        &"127.0.0.1:0"
            .parse::<std::net::SocketAddr>()
            .unwrap()
            .into(),
    )
    .unwrap();
    s.listen(0).unwrap();
    let addr = s.local_addr().unwrap().as_socket().unwrap();
    // Fill the queue (a backlog of 0 still takes one or two).
    let fill: Vec<_> = (0..3)
        .filter_map(|_| {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()
        })
        .collect();
    (addr, fill, s)
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_signal_during_connect_ends_the_run_with_a_valid_record() {
    let (addr, _fill, _listener) = blackhole();
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let child = reqlife()
        .args([
            "run",
            "-d",
            "60s",
            "-c",
            "2",
            "-t",
            "1",
            "--timeout",
            "30s",
            "--quiet",
        ])
        .args(["-o", rec.to_str().unwrap(), &format!("http://{addr}/")])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled once it is connecting: a SYN to the full queue, unanswered.
    wait_until("the run connecting", Duration::from_secs(10), || {
        syn_sent_to(addr) > 0
    });
    send_signal(&child, libc::SIGINT);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stdout(&out).contains("INTERRUPTED"));
    let record: Value = read_json(&rec);
    assert_eq!(record["interrupted"], Value::Bool(true));
    // Still connecting: nothing completed, and the record says so rather than inventing.
    assert_eq!(count(&record, "summary.requests.total"), 0);
    assert_valid_record(&record);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_signal_before_the_start_and_a_second_signal_end_at_once() {
    // Waiting for --start-at: a signal ends the wait, nothing was measured.
    let mut child = reqlife()
        .args([
            "run",
            "--start-at",
            "+60s",
            "-n",
            "10",
            "http://127.0.0.1:9/",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled once it says it waits for the start.
    let err = collected(child.stderr.take().unwrap());
    wait_until("the wait for the start", Duration::from_secs(10), || {
        err.text().contains("starting in")
    });
    send_signal(&child, libc::SIGINT);
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(status.code(), Some(130));
    let err = String::from_utf8_lossy(&err.all(Duration::from_secs(10))).into_owned();
    assert!(err.contains("before the start"), "{err}");
    // Two signals in a row mid-run: one interrupt (tests/commands/interrupt.rs), ended at once.
    let (addr, _fill, _listener) = blackhole();
    let child = reqlife()
        .args(["run", "-d", "60s", "-c", "2", "--timeout", "30s", "--quiet"])
        .arg(format!("http://{addr}/"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // As above: signalled mid-run, while it connects.
    wait_until("the run connecting", Duration::from_secs(10), || {
        syn_sent_to(addr) > 0
    });
    send_signal(&child, libc::SIGINT);
    send_signal(&child, libc::SIGINT);
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
}
