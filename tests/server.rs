//! The embedded target on its own: routes, `Server-Timing`, graceful and bounded shutdown,
//! `reqlife serve` in the foreground, and clear errors for bad certificate files.

mod common;

use common::*;
use reqlife::server::{self, ServerConfig, ServerTls};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One request on a fresh connection; returns the raw response (the server closes after it).
fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn plain() -> server::RunningServer {
    server::spawn(ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        ServerTls::None,
    ))
    .unwrap()
}

#[test]
fn routes_answer_with_server_timing() {
    let s = plain();
    assert_ne!(s.addr().port(), 0);
    // The 404 names every route, from the one list the router has.
    let not_found = format!(
        "not found: the routes are {}\n",
        reqlife::server::routes::ROUTES.join(", ")
    );
    // (path, status line start, body end)
    let rows = [
        ("/", "HTTP/1.1 200", "Hello World!"),
        ("/status/418", "HTTP/1.1 418", "418\n"),
        ("/bytes/5", "HTTP/1.1 200", "\r\n\r\nabcde"),
        (
            "/delay/abc",
            "HTTP/1.1 400",
            "/delay/{ms} with ms a number from 0 to 600000\n",
        ),
        ("/nope", "HTTP/1.1 404", not_found.as_str()),
        ("/text/9", "HTTP/1.1 200", "\r\n\r\nThe life "), // plain: nothing accepted
        ("/kv/none", "HTTP/1.1 404", "\r\n\r\n"),         // a key never put
    ];
    for (path, status, body_end) in rows {
        let r = get(s.addr(), path);
        assert!(r.starts_with(status), "{path}: {r}");
        assert!(r.ends_with(body_end), "{path}: {r}");
        let timing = r
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("server-timing:"))
            .unwrap_or_else(|| panic!("{path}: no Server-Timing in {r}"));
        for metric in ["parse;dur=", "handler;dur=", "total;dur="] {
            assert!(timing.contains(metric), "{path}: {timing}");
        }
    }
}

#[test]
fn delay_waits_and_reports_its_queue_and_handler_time() {
    let s = plain();
    let started = Instant::now();
    let r = get(s.addr(), "/delay/50");
    assert!(started.elapsed() >= Duration::from_millis(50));
    let timing = r.lines().find(|l| l.starts_with("server-timing:")).unwrap();
    assert!(timing.contains("queue;dur="), "{timing}");
    let handler: f64 = timing
        .split(", ")
        .find_map(|m| m.strip_prefix("handler;dur="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(handler >= 50.0, "handler {handler} ms in {timing}");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_shutdown_is_bounded_with_an_idle_keep_alive_connection() {
    let s = plain();
    let mut idle = TcpStream::connect(s.addr()).unwrap();
    write!(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut buf = [0u8; 256];
    let _ = idle.read(&mut buf).unwrap();
    let started = Instant::now();
    s.shutdown();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn bad_certificate_files_are_clear_errors() {
    let err = server::spawn(ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        ServerTls::Files {
            cert: "/no/such/cert.pem".into(),
            key: "/no/such/key.pem".into(),
        },
    ))
    .err()
    .expect("a missing certificate is an error");
    assert!(
        err.to_string()
            .contains("cannot read certificate file '/no/such/cert.pem'"),
        "{err}"
    );

    let out = run(&[
        "serve",
        "--addr",
        "127.0.0.1:0",
        "--tls",
        "--cert",
        "/etc/hostname",
        "--key",
        "/etc/hostname",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no certificate found in '/etc/hostname'"),
        "{}",
        stderr(&out)
    );
}

/// The address in serve's first line:
/// "reqlife serve: listening on http://127.0.0.1:PORT/ (Ctrl-C to stop)".
fn listening_addr(line: &str) -> std::net::SocketAddr {
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap()
}

#[test]
fn serve_prints_its_address_and_stops_on_sigterm() {
    let mut child = reqlife()
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    reader.read_line(&mut line).unwrap();
    let addr = listening_addr(&line);
    assert!(get(addr, "/").ends_with("Hello World!"));
    send_signal(&child, libc::SIGTERM);
    let status = exit_within(&mut child, "serve stopping", Duration::from_secs(5));
    assert!(status.success(), "{status:?}");
    drop(reader);
}

#[test]
fn a_closed_stdout_does_not_kill_serve() {
    // `reqlife serve | head -1`: the pipe closes after the first line; serving goes on.
    let mut child = reqlife()
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = listening_addr(&line);
    // A window for serve to exit on the closed pipe, were it to: what the test watches for.
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        child.try_wait().unwrap().is_none(),
        "serve exited when its stdout closed"
    );
    assert!(get(addr, "/").ends_with("Hello World!"));
    send_signal(&child, libc::SIGTERM);
    let out = child.wait_with_output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_serial_serves_one_request_at_a_time_at_a_known_capacity() {
    let s = plain();
    // 8 connections at once, each request 5 ms of service in one line: 200 req/s, whatever
    // the concurrency, and each response waits for the ones ahead of it.
    let j = summary(&run_ok(&[
        "run",
        "-c",
        "8",
        "-t",
        "1",
        "-d",
        "1500ms",
        "--json",
        &s.url("/serial/5"),
    ]));
    let rps = num(&j, "throughput_rps");
    assert!((185.0..=205.0).contains(&rps), "{rps} req/s");
    // 8 in line: about 8 × 5 ms each.
    let p50 = num(&j, "latency.total.p50_us");
    assert!((30_000.0..=50_000.0).contains(&p50), "{p50} us");
}

/// A target with small limits: 50 connections at once, 1 s for a request head.
fn small() -> server::RunningServer {
    server::spawn(ServerConfig {
        max_connections: 50,
        header_timeout: Duration::from_secs(1),
        ..ServerConfig::new("127.0.0.1:0".parse().unwrap(), ServerTls::None)
    })
    .unwrap()
}

/// What the target says to one raw request (until it closes, or 5 s).
fn raw(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn oversized_requests_are_refused() {
    let s = small();
    // 200 headers: over the 100 a request may have.
    let mut many = b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec();
    for i in 0..200 {
        many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    let r = raw(s.addr(), &many);
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    // A 100 KiB head: over the 64 KiB a head may take.
    let mut big = b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    big.extend(std::iter::repeat_n(b'a', 100 * 1024));
    big.extend_from_slice(b"\r\n\r\n");
    let r = raw(s.addr(), &big);
    assert!(r.is_empty() || r.starts_with("HTTP/1.1 431"), "{r}");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_head_that_never_ends_is_cut_off() {
    let s = small();
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n").unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 512];
    // The target answers 408 or just closes, after its 1 s header timeout.
    let n = c.read(&mut buf).unwrap_or(0);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    let text = String::from_utf8_lossy(&buf[..n]);
    assert!(n == 0 || text.starts_with("HTTP/1.1 408"), "{text}");
}

#[test]
fn slowloris_clients_do_not_starve_others() {
    let s = small();
    let addr = s.addr();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // 100 slow clients, twice the target's connections: each sends a header byte every 100 ms
    // and never ends its head; cut off, it connects again.
    let connected = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let slow: Vec<_> = (0..100)
        .map(|_| {
            let stop = stop.clone();
            let connected = connected.clone();
            std::thread::spawn(move || {
                let mut first = true;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut c) = TcpStream::connect(addr) else {
                        continue;
                    };
                    let _ = c.write_all(b"GET / HTTP/1.1\r\nX-Slow: ");
                    if std::mem::take(&mut first) {
                        connected.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    // The slow client's pace: part of the attack, not a wait.
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && c.write_all(b"a").is_ok()
                    {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
        })
        .collect();
    // The run starts once every slow client holds a connection.
    wait_until(
        "100 slow clients connected",
        Duration::from_secs(10),
        || connected.load(std::sync::atomic::Ordering::Relaxed) == 100,
    );
    let out = run_ok(&[
        "run",
        "-n",
        "500",
        "-c",
        "4",
        "-t",
        "1",
        "--timeout",
        "8s",
        "--json",
        &s.url("/"),
    ]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in slow {
        let _ = t.join();
    }
    let j = summary(&out);
    // Every request answered; the first waited for a slot, for about a header timeout or two.
    assert_eq!(count(&j, "requests.ok"), 500, "{j}");
    let max = num(&j, "latency.total.max_us");
    eprintln!(
        "slowloris: longest request {max} us, connect p50 {} us",
        num(&j, "latency.phases.connect.p50_us")
    );
    assert!(max < 5_000_000.0, "a request waited {max} us");
}
