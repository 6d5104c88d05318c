//! HTTP/2 against the embedded target: h2c with prior knowledge and h2 over TLS (ALPN), several
//! streams per connection, a body, Server-Timing from HTTP/2 headers; a server that does not
//! speak HTTP/2 is an error, not a hang.

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
