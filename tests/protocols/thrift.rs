//! Framed binary requests (`tcp://HOST:PORT --payload-file FILE`) against a real Thrift
//! server, Apache Thrift's Python package (`examples/thrift/echo_server.py`: TThreadedServer,
//! TFramedTransport, TBinaryProtocol), started here on a free loopback port, the request
//! bytes made by the same package's client serializer; and against raw servers whose frames
//! lie. `.ci/test` installs the package (`pip install thrift`); in CI (`CI` set) its absence
//! fails the test, elsewhere the test says so and does not run.

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/thrift/echo_server.py")
}

/// Whether Python has the thrift package; in CI its absence is a failure.
fn have_thrift() -> bool {
    python_has("thrift", "the Python thrift package", "pip install thrift")
}

/// The Thrift server, killed when dropped.
struct Thrift {
    _child: Stopped,
    port: u16,
}

fn thrift_server(extra: &[&str]) -> Thrift {
    let mut cmd = Command::new("python3");
    cmd.arg(script()).arg("serve").args(extra);
    let (child, port) = listening(&mut cmd, "the Thrift server");
    Thrift {
        _child: child,
        port,
    }
}

/// One framed `echo` call made by Thrift's client serializer, in `dir`.
fn echo_request(dir: &Path) -> PathBuf {
    let out = Command::new("python3")
        .arg(script())
        .arg("request")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = dir.join("echo.bin");
    std::fs::write(&path, out.stdout).unwrap();
    path
}

/// Runs reqlife against `url` with `args` and returns the summary (`--json`).
fn framed_run(url: &str, payload: &Path, args: &[&str]) -> Value {
    let mut all = vec!["run", url, "--payload-file", payload.to_str().unwrap()];
    all.push("--json");
    all.extend_from_slice(args);
    if !args.contains(&"--timeout") {
        all.extend_from_slice(&["--timeout", "5s"]);
    }
    summary(&run(&all))
}

#[test]
fn thrift_keep_alive_counts_phases_and_seqids() {
    if !have_thrift() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("seqids");
    let server = thrift_server(&["--seqid-log", log.to_str().unwrap()]);
    let payload = echo_request(dir.path());
    let url = format!("tcp://127.0.0.1:{}", server.port);
    let rec = dir.path().join("run.json");
    let s = framed_run(
        &url,
        &payload,
        &["-c", "4", "-t", "2", "-n", "300", "--seqid-offset", "16"],
    );
    // Connect on the 4 requests that opened a connection; the rest on every request. The
    // echo reply: a 4-byte prefix and a frame of 26 bytes (version, name, seqid, "hi").
    assert_counts(
        &s,
        &[
            ("requests.ok", 300),
            ("requests.errors", 0),
            ("connections.opened", 4),
            ("latency.phases.connect.count", 4),
            ("latency.phases.write.count", 300),
            ("latency.phases.wait.count", 300),
            ("latency.phases.read.count", 300),
            ("latency.total.count", 300),
            ("bytes.read", 300 * 30),
            ("bytes.headers", 300 * 4),
        ],
    );
    // Each request carried its own sequence number as Thrift's seqid.
    let mut seqids: Vec<u64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    seqids.sort();
    assert_eq!(seqids, (0..300).collect::<Vec<u64>>());
    // The record says it was a framed TCP run, and validates.
    let out = run(&[
        "run",
        &url,
        "--payload-file",
        payload.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "10",
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("u32be-framed tcp"),
        "{}",
        stdout(&out)
    );
    let record: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert_eq!(record["config"]["protocol"], "tcp");
    assert_eq!(record["config"]["method"], "u32be-framed");
    assert_valid_record(&record);
}

#[test]
fn thrift_pool_no_pool_bursts_and_open_loop() {
    if !have_thrift() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = thrift_server(&["--sleep-ms", "20"]);
    let payload = echo_request(dir.path());
    let url = format!("tcp://127.0.0.1:{}", server.port);
    // No pool: a connection per request, each with its connect phase.
    let s = framed_run(
        &url,
        &payload,
        &["-c", "4", "-n", "60", "--connection-policy", "new"],
    );
    assert_counts(
        &s,
        &[
            ("requests.ok", 60),
            ("connections.opened", 60),
            ("latency.phases.connect.count", 60),
        ],
    );
    // Every request holds the server's 20 ms, and it shows in the wait. Not every wait: a
    // worker preempted between its write and the stamp of the write's end starts that wait
    // late while the reply's arrival is the kernel's stamp (CI, two loaded cores: a write of
    // 3.2 ms and a wait of 17.5 ms), so the bound on each request is on its total.
    assert!(num(&s, "latency.total.min_us") >= 19_000.0, "{s}");
    assert!(num(&s, "latency.phases.wait.p50_us") >= 19_000.0, "{s}");
    // Bursts of 20 at once, pooled: 20 connections opened in all.
    let s = framed_run(&url, &payload, &["--burst", "20", "--bursts", "3"]);
    assert_counts(&s, &[("requests.ok", 60), ("connections.opened", 20)]);
    // Bursts without a pool: every request connects.
    let s = framed_run(
        &url,
        &payload,
        &["--burst", "20", "--bursts", "3", "--no-keepalive"],
    );
    assert_counts(
        &s,
        &[("requests.ok", 60), ("latency.phases.connect.count", 60)],
    );
    // An open loop at 100 req/s for a second.
    let s = framed_run(&url, &payload, &["-R", "100", "-d", "1s", "-c", "8"]);
    assert!(count(&s, "requests.ok") >= 90, "{s}");
    assert_eq!(count(&s, "requests.errors"), 0, "{s}");
}

/// A raw framed server: reads each request frame and answers with `reply`, then closes when
/// `close` is true.
fn frame_server(reply: &'static [u8], close: bool) -> std::net::SocketAddr {
    raw_server(move |mut s| loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        let mut frame = vec![0u8; u32::from_be_bytes(len) as usize];
        if s.read_exact(&mut frame).is_err() || s.write_all(reply).is_err() || close {
            return;
        }
    })
}

fn frame_file(dir: &Path) -> PathBuf {
    let path = dir.join("req.bin");
    std::fs::write(&path, b"\x00\x00\x00\x05hello").unwrap();
    path
}

#[test]
fn lying_frames_are_errors_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let payload = frame_file(dir.path());
    // (reply, close after it, extra flags, error kind, first error's words)
    type Row = (
        &'static [u8],
        bool,
        &'static [&'static str],
        &'static str,
        &'static str,
    );
    let rows: [Row; 4] = [
        // Announces 1000 bytes, sends 10, closes.
        (
            b"\x00\x00\x03\xe80123456789",
            true,
            &[],
            "closed",
            "after 14 of 1004 reply bytes",
        ),
        // Closes in the length prefix.
        (b"\x00\x00", true, &[], "closed", "2 of the 4 length-prefix"),
        // Announces more than --max-body.
        (
            b"\x00\x0f\x42\x40",
            false,
            &["--max-body", "1000"],
            "protocol",
            "announces 1000000 bytes, more than --max-body 1000",
        ),
        // Sends more than it announced.
        (
            b"\x00\x00\x00\x02abcde",
            false,
            &[],
            "protocol",
            "3 bytes after",
        ),
    ];
    for (reply, close, extra, kind, words) in rows {
        let addr = frame_server(reply, close);
        let url = format!("tcp://{addr}");
        let rec = dir.path().join("lie.json");
        let mut args = vec!["-c", "1", "-n", "5", "-o", rec.to_str().unwrap()];
        args.extend_from_slice(extra);
        let s = framed_run(&url, &payload, &args);
        assert_counts(
            &s,
            &[(format!("errors.{kind}").as_str(), 5), ("requests.ok", 0)],
        );
        let record: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
        let first = record["first_errors"][kind].as_str().unwrap_or_default();
        assert!(first.contains(words), "{kind}: {first}");
    }
}

#[test]
fn unframed_replies_of_a_fixed_length() {
    let dir = tempfile::tempdir().unwrap();
    let payload = dir.path().join("ping.bin");
    std::fs::write(&payload, b"PING").unwrap();
    let addr = raw_server(|mut s| {
        let mut req = [0u8; 4];
        while s.read_exact(&mut req).is_ok() {
            if s.write_all(b"PONG!!").is_err() {
                return;
            }
        }
    });
    let url = format!("tcp://{addr}");
    let s = framed_run(
        &url,
        &payload,
        &[
            "-c",
            "2",
            "-n",
            "50",
            "--framing",
            "none",
            "--response-bytes",
            "6",
        ],
    );
    assert_counts(&s, &[("requests.ok", 50), ("bytes.read", 300)]);
    // Asking for more than the server sends: the wait ends in a timeout.
    let s = framed_run(
        &url,
        &payload,
        &[
            "-c",
            "1",
            "-n",
            "2",
            "--framing",
            "none",
            "--response-bytes",
            "8",
            "--timeout",
            "300ms",
        ],
    );
    assert_counts(&s, &[("errors.timeout", 2)]);
}

#[test]
fn bad_framed_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let payload = frame_file(dir.path());
    let p = payload.to_str().unwrap();
    let unframed = dir.path().join("raw.bin");
    std::fs::write(&unframed, b"hello").unwrap();
    let u = unframed.to_str().unwrap();
    // (args after `run`, words of the error)
    let rows: [(&[&str], &str); 8] = [
        (&["tcp://127.0.0.1:9"], "needs --payload-file"),
        (
            &["http://127.0.0.1:9/", "--framing", "u32be"],
            "--framing applies to framed binary requests",
        ),
        (
            &[
                "tcp://127.0.0.1:9",
                "--payload-file",
                "/nonexistent/req.bin",
            ],
            "cannot read payload file '/nonexistent/req.bin'",
        ),
        (
            &["tcp://127.0.0.1:9", "--payload-file", u],
            "not one u32be frame",
        ),
        (&["tcp://127.0.0.1", "--payload-file", p], "no port"),
        (
            &[
                "tcp://127.0.0.1:9",
                "--payload-file",
                p,
                "--framing",
                "none",
            ],
            "needs --response-bytes",
        ),
        (
            &[
                "tcp://127.0.0.1:9",
                "--payload-file",
                p,
                "--seqid-offset",
                "6",
            ],
            "--seqid-offset 6 does not fit",
        ),
        (
            &["tcp://127.0.0.1:9", "--payload-file", p, "--http2"],
            "--http2 applies to HTTP",
        ),
    ];
    for (args, words) in rows {
        let mut all = vec!["run", "-n", "1"];
        all.extend_from_slice(args);
        let out = run(&all);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(words), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}
