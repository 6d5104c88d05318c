//! `--pipeline N` (HTTP/1.1 pipelining, wrk's pipeline.lua): a batch's requests go in one
//! write and their responses are read in order, whatever their framing and however the
//! server's writes cut them; a server that closes in the middle of a batch gets the rest
//! again on a new connection; bad combinations are one line and exit 2.

use crate::common::*;
use std::io::{Read, Write};
use std::net::TcpStream;

/// `run -n N -c C -t 1 --pipeline DEPTH --timeout 5s` against `addr`, its summary.
fn pipelined(addr: std::net::SocketAddr, n: u64, c: u64, depth: u64) -> serde_json::Value {
    Run::new()
        .n(n)
        .c(c)
        .t(1)
        .args(["--pipeline", &depth.to_string(), "--timeout", "5s"])
        .url(format!("http://{addr}/"))
        .json()
}

/// Reads from `s` until `n` complete request heads are in (requests without bodies); false
/// when the peer closed first. Returns how many reads it took.
fn read_requests(s: &mut TcpStream, n: usize, reads: &mut usize) -> bool {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    while buf.windows(4).filter(|w| w == b"\r\n\r\n").count() < n {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return false,
            Ok(k) => {
                buf.extend_from_slice(&chunk[..k]);
                *reads += 1;
            }
        }
    }
    true
}

/// The i-th response of a batch: a Content-Length body, a chunked body with a
/// `Server-Timing` trailer, and a 204 without a body, in turn.
fn response(i: usize) -> Vec<u8> {
    match i % 3 {
        0 => b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
        1 => b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: Server-Timing\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\nServer-Timing: app;dur=1\r\n\r\n".to_vec(),
        _ => b"HTTP/1.1 204 No Content\r\n\r\n".to_vec(),
    }
}

/// Answers only once it holds a whole batch of 8 requests (a client that does not pipeline
/// would wait forever), all 8 responses in one write; 8 requests that did not come in one
/// read get a 400.
fn batches_of_8(mut s: TcpStream) {
    loop {
        let mut reads = 0;
        if !read_requests(&mut s, 8, &mut reads) {
            return;
        }
        // The 8 requests came in one write (one read here, 8 × ~40 bytes).
        if reads != 1 {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        let all: Vec<u8> = (0..8).flat_map(response).collect();
        if s.write_all(&all).is_err() {
            return;
        }
    }
}

#[test]
fn a_batch_goes_in_one_write_and_its_responses_are_read_in_order() {
    let addr = thread_per_connection(batches_of_8);
    let url = format!("http://{addr}/");
    let j = pipelined(addr, 80, 1, 8);
    // 10 batches of 8: each request answered by its own response, framings in turn.
    assert_counts(
        &j,
        &[
            ("requests.total", 80),
            ("requests.ok", 80),
            ("status.200", 60),
            ("status.204", 20),
            ("connections.opened", 1),
            ("server_timing.app.count", 30),
        ],
    );
    // Every byte the server sent is counted once, by the response it belongs to.
    let sent: usize = (0..80).map(|i| response(i % 8).len()).sum();
    assert_eq!(count(&j, "bytes.read"), sent as u64, "{j}");
    // Without pipelining the server never answers: every request times out.
    let j = Run::new()
        .n(2)
        .c(1)
        .t(1)
        .args(["--timeout", "300ms"])
        .url(&url)
        .json_exits(1)
        .1;
    assert_counts(&j, &[("requests.ok", 0), ("errors.timeout", 2)]);
}

/// Answers requests one at a time, each response in two writes (head, then body) for the
/// first 5 of each connection, then a 6th with `Connection: close` and closes: the
/// batch's last 2 requests are unanswered on it.
fn closes_after_6(mut s: TcpStream) {
    // What came so far: the requests of a batch arrive together.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    for i in 0..6 {
        while buf.windows(4).filter(|w| w == b"\r\n\r\n").count() <= i {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&chunk[..k]),
            }
        }
        let r = if i == 5 {
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok".to_vec()
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec()
        };
        let (head, body) = r.split_at(r.len() - 2);
        if s.write_all(head).is_err() || s.write_all(body).is_err() {
            return;
        }
    }
}

#[test]
fn requests_left_unanswered_by_a_close_go_again_on_a_new_connection() {
    let addr = thread_per_connection(closes_after_6);
    let j = pipelined(addr, 24, 1, 8);
    // 6 answered per connection: 4 connections, each closed by the server.
    assert_counts(
        &j,
        &[
            ("requests.ok", 24),
            ("connections.opened", 4),
            ("connections.server_closes", 4),
        ],
    );
    // The report's header says the run was pipelined.
    let out = Run::new()
        .n(8)
        .c(1)
        .t(1)
        .args(["--pipeline", "8"])
        .url(format!("http://{addr}/"))
        .ok();
    assert!(
        stdout(&out).contains("pipelined: 8 requests per connection sent in one write"),
        "{}",
        stdout(&out)
    );
}

/// As [`batches_of_8`], the responses written 7 bytes at a time: a response's head, body and
/// the next response's start meet in reads cut anywhere.
fn batches_of_8_in_pieces(mut s: TcpStream) {
    loop {
        let mut reads = 0;
        if !read_requests(&mut s, 8, &mut reads) {
            return;
        }
        let all: Vec<u8> = (0..8).flat_map(response).collect();
        for piece in all.chunks(7) {
            if s.write_all(piece).is_err() {
                return;
            }
        }
    }
}

#[test]
fn responses_cut_anywhere_are_read_in_order() {
    let addr = thread_per_connection(batches_of_8_in_pieces);
    let j = pipelined(addr, 800, 2, 8);
    assert_counts(
        &j,
        &[
            ("requests.ok", 800),
            ("status.200", 600),
            ("status.204", 200),
            ("connections.opened", 2),
            ("server_timing.app.count", 300),
        ],
    );
    let sent: usize = (0..800).map(|i| response(i % 8).len()).sum();
    assert_eq!(count(&j, "bytes.read"), sent as u64, "{j}");
}

/// Answers the first 2 requests of each batch of 4, then a line that is not HTTP.
fn garbage_after_2(mut s: TcpStream) {
    let mut reads = 0;
    if !read_requests(&mut s, 4, &mut reads) {
        return;
    }
    let mut out: Vec<u8> = (0..2).flat_map(|_| response(0)).collect();
    out.extend_from_slice(b"SSH-2.0-OpenSSH\r\n\r\n");
    let _ = s.write_all(&out);
    let _ = s.read(&mut [0u8; 1]);
}

/// Answers the first 2 requests of each batch of 4, then nothing.
fn stalls_after_2(mut s: TcpStream) {
    let mut reads = 0;
    if !read_requests(&mut s, 4, &mut reads) {
        return;
    }
    let out: Vec<u8> = (0..2).flat_map(|_| response(0)).collect();
    let _ = s.write_all(&out);
    let _ = s.read(&mut [0u8; 1]);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_failure_fails_its_request_and_those_behind_it() {
    // Garbage after 2 responses: the third is a protocol error, the fourth was behind it.
    let addr = thread_per_connection(garbage_after_2);
    let j = pipelined(addr, 8, 1, 4);
    assert_counts(
        &j,
        &[
            ("requests.ok", 4),
            ("errors.protocol", 4),
            ("connections.opened", 2),
        ],
    );
    // A stall after 2 responses: the other 2 time out, each within its own timeout. The server
    // stopped answering 0.01 s into a 0.32 s window: most of the run failed, exit 5 (issue 46).
    let addr = thread_per_connection(stalls_after_2);
    let started = std::time::Instant::now();
    let (_, j) = Run::new()
        .n(4)
        .c(1)
        .t(1)
        .args(["--pipeline", "4", "--timeout", "300ms"])
        .url(format!("http://{addr}/"))
        .json_exits(5);
    assert_counts(&j, &[("requests.ok", 2), ("errors.timeout", 2)]);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn bad_pipeline_input_is_one_line_and_exit_2() {
    for (args, says) in [
        (
            &["--pipeline", "0"][..],
            "--pipeline must be from 1 to 1024",
        ),
        (
            &["--pipeline", "5000"][..],
            "--pipeline must be from 1 to 1024",
        ),
        (
            &["--pipeline", "4", "--http2"][..],
            "--pipeline applies to HTTP/1.1",
        ),
        (
            &["--pipeline", "4", "-R", "100"][..],
            "--pipeline 4 needs a closed loop",
        ),
        (
            &["--pipeline", "4", "--burst", "10"][..],
            "--pipeline 4 needs a closed loop",
        ),
        (
            &["--pipeline", "4", "--no-keepalive"][..],
            "--pipeline 4 with a new connection per request",
        ),
    ] {
        let mut argv = vec!["run"];
        if !args.contains(&"--burst") {
            argv.extend_from_slice(&["-n", "10"]);
        }
        argv.extend_from_slice(args);
        argv.push("http://127.0.0.1:9/");
        let out = run(&argv);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {err}");
        assert!(err.contains(says), "{argv:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{argv:?}: {err}");
    }
    let out = run(&[
        "run",
        "-n",
        "10",
        "--pipeline",
        "4",
        "tcp://127.0.0.1:9",
        "--data",
        "x",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}
