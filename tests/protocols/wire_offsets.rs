//! Where each request's bytes lay on its TCP connection (`--log-requests`' last columns:
//! `port`, `tx_end`, `rx_first`, `rx_end`), checked against servers of the test's own that
//! count, on their side of each connection, every byte they received and sent: where each
//! request ended in what they received, and where each response started and ended in what they
//! sent. On plain TCP a request's offsets must be the server's exactly (keep-alive,
//! `--pipeline 4`, `Expect: 100-continue`, h2c with `--streams 10`, framed, WebSocket
//! pipelined and answered out of order, several connections, reconnects); under TLS its end
//! must be too, and its response's first byte no later than the response's true start and no
//! earlier than the end of the response before it on the connection.

use crate::common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One request as its server saw it on its connection (the client's port).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Truth {
    port: u16,
    req_end: u64,
    resp_start: u64,
    resp_end: u64,
}

type Truths = Arc<Mutex<Vec<Truth>>>;

/// A connection, counted on the server's side: the bytes received and sent, from its first.
struct Conn {
    s: TcpStream,
    port: u16,
    rx: u64,
    tx: u64,
    truths: Truths,
}

impl Conn {
    /// Appends what one read gives to `buf`; false once the client closed.
    fn recv(&mut self, buf: &mut Vec<u8>) -> bool {
        let mut chunk = [0u8; 64 * 1024];
        match self.s.read(&mut chunk) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.rx += n as u64;
                buf.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// Sends `bytes` whole; false once the client is gone.
    fn send(&mut self, bytes: &[u8]) -> bool {
        let ok = self.s.write_all(bytes).is_ok();
        self.tx += bytes.len() as u64;
        ok
    }

    /// A request that ended `left` bytes before the end of what was received is answered by
    /// `response`, sent (`out`: the responses gathered for one write) after `out`'s bytes.
    fn answer(&self, left: usize, out: &mut Vec<u8>, response: &[u8]) {
        let start = self.tx + out.len() as u64;
        out.extend_from_slice(response);
        self.truths.lock().unwrap().push(Truth {
            port: self.port,
            req_end: self.rx - left as u64,
            resp_start: start,
            resp_end: start + response.len() as u64,
        });
    }
}

/// A server on a free loopback port, each connection served by `serve` on its own thread.
fn server(serve: fn(Conn)) -> (SocketAddr, Truths) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let truths = Truths::default();
    let all = truths.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let _ = s.set_nodelay(true);
            let port = s.peer_addr().unwrap().port();
            let truths = all.clone();
            std::thread::spawn(move || {
                serve(Conn {
                    s,
                    port,
                    rx: 0,
                    tx: 0,
                    truths,
                })
            });
        }
    });
    (addr, truths)
}

/// A response of `n` body bytes (the body's length varies, so that no two offsets agree by
/// chance), closing the connection if `close`.
fn http1_response(n: usize, close: bool) -> Vec<u8> {
    let connection = if close { "Connection: close\r\n" } else { "" };
    let mut r = format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n{connection}\r\n").into_bytes();
    r.resize(r.len() + n, b'x');
    r
}

/// The length of the HTTP/1.1 request at the start of `buf` (head and `Content-Length` body),
/// once its head is whole, and whether it asked for `100 Continue`.
fn request_len(buf: &[u8]) -> Option<(usize, bool)> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let text = String::from_utf8_lossy(&buf[..head]).to_ascii_lowercase();
    let body = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    Some((head + body, text.contains("expect: 100-continue")))
}

/// HTTP/1.1: every whole request answered in order, the answers to one read's requests in one
/// write (a client's pipelined reads then find the next response's start buffered); an
/// `Expect: 100-continue` head is answered `100 Continue` before its body comes; the third
/// response of a connection closes it.
fn http1(mut c: Conn) {
    let (mut buf, mut answered, mut continued) = (Vec::new(), 0, false);
    while c.recv(&mut buf) {
        let mut out = Vec::new();
        while let Some((len, expect)) = request_len(&buf) {
            if len > buf.len() {
                if expect && !continued {
                    continued = true;
                    out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                }
                break;
            }
            answered += 1;
            let close = answered == 3;
            c.answer(
                buf.len() - len,
                &mut out,
                &http1_response(5 + answered % 7, close),
            );
            buf.drain(..len);
            continued = false;
            if close {
                c.send(&out);
                return;
            }
        }
        if !out.is_empty() && !c.send(&out) {
            return;
        }
    }
}

/// The client's rows of `log`: (port, tx_end, rx_first, rx_end), each a complete response.
fn rows(log: &std::path::Path) -> Vec<[u64; 4]> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[header.len() - 4..],
        ["port", "tx_end", "rx_first", "rx_end"]
    );
    let status = header.iter().position(|h| *h == "status").unwrap();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            assert_eq!(f[status], "200", "a failed request: {l}");
            let n = |s: &str| s.parse::<u64>().unwrap_or_else(|_| panic!("{l}"));
            let k = f.len() - 4;
            [n(f[k]), n(f[k + 1]), n(f[k + 2]), n(f[k + 3])]
        })
        .collect()
}

/// Runs reqlife against `url` with `flags`, `--log-requests`: its rows.
fn logged(url: &str, flags: &[&str]) -> Vec<[u64; 4]> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    Run::new()
        .args(flags)
        .args(["--timeout", "5s", "--log-requests", log.to_str().unwrap()])
        .url(url)
        .ok();
    rows(&log)
}

/// Every row is a request the server saw, found by its port and its end, with the
/// response's start and end the server's: every request's place is exact. Gives the number of
/// connections.
fn assert_exact(rows: &[[u64; 4]], truths: &Truths, what: &str) -> usize {
    let truths = truths.lock().unwrap().clone();
    assert_eq!(rows.len(), truths.len(), "{what}: rows and requests served");
    for &[port, tx_end, rx_first, rx_end] in rows {
        let port = port as u16;
        let truth = truths
            .iter()
            .find(|t| t.port == port && t.req_end == tx_end)
            .unwrap_or_else(|| {
                let ends: Vec<u64> = truths
                    .iter()
                    .filter(|t| t.port == port)
                    .map(|t| t.req_end)
                    .collect();
                panic!("{what}: no request of port {port} ended at {tx_end} (the server's ends there: {ends:?})")
            });
        assert_eq!(
            (rx_first, rx_end),
            (truth.resp_start, truth.resp_end),
            "{what}: the response to the request of port {port} that ended at {tx_end}"
        );
    }
    let ports: std::collections::HashSet<u16> = truths.iter().map(|t| t.port).collect();
    ports.len()
}

#[test]
fn http1_requests_are_placed_exactly_with_keep_alive_pipelining_and_reconnects() {
    let (addr, truths) = server(http1);
    let url = format!("http://{addr}/");
    // 3 connections, each closed by the server after 3 responses: 20 requests reconnect.
    let kept = logged(&url, &["-n", "20", "-c", "3", "-t", "1"]);
    let connections = assert_exact(&kept, &truths, "keep-alive");
    assert!(
        connections >= 7,
        "{connections} connections for 20 requests"
    );
    // Each connection's offsets start at 0: its first response is at 0.
    let mut first: HashMap<u64, u64> = HashMap::new();
    for r in &kept {
        let at = first.entry(r[0]).or_insert(u64::MAX);
        *at = (*at).min(r[2]);
    }
    assert!(first.values().all(|&at| at == 0), "{first:?}");

    truths.lock().unwrap().clear();
    let piped = logged(&url, &["-n", "24", "-c", "2", "-t", "1", "--pipeline", "4"]);
    assert_exact(&piped, &truths, "--pipeline 4");
}

#[test]
fn an_expect_100_continue_response_starts_after_the_100() {
    let (addr, truths) = server(http1);
    let url = format!("http://{addr}/");
    let flags = [
        "-n",
        "5",
        "-c",
        "1",
        "-m",
        "POST",
        "--body",
        "0123456789",
        "-H",
        "Expect: 100-continue",
    ];
    let rows = logged(&url, &flags);
    assert_exact(&rows, &truths, "Expect: 100-continue");
}

/// An HTTP/2 frame.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend([kind, flags]);
    f.extend(stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// h2c: the client's preface taken, its SETTINGS acknowledged; each stream whose request
/// ended (END_STREAM on its HEADERS or DATA) is answered with HEADERS (`:status 200`) and a
/// DATA frame that ends it, the streams that ended in one read answered in one write, last
/// first.
fn h2c(mut c: Conn) {
    const PREFACE: usize = 24;
    let (mut buf, mut preface, mut answered) = (Vec::new(), false, 0);
    if !c.send(&h2_frame(4, 0, 0, &[])) {
        return;
    }
    while c.recv(&mut buf) {
        if !preface {
            if buf.len() < PREFACE {
                continue;
            }
            buf.drain(..PREFACE);
            preface = true;
        }
        let (mut out, mut ended, mut at) = (Vec::new(), Vec::new(), 0);
        while buf.len() - at >= 9 {
            let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
            if buf.len() - at < 9 + len {
                break;
            }
            let (kind, flags) = (buf[at + 3], buf[at + 4]);
            let stream = u32::from_be_bytes(buf[at + 5..at + 9].try_into().unwrap());
            at += 9 + len;
            match (kind, flags & 1) {
                // DATA or HEADERS with END_STREAM: the request's end.
                (0 | 1, 1) => ended.push((stream & 0x7FFF_FFFF, buf.len() - at)),
                // SETTINGS (not an ACK): acknowledged.
                (4, 0) => out.extend(h2_frame(4, 1, 0, &[])),
                _ => {}
            }
        }
        buf.drain(..at);
        MOST_STREAMS_IN_A_READ.fetch_max(ended.len(), std::sync::atomic::Ordering::Relaxed);
        for &(stream, left) in ended.iter().rev() {
            answered += 1;
            // HEADERS with :status 200 (HPACK's static entry 8), END_HEADERS.
            let mut response = h2_frame(1, 4, stream, &[0x88]);
            response.extend(h2_frame(0, 1, stream, &vec![b'y'; 3 + answered % 11]));
            c.answer(left, &mut out, &response);
        }
        if !out.is_empty() && !c.send(&out) {
            return;
        }
    }
}

#[test]
fn each_http2_stream_is_placed_exactly_among_the_streams_of_its_writes() {
    let (addr, truths) = server(h2c);
    let url = format!("http://{addr}/");
    let flags = [
        "--http2",
        "--streams",
        "10",
        "-n",
        "300",
        "-c",
        "2",
        "-t",
        "1",
    ];
    let rows = logged(&url, &flags);
    let connections = assert_exact(&rows, &truths, "h2c, 10 streams");
    assert_eq!(connections, 2);
    // The case of the streams' frames in one write was met: several requests ended in one
    // read of the server's.
    let most = MOST_STREAMS_IN_A_READ.load(std::sync::atomic::Ordering::Relaxed);
    assert!(most > 1, "at most {most} request per read");
}

/// The most requests the h2c server found ended in one of its reads.
static MOST_STREAMS_IN_A_READ: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// The framed payload's length: each request is these many bytes.
const FRAMED_REQUEST: usize = 13;

/// Framed TCP: each request of [`FRAMED_REQUEST`] bytes answered with a 4-byte length and that
/// many bytes.
fn framed(mut c: Conn) {
    let (mut buf, mut answered) = (Vec::new(), 0usize);
    while c.recv(&mut buf) {
        let mut out = Vec::new();
        while buf.len() >= FRAMED_REQUEST {
            buf.drain(..FRAMED_REQUEST);
            answered += 1;
            let body = vec![b'z'; 2 + answered % 5];
            let mut reply = (body.len() as u32).to_be_bytes().to_vec();
            reply.extend(body);
            c.answer(buf.len(), &mut out, &reply);
        }
        if !out.is_empty() && !c.send(&out) {
            return;
        }
    }
}

#[test]
fn framed_requests_are_placed_exactly() {
    let (addr, truths) = server(framed);
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("payload.bin");
    // A frame itself: a 4-byte length, then that many bytes.
    let mut request = (FRAMED_REQUEST as u32 - 4).to_be_bytes().to_vec();
    request.resize(FRAMED_REQUEST, 7);
    std::fs::write(&payload, request).unwrap();
    let url = format!("tcp://{addr}");
    let flags = ["--payload-file", payload.to_str().unwrap(), "-n", "30"];
    let rows = logged(&url, &[&flags[..], &["-c", "2", "-t", "1"]].concat());
    assert_eq!(assert_exact(&rows, &truths, "framed"), 2);
}

/// WebSocket: the upgrade answered; each whole (masked) message echoed, the messages of one
/// read in one write, in order, or last first when they carry an `id` (for `--ws-match id`).
fn ws(mut c: Conn) {
    let mut buf = Vec::new();
    let head = loop {
        if !c.recv(&mut buf) {
            return;
        }
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break buf.drain(..end + 4).collect::<Vec<u8>>();
        }
    };
    let head = String::from_utf8_lossy(&head).to_string();
    let key = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| value.trim().to_string())
        })
        .unwrap();
    let accept = reqlife::engine::websocket::upgrade::accept_of(&key);
    let upgrade = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    if !c.send(upgrade.as_bytes()) {
        return;
    }
    loop {
        let (mut at, mut messages) = (0, Vec::new());
        while buf.len() - at >= 6 {
            let len = (buf[at + 1] & 0x7F) as usize;
            assert!(len < 126, "a test message of {len} bytes");
            if buf.len() - at < 6 + len {
                break;
            }
            let mask = [buf[at + 2], buf[at + 3], buf[at + 4], buf[at + 5]];
            let payload: Vec<u8> = (0..len).map(|i| buf[at + 6 + i] ^ mask[i % 4]).collect();
            at += 6 + len;
            messages.push((payload, buf.len() - at));
        }
        buf.drain(..at);
        if messages
            .first()
            .is_some_and(|(p, _)| p.starts_with(b"{\"id\""))
        {
            messages.reverse();
        }
        let mut out = Vec::new();
        for (payload, left) in messages {
            let mut reply = vec![0x81, payload.len() as u8];
            reply.extend(payload);
            c.answer(left, &mut out, &reply);
        }
        if !out.is_empty() && !c.send(&out) {
            return;
        }
        if !c.recv(&mut buf) {
            return;
        }
    }
}

#[test]
fn websocket_messages_are_placed_exactly_also_pipelined_and_answered_out_of_order() {
    let (addr, truths) = server(ws);
    let url = format!("ws://{addr}/");
    let lockstep = logged(&url, &["--data", "hello", "-n", "20", "-c", "2", "-t", "1"]);
    assert_exact(&lockstep, &truths, "ws://");
    truths.lock().unwrap().clear();
    let flags = [
        "--data",
        r#"{"id":{seq}}"#,
        "--pipeline",
        "4",
        "--ws-match",
        "id",
        "-n",
        "40",
        "-c",
        "1",
    ];
    let matched = logged(&url, &flags);
    assert_exact(&matched, &truths, "ws:// --pipeline 4 --ws-match id");
}

/// HTTP/1.1 over TLS, counted below rustls: the TCP bytes received when a request was whole
/// (its records' end: the client sends nothing more until it has the response), and the TCP
/// bytes sent before and after the response's records (what rustls had queued, the session
/// tickets, goes first); the third response of a connection closes it.
fn tls_http1(mut s: TcpStream, config: Arc<rustls::ServerConfig>, truths: Truths) {
    let port = s.peer_addr().unwrap().port();
    let mut tls = rustls::ServerConnection::new(config).unwrap();
    let (mut rx, mut tx, mut answered) = (0u64, 0u64, 0);
    let (mut plain, mut chunk) = (Vec::new(), [0u8; 16 * 1024]);
    // What rustls has queued, as the bytes to send.
    let queued = |tls: &mut rustls::ServerConnection| {
        let mut wire = Vec::new();
        while tls.wants_write() {
            tls.write_tls(&mut wire).unwrap();
        }
        wire
    };
    loop {
        let pending = queued(&mut tls);
        tx += pending.len() as u64;
        if s.write_all(&pending).is_err() {
            return;
        }
        let n = match s.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        rx += n as u64;
        let mut records = &chunk[..n];
        while !records.is_empty() {
            tls.read_tls(&mut records).unwrap();
            if tls.process_new_packets().is_err() {
                return;
            }
        }
        let mut text = [0u8; 16 * 1024];
        while let Ok(n) = tls.reader().read(&mut text) {
            if n == 0 {
                return;
            }
            plain.extend_from_slice(&text[..n]);
        }
        while let Some((len, _)) = request_len(&plain).filter(|&(len, _)| len <= plain.len()) {
            plain.drain(..len);
            answered += 1;
            let before = queued(&mut tls);
            let close = answered == 3;
            tls.writer()
                .write_all(&http1_response(5 + answered % 7, close))
                .unwrap();
            let records = queued(&mut tls);
            let start = tx + before.len() as u64;
            truths.lock().unwrap().push(Truth {
                port,
                req_end: rx,
                resp_start: start,
                resp_end: start + records.len() as u64,
            });
            tx += (before.len() + records.len()) as u64;
            if s.write_all(&[before, records].concat()).is_err() || close {
                return;
            }
        }
    }
}

#[test]
fn under_tls_a_request_s_end_is_exact_and_its_response_s_start_bounded() {
    let config = tls_config(&[b"http/1.1"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let truths = Truths::default();
    let all = truths.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let _ = s.set_nodelay(true);
            let (config, truths) = (config.clone(), all.clone());
            std::thread::spawn(move || tls_http1(s, config, truths));
        }
    });
    let url = format!("https://{addr}/");
    let rows = logged(&url, &["--insecure", "-n", "14", "-c", "2", "-t", "1"]);
    let truths = truths.lock().unwrap().clone();
    assert_eq!(rows.len(), truths.len(), "rows and requests served");
    for &[port, tx_end, rx_first, rx_end] in &rows {
        let port = port as u16;
        let mine: Vec<&Truth> = truths.iter().filter(|t| t.port == port).collect();
        let k = mine
            .iter()
            .position(|t| t.req_end == tx_end)
            .unwrap_or_else(|| panic!("no request of port {port} ended at {tx_end}: {mine:?}"));
        let (truth, before) = (mine[k], k.checked_sub(1).map(|b| mine[b]));
        assert!(
            rx_first <= truth.resp_start && rx_first >= before.map_or(0, |b| b.resp_end),
            "port {port}: a response at {} after one ending at {:?}, placed from {rx_first}",
            truth.resp_start,
            before.map(|b| b.resp_end)
        );
        // The client sends nothing until it has the response: once it has, it has read all
        // the server sent.
        assert_eq!(
            rx_end, truth.resp_end,
            "port {port}, the request ending at {tx_end}"
        );
    }
}
