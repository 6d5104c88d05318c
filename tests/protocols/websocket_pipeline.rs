//! WebSocket messages in flight several at a time (`--pipeline N`: a batch in one write) and
//! replies matched to their messages by a JSON field (`--ws-match id`), against Python's
//! `websockets` (tests/data/ws_server.py: an echo, or one that answers each message on its
//! own after a delay chosen by its id, skips some ids, or sends a stray message first, or
//! compresses) and the embedded target over HTTP/2.

use super::websocket::{have_websockets, ws_server};
use crate::common::*;

/// The run of `message` (`--data`) with `flags` against `url`, `--timeout 5s` unless the
/// flags give one.
fn ws_run(url: &str, message: &str, flags: &[&str]) -> Run {
    let timeout = if flags.contains(&"--timeout") {
        &[][..]
    } else {
        &["--timeout", "5s"][..]
    };
    Run::new()
        .args(["--data", message])
        .args(timeout)
        .args(flags)
        .url(url)
}

/// The rows of a `--log-requests` file, each column by name.
fn log_rows(path: &std::path::Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn col(row: &std::collections::HashMap<String, String>, name: &str) -> u64 {
    row[name]
        .parse()
        .unwrap_or_else(|_| panic!("{name}: {row:?}"))
}

#[test]
fn pipelined_messages_in_order_are_counted_and_their_phases_add_up() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = ws_server(&[]);
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("r.json");
    let out = ws_run(&url, "hello, reqlife", &["--pipeline", "8", "-t", "1"])
        .n(800)
        .c(2)
        .args(["--json", "-o", record.to_str().unwrap()])
        .ok();
    let j = summary(&out);
    // 100 batches of 8 on 2 connections: every reply answers its message, in order.
    assert_counts(
        &j,
        &[
            ("requests.ok", 800),
            ("requests.errors", 0),
            ("connections.opened", 2),
            ("latency.phases.ws_upgrade.count", 2),
            ("latency.phases.write.count", 800),
            ("latency.phases.wait.count", 800),
            ("latency.phases.read.count", 800),
            ("bytes.body", 800 * 14),
            ("bytes.headers", 800 * 2),
        ],
    );
    assert!(j.get("ws_unmatched").is_none(), "{j}");
    let parts = [
        "phases.connect",
        "phases.ws_upgrade",
        "phases.write",
        "phases.wait",
        "phases.read",
    ];
    assert_phases_add_up(&j, &parts, 0.01, 50.0);
    let r = read_json(&record);
    assert_eq!(r["config"]["pipeline"], 8);
    assert!(r["config"].get("ws_match").is_none());
    // The report's header says how the messages went.
    let out = ws_run(&url, "hi", &["--pipeline", "4"]).n(8).c(1).ok();
    assert!(
        unwrapped(&stdout(&out))
            .contains("pipelined: 4 messages per connection sent in one write, answered in order"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn out_of_order_replies_are_matched_to_their_messages_by_id() {
    if !have_websockets() {
        return;
    }
    // Four messages go together (ids 1000 + 4k to 1003 + 4k); the server answers id i
    // after 30, 20, 10, 0 ms by i mod 4: in reverse. Each message's pad, and so its length,
    // is its id's (line i mod 4 of the file: 1 to 4 bytes); the server echoes it.
    let (_server, url) = ws_server(&["--id-delays-ms", "30,20,10,0"]);
    let dir = tempfile::tempdir().unwrap();
    let pads = dir.path().join("pads.txt");
    std::fs::write(&pads, "a\naa\naaa\naaaa\n").unwrap();
    let message = format!(
        r#"{{"id":{{seq:1000:9999}},"pad":"{{line:{}}}"}}"#,
        pads.display()
    );
    let log = dir.path().join("log.csv");
    let flags = ["--pipeline", "4", "--log-requests", log.to_str().unwrap()];
    let matched = ws_run(&url, &message, &flags)
        .args(["--ws-match", "id"])
        .n(40)
        .c(1)
        .ok();
    assert!(unwrapped(&stdout(&matched)).contains("replies matched by their id"));
    let rows = log_rows(&log);
    assert_eq!(rows.len(), 40);
    for row in &rows {
        // Each message got its own echo: the frame it wrote is the reply's and a mask's 4
        // bytes longer.
        let (read, written) = (col(row, "bytes_read"), col(row, "bytes_written"));
        assert_eq!(written, read + 4, "{row:?}");
        // And its wait is its id's delay: a pad of k bytes is an id of k - 1 mod 4, delayed
        // (4 - k) × 10 ms (the next delay 10 ms further: none reaches it). The frame: 6
        // bytes of header and mask, then {"id":NNNN,"pad":"…"}.
        let pad = written - 6 - r#"{"id":1000,"pad":""}"#.len() as u64;
        let delay_ms = (4 - pad) * 10;
        // From before its write (the server may have it before `written` is stamped; the
        // reply's arrival is the kernel's stamp).
        let wait_ms = (col(row, "write_ns") + col(row, "wait_ns")) as f64 / 1e6;
        assert!(
            wait_ms >= delay_ms as f64 && wait_ms < delay_ms as f64 + 9.0,
            "a pad of {pad} bytes waited {wait_ms} ms, not {delay_ms} ms: {row:?}"
        );
    }
    // In order (no --ws-match), the first reply answers the first message: most messages
    // get another's echo.
    ws_run(&url, &message, &flags).n(40).c(1).ok();
    let rows = log_rows(&log);
    let others = rows
        .iter()
        .filter(|r| col(r, "bytes_written") != col(r, "bytes_read") + 4)
        .count();
    assert!(others >= 20, "{others} of 40 messages got another's echo");
}

#[test]
fn replies_that_match_no_message_are_counted_apart() {
    if !have_websockets() {
        return;
    }
    // Before each echo, a message whose id is "stray".
    let (_server, url) = ws_server(&["--stray"]);
    let dir = tempfile::tempdir().unwrap();
    for depth in ["1", "4"] {
        let record = dir.path().join(format!("r{depth}.json"));
        let out = ws_run(
            &url,
            r#"{"id":{seq}}"#,
            &["--ws-match", "id", "--pipeline", depth],
        )
        .n(40)
        .c(2)
        .args(["-o", record.to_str().unwrap()])
        .ok();
        let report = unwrapped(&stdout(&out));
        assert!(
            report.contains("WebSocket    unmatched replies: 40"),
            "--pipeline {depth}: {report}"
        );
        let r = read_json(&record);
        assert_counts(
            &r["summary"],
            &[
                ("requests.ok", 40),
                ("requests.errors", 0),
                ("ws_unmatched", 40),
            ],
        );
        // One connection may carry all 40 before the second has opened (CI saw it once, in 30 ms).
        let opened = r["summary"]["connections"]["opened"].as_u64().unwrap();
        assert!(
            (1..=2).contains(&opened),
            "{opened} connections opened with -c 2"
        );
        assert_eq!(r["config"]["ws_match"], "id");
        assert_valid_record(&r);
    }
}

#[test]
fn a_message_whose_reply_never_comes_times_out_alone_when_matched() {
    if !have_websockets() {
        return;
    }
    // Ids 0, 4, 8, 12 are never answered: the first message of each batch of 4.
    let (_server, url) = ws_server(&["--skip-every", "4"]);
    let flags = ["--pipeline", "4", "--timeout", "300ms"];
    // Matched: those four time out, the others are answered, on the one connection.
    let run = ws_run(&url, r#"{"id":{seq}}"#, &flags)
        .args(["--ws-match", "id"])
        .n(16)
        .c(1);
    let (_, j) = run.json_exits(0);
    assert_counts(
        &j,
        &[
            ("requests.ok", 12),
            ("errors.timeout", 4),
            ("connections.opened", 1),
        ],
    );
    // In order: each batch's 3 replies answer its first 3 messages, the last times out and
    // its connection is dropped (a late reply would answer the wrong message).
    let (_, j) = ws_run(&url, r#"{"id":{seq}}"#, &flags)
        .n(16)
        .c(1)
        .json_exits(0);
    assert_counts(
        &j,
        &[
            ("requests.ok", 12),
            ("errors.timeout", 4),
            ("connections.opened", 4),
        ],
    );
}

#[test]
fn pipelined_messages_go_compressed_and_over_http2_too() {
    // Over HTTP/2 (RFC 8441, the embedded target's /ws echo): a batch is a stream's DATA.
    let s = embedded(reqlife::server::ServerTls::None);
    let url = format!("ws://{}/ws", s.addr());
    for matched in [&[][..], &["--ws-match", "id"][..]] {
        let j = ws_run(&url, r#"{"id":{seq}}"#, &["--http2", "--pipeline", "8"])
            .args(matched)
            .n(400)
            .c(2)
            .json();
        assert_counts(
            &j,
            &[
                ("requests.ok", 400),
                ("requests.errors", 0),
                ("connections.opened", 2),
                ("latency.phases.wait.count", 400),
            ],
        );
    }
    if !have_websockets() {
        return;
    }
    // permessage-deflate agreed: every reply inflated on its own (`decode`), in order.
    let (_server, url) = ws_server(&["--deflate"]);
    let message = "a message that compresses well, ".repeat(8);
    let j = ws_run(&url, &message, &["--compressed", "--pipeline", "4"])
        .n(200)
        .c(2)
        .json();
    let decoded = message.len() as u64 * 200;
    assert_counts(
        &j,
        &[
            ("requests.ok", 200),
            ("ws_deflate.agreed", 2),
            ("latency.phases.decode.count", 200),
            ("bytes.body_decoded", decoded),
        ],
    );
    assert!(count(&j, "bytes.body") < decoded / 2, "{}", j["bytes"]);
}

#[test]
fn bad_pipeline_and_match_flags_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    std::fs::write(&file, b"x").unwrap();
    let file = file.to_str().unwrap();
    // (url, flags, a part of the message)
    let rows: [(&str, &[&str], &str); 8] = [
        (
            "http://127.0.0.1:9/",
            &["--ws-match", "id"],
            "--ws-match applies to WebSocket targets only",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--body-file", file, "--ws-match", "id"],
            "--ws-match id needs a JSON message template from --data",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--data", r#"{"op":"quote","n":{seq}}"#, "--ws-match", "id"],
            "has no field id",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--data", r#"{"id":1}"#, "--ws-match", "id"],
            "every message carries the same id (1)",
        ),
        (
            "ws://127.0.0.1:9/",
            &[
                "--data",
                r#"{"id":{seq}}"#,
                "--ws-match",
                "id",
                "--compressed",
            ],
            "not with --compressed",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--data", "x", "--pipeline", "0"],
            "--pipeline must be from 1 to 1024",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--data", "x", "--pipeline", "4", "-R", "100"],
            "--pipeline 4 needs a closed loop",
        ),
        (
            "ws://127.0.0.1:9/",
            &["--data", "x", "--pipeline", "4", "--no-keepalive"],
            "--pipeline 4 with a new connection per request",
        ),
    ];
    for (url, flags, want) in rows {
        let out = Run::new().args(flags).url(url).exits(2);
        let err = stderr(&out);
        assert!(
            err.contains(want) && err.trim().lines().count() == 1,
            "{url} {flags:?}: {err}"
        );
    }
}
