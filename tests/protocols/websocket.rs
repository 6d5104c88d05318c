//! WebSocket (`ws://`, issue 38's first slice) against a real server: Python's `websockets`
//! (tests/data/ws_server.py, an echo server with a chosen delay per reply, or one that answers
//! the upgrade with another status, or closes at once), started here on a free loopback port.
//! `.ci/test` installs the package (`pip install websockets`); in CI (`CI` set) its absence
//! fails the test, elsewhere the test says so and does not run.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// Whether Python has the websockets package; in CI its absence is a failure.
fn have_websockets() -> bool {
    python_has(
        "websockets",
        "the Python websockets package",
        "pip install websockets",
    )
}

/// The echo server with `extra` options, stopped when dropped, and its `ws://` URL.
fn ws_server(extra: &[&str]) -> (Stopped, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ws_server.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script).args(extra);
    let (child, port) = listening(&mut cmd, "the WebSocket server");
    (child, format!("ws://127.0.0.1:{port}/echo"))
}

fn ws_run(url: &str) -> Run {
    Run::new()
        .args(["--data", "hello, reqlife", "--timeout", "5s"])
        .url(url)
}

#[test]
fn messages_are_counted_with_one_upgrade_per_connection() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = ws_server(&[]);
    let j = ws_run(&url).n(500).c(4).t(2).json();
    // 14 bytes of payload and a 2-byte header per reply; one upgrade per connection.
    assert_counts(
        &j,
        &[
            ("requests.ok", 500),
            ("requests.errors", 0),
            ("connections.opened", 4),
            ("latency.phases.connect.count", 4),
            ("latency.phases.ws_upgrade.count", 4),
            ("latency.phases.write.count", 500),
            ("latency.phases.wait.count", 500),
            ("latency.phases.read.count", 500),
            ("bytes.body", 500 * 14),
            ("bytes.headers", 500 * 2),
        ],
    );
    assert!(num(&j, "latency.phases.ws_upgrade.min_us") > 0.0);
    // A binary message from a file, with the server's pings between: answered, not replies.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    std::fs::write(&file, [0u8, 1, 2, 255]).unwrap();
    let (_pinging, url) = ws_server(&["--ping"]);
    let j = Run::new()
        .args(["--body-file", file.to_str().unwrap(), "--timeout", "5s"])
        .n(50)
        .c(2)
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 50), ("bytes.body", 50 * 4)]);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_wait_of_a_20ms_reply_is_20ms_plus_the_loopback_floor() {
    if !have_websockets() {
        return;
    }
    let wait_p50 = |delay: &str| {
        let (_server, url) = ws_server(&["--delay-ms", delay]);
        let j = ws_run(&url).n(200).c(1).json();
        assert_counts(&j, &[("requests.ok", 200)]);
        num(&j, "latency.phases.wait.p50_us")
    };
    let floor = wait_p50("0");
    let wait = wait_p50("20");
    let server = wait - floor;
    eprintln!("wait p50: {wait:.0} us at 20 ms, floor {floor:.0} us: {server:.0} us the server's");
    assert!(floor < 2_000.0, "loopback floor {floor} us");
    assert!(
        (server - 20_000.0).abs() <= 400.0,
        "wait p50 {wait} us less the floor {floor} us is not within 2% of 20 ms"
    );
}

#[test]
fn an_upgrade_answered_without_101_stops_the_run_in_one_line_naming_the_status() {
    if !have_websockets() {
        return;
    }
    for (status, words) in [("404", "404 Not Found"), ("200", "200 OK")] {
        let (_server, url) = ws_server(&["--status", status]);
        let out = ws_run(&url).n(100).c(2).exits(3);
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(
            lines[0].contains("did not accept the WebSocket upgrade")
                && lines[0].contains(&format!("upgrade with {words}, not 101")),
            "{err}"
        );
    }
}

#[test]
fn a_server_that_closes_at_once_gives_closed_errors() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = ws_server(&["--close"]);
    let out = ws_run(&url).n(20).c(2).arg("--json").output();
    assert_ne!(out.status.code(), Some(0), "{}", stderr(&out));
    let j = summary(&out);
    assert_counts(
        &j,
        &[
            ("requests.ok", 0),
            ("errors.closed", 20),
            ("latency.phases.ws_upgrade.count", 20),
        ],
    );
    assert!(stderr(&out).contains("closed the WebSocket (code 1000)"));
}

#[test]
fn bad_websocket_input_is_one_line_and_exit_2() {
    for (flags, want) in [
        (
            &["--http2", "--data", "x"][..],
            "--http2 does not apply to WebSocket",
        ),
        (
            &["--grpc", "a.B/C"][..],
            "--grpc does not apply to WebSocket",
        ),
        (&[][..], "needs a message to send"),
    ] {
        let out = Run::new().args(flags).url("ws://127.0.0.1:9/").exits(2);
        let err = stderr(&out);
        assert!(
            err.contains(want) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
}

#[test]
fn open_loop_messages_have_the_schedule_phases() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = ws_server(&["--delay-ms", "2"]);
    let j = ws_run(&url)
        .args(["-R", "200", "-d", "1s"])
        .c(4)
        .t(1)
        .json();
    let ok = count(&j, "requests.ok");
    assert!((150..=210).contains(&ok), "{ok} messages at 200/s for 1s");
    assert_counts(
        &j,
        &[
            ("requests.errors", 0),
            ("latency.phases.ws_upgrade.count", 4),
            ("latency.phases.wait.count", ok),
            ("latency.schedule_lag.count", ok),
            ("latency.phases.queue.count", ok),
        ],
    );
}
