//! HTTP/2 against the embedded target: h2c with prior knowledge and h2 over TLS (ALPN), several
//! streams per connection, a body, Server-Timing from HTTP/2 headers; a server that does not
//! speak HTTP/2 is an error, not a hang; a 1 KiB window (`--h2-window`) still brings 1 MiB
//! bodies whole; a header block is bounded by `--max-header-list` (a
//! raw server's endless CONTINUATION frames end at 64 KiB, a larger head needs the flag).

use crate::common::*;
use reqlife::server::ServerTls;

#[test]
fn h2c_with_streams_shares_connections() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("h2c.json");
    let j = Run::new()
        .args(["--http2", "--streams", "4"])
        .n(2000)
        .c(2)
        .t(2)
        .arg("-o")
        .arg(rec.to_str().unwrap())
        .url(s.url("/"))
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 2000),
            ("status.200", 2000),
            // 2 connections of 4 streams each: 2 connects, not 8, each with its HTTP/2
            // handshake (until the server's SETTINGS), and the server's stream limit reported.
            ("connections.opened", 2),
            ("latency.phases.h2_handshake.count", 2),
        ],
    );
    assert!(num(&j, "latency.phases.h2_handshake.min_us") > 0.0);
    assert_counts(
        &j,
        &[
            ("h2_max_concurrent_streams", 1024),
            ("latency.phases.wait.count", 2000),
            // Server-Timing arrives in HTTP/2 headers too.
            ("server_timing.total.count", 2000),
        ],
    );
    let r = read_json(&rec);
    assert_eq!(r["config"]["protocol"], "h2c");
    assert_eq!(r["config"]["streams"], 4);
}

#[test]
fn h2_over_tls_by_alpn() {
    let s = embedded(ServerTls::SelfSigned);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, s.cert_pem().unwrap()).unwrap();
    let j = Run::new()
        .args(["--http2", "--streams", "2"])
        .n(500)
        .c(2)
        .t(1)
        .arg("--cacert")
        .arg(ca.to_str().unwrap())
        .args(["-m", "POST", "--body", "0123456789"])
        .url(s.url("/echo"))
        .json();
    assert_counts(&j, &[("requests.ok", 500)]);
    assert_eq!(
        count(&j, "latency.phases.tls.count"),
        2,
        "one handshake per connection"
    );
    // Each echo returns the 10-byte body; read and written count every frame (HEADERS,
    // DATA, SETTINGS, WINDOW_UPDATE, the preface), above TLS.
    assert_eq!(count(&j, "bytes.body"), 500 * 10);
    assert!(count(&j, "bytes.read") > 500 * 10 + count(&j, "bytes.headers"));
    assert!(count(&j, "bytes.written") > 500 * 10);
}

#[test]
fn a_small_window_still_brings_a_1_mib_body_whole() {
    // RFC 9113 allows any stream window: 1 KiB (the connection's stays at 65,535, as SETTINGS
    // cannot shrink it). Each 1 MiB body comes in 1 KiB at most at a time, the client opening
    // the window again: at least 1,024 WINDOW_UPDATE frames (13 bytes each) per stream, where
    // the default 1 MiB window needs 2.
    let s = embedded(ServerTls::None);
    const BODY: u64 = 1 << 20;
    let j = Run::new()
        .args(["--http2", "--streams", "2", "--h2-window", "1KiB"])
        .n(10)
        .c(1)
        .t(1)
        .url(s.url(&format!("/bytes/{BODY}")))
        .json();
    assert_counts(&j, &[("requests.ok", 10), ("requests.errors", 0)]);
    assert_eq!(count(&j, "bytes.body"), 10 * BODY, "every body whole");
    let updates = count(&j, "bytes.written") / 13;
    assert!(updates >= 10 * 1024, "{updates} frames' worth written");
    // Bad windows: what is wrong and what is valid, exit 2 (clap's parser adds its own
    // "For more information" to the unreadable one).
    for (window, says) in [
        ("0", "--h2-window must be from 1 to 2147483647 bytes"),
        ("2GiB", "--h2-window must be from 1 to 2147483647 bytes"),
        ("1KB/s", "invalid size '1KB/s': expected a number of bytes"),
    ] {
        let out = Run::new()
            .n(1)
            .args(["--http2", "--h2-window", window])
            .url(s.url("/"))
            .exits(2);
        let err = stderr(&out);
        assert!(
            err.lines().next().unwrap_or("").contains(says),
            "{window}: {err}"
        );
    }
}

#[test]
fn a_server_without_http2_is_an_error_not_a_hang() {
    let addr = canned_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false);
    let started = std::time::Instant::now();
    let out = run(&[
        "run",
        "--http2",
        "-n",
        "10",
        "-c",
        "1",
        "-t",
        "1",
        "--timeout",
        "2s",
        "--json",
        &format!("http://{addr}/"),
    ]);
    // Its answer to the preface is not SETTINGS: the run stops early (exit 3), its one line
    // naming the fix.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(
        stderr(&out).contains("does not speak HTTP/2 without TLS (h2c) on this port"),
        "{}",
        stderr(&out)
    );
    let j = summary(&out);
    let errors = count(&j, "requests.errors");
    assert!((1..=10).contains(&errors), "{j}");
    assert_eq!(count(&j, "errors.protocol"), errors, "{j}");
    assert_eq!(count(&j, "requests.ok"), 0, "{j}");
}

/// An HTTP/2 server (the h2 crate's) that resets every fourth stream with INTERNAL_ERROR and
/// ends each connection with a graceful GOAWAY after 50 streams.
fn misbehaving_h2_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    let mut n = 0u32;
                    while let Some(Ok((_req, mut respond))) = conn.accept().await {
                        n += 1;
                        if n % 4 == 0 {
                            respond.send_reset(h2::Reason::INTERNAL_ERROR);
                        } else if let Ok(mut body) =
                            respond.send_response(http::Response::new(()), false)
                        {
                            let _ = body.send_data(bytes::Bytes::from_static(b"ok"), true);
                        }
                        if n == 50 {
                            conn.graceful_shutdown();
                        }
                    }
                });
            }
        });
    });
    addr
}

#[test]
fn resets_and_goaways_are_counted_not_fatal() {
    let addr = misbehaving_h2_server();
    let j = Run::new()
        .args(["--http2", "--streams", "2"])
        .n(400)
        .c(2)
        .t(1)
        .args(["--timeout", "5s"])
        .url(format!("http://{addr}/"))
        .json();
    assert_counts(&j, &[("requests.total", 400)]);
    let resets = count(&j, "errors.reset");
    // One stream in four is reset (a few more or less: streams refused by the GOAWAY are sent
    // again on the next connection, which counts anew).
    assert!((80..=120).contains(&resets), "{resets} resets: {j}");
    assert_eq!(count(&j, "resets.INTERNAL_ERROR"), resets);
    assert_eq!(count(&j, "requests.ok") + resets, 400, "{j}");
    // A GOAWAY every 50 streams: new connections, no failed requests for it. A reset stream
    // leaves its connection to the others: about 400 / 50 connections, not one per reset.
    let opened = count(&j, "connections.opened");
    assert!((8..=12).contains(&opened), "{opened} connections: {j}");
}

/// Reads a client's preface and frames up to its first HEADERS: that stream's identifier
/// (`None` if the connection ends first); what the client sends after is read and dropped by
/// a thread of its own.
fn first_request(s: &mut std::net::TcpStream) -> Option<u32> {
    use std::io::Read;
    let mut preface = [0u8; 24];
    s.read_exact(&mut preface).ok()?;
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head).ok()?;
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        s.read_exact(&mut payload).ok()?;
        if head[3] == 0x1 {
            let mut rest = s.try_clone().ok()?;
            std::thread::spawn(move || std::io::copy(&mut rest, &mut std::io::sink()));
            return Some(u32::from_be_bytes(head[5..9].try_into().unwrap()) & 0x7fff_ffff);
        }
    }
}

/// One HTTP/2 frame's bytes.
fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_be_bytes();
    let mut b = vec![len[1], len[2], len[3], kind, flags];
    b.extend_from_slice(&stream.to_be_bytes());
    b.extend_from_slice(payload);
    b
}

/// The most bytes [`continuation_flood`] wrote on one connection.
static FLOOD_SENT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Answers the first request with HEADERS (`:status 200`) and then 10 MiB of CONTINUATION
/// frames, none of which ends the header block; stops when the client is gone.
fn continuation_flood(mut s: std::net::TcpStream) {
    use std::io::Write;
    let _ = s.write_all(&h2_frame(0x4, 0, 0, &[]));
    let Some(stream) = first_request(&mut s) else {
        return;
    };
    let _ = s.set_write_timeout(Some(std::time::Duration::from_secs(20)));
    let mut sent = 0;
    let mut out = h2_frame(0x1, 0, stream, &[0x88]);
    let piece = h2_frame(0x9, 0, stream, &[0; 16_384]);
    while sent < 10 << 20 {
        if s.write_all(&out).is_err() {
            break;
        }
        sent += out.len();
        FLOOD_SENT.fetch_max(sent, std::sync::atomic::Ordering::Relaxed);
        out.clone_from(&piece);
    }
}

/// Answers the first request with a head of 100,000 bytes as compressed (`:status 200` and one
/// field `x` whose value fills it), in HEADERS and CONTINUATION frames, ending the stream.
fn big_head(mut s: std::net::TcpStream) {
    use std::io::Write;
    let _ = s.write_all(&h2_frame(0x4, 0, 0, &[]));
    let Some(stream) = first_request(&mut s) else {
        return;
    };
    // Literal without indexing, a new name; the value's length 99,992 as an HPACK integer.
    let v = 99_992 - 127;
    let mut block = vec![0x88, 0x00, 0x01, b'x', 0x7f];
    block.extend_from_slice(&[(v & 0x7f) as u8 | 0x80, ((v >> 7) & 0x7f) as u8 | 0x80]);
    block.push((v >> 14) as u8);
    block.resize(100_000, b'v');
    let pieces: Vec<&[u8]> = block.chunks(16_384).collect();
    let mut bytes = Vec::new();
    for (n, piece) in pieces.iter().enumerate() {
        let (kind, mut flags) = if n == 0 { (0x1, 0x1) } else { (0x9, 0) };
        if n + 1 == pieces.len() {
            flags |= 0x4;
        }
        bytes.extend(h2_frame(kind, flags, stream, piece));
    }
    let _ = s.write_all(&bytes);
    // Open until the client is done (its bytes are read by first_request's thread).
    let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(20)));
    let _ = std::io::Read::read(&mut s, &mut [0u8; 1]);
}

/// A process's resident set, in kB.
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `reqlife run --http2 -n 3 -c 1` against [`continuation_flood`] (`extra` added): its
/// output, wall time and peak resident set (kB, sampled every 10 ms).
fn against_flood(extra: &[&str]) -> (std::process::Output, std::time::Duration, u64) {
    let addr = thread_per_connection(continuation_flood);
    let started = std::time::Instant::now();
    let mut child = reqlife()
        .args(["run", "--http2", "-n", "3", "-c", "1", "-t", "1"])
        .args(["--timeout", "30s", "--json"])
        .args(extra)
        .arg(format!("http://{addr}/"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "hangs"
        );
        peak = peak.max(rss_kb(child.id()).unwrap_or(0));
        // The sampling period of the peak, not a wait for anything.
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let took = started.elapsed();
    (child.wait_with_output().unwrap(), took, peak)
}

#[test]
fn endless_continuation_frames_end_at_the_header_limit_not_at_the_timeout() {
    let (out, took, peak_kb) = against_flood(&[]);
    let err = stderr(&out);
    // Each connection failed at 64 KiB of header block, with the limit and the flag named,
    // long before --timeout, and stopped reading: the server never wrote its 10 MiB (what it
    // wrote sits in the sockets' buffers, not in reqlife), and reqlife's memory stayed flat.
    assert!(took < std::time::Duration::from_secs(10), "{took:?}: {err}");
    assert!(
        err.contains("a header block over 65536 bytes, the --max-header-list limit"),
        "{err}"
    );
    let j = summary(&out);
    assert_eq!(count(&j, "requests.ok"), 0, "{j}");
    assert_eq!(count(&j, "errors.protocol"), 3, "{j}");
    let sent = FLOOD_SENT.load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent < 10 << 20, "the server wrote all of its {sent} bytes");
    assert!(peak_kb < 64 * 1024, "peak RSS {peak_kb} kB");
    eprintln!("flood: {took:?}, the server wrote at most {sent} bytes, peak RSS {peak_kb} kB");
}

#[test]
fn max_header_list_takes_a_larger_head_the_default_refuses_it() {
    let addr = thread_per_connection(big_head);
    let url = format!("http://{addr}/");
    let base = ["run", "--http2", "-n", "1", "-c", "1", "-t", "1", "--json"];
    let out = run(&[&base[..], &[url.as_str()]].concat());
    let j = summary(&out);
    assert_eq!(count(&j, "errors.protocol"), 1, "{j}: {}", stderr(&out));
    assert!(
        stderr(&out).contains("--max-header-list"),
        "{}",
        stderr(&out)
    );
    let out = run(&[&base[..], &["--max-header-list", "1MiB", url.as_str()]].concat());
    let j = summary(&out);
    assert_eq!(count(&j, "requests.ok"), 1, "{j}: {}", stderr(&out));
}
