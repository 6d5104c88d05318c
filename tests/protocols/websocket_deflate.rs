//! permessage-deflate (RFC 7692) with `--compressed` on a `ws://` target (issue 38): against
//! Python's `websockets` accepting it (tests/data/ws_server.py `--deflate`: its window 12 bits,
//! every message compressed) and not, and against tests/data/ws_bad_server.py's compressed
//! replies never agreed, an extension never offered and a decompression bomb.

use super::websocket::{have_websockets, scripted};
use crate::common::*;

/// A text message of about 100 KB that compresses well, with characters of 2 and 3 bytes
/// (checked as UTF-8 once inflated).
fn big_message() -> String {
    (0..2_000)
        .map(|i| format!("message {i}: héllo, reqlife €\n"))
        .collect()
}

#[test]
fn compressed_replies_are_inflated_as_the_decode_phase() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = scripted("python3", "ws_server.py", &["--deflate"]);
    let message = big_message();
    let len = message.len() as u64;
    let run = |flags: &[&str]| {
        Run::new()
            .args(["--data", &message, "--timeout", "5s"])
            .args(flags)
            .n(40)
            .c(2)
            .url(&url)
            .json()
    };
    let j = run(&["--compressed"]);
    let opened = count(&j, "connections.opened");
    assert_counts(
        &j,
        &[
            ("requests.ok", 40),
            ("requests.errors", 0),
            ("ws_deflate.agreed", opened),
            ("latency.phases.decode.count", 40),
            // The echo's bytes, once inflated, are the message's.
            ("bytes.body_decoded", 40 * len),
        ],
    );
    let (body, written) = (num(&j, "bytes.body"), num(&j, "bytes.written"));
    eprintln!(
        "{len}-byte message: {} bytes on the wire per reply, {} written per request, decode p50 {} us",
        body / 40.0,
        written / 40.0,
        num(&j, "latency.phases.decode.p50_us")
    );
    // Compressed both ways: the reply on the wire and the message sent are a fraction of it.
    assert!(body * 5.0 < (40 * len) as f64, "{body}");
    assert!(written * 5.0 < (40 * len) as f64, "{written}");
    assert!(num(&j, "latency.phases.decode.min_us") > 0.0);
    // Without --compressed nothing is offered, so nothing is compressed: no decode phase.
    let j = run(&[]);
    assert_counts(
        &j,
        &[
            ("requests.ok", 40),
            ("bytes.body", 40 * len),
            ("bytes.body_decoded", 40 * len),
            ("latency.phases.decode.count", 0),
        ],
    );
    assert!(j.get("ws_deflate").is_none(), "{j:#}");
}

#[test]
fn a_server_that_does_not_agree_is_counted_and_said_in_the_report() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = scripted("python3", "ws_server.py", &[]);
    let (line, j) = report_and_record(&url);
    // Every connection opened (2, or 1 where one did all the requests) told it.
    let opened = count(&j, "connections.opened");
    assert!(opened >= 1);
    assert_counts(
        &j,
        &[
            ("requests.ok", 20),
            ("ws_deflate.not_agreed", opened),
            ("latency.phases.decode.count", 0),
            ("bytes.body", 20 * 14),
            ("bytes.body_decoded", 20 * 14),
        ],
    );
    assert!(
        line.contains("agreed on 0 of ") && line.ends_with("not: their messages uncompressed)"),
        "{line}"
    );
    // Agreed: said too, with nothing uncompressed:
    // `WebSocket permessage-deflate: agreed on N of N connections`.
    let (_deflating, url) = scripted("python3", "ws_server.py", &["--deflate"]);
    let (line, j) = report_and_record(&url);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 8, "{line}");
    assert_eq!((words[3], words[5], words[7]), ("on", "of", "connections"));
    assert_eq!(words[4], words[6], "{line}");
    assert_eq!(words[4], count(&j, "ws_deflate.agreed").to_string());
}

/// A run of 20 messages to `url` with `--compressed`: its report's permessage-deflate line,
/// and its record's summary (the record checked against the schema).
fn report_and_record(url: &str) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("r.json");
    let out = Run::new()
        .args([
            "--data",
            "hello, reqlife",
            "--timeout",
            "5s",
            "--compressed",
        ])
        .args(["-o", record.to_str().unwrap()])
        .n(20)
        .c(2)
        .url(url)
        .ok();
    let text = unwrapped(&stdout(&out));
    let line = text.lines().find(|l| l.contains("permessage-deflate:"));
    let line = line.unwrap_or_else(|| panic!("{text}")).trim().to_string();
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
    assert_valid_record(&r);
    (line, r["summary"].clone())
}

#[test]
fn pushed_messages_are_inflated_each() {
    if !have_websockets() {
        return;
    }
    let (_server, url) = scripted(
        "python3",
        "ws_server.py",
        &["--deflate", "--push-ms", "1", "--push-count", "4"],
    );
    let j = Run::new()
        .args(["--data", "sub", "--timeout", "5s", "--compressed"])
        .args(["--stream", "messages"])
        .n(10)
        .c(1)
        .url(&url)
        .json();
    // "pushed 0" … "pushed 3": 8 bytes each once inflated.
    assert_counts(
        &j,
        &[
            ("requests.ok", 10),
            ("ws_closes.1000", 10),
            ("ws_deflate.agreed", 10),
            ("latency.phases.decode.count", 10),
            ("bytes.body_decoded", 10 * 4 * 8),
        ],
    );
}

#[test]
fn compressed_frames_never_agreed_and_extensions_never_offered_fail() {
    // RSV1 without an agreement: a protocol error per message, with --compressed or not (the
    // server agrees to nothing).
    let (_server, url) = scripted("python3", "ws_bad_server.py", &["--mode", "rsv1"]);
    for flags in [&[][..], &["--compressed"][..]] {
        let (out, j) = Run::new()
            .args(["--data", "hi", "--timeout", "5s"])
            .args(flags)
            .n(6)
            .c(2)
            .url(&url)
            .json_exits(1);
        assert_counts(&j, &[("requests.ok", 0), ("errors.protocol", 6)]);
        let line = one_error_line(&out);
        assert!(
            line.contains("reserved bits set (no extension was agreed)"),
            "{line}"
        );
    }
    // An extension the client did not offer stops the run (exit 3) in one line; a 101 that
    // agrees to permessage-deflate without --compressed is one too.
    for (mode, named) in [
        ("extension", "'x-unknown'"),
        ("bomb", "'permessage-deflate'"),
    ] {
        let (_server, url) = scripted(
            "python3",
            "ws_bad_server.py",
            &["--mode", mode, "--size", "1000"],
        );
        let out = Run::new()
            .args(["--data", "hi", "--timeout", "5s"])
            .n(20)
            .c(2)
            .url(&url)
            .exits(3);
        let line = one_error_line(&out);
        assert!(
            line.contains("with extensions the client cannot use")
                && line.contains(named)
                && line.contains("which the client did not offer"),
            "{mode}: {line}"
        );
    }
}

#[test]
fn a_decompression_bomb_is_cut_at_max_body() {
    // 8 MB of zeros, about 8 KB on the wire.
    let (_server, url) = scripted(
        "python3",
        "ws_bad_server.py",
        &["--mode", "bomb", "--size", "8000000"],
    );
    let run = |max: &str| {
        Run::new()
            .args([
                "--data",
                "hi",
                "--timeout",
                "5s",
                "--compressed",
                "--max-body",
                max,
            ])
            .n(4)
            .c(1)
            .url(&url)
    };
    let (out, j) = run("1M").json_exits(1);
    assert_counts(&j, &[("requests.ok", 0), ("errors.protocol", 4)]);
    let line = one_error_line(&out);
    assert!(
        line.contains("inflates to more than --max-body 1000000 bytes"),
        "{line}"
    );
    // Within --max-body it is a message like any.
    let j = run("8M").json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 4),
            ("bytes.body_decoded", 4 * 8_000_000),
            ("latency.phases.decode.count", 4),
        ],
    );
    assert!(num(&j, "bytes.body") < 4.0 * 100_000.0);
}
