//! gRPC unary calls (`run --grpc SERVICE/METHOD URL`) against a real gRPC server, Python's
//! grpcio (`tests/data/grpc/grpc_server.py` serving `echo.proto`'s `reqlife.test.Test`),
//! started here on a free loopback port; the descriptor set is the one grpc_tools.protoc
//! writes for that .proto (`--descriptor_set_out --include_imports`) when the server starts.
//! `.ci/test` installs the packages (`pip install grpcio grpcio-tools grpcio-reflection`); in
//! CI (`CI` set) their absence fails the test, elsewhere the test says so and does not run.
//! The server offers gRPC server reflection (v1alpha, grpcio-reflection's) only when asked
//! (`--reflection`), so a run without `--proto-set` meets both kinds of server.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/grpc/grpc_server.py")
}

/// Whether Python has grpcio and grpcio-tools; in CI their absence is a failure.
fn have_grpc() -> bool {
    python_has(
        "grpc, grpc_tools",
        "the Python grpcio and grpcio-tools packages",
        "pip install grpcio grpcio-tools",
    )
}

/// Whether Python has grpcio-reflection too (the server's `--reflection`).
fn have_reflection() -> bool {
    have_grpc()
        && python_has(
            "grpc_reflection",
            "the Python grpcio-reflection package",
            "pip install grpcio-reflection",
        )
}

/// The gRPC server (stopped when dropped), its URL, and the descriptor set of its service.
struct Grpc {
    _child: Stopped,
    url: String,
    proto_set: PathBuf,
    /// The texts of the Echo calls it served, one a line.
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Grpc {
    fn start() -> Grpc {
        Grpc::start_in(tempfile::tempdir().unwrap(), &[])
    }

    /// The server with TLS and `extra` arguments: a self-signed certificate for 127.0.0.1
    /// (its PEM: `cert.pem` beside the descriptor set), h2 by ALPN.
    fn start_tls(extra: &[&str]) -> Grpc {
        let dir = tempfile::tempdir().unwrap();
        let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert, ck.cert.pem()).unwrap();
        std::fs::write(&key, ck.key_pair.serialize_pem()).unwrap();
        let mut args = vec!["--tls", cert.to_str().unwrap(), key.to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut g = Grpc::start_in(dir, &args);
        g.url = g.url.replace("http://", "https://");
        g
    }

    /// The server with `extra` arguments, its files in `dir`.
    fn start_in(dir: tempfile::TempDir, extra: &[&str]) -> Grpc {
        let proto_set = dir.path().join("echo.pb");
        let log = dir.path().join("echo.log");
        let mut cmd = Command::new("python3");
        cmd.arg(script())
            .arg("--descriptor-out")
            .arg(&proto_set)
            .arg("--log")
            .arg(&log)
            .args(extra);
        let (child, port) = listening(&mut cmd, "the gRPC server");
        Grpc {
            _child: child,
            url: format!("http://127.0.0.1:{port}"),
            proto_set,
            log,
            _dir: dir,
        }
    }

    /// `run --grpc reqlife.test.Test/METHOD --proto-set … --data JSON`, the URL last.
    fn call(&self, method: &str, json: &str) -> Run {
        Run::new()
            .args(["--grpc", &format!("reqlife.test.Test/{method}")])
            .args(["--proto-set", self.proto_set.to_str().unwrap()])
            .args(["--data", json, "--timeout", "5s"])
            .url(&self.url)
    }

    /// `run --grpc reqlife.test.Test/METHOD --data JSON` without `--proto-set`: the server's
    /// reflection describes the method.
    fn reflected(&self, method: &str, json: &str) -> Run {
        Run::new()
            .args(["--grpc", &format!("reqlife.test.Test/{method}")])
            .args(["--data", json, "--timeout", "5s"])
            .url(&self.url)
    }

    fn logged(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

/// The phases every call has, and each call's status OK.
fn assert_ok_calls(s: &Value, n: u64) {
    assert_counts(
        s,
        &[
            ("requests.ok", n),
            ("requests.errors", 0),
            ("grpc_status.OK", n),
            ("status.200", n),
            ("latency.phases.write.count", n),
            ("latency.phases.wait.count", n),
            ("latency.phases.read.count", n),
        ],
    );
    assert_eq!(s["grpc_status"].as_object().unwrap().len(), 1, "{s:#}");
}

#[test]
fn closed_loop_calls_render_their_generators_per_call() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let s = server
        .call(
            "Echo",
            r#"{"text": "call {seq}", "id": "{seq}", "values": [1, 2]}"#,
        )
        .n(300)
        .c(4)
        .t(2)
        .args(["-o", rec.to_str().unwrap()])
        .json();
    assert_ok_calls(&s, 300);
    // Connect on the 4 calls that opened a connection, as for any HTTP/2 run.
    assert_counts(
        &s,
        &[
            ("connections.opened", 4),
            ("latency.phases.connect.count", 4),
        ],
    );
    // Every call carried its own message: texts "call 0" to "call 299", each once.
    let mut texts = server.logged();
    texts.sort_by_key(|t| t[5..].parse::<u64>().unwrap());
    let want: Vec<String> = (0..300).map(|i| format!("call {i}")).collect();
    assert_eq!(texts, want);
    let record: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert_eq!(record["config"]["grpc"], "reqlife.test.Test/Echo");
    assert_eq!(record["config"]["protocol"], "h2c");
    assert_eq!(record["summary"]["grpc_status"]["OK"], 300);
}

#[test]
fn calls_carry_their_trace_context_as_metadata() {
    if !have_grpc() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("traceparents");
    let server = Grpc::start_in(
        tempfile::tempdir().unwrap(),
        &["--trace-log", seen.to_str().unwrap()],
    );
    let log = dir.path().join("log.csv");
    let s = server
        .call("Echo", r#"{"text": "traced"}"#)
        .n(300)
        .c(2)
        .args(["--trace-context", "--tracestate", "reqlife=test"])
        .args(["--log-requests", log.to_str().unwrap()])
        .json();
    assert_ok_calls(&s, 300);
    let seen: Vec<String> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    super::trace::assert_each_request_carried_its_ids(&log, &seen);
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_open_loop_calls_keep_their_schedule() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let s = server
        .call("Echo", r#"{"text": "fixed"}"#)
        .args(["-R", "200", "-d", "1s", "--streams", "2"])
        .c(2)
        .json();
    let n = count(&s, "requests.total");
    // 200 calls due in the second, all sent and answered.
    assert!((190..=201).contains(&n), "{n} calls in {s:#}");
    assert_ok_calls(&s, n);
    assert!(count(&s, "latency.schedule_lag.count") >= n, "{s:#}");
    assert!(server.logged().iter().all(|t| t == "fixed"));
}

#[test]
fn tls_calls_negotiate_h2_by_alpn() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start_tls(&[]);
    let cert = server._dir.path().join("cert.pem");
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let s = server
        .call("Echo", r#"{"text": "tls"}"#)
        .args([
            "--cacert",
            cert.to_str().unwrap(),
            "-o",
            rec.to_str().unwrap(),
        ])
        .n(40)
        .c(2)
        .json();
    assert_ok_calls(&s, 40);
    assert_counts(&s, &[("latency.phases.tls.count", 2)]);
    let record: Value = serde_json::from_slice(&std::fs::read(&rec).unwrap()).unwrap();
    assert_eq!(record["config"]["protocol"], "h2");
}

#[test]
fn bursts_render_a_message_per_call() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let s = server
        .call("Echo", r#"{"text": "b{seq}"}"#)
        .args(["--burst", "8", "--bursts", "3", "--burst-interval", "5ms"])
        .c(8)
        .json();
    assert_ok_calls(&s, 24);
    let mut texts = server.logged();
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), 24, "a message per call: {texts:?}");
}

#[test]
fn a_threshold_fails_on_non_ok_statuses() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    // About half the calls end UNAVAILABLE: a failed request each, OK the others.
    let (_, s) = server
        .call(
            "Fail",
            r#"{"code": "{choice:0|14}", "message": "backend down"}"#,
        )
        .n(200)
        .c(2)
        .args(["--threshold", "errors<1%", "--seed", "7"])
        .json_exits(99);
    let ok = count(&s, "grpc_status.OK");
    let unavailable = count(&s, "grpc_status.UNAVAILABLE");
    assert_eq!(ok + unavailable, 200, "{s:#}");
    assert!(ok > 50 && unavailable > 50, "{s:#}");
    assert_counts(
        &s,
        &[
            ("requests.ok", ok),
            ("requests.errors", unavailable),
            ("errors.grpc", unavailable),
            ("status.200", 200),
        ],
    );
    assert_eq!(s["grpc_messages"]["UNAVAILABLE"], "backend down", "{s:#}");
    // The threshold measured the failed calls' share.
    let check = &s["thresholds"][0];
    assert_eq!(check["threshold"], "errors<1%");
    assert_eq!(check["pass"], false);
    assert_eq!(check["measured"].as_f64(), Some(unavailable as f64 / 2.0));
}

#[test]
fn a_deadline_exceeded_by_grpc_timeout_is_counted_by_code() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let out = server
        .call("Sleep", r#"{"ms": 400}"#)
        .n(4)
        .c(2)
        .args(["--grpc-timeout", "50ms"])
        .exits(1);
    let text = stdout(&out);
    assert!(text.contains("gRPC status  DEADLINE_EXCEEDED: 4"), "{text}");
    // The server gave up at the deadline, long before its 400 ms sleep.
    let (_, s) = server
        .call("Sleep", r#"{"ms": 400}"#)
        .n(2)
        .c(1)
        .args(["--grpc-timeout", "50ms"])
        .json_exits(1);
    assert_counts(
        &s,
        &[("grpc_status.DEADLINE_EXCEEDED", 2), ("errors.grpc", 2)],
    );
    assert!(num(&s, "latency.total.max_us") < 300_000.0, "{s:#}");
    assert!(
        stderr(&out).contains("no request succeeded") && stderr(&out).contains("DEADLINE_EXCEEDED"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_timing_trailer_goes_to_the_breakdown() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let s = server.call("Timed", r#"{"text": "t"}"#).n(50).c(1).json();
    assert_ok_calls(&s, 50);
    assert_counts(
        &s,
        &[
            ("server_timing_responses", 50),
            ("server_timing.db.count", 50),
            ("server_timing.app.count", 50),
        ],
    );
    assert!(
        (num(&s, "server_timing.db.p50_us") - 2500.0).abs() < 10.0,
        "{s:#}"
    );
}

#[test]
fn data_file_sends_the_encoded_message_as_it_is() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let dir = tempfile::tempdir().unwrap();
    // EchoRequest { text: "raw" }: field 1, length-delimited, 3 bytes.
    let message = dir.path().join("echo.bin");
    std::fs::write(&message, b"\x0a\x03raw").unwrap();
    let s = Run::new()
        .args(["--grpc", "reqlife.test.Test/Echo"])
        .args(["--data-file", message.to_str().unwrap()])
        .n(20)
        .c(1)
        .url(&server.url)
        .json();
    assert_ok_calls(&s, 20);
    assert_eq!(server.logged(), vec!["raw"; 20]);
}

#[test]
fn segments_merge_their_statuses() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let dir = tempfile::tempdir().unwrap();
    let parts: Vec<String> = (1..=2)
        .map(|i| {
            let path = dir.path().join(format!("part{i}.json"));
            server
                .call("Fail", r#"{"code": "{seq:0:1}", "message": "m{seq}"}"#)
                .n(40)
                .c(2)
                .args(["--segment", &format!("{i}/2"), "-o", path.to_str().unwrap()])
                .output();
            path.to_str().unwrap().to_string()
        })
        .collect();
    let out = run_ok(&["merge", &parts[0], &parts[1], "--json"]);
    let s = summary(&out);
    // Codes 0 and 1 (CANCELLED) in turn over the whole plan's numbers.
    assert_counts(
        &s,
        &[
            ("requests.total", 40),
            ("grpc_status.OK", 20),
            ("grpc_status.CANCELLED", 20),
        ],
    );
    assert!(
        s["grpc_messages"]["CANCELLED"]
            .as_str()
            .is_some_and(|m| m.starts_with('m')),
        "{s:#}"
    );
}

/// One line on stderr naming `what`, and exit `code`.
#[track_caller]
/// `run --grpc reqlife.test.Test/Echo --data {} -n N URL` without `--proto-set`: the method
/// must be described by the server's reflection.
fn echo_without_descriptors(url: impl AsRef<str>, n: u64) -> Run {
    Run::new()
        .args(["--grpc", "reqlife.test.Test/Echo", "--data", "{}"])
        .n(n)
        .url(url)
}

fn refused(run: Run, code: i32, what: &[&str]) {
    let out = run.exits(code);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    for w in what {
        assert!(lines[0].contains(w), "{w:?} not in {err}");
    }
}

#[test]
fn bad_input_gets_one_clear_line() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let set = server.proto_set.to_str().unwrap();
    let grpc = |method: &str| Run::new().args(["--grpc", method]).n(1).c(1);
    // (the run, what its one line names)
    let rows: Vec<(Run, &[&str])> = vec![
        (
            grpc("reqlife.test.Nope/Echo").args(["--proto-set", set, "--data", "{}"]),
            &["no service 'reqlife.test.Nope'", "reqlife.test.Test"],
        ),
        (
            grpc("reqlife.test.Test/Nope").args(["--proto-set", set, "--data", "{}"]),
            &["has no method 'Nope'", "Echo, Sleep, Fail, Timed"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args(["--proto-set", set, "--data", r#"{"nope": 1}"#]),
            &["invalid --data", "reqlife.test.EchoRequest", "nope"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args([
                "--proto-set",
                set,
                "--data",
                r#"{"id": "x{seq}"}"#,
            ]),
            &["invalid --data", "reqlife.test.EchoRequest"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args(["--proto-set", set]),
            &["--grpc needs the request message", "--data-file"],
        ),
        (
            // this server offers no reflection to describe the method
            grpc("reqlife.test.Test/Echo").args(["--data", "{}"]),
            &["offers no gRPC server reflection", "--proto-set FILE.pb"],
        ),
        (
            grpc("Echo").args(["--proto-set", set, "--data", "{}"]),
            &["invalid --grpc 'Echo'", "SERVICE/METHOD"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args(["--proto-set", "/no/such.pb", "--data", "{}"]),
            &["cannot read descriptor set '/no/such.pb'"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args([
                "--proto-set",
                script().to_str().unwrap(),
                "--data",
                "{}",
            ]),
            &["is not a descriptor set", "protoc --descriptor_set_out"],
        ),
        (
            Run::new().args(["--proto-set", set]).n(1),
            &["--proto-set applies to gRPC calls", "--grpc"],
        ),
        (
            grpc("reqlife.test.Test/Echo").args([
                "--proto-set",
                set,
                "--data",
                "{}",
                "--body",
                "x",
            ]),
            &["--body conflicts with --grpc"],
        ),
    ];
    for (run, what) in rows {
        refused(run.url(&server.url), 2, what);
    }
}

#[test]
fn a_server_that_does_not_speak_http2_stops_the_run() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let set = server.proto_set.to_str().unwrap();
    let call = || {
        Run::new()
            .args(["--grpc", "reqlife.test.Test/Echo", "--proto-set", set])
            .args(["--data", "{}", "-n", "20", "-c", "2", "--timeout", "5s"])
    };
    // An HTTP/1.1 server on an h2c URL (it answers the preface, keeping the connection),
    // and a TLS server whose ALPN offers no h2.
    let http1 = canned_server(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    refused(
        call().url(format!("http://{http1}")),
        3,
        &["does not speak HTTP/2", "gRPC needs"],
    );
    // The same server asked for reflection (no --proto-set): the h2 crate's connection,
    // whose first bytes say the same.
    refused(
        echo_without_descriptors(format!("http://{http1}"), 20).args(["--timeout", "5s"]),
        3,
        &[
            "for gRPC reflection",
            "does not speak HTTP/2",
            "--proto-set FILE.pb",
        ],
    );
    let tls = tls_server(&[b"http/1.1"]);
    refused(
        call().arg("-k").url(format!("https://{tls}")),
        3,
        &["does not offer HTTP/2 (h2) in ALPN, which gRPC needs"],
    );
}

#[test]
fn reflection_stands_in_for_the_descriptor_set() {
    if !have_reflection() {
        return;
    }
    let server = Grpc::start_in(tempfile::tempdir().unwrap(), &["--reflection"]);
    // `at` is a google.protobuf.Timestamp: its type is in a file that echo.proto imports.
    let json = r#"{"text": "r{seq}", "id": "{seq}", "values": [3], "at": "2026-11-23T17:00:00Z"}"#;
    // The same run with the descriptor set, then with the server's reflection only.
    let given = server.call("Echo", json).n(120).c(3).json();
    assert_ok_calls(&given, 120);
    let texts_given = server.logged();
    let reflected = server.reflected("Echo", json).n(120).c(3).json();
    assert_ok_calls(&reflected, 120);
    for key in ["requests.total", "connections.opened", "status.200"] {
        assert_eq!(count(&given, key), count(&reflected, key), "{key}");
    }
    // Each call's message encoded as with the descriptor set: texts r0 to r119 again.
    let texts = server.logged();
    assert_eq!(texts.len(), 240);
    let mut second: Vec<String> = texts[120..].to_vec();
    let mut first = texts_given;
    second.sort();
    first.sort();
    assert_eq!(first, second);
    assert!(second.contains(&"r119".to_string()), "{second:?}");
    // A static message is encoded once from the reflected descriptors.
    let s = server.reflected("Echo", r#"{"text": "once"}"#).n(10).json();
    assert_ok_calls(&s, 10);
    assert_eq!(server.logged().last().map(String::as_str), Some("once"));
    // Over TLS, reflection trusts what the run trusts (--cacert).
    let tls = Grpc::start_tls(&["--reflection"]);
    let cert = tls._dir.path().join("cert.pem");
    let s = tls
        .reflected("Echo", r#"{"text": "tls"}"#)
        .args(["--cacert", cert.to_str().unwrap()])
        .n(10)
        .c(2)
        .json();
    assert_ok_calls(&s, 10);
    assert!(count(&s, "latency.phases.tls.count") >= 1, "{s:#}");
}

#[test]
fn reflection_that_cannot_describe_the_method_gets_one_clear_line() {
    if !have_reflection() {
        return;
    }
    let plain = Grpc::start();
    let offering = Grpc::start_in(tempfile::tempdir().unwrap(), &["--reflection"]);
    let fix = "give --proto-set FILE.pb (protoc --descriptor_set_out";
    // A server without reflection: UNIMPLEMENTED for v1 and for v1alpha.
    refused(
        plain.reflected("Echo", "{}").n(5),
        2,
        &[
            "offers no gRPC server reflection",
            "grpc.reflection.v1.ServerReflection and grpc.reflection.v1alpha.ServerReflection: UNIMPLEMENTED",
            fix,
        ],
    );
    // A service the server does not know: NOT_FOUND, and the services it offers.
    refused(
        Run::new()
            .args(["--grpc", "reqlife.test.Nope/Echo", "--data", "{}"])
            .n(5)
            .url(&offering.url),
        2,
        &[
            "does not know service 'reqlife.test.Nope'",
            "NOT_FOUND",
            "it offers reqlife.test.Test",
            fix,
        ],
    );
    // A method the service does not have, and JSON that does not fit the reflected type.
    refused(
        offering.reflected("Nope", "{}").n(5),
        2,
        &["has no method 'Nope'", "Echo, Sleep, Fail, Timed"],
    );
    refused(
        offering.reflected("Echo", r#"{"nope": 1}"#).n(5),
        2,
        &["invalid --data", "reqlife.test.EchoRequest", "nope"],
    );
    // A call of Echo without --proto-set to `url`.
    let echo_at = |url: String| echo_without_descriptors(url, 5);
    // Nothing listens: the connection's own fix, and the descriptor set.
    refused(
        echo_at(format!("http://{}", refused_addr())),
        3,
        &[
            "cannot ask",
            "for gRPC reflection",
            "connection refused",
            fix,
        ],
    );
    // Servers that do not speak HTTP/2: HTTP/1.1 on an h2c URL, TLS without h2 in ALPN.
    let http1 = canned_server(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
        false,
    );
    refused(
        echo_at(format!("http://{http1}")),
        3,
        &[
            "for gRPC reflection",
            "does not speak HTTP/2",
            "gRPC needs",
            fix,
        ],
    );
    refused(
        echo_at(format!("https://{}", tls_server(&[b"http/1.1"]))).arg("-k"),
        3,
        &["does not offer HTTP/2 (h2) in ALPN, which gRPC needs", fix],
    );
    // A server that never answers: --timeout bounds the question (exit 1).
    refused(
        echo_at(format!(
            "http://{}",
            stalling_server(Duration::from_secs(3))
        ))
        .args(["--timeout", "1s"]),
        1,
        &["gRPC reflection from", "no answer within --timeout 1s", fix],
    );
    // No call was made by any of them.
    assert!(plain.logged().is_empty() && offering.logged().is_empty());
}

/// Rate stages and `compare` take gRPC records as any others: a ramp and a hold kept apart,
/// and calls that sleep 5 ms compared with echoes are slower by the statistics.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_stages_and_compare_work_on_calls() {
    if !have_grpc() {
        return;
    }
    let server = Grpc::start();
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let staged = path("staged.json");
    server
        .call("Echo", r#"{"text": "s{seq}"}"#)
        .args(["--stages", "1s:0->100, 1s:100", "-c", "4", "-o", &staged])
        .ok();
    let r: Value = read_json(&staged);
    let stages = r["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 2, "{r:#}");
    // The ramp's area is 50 calls, the hold's 100 (a few in flight at the end are cut).
    let (n0, n1) = (
        num(&stages[0], "requests.total"),
        num(&stages[1], "requests.total"),
    );
    assert!((45.0..=50.0).contains(&n0), "ramp {n0}");
    assert!((90.0..=100.0).contains(&n1), "hold {n1}");
    assert_eq!(n0 + n1, num(&r, "summary.requests.total"));
    assert_eq!(r["summary"]["grpc_status"]["OK"], (n0 + n1) as u64);
    let every = ["-c", "2", "-d", "2s", "--interval", "100ms", "-o"];
    let (fast, slow) = (path("fast.json"), path("slow.json"));
    server
        .call("Echo", r#"{"text": "f"}"#)
        .args(every)
        .arg(&fast)
        .ok();
    server
        .call("Sleep", r#"{"ms": 5}"#)
        .args(every)
        .arg(&slow)
        .ok();
    let c = summary(&run_ok(&["compare", &fast, &slow, "--json"]));
    let p50 = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["figure"] == "total p50")
        .unwrap_or_else(|| panic!("no total p50 in {c}"));
    assert_eq!(p50["verdict"], "slower", "{p50}");
}
