//! `Expect: 100-continue` over HTTP/1.1: the head goes first, the body once the server says
//! `100 Continue` (or after `--expect100-timeout`), and the wait is the `continue` phase, apart
//! from `write`; a server that answers before the body gets none, and the connection ends.

use crate::common::*;
use reqlife::server::ServerTls;
use std::io::{Read, Write};
use std::time::Duration;

const BODY: &str = "0123456789abcdef";

/// `n` POSTs of `BODY` with `Expect: 100-continue` over `c` connections, one thread.
fn expect_run(url: &str, n: u64, c: u64, extra: &[&str]) -> serde_json::Value {
    Run::new()
        .args(["-m", "POST", "--body", BODY, "-H", "Expect: 100-continue"])
        .args(extra.iter().copied())
        .n(n)
        .c(c)
        .t(1)
        .url(url)
        .json()
}

/// The embedded target (hyper) says 100 when `/echo` reads the body: every request waits
/// for it, and the echo is the whole body.
#[test]
fn the_body_goes_after_the_servers_100_continue() {
    let s = embedded(ServerTls::None);
    let j = expect_run(&s.url("/echo"), 200, 2, &[]);
    assert_counts(
        &j,
        &[
            ("requests.ok", 200),
            ("status.200", 200),
            ("latency.phases.continue.count", 200),
            ("bytes.body", 200 * BODY.len() as u64),
            ("connections.opened", 2),
        ],
    );
    // The 100 came long before the bound (1 s).
    let max = num(&j, "latency.phases.continue.max_us");
    assert!(max < 500_000.0, "continue max {max} us");
    // The phases still add up, means over every request: the two connects, then write +
    // continue + wait + read = total (a closed loop has no lag and no queue).
    let parts = [
        "phases.connect",
        "phases.write",
        "phases.continue",
        "phases.wait",
        "phases.read",
    ];
    assert_phases_add_up(&j, &parts, 0.02, 1.0);
}

/// A server that never says 100 but reads the body when it comes: the body goes after the
/// bound, which is the `continue` phase.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_without_a_100_the_body_goes_after_the_bound() {
    let addr = raw_server(|mut s| {
        while read_request(&mut s) {
            let mut body = [0u8; BODY.len()];
            if s.read_exact(&mut body).is_err() {
                return;
            }
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
    });
    let j = expect_run(
        &format!("http://{addr}/"),
        20,
        1,
        &["--expect100-timeout", "30ms"],
    );
    assert_counts(
        &j,
        &[("requests.ok", 20), ("latency.phases.continue.count", 20)],
    );
    let p50 = num(&j, "latency.phases.continue.p50_us");
    assert!(
        (29_000.0..200_000.0).contains(&p50),
        "continue p50 {p50} us"
    );
    let write = num(&j, "latency.phases.write.p50_us");
    assert!(
        write < 10_000.0,
        "the bound is not the write's: write p50 {write} us"
    );
}

/// A server that answers at once, without reading the body (a final status instead of the
/// 100), gets no body, and the connection it might read it from ends after the response: a
/// new connection per request.
#[test]
fn a_server_that_answers_first_gets_no_body() {
    // Bytes that came after the answer on any connection: a body that should not have gone.
    let extra = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = extra.clone();
    let addr = raw_server(move |mut s| {
        if read_request(&mut s) {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
            let mut rest = [0u8; 64];
            s.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            if let Ok(n) = s.read(&mut rest) {
                seen.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            }
        }
    });
    let j = expect_run(&format!("http://{addr}/"), 10, 1, &[]);
    assert_counts(
        &j,
        &[
            ("requests.ok", 10),
            ("status.200", 10),
            ("connections.opened", 10),
        ],
    );
    // No wait to time (the server answered instead): the record has no such phase.
    assert!(j["latency"]["phases"].get("continue").is_none(), "{j}");
    // The connections closed after their answers (read 0): give the last one its moment.
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        extra.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "body bytes sent"
    );
}

#[test]
fn the_bound_alone_is_refused() {
    let out = run(&[
        "run",
        "--expect100-timeout",
        "1s",
        "-n",
        "1",
        "http://127.0.0.1:9/",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("applies with -H 'Expect: 100-continue'"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
