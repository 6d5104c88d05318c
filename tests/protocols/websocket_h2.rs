//! WebSocket over HTTP/2 (RFC 8441, `--http2` on a `ws://` or `wss://` target): the embedded
//! target's routes over h2c and h2 (its HTTP/2 offers the extended CONNECT), the record's
//! protocol and phases (`ws_upgrade`, `h2_handshake`), a subscription's close handshake and
//! pings on the stream; and what must fail well, in one line: a server whose SETTINGS do not
//! enable the extended CONNECT (nghttpd), a route that answers the CONNECT with 404, a server
//! that does not speak HTTP/2 (h2c) or does not offer h2 in ALPN (wss), and flags that do not
//! apply (exit 2). Python's `websockets` does not speak HTTP/2: not a peer here.

use crate::common::*;
use reqlife::server::ServerTls;

/// A run sending `hi` to `url` over HTTP/2.
fn h2_run(url: &str) -> Run {
    Run::new()
        .args(["--http2", "--data", "hi", "--timeout", "5s"])
        .url(url)
}

/// The record of `run` (written with `-o`).
fn record_of(run: Run) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    run.args(["-o", path.to_str().unwrap()]).ok();
    read_json(&path)
}

#[test]
fn messages_over_h2c_streams_of_the_embedded_target() {
    let s = embedded(ServerTls::None);
    let url = format!("ws://{}/ws", s.addr());
    // 2,000 messages: 200 (13 ms at 15k a second) were all sent once by the first thread's two
    // connections before the second thread, started late on a busy machine, opened its own.
    let rec = record_of(h2_run(&url).n(2000).c(4).t(2));
    assert_eq!(rec["config"]["protocol"], "ws+h2c", "{}", rec["config"]);
    assert_counts(
        &rec["summary"],
        &[
            ("requests.ok", 2000),
            ("requests.errors", 0),
            ("connections.opened", 4),
            ("latency.phases.ws_upgrade.count", 4),
            ("latency.phases.h2_handshake.count", 4),
            ("latency.phases.wait.count", 2000),
            // The WebSocket frames: 2 header bytes and 2 of payload a reply.
            ("bytes.body", 2000 * 2),
            ("bytes.headers", 2000 * 2),
        ],
    );
    // The upgrade waits for the server's SETTINGS, then for the CONNECT's 200: it is longer
    // than the SETTINGS' part alone.
    let up = num(&rec["summary"], "latency.phases.ws_upgrade.p50_us");
    let settings = num(&rec["summary"], "latency.phases.h2_handshake.p50_us");
    assert!(up > settings && settings > 0.0, "{up} {settings}");
    // A binary message of 200000 bytes, over the stream's window (65535) several times.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    std::fs::write(&file, vec![7u8; 200_000]).unwrap();
    let j = Run::new()
        .args(["--http2", "--body-file", file.to_str().unwrap()])
        .args(["--timeout", "5s"])
        .n(10)
        .c(2)
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 10), ("bytes.body", 10 * 200_000)]);
    // Each reply of /ws/delay/20 comes 20 ms after its message (loosely: a loaded machine).
    let j = h2_run(&format!("ws://{}/ws/delay/20", s.addr()))
        .n(10)
        .c(1)
        .json();
    assert_counts(&j, &[("requests.ok", 10)]);
    let wait = num(&j, "latency.phases.wait.p50_us");
    assert!((20_000.0..120_000.0).contains(&wait), "wait p50 {wait} us");
}

#[test]
fn wss_over_h2_with_pings_and_subscriptions() {
    let s = embedded(ServerTls::SelfSigned);
    let url = format!("wss://{}/ws/delay/10", s.addr());
    let rec = record_of(h2_run(&url).args(["-k", "--ws-ping", "2ms"]).n(20).c(2));
    assert_eq!(rec["config"]["protocol"], "wss+h2", "{}", rec["config"]);
    assert_counts(
        &rec["summary"],
        &[
            ("requests.ok", 20),
            ("connections.opened", 2),
            ("latency.phases.tls.count", 2),
            ("latency.phases.ws_upgrade.count", 2),
        ],
    );
    // Pongs came back on the stream while the replies were awaited.
    assert!(
        count(&rec["summary"], "latency.phases.ws_ping.count") > 0,
        "{}",
        rec["summary"]
    );
    // A subscription of 3 pushes, ended by the client's close, answered by the server's.
    let url = format!("wss://{}/ws/push/2", s.addr());
    let j = h2_run(&url)
        .args(["-k", "--stream", "messages", "--ws-messages", "3"])
        .n(6)
        .c(2)
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 6),
            ("connections.opened", 6),
            ("latency.phases.events.count", 6),
            ("ws_closes.client", 6),
        ],
    );
}

#[test]
fn a_server_without_rfc_8441_stops_the_run_in_one_line() {
    // nghttpd serves HTTP/2 without SETTINGS_ENABLE_CONNECT_PROTOCOL.
    let Some((_server, port, _dir)) = super::real_servers::nghttpd(&[]) else {
        return;
    };
    let out = h2_run(&format!("ws://127.0.0.1:{port}/ws"))
        .n(50)
        .c(4)
        .exits(3);
    let line = one_error_line(&out);
    assert!(
        line.contains("does not offer WebSocket over HTTP/2 (RFC 8441")
            && line.contains("drop --http2 to upgrade over HTTP/1.1"),
        "{line}"
    );
}

#[test]
fn refused_connects_and_servers_without_http2_stop_in_one_line() {
    let s = embedded(ServerTls::None);
    // A route that is not a WebSocket's: the CONNECT gets 404.
    let out = h2_run(&format!("ws://{}/nothing", s.addr()))
        .n(20)
        .c(2)
        .exits(3);
    let line = one_error_line(&out);
    assert!(
        line.contains("CONNECT (RFC 8441) with 404 Not Found, not 200"),
        "{line}"
    );
    // A plain HTTP/1.1 server answers the preface with a 400: not h2c. (It keeps the
    // connection: a close with the client's SETTINGS unread would reset it under the 400.)
    let h1 = canned_server(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    let out = h2_run(&format!("ws://{h1}/ws")).n(20).c(2).exits(3);
    let line = one_error_line(&out);
    assert!(
        line.contains("does not speak HTTP/2 without TLS (h2c)")
            && line.contains("drop --http2 to upgrade over HTTP/1.1"),
        "{line}"
    );
    // Over TLS, a server that offers only http/1.1 in ALPN.
    let tls = tls_server(&[b"http/1.1"]);
    let out = h2_run(&format!("wss://{tls}/ws"))
        .arg("-k")
        .n(20)
        .c(2)
        .exits(3);
    let line = one_error_line(&out);
    assert!(
        line.contains("does not offer HTTP/2 (h2) in ALPN: drop --http2"),
        "{line}"
    );
}

#[test]
fn flags_http2_cannot_carry_on_a_ws_target_exit_2() {
    // (flags, a part of the line)
    let rows: [(&[&str], &str); 3] = [
        (&["--streams", "2"], "--streams does not apply to WebSocket"),
        (&["--h2-window", "1M"], "--h2-window does not apply"),
        (&["--http3"], "--http3 does not apply"),
    ];
    for (flags, want) in rows {
        let out = h2_run("ws://127.0.0.1:9/ws").args(flags).n(1).exits(2);
        let line = one_error_line(&out);
        assert!(line.contains(want), "{flags:?}: {line}");
    }
}
