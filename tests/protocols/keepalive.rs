//! Kept connections the server closes (issue 18): nginx's `keepalive_timeout`, a proxy's idle
//! timeout. A connection the server closed while idle is noticed before the next request
//! goes on it (its FIN, seen by the reactor) and replaced, the new connect counted; one it
//! closes as the request arrives (the race of an idle timeout) gets the request once more on
//! a new connection when the method is idempotent, as browsers and curl do, and a failure
//! otherwise.

use crate::common::*;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// What a server saw: connections accepted, and closed by it for being idle.
#[derive(Default)]
struct Seen {
    accepted: AtomicU64,
    idle_closes: AtomicU64,
}

/// A keep-alive server that closes a connection idle for `idle` (as nginx's
/// `keepalive_timeout` does), counting what it does.
fn idle_closing_server(idle: Duration) -> (std::net::SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    let addr = raw_server(move |mut s: TcpStream| {
        counts.accepted.fetch_add(1, Ordering::SeqCst);
        s.set_read_timeout(Some(idle)).unwrap();
        loop {
            let mut byte = [0u8; 1];
            // Idle: the first byte of the next request, or the timeout.
            match s.read(&mut byte) {
                Ok(1) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    counts.idle_closes.fetch_add(1, Ordering::SeqCst);
                    return;
                }
                _ => return,
            }
            if !read_request(&mut s) || s.write_all(OK).is_err() {
                return;
            }
        }
    });
    (addr, seen)
}

#[test]
fn an_open_loop_slower_than_the_servers_idle_timeout_reconnects() {
    // 30 ms idle timeout; a request every 100 ms on the one connection: each finds its
    // connection closed by the server (unless the server's thread woke late: the figures are
    // the server's). POST, which is never sent twice: the close is seen before the send.
    let (addr, seen) = idle_closing_server(Duration::from_millis(30));
    let j = Run::new()
        .c(1)
        .t(1)
        .args(["-R", "10", "-d", "1s", "-m", "POST"])
        .url(format!("http://{addr}/"))
        .json();
    let ok = count(&j, "requests.ok");
    assert!(ok >= 8, "{ok} responses at 10/s for 1 s");
    assert_eq!(count(&j, "requests.errors"), 0, "{j}");
    // The server closed most connections for being idle, and every connection it accepted
    // is one the run opened, timed and counted.
    let closes = seen.idle_closes.load(Ordering::SeqCst);
    assert!(closes >= ok / 2, "{closes} idle closes for {ok} requests");
    let opened = count(&j, "connections.opened");
    assert_eq!(opened, seen.accepted.load(Ordering::SeqCst));
    assert_eq!(count(&j, "latency.phases.connect.count"), opened);
    // Each close the next request found counts as a close by the server (the last one, after
    // the last request, is not seen).
    let found = count(&j, "connections.server_closes");
    assert!(
        found <= closes && found + 1 >= closes,
        "{found} of {closes}"
    );
    eprintln!("{ok} responses, {closes} idle closes ({found} found), {opened} connections opened, no errors");
}

/// A server that answers the first request of each connection and closes the connection on
/// the second one, unanswered: the server's close racing the client's next request.
fn one_answer_per_connection() -> std::net::SocketAddr {
    raw_server(|mut s: TcpStream| {
        if read_request(&mut s) && s.write_all(OK).is_ok() {
            read_request(&mut s);
        }
    })
}

#[test]
fn a_request_the_server_closed_on_goes_once_more_when_idempotent() {
    let url = format!("http://{}/", one_answer_per_connection());
    // GET: each second request on a connection is sent again on a new one, and succeeds.
    let j = Run::new().n(20).c(1).t(1).url(&url).json();
    assert_eq!(count(&j, "requests.ok"), 20, "{j}");
    assert_eq!(count(&j, "requests.errors"), 0, "{j}");
    assert_eq!(count(&j, "connections.opened"), 20);
    assert_eq!(
        count(&j, "connections.server_closes"),
        19,
        "requests 2 to 20 found one"
    );
    // POST is not idempotent: the closed connection is a counted failure.
    let j = Run::new()
        .n(20)
        .c(1)
        .t(1)
        .args(["-m", "POST"])
        .url(&url)
        .json();
    let closed = count(&j, "errors.closed");
    assert!(closed >= 5, "{closed} closed of 20: {j}");
    assert_eq!(count(&j, "requests.ok") + closed, 20, "{j}");
    eprintln!("GET: 20 responses on 20 connections; POST: {closed} of 20 closed");
}
