//! A run that cannot work says so at once and names the fix (issue 17): every connection
//! failing the same way before any request succeeded stops a 10 s run within moments (exit 3),
//! a host that does not resolve is bad input (exit 2), responses that are all HTTP errors exit
//! 4 with the statuses named, a low `ulimit -n` is raised or refused before the start, and a
//! server that stops answering mid-run is said first and exits 5.
//! Every run is bounded by `-d` (10 s at most, expected to end far sooner) or `-n`.

use crate::common::*;
use reqlife::server::ServerTls;
use serde_json::Value;
use std::process::Output;
use std::time::{Duration, Instant};

/// The bound on a 10 s run that the fail-fast rule stops.
const FAST: Duration = Duration::from_secs(2);

/// Runs `reqlife run -d 10s -c 10 --quiet -o RECORD` with `extra` and the URL last; gives the
/// output, how long it took and the record (if one was written).
fn run_10s(extra: &[&str], url: &str) -> (Output, Duration, Option<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let started = Instant::now();
    let out = Run::new()
        .args(["-d", "10s"])
        .c(10)
        .t(2)
        .args(["--quiet", "-o", rec.to_str().unwrap()])
        .args(extra)
        .url(url)
        .output();
    let took = started.elapsed();
    let record = std::fs::read_to_string(&rec)
        .ok()
        .map(|t| serde_json::from_str(&t).unwrap());
    (out, took, record)
}

/// Asserts a fail-fast stop: within [`FAST`], exit 3, `hint` on stderr, and a valid record
/// whose stop reason names `cause`.
fn assert_stopped(
    what: &str,
    r: (Output, Duration, Option<Value>),
    cause: &str,
    hint: &str,
) -> String {
    let (out, took, record) = r;
    let err = stderr(&out);
    assert!(took < FAST, "{what}: took {took:?}: {err}");
    assert_eq!(out.status.code(), Some(3), "{what}: {err}");
    assert!(err.contains(hint), "{what}: no '{hint}' in: {err}");
    assert!(err.contains("no request succeeded"), "{what}: {err}");
    assert!(stdout(&out).contains("STOPPED EARLY"), "{what}");
    let record = record.unwrap_or_else(|| panic!("{what}: no record"));
    assert_eq!(
        record["stop_reason"].as_str(),
        Some(format!("fail fast: {cause}").as_str()),
        "{what}"
    );
    assert_eq!(count(&record, "summary.requests.ok"), 0, "{what}");
    assert!(count(&record, "summary.requests.errors") > 0, "{what}");
    assert_valid_record(&record);
    err
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_an_untrusted_certificate_stops_at_once_and_cacert_fixes_it() {
    let s = embedded(ServerTls::SelfSigned);
    let url = s.url("/");
    let err = assert_stopped(
        "untrusted certificate",
        run_10s(&[], &url),
        "untrusted certificate",
        "--cacert FILE",
    );
    assert!(err.contains("-k/--insecure"), "{err}");
    // --cacert with the server's certificate: the same run succeeds.
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, s.cert_pem().unwrap()).unwrap();
    let j = Run::new()
        .n(200)
        .c(2)
        .args(["--cacert", ca.to_str().unwrap()])
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 200)]);
    // A --cacert that is missing or not PEM: one line, exit 2, before anything is sent.
    let not_pem = dir.path().join("not.pem");
    std::fs::write(&not_pem, "hello\n").unwrap();
    let missing = dir.path().join("missing.pem");
    for (file, want) in [
        (&missing, "cannot read CA file"),
        (&not_pem, "no PEM certificate found"),
    ] {
        let out = run(&["run", "-n", "1", "--cacert", file.to_str().unwrap(), &url]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_port_where_nothing_listens_stops_at_once() {
    let addr = refused_addr();
    assert_stopped(
        "refused",
        run_10s(&[], &format!("http://{addr}/")),
        "connection refused",
        &format!("connection refused: is the server running on {addr}?"),
    );
    // An open loop's connections opened ahead of the schedule count as attempts too.
    assert_stopped(
        "refused, open loop",
        run_10s(&["-R", "1000"], &format!("http://{addr}/")),
        "connection refused",
        "is the server running",
    );
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_knee_against_a_port_where_nothing_listens_stops_at_once() {
    let addr = refused_addr();
    let started = Instant::now();
    let out = run(&[
        "knee",
        "--slo",
        "p99<=2ms",
        "--step",
        "10s",
        "-c",
        "4",
        "--quiet",
        &format!("http://{addr}/"),
    ]);
    assert!(started.elapsed() < FAST, "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("is the server running on {addr}?")),
        "{}",
        stderr(&out)
    );
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_host_that_does_not_resolve_is_named_before_the_start() {
    let started = Instant::now();
    let out = run(&["run", "-d", "10s", "http://nonexistent.invalid/"]);
    assert!(started.elapsed() < FAST, "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("cannot resolve host 'nonexistent.invalid'"),
        "{err}"
    );
    assert!(err.contains("check the host name in the URL"), "{err}");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_tls_and_plain_http_mixed_up_stop_at_once() {
    // https:// to a plain HTTP server.
    let plain = embedded(ServerTls::None);
    let url = plain.url("/").replacen("http://", "https://", 1);
    assert_stopped(
        "https to plain",
        run_10s(&[], &url),
        "not TLS",
        "use http:// instead of https://",
    );
    // http:// to a TLS server.
    let tls = embedded(ServerTls::SelfSigned);
    let url = tls.url("/").replacen("https://", "http://", 1);
    assert_stopped(
        "http to TLS",
        run_10s(&[], &url),
        "TLS server",
        "use https:// instead of http://",
    );
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_http2_not_offered_by_alpn_stops_at_once() {
    // A server whose ALPN offers only http/1.1 (it refuses h2 with an alert), and one with
    // no ALPN at all (the handshake succeeds without h2).
    for alpn in [&[&b"http/1.1"[..]][..], &[]] {
        let addr = tls_server(alpn);
        let url = format!("https://{addr}/");
        assert_stopped(
            &format!("ALPN {alpn:?}"),
            run_10s(&["--http2", "-k"], &url),
            "ALPN",
            "does not offer HTTP/2 (h2) in ALPN: drop --http2",
        );
        // The same server over HTTP/1.1 works.
        let j = Run::new().n(20).c(2).arg("-k").url(&url).json();
        assert_counts(&j, &[("requests.ok", 20)]);
    }
}

#[test]
fn every_response_an_http_error_is_named_and_exits_4() {
    let s = embedded(ServerTls::None);
    let (out, j) = Run::new()
        .args(["-d", "300ms"])
        .c(2)
        .url(s.url("/status/404"))
        .json_exits(4);
    let want = "every response was 404 Not Found: check the URL's path";
    assert!(stderr(&out).contains(want), "{}", stderr(&out));
    assert!(count(&j, "requests.ok") > 0);
    assert!(
        j["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains(want)),
        "{}",
        j["warnings"]
    );
    // One success among the errors: a run like any other.
    let out = Run::new()
        .args(["-d", "300ms"])
        .c(2)
        .arg("--json")
        .url(s.url("/"))
        .ok();
    assert!(!stderr(&out).contains("every response"));
}

/// `sh -c 'ulimit LIMIT; exec reqlife ARGS'`.
fn under_ulimit(limit: &str, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_reqlife"))
        .args(args)
        .output()
        .unwrap();
    (out, started.elapsed())
}

/// The hard limit on open files of this process (inherited by its children).
fn hard_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
    lim.rlim_max
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_low_open_file_limit_is_raised_or_refused_before_the_start() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    // Soft and hard limit 64: 200 connections cannot be opened; refused at once.
    let (out, took) = under_ulimit("-n 64", &["run", "-d", "10s", "-c", "200", "-t", "2", &url]);
    let err = stderr(&out);
    assert!(took < FAST, "{took:?}");
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("the limit (ulimit -n) is 64"), "{err}");
    assert!(err.contains("raise it with `ulimit -n "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(stdout(&out).is_empty());
    // Soft limit 64 under a higher hard limit: raised, said in one line, and the run works.
    if hard_nofile() < 1024 {
        eprintln!("skipped the raise: the hard limit is {}", hard_nofile());
        return;
    }
    let (out, _) = under_ulimit(
        "-Sn 64",
        &["run", "-n", "2000", "-c", "200", "-t", "2", "--json", &url],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("raised the open-file limit (ulimit -n) from 64 to"),
        "{err}"
    );
    assert_counts(
        &summary(&out),
        &[("requests.ok", 2000), ("requests.errors", 0)],
    );
    // A limit that is enough already: not a word.
    let out = run_ok(&["run", "-n", "20", "-c", "2", &url]);
    assert!(!stderr(&out).contains("open-file limit"));
}

#[test]
fn refusals_after_a_success_keep_the_run_going() {
    // A server that answers 20 connections (one request each, then closes) and then stops
    // listening: later connects are refused, but requests succeeded first, so the run goes
    // on for its whole duration and counts every refusal, each a pause after the last
    // (doubling from 1 ms to 100 ms): the server stopped answering for most of the run, which
    // is said, and exits 5.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in listener.incoming().take(20).flatten() {
            std::thread::spawn(move || {
                let mut s = socket;
                if read_request(&mut s) {
                    use std::io::Write;
                    let _ = s.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                }
            });
        }
        // The listener is dropped here: nothing listens any more.
    });
    let started = Instant::now();
    let (out, j) = Run::new()
        .args(["-d", "1s"])
        .c(1)
        .t(1)
        .url(format!("http://{addr}/"))
        .json_exits(5);
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_counts(&j, &[("requests.ok", 20)]);
    // 1 + 2 + 4 + … + 64 ms, then 100 ms apart: some 15 refusals in the second, not
    // thousands in a tight loop.
    let refused = count(&j, "errors.connect");
    assert!((5..=30).contains(&refused), "{}", j["errors"]);
    assert!(!stderr(&out).contains("is the server running"));
    let err = stderr(&out);
    assert!(err.contains("error: most of the run against"), "{err}");
    assert!(err.contains("the server stopped answering"), "{err}");
    let w = j["warnings"][0].as_str().unwrap_or_default();
    assert!(
        w.starts_with("the server stopped answering"),
        "{}",
        j["warnings"]
    );
}

/// `reqlife serve` killed 1 s into a 3 s run (issue 46): the run said nothing, counted
/// thousands of refusals a second as its throughput and exited 0. Now the report opens with
/// the server's silence (when, and what followed), shows the rate answered apart from the
/// attempts, its connections retry after a bounded pause, and it exits 5.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_server_that_dies_mid_run_is_said_first_and_exits_5() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = Stopped(
        reqlife()
            .args(["serve", "--addr", &addr])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until("serve listens", Duration::from_secs(10), || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("run.json");
    let url = format!("http://{addr}/");
    let run = std::thread::spawn({
        let rec = rec.clone();
        move || {
            Run::new()
                .args(["-d", "3s", "-o", rec.to_str().unwrap()])
                .c(10)
                .t(2)
                .url(url)
                .output()
        }
    });
    // Where the death falls is the test's design: a second into the 3 s run.
    std::thread::sleep(Duration::from_secs(1));
    server.0.kill().unwrap();
    let out = run.join().unwrap();
    let (report, err) = (unwrapped(&stdout(&out)), stderr(&out));
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(err.contains("the server stopped answering"), "{err}");
    // The warning comes first, before the figures it qualifies.
    let warned = report.find("WARNING: the server stopped answering");
    let totals = report.find("  Requests ");
    assert!(warned.is_some() && warned < totals, "{report}");
    assert!(report.contains(" req/s answered, "), "{report}");
    assert!(report.contains(" req/s attempted "), "{report}");
    let j = read_json(&rec);
    assert_valid_record(&j);
    let at = num(&j, "summary.last_answer.at_s");
    assert!((0.5..2.5).contains(&at), "last answer {at}s in");
    // 10 connections, 2 s without a server, a pause of up to 100 ms between connects: some
    // 20 attempts each at most (before: ~20,000 refusals a second).
    let failed = count(&j, "summary.requests.errors");
    assert!(failed <= 600, "{failed} failed");
    let (answered, attempted) = (
        num(&j, "summary.answered_rps"),
        num(&j, "summary.throughput_rps"),
    );
    assert!(
        answered > 0.0 && answered < attempted,
        "{answered} {attempted}"
    );
    // The answered rate is the responses within the window, per second of it.
    // (`end.drained_ok` is left out of the record when 0.)
    let drained_ok = j["summary"]["end"]["drained_ok"].as_u64().unwrap_or(0);
    let within = count(&j, "summary.requests.ok") - drained_ok;
    let secs = num(&j, "summary.duration_s");
    assert!(
        (answered * secs - within as f64).abs() < 1.0,
        "{answered} req/s over {secs}s for {within} responses"
    );
    // The reconnects' bounded pause is said with the silence.
    assert!(
        report
            .contains("each connection tried again after a pause doubling from 1.00ms to 100.00ms"),
        "{report}"
    );
}
