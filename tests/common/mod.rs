//! Test helpers: the reqlife binary, and small raw TCP servers on 127.0.0.1:0 that misbehave
//! on purpose (garbage, a close in the middle of a response, a stall, `Connection: close`).
//! Every server thread stops with the test process; every load is bounded by `-n` or `-d`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::time::Duration;

/// The reqlife binary built for the tests.
pub fn reqlife() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reqlife"))
}

/// Runs reqlife with `args`, with a hard bound on its run time.
pub fn run(args: &[&str]) -> Output {
    let out = reqlife()
        .args(args)
        .output()
        .expect("the reqlife binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "reqlife panicked: {stderr}");
    out
}

/// Runs reqlife with `args` and asserts that it succeeded (showing its stderr if not).
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parses the `--json` summary.
pub fn summary(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): stdout={} stderr={}", stdout(o), stderr(o)))
}

/// The embedded target on 127.0.0.1:0, in this test process.
pub fn embedded(tls: reqlife::server::ServerTls) -> reqlife::server::RunningServer {
    reqlife::server::spawn(reqlife::server::ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        tls,
    ))
    .expect("the embedded target starts")
}

/// The number at a dotted `path` of a JSON value (`latency.total.p50_us`).
pub fn num(v: &serde_json::Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}

/// The count at a dotted `path` of a JSON value.
pub fn count(v: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not a count in {v}"))
}

/// A raw server: each accepted connection is handled by `handler` on its own thread.
pub fn raw_server<F>(handler: F) -> SocketAddr
where
    F: Fn(TcpStream) + Send + Sync + 'static + Clone,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let h = handler.clone();
            std::thread::spawn(move || h(stream));
        }
    });
    addr
}

/// Reads one request head (up to the blank line); false when the peer closed.
pub fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// A server that answers every request on a connection with `response`, then closes the
/// connection if `close_after` is true.
pub fn canned_server(response: &'static [u8], close_after: bool) -> SocketAddr {
    raw_server(move |mut s| {
        while read_request(&mut s) {
            if s.write_all(response).is_err() || close_after {
                return;
            }
        }
    })
}

/// A server that reads the request and never answers (holds the connection for `hold`).
pub fn stalling_server(hold: Duration) -> SocketAddr {
    raw_server(move |mut s| {
        read_request(&mut s);
        std::thread::sleep(hold);
    })
}

/// A loopback port on which nothing listens.
pub fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A TLS server (a self-signed certificate for 127.0.0.1, rustls) whose ALPN offers only
/// `alpn` (none when empty) and that answers each HTTP/1.1 request with `200 OK`: a server
/// with TLS but no HTTP/2.
pub fn tls_server(alpn: &[&[u8]]) -> SocketAddr {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let config = Arc::new(config);
    raw_server(move |s| {
        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else {
            return;
        };
        let mut tls = rustls::StreamOwned::new(conn, s);
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while let Ok(1) = tls.read(&mut byte) {
            head.push(byte[0]);
            if head.ends_with(b"\r\n\r\n") {
                head.clear();
                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                if tls.write_all(ok).and_then(|_| tls.flush()).is_err() {
                    return;
                }
            }
        }
    })
}
