//! `reqlife run` end to end through the real binary, against the embedded target (in-process
//! in this test, or started by reqlife itself) bound to 127.0.0.1:0. Every run is bounded
//! by `-n` or a short `-d`.

use crate::common::*;
use reqlife::server::ServerTls;

#[test]
fn counts_statuses_and_phases_against_the_embedded_target() {
    let s = embedded(ServerTls::None);
    let j = Run::new().n(2000).c(4).t(2).url(s.url("/")).json();
    assert_counts(
        &j,
        &[
            ("requests.total", 2000),
            ("requests.ok", 2000),
            ("requests.errors", 0),
            ("status.200", 2000),
            // Keep-alive: one connect per connection, and connect belongs to the request
            // that opened the connection.
            ("connections.opened", 4),
            ("latency.phases.connect.count", 4),
            ("latency.phases.tls.count", 0),
        ],
    );
    for phase in ["write", "wait", "read"] {
        assert_eq!(
            count(&j, &format!("latency.phases.{phase}.count")),
            2000,
            "{phase}"
        );
    }
    assert_counts(&j, &[("latency.total.count", 2000)]);
    // The phases add up: wait ≤ total, and p50 is between min and max.
    assert!(num(&j, "latency.phases.wait.p50_us") <= num(&j, "latency.total.p50_us"));
    assert!(num(&j, "latency.total.min_us") <= num(&j, "latency.total.p50_us"));
    assert!(num(&j, "latency.total.p50_us") <= num(&j, "latency.total.max_us"));
    assert!(num(&j, "throughput_rps") > 0.0);
    // 2000 × "Hello World!" bodies at least.
    assert!(count(&j, "bytes.read") >= 2000 * 12);
}

#[test]
fn status_codes_are_counted() {
    let s = embedded(ServerTls::None);
    // Every response an HTTP error: counted, and the run exits 4.
    let (_, j) = Run::new()
        .n(300)
        .c(2)
        .t(1)
        .url(s.url("/status/503"))
        .json_exits(4);
    assert_counts(
        &j,
        &[
            ("status.503", 300),
            ("requests.non_2xx_3xx", 300),
            ("requests.ok", 300),
        ],
    );
}

#[test]
fn post_with_headers_and_body_to_echo() {
    let s = embedded(ServerTls::None);
    let j = Run::new()
        .n(100)
        .c(1)
        .t(1)
        .args(["-m", "POST", "-H", "Content-Type: text/plain"])
        .args(["--body", "0123456789"])
        .url(s.url("/echo"))
        .json();
    assert_counts(&j, &[("status.200", 100)]);
    // Each echo carries the 10-byte body back; each request wrote it.
    assert!(count(&j, "bytes.written") >= 100 * 10);
    assert!(count(&j, "bytes.read") >= 100 * 10);
}

#[test]
fn head_and_no_content_responses_have_no_body() {
    let s = embedded(ServerTls::None);
    for (method, path) in [
        ("HEAD", "/"),
        ("GET", "/status/204"),
        ("GET", "/status/304"),
    ] {
        let j = Run::new()
            .n(50)
            .c(1)
            .t(1)
            .args(["-m", method, "--timeout", "2s"])
            .url(s.url(path))
            .json();
        assert_eq!(count(&j, "requests.ok"), 50, "{method} {path}");
        assert_eq!(
            count(&j, "errors.timeout"),
            0,
            "{method} {path}: a body was waited for"
        );
        assert_eq!(
            count(&j, "connections.opened"),
            1,
            "{method} {path}: keep-alive kept"
        );
    }
}

#[test]
fn large_bodies_are_counted_not_kept() {
    let s = embedded(ServerTls::None);
    let j = Run::new()
        .n(20)
        .c(2)
        .t(1)
        .url(s.url("/bytes/1000000"))
        .json();
    assert_counts(&j, &[("requests.ok", 20)]);
    assert!(count(&j, "bytes.read") >= 20 * 1_000_000);
}

#[test]
fn tls_with_cacert_insecure_and_unverified() {
    let s = embedded(ServerTls::SelfSigned);
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, s.cert_pem().expect("self-signed PEM")).unwrap();
    let url = s.url("/");
    assert!(url.starts_with("https://"));

    let j = Run::new()
        .n(200)
        .c(2)
        .t(1)
        .arg("--cacert")
        .arg(ca.to_str().unwrap())
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 200)]);
    assert_eq!(
        count(&j, "latency.phases.tls.count"),
        2,
        "one handshake per connection"
    );
    assert!(num(&j, "latency.phases.tls.min_us") > 0.0);

    let j = Run::new()
        .n(50)
        .c(1)
        .t(1)
        .arg("--insecure")
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 50)]);

    // Verification is on by default: a self-signed certificate is refused, counted as tls;
    // every attempt failing alike, the fail-fast rule stops the run after 3 (exit 3).
    let (out, j) = Run::new().n(20).c(1).t(1).url(&url).json_exits(3);
    assert_counts(&j, &[("errors.tls", 3)]);
    assert!(
        stderr(&out).contains("no request succeeded"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn no_url_runs_the_embedded_target_and_prints_the_report() {
    let out = run_ok(&["run", "-d", "1s", "-c", "2", "-t", "1", "--latency"]);
    let text = stdout(&out);
    assert!(text.contains("(the embedded target)"), "{text}");
    for row in [
        "connect",
        "write",
        "wait",
        "read",
        "total",
        "Status codes 200:",
        "Errors       none",
        "Detailed Percentile spectrum",
    ] {
        assert!(text.contains(row), "missing {row:?} in\n{text}");
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_warmup_is_not_recorded() {
    let s = embedded(ServerTls::None);
    let j = Run::new()
        .args(["-d", "500ms", "--warmup", "500ms"])
        .c(1)
        .t(1)
        .args(["-o", "/dev/null"])
        .url(s.url("/"))
        .json();
    // The connection was opened during the warm-up: no recorded request opened it.
    assert_counts(&j, &[("latency.phases.connect.count", 0)]);
    assert!(count(&j, "requests.total") > 0);
    let d = num(&j, "duration_s");
    assert!(
        (0.45..=0.6).contains(&d),
        "recorded {d}s, expected about 0.5 s"
    );
}

#[test]
fn server_connection_close_reconnects_and_counts() {
    let addr = canned_server(
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
        true,
    );
    let j = Run::new()
        .n(50)
        .c(1)
        .t(1)
        .url(format!("http://{addr}/"))
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 50),
            ("connections.server_closes", 50),
            ("connections.opened", 50),
        ],
    );
}

#[test]
fn chunked_and_interim_responses() {
    let addr = canned_server(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nServer-Timing: total;dur=1\r\n\r\n",
        false,
    );
    let j = Run::new()
        .n(100)
        .c(2)
        .t(1)
        .args(["--timeout", "2s"])
        .url(format!("http://{addr}/"))
        .json();
    assert_counts(&j, &[("requests.ok", 100)]);
    assert_eq!(
        count(&j, "connections.opened"),
        2,
        "chunked framing kept the connection"
    );
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let s = embedded(ServerTls::None);
    for flag in ["--no-keepalive", "--connection-policy=new"] {
        let j = Run::new().n(200).c(2).t(1).arg(flag).url(s.url("/")).json();
        assert_eq!(count(&j, "requests.ok"), 200, "{flag}");
        assert_eq!(count(&j, "connections.opened"), 200, "{flag}");
        assert_eq!(count(&j, "latency.phases.connect.count"), 200, "{flag}");
        // The closes are ours, not the server's.
        assert_eq!(count(&j, "connections.server_closes"), 0, "{flag}");
    }
}

#[test]
fn the_connect_rate_is_limited() {
    let s = embedded(ServerTls::None);
    let j = Run::new()
        .n(50)
        .c(4)
        .t(1)
        .args(["--no-keepalive", "--max-connections-per-second", "100"])
        .url(s.url("/"))
        .json();
    assert_counts(&j, &[("connections.opened", 50)]);
    // 50 connects at 100 per second cannot take less than 0.49 s.
    assert!(num(&j, "duration_s") >= 0.49, "{}", num(&j, "duration_s"));
}

#[test]
fn a_body_sent_to_any_route_keeps_the_connection() {
    // The embedded target reads (and drops) a body its route does not use, so keep-alive holds.
    let s = embedded(ServerTls::None);
    let j = Run::new()
        .args(["-m", "POST", "--body", "hello"])
        .n(500)
        .c(2)
        .t(1)
        .url(s.url("/"))
        .json();
    assert_counts(&j, &[("requests.ok", 500), ("connections.opened", 2)]);
}

/// Bad input from a file and from a flag: each exits 2 with its one `error:` line, naming
/// what is wrong where (issue 15: the kind, hence the code, is decided where the error is
/// made, not read back from its text).
#[test]
fn a_bad_scenario_file_or_threshold_exits_2_with_its_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("bad.toml");
    std::fs::write(&scenario, "[[request]]\npath = 7\n").unwrap();
    let file = scenario.to_str().unwrap();
    let cases = [
        (
            vec!["run", "-n", "1", "--scenario", file],
            format!("error: {file}:2:8: invalid type: integer `7`, expected a string"),
        ),
        (
            vec!["run", "-n", "1", "--threshold", "p99<<5ms"],
            "error: invalid value 'p99<<5ms' for '--threshold <THRESHOLDS>': one comparison in \
             'p99<<5ms': OP is one of <, <=, >, >="
                .to_string(),
        ),
    ];
    for (args, line) in cases {
        let out = run(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors, [line.as_str()], "{args:?}: {err}");
        assert!(stdout(&out).is_empty(), "{args:?}: no run, no report");
    }
}
