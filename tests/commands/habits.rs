//! Habits of other tools' users: `-` for standard output (`-o`, `--html`, `--hdr-log`) and
//! standard input (`report`, `stats`, `merge`, `compare`); `reqlife URL` runs it; oha's `-q`
//! gets a suggestion, and so do oha's -z, --disable-keepalive and --no-tui, wrk's -s, k6's --vus
//! and --iterations and scripts, vegeta's attack, one-dash flags and -body, a negative value and
//! a mistyped subcommand; compound durations; a negative rate in words; `serve --addr PORT`;
//! `-o FILE` says so; the header at the start; no HPACK savings on HTTP/1.1's Traffic line.
//! Every load is a few hundred requests or a fraction of a second, on 127.0.0.1.

use crate::common::*;
use reqlife::server::ServerTls;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs reqlife with `args` and `input` on its standard input.
fn run_with_stdin(args: &[&str], input: &[u8]) -> Output {
    let out = run_with_input(args, input);
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
    out
}

/// A small record of a run against `url` at `path`.
fn record(path: &std::path::Path, url: &str) -> String {
    let p = path.to_str().unwrap().to_string();
    run_ok(&[
        "run", "-n", "100", "-c", "2", "-t", "1", "--quiet", "-o", &p, url,
    ]);
    p
}

#[test]
fn dash_is_stdout_for_every_file_a_run_writes_and_the_report_goes_to_stderr() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let base = ["run", "-n", "100", "-c", "2", "-t", "1"];
    // -o -: stdout is the record, valid JSON; the report is on stderr.
    let mut args = base.to_vec();
    args.extend_from_slice(&["-o", "-", &url]);
    let out = run_ok(&args);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    assert_eq!(count(&record, "summary.requests.total"), 100);
    assert!(
        stderr(&out).contains("Requests     100 total"),
        "{}",
        stderr(&out)
    );
    // With --json too: the summary goes to stderr, stdout stays the record.
    let mut args = base.to_vec();
    args.extend_from_slice(&["-o", "-", "--json", &url]);
    let out = run_ok(&args);
    let record: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(record.get("schema_version").is_some());

    // --html -: the page.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--html", "-", &url]);
    let out = run_ok(&args);
    let page = stdout(&out);
    assert!(
        page.trim_start().starts_with("<!DOCTYPE html>"),
        "{}",
        &page[..200.min(page.len())]
    );
    assert!(page.trim_end().ends_with("</html>"));
    assert!(stderr(&out).contains("Requests     100 total"));

    // --hdr-log -: the interval log.
    let mut args = base.to_vec();
    args.extend_from_slice(&["--hdr-log", "-", &url]);
    let out = run_ok(&args);
    let log = stdout(&out);
    assert!(log.contains("#[BaseTime:"), "{log}");
    assert!(log.lines().any(|l| l.starts_with("Tag=total,")), "{log}");
    assert!(
        !log.contains("Requests"),
        "the report is not in the log: {log}"
    );

    // Two files on stdout: one line of error, before the run.
    let mut args = base.to_vec();
    args.extend_from_slice(&["-o", "-", "--html", "-", &url]);
    let out = run(&args);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("-o and --html all write to standard output ('-')"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn dash_is_stdin_for_report_stats_merge_and_compare() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let a = record(&dir.path().join("a.json"), &s.url("/"));
    let b = record(&dir.path().join("b.json"), &s.url("/"));
    let a_json = std::fs::read(&a).unwrap();

    // report -
    let out = run_with_stdin(&["report", "-"], &a_json);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Requests     100 total"),
        "{}",
        stdout(&out)
    );
    // report - --html -: the page on stdout, the report on stderr.
    let out = run_with_stdin(&["report", "-", "--html", "-"], &a_json);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).trim_start().starts_with("<!DOCTYPE html>"));
    assert!(stderr(&out).contains("Requests     100 total"));
    // Not a record on stdin: named as such.
    let out = run_with_stdin(&["report", "-"], b"{}");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("standard input is not a reqlife RunRecord"),
        "{}",
        stderr(&out)
    );

    // stats -
    let out = run_with_stdin(&["stats", "-"], b"1\n2\n3\n4\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("2.5"), "{}", stdout(&out));

    // merge - FILE, and merge -o -: the merged record is valid JSON on stdout.
    let out = run_with_stdin(&["merge", "-", &b, "-o", "-"], &a_json);
    assert!(out.status.success(), "{}", stderr(&out));
    let merged: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&out)));
    assert_eq!(count(&merged, "summary.requests.total"), 200);
    assert!(
        stderr(&out).contains("Requests     200 total"),
        "{}",
        stderr(&out)
    );

    // compare - FILE (a comparison of single runs resamples their intervals: 20 each, well
    // above the 8 with requests it needs even when a loaded machine stalls a few)
    let timed = |name: &str| {
        let p = dir.path().join(name).to_str().unwrap().to_string();
        let url = s.url("/");
        run_ok(&[
            "run",
            "-d",
            "400ms",
            "--interval",
            "20ms",
            "-c",
            "2",
            "-t",
            "1",
            "--quiet",
            "-o",
            &p,
            &url,
        ]);
        p
    };
    let (ta, tb) = (timed("ta.json"), timed("tb.json"));
    let out = run_with_stdin(
        &["compare", "-", &tb, "--json"],
        &std::fs::read(&ta).unwrap(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(c.get("rows").is_some(), "{c}");

    // Standard input is read once: two `-` is an error line.
    for args in [["merge", "-", "-"], ["compare", "-", "-"]] {
        let out = run_with_stdin(&args, &a_json);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("'-' (standard input) is given more than once"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_url_without_a_subcommand_runs_it() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let out = run_ok(&[url.as_str(), "-n", "50", "-c", "1", "-t", "1", "--json"]);
    assert_eq!(count(&summary(&out), "requests.total"), 50);
    // wrk's order: flags first.
    let out = run_ok(&["-n", "50", "-c", "1", "-t", "1", "--json", &url]);
    assert_eq!(count(&summary(&out), "requests.total"), 50);
}

#[test]
fn oha_q_gets_a_suggestion() {
    for args in [
        &["run", "-q", "100", "http://127.0.0.1:9/"][..],
        &["http://127.0.0.1:9/", "-q", "100"][..],
        &["run", "-q100", "http://127.0.0.1:9/"][..],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = stderr(&out);
        assert_eq!(
            err.trim(),
            "error: -q is --quiet here: for a rate of 100 req/s (oha's and hey's -q), use -R 100",
            "{args:?}"
        );
    }
}

#[test]
fn a_negative_rate_gets_a_sentence() {
    let out = run(&["run", "-R", "-5", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("the rate must be a positive number of requests per second"),
        "{err}"
    );
    assert!(!err.contains("'-- -5'"), "no clap tip: {err}");
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_compound_durations_are_accepted() {
    let s = embedded(ServerTls::None);
    let out = run_ok(&[
        "run",
        "-d",
        "0m300ms",
        "-c",
        "1",
        "-t",
        "1",
        "--json",
        &s.url("/"),
    ]);
    let d = num(&summary(&out), "duration_s");
    assert!((0.29..=0.31).contains(&d), "{d}");
}

#[test]
fn the_header_comes_first_and_o_says_where_the_record_went() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let p = path.to_str().unwrap();
    let url = s.url("/");
    let out = run_ok(&["run", "-n", "100", "-c", "2", "-t", "1", "-o", p, &url]);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[0],
        format!("Running 100-request test @ {url}"),
        "{err}"
    );
    assert!(lines[1].contains("1 thread and 2 connections"), "{err}");
    assert_eq!(
        lines.last().copied(),
        Some(format!("reqlife: wrote the record to {p}").as_str()),
        "{err}"
    );
    assert!(path.exists());
    // The report on stdout is whole.
    assert!(stdout(&out).starts_with("Running 100-request test"));
    // --quiet: neither.
    let out = run_ok(&[
        "run", "-n", "100", "-c", "2", "-t", "1", "--quiet", "-o", p, &url,
    ]);
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

/// The Traffic line of a text report (joined back if the report wrapped it).
fn traffic(out: &Output) -> String {
    unwrapped(&stdout(out))
        .lines()
        .find(|l| l.trim_start().starts_with("Traffic"))
        .unwrap_or_else(|| panic!("no Traffic line in {}", stdout(out)))
        .to_string()
}

#[test]
fn http1_traffic_has_no_hpack_savings_and_http2_keeps_them() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let out = run_ok(&["run", "-n", "100", "-c", "1", "-t", "1", "--quiet", &url]);
    let line = traffic(&out);
    assert!(!line.contains("space savings"), "{line}");
    assert!(
        line.contains(" headers, ") && line.ends_with(" data"),
        "{line}"
    );
    let out = run_ok(&[
        "run", "--http2", "-n", "100", "-c", "1", "-t", "1", "--quiet", &url,
    ]);
    let line = traffic(&out);
    assert!(line.contains(" headers (space savings "), "{line}");
}

/// Starts `reqlife serve ARGS`; its first stdout lines (until the routes), and the child.
fn serve(args: &[&str]) -> (Vec<String>, std::process::Child) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reqlife"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    let started = Instant::now();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        let done = line.contains("routes:");
        lines.push(line.trim_end().to_string());
        if done {
            // One more line, if any comes at once (the TLS note follows the routes).
            if args.contains(&"--tls") {
                let mut more = String::new();
                reader.read_line(&mut more).unwrap();
                lines.push(more.trim_end().to_string());
            }
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "{lines:?}");
    }
    (lines, child)
}

fn stop(mut child: std::process::Child) {
    send_signal(&child, libc::SIGTERM);
    let _ = child.wait();
}

#[test]
fn serve_takes_a_bare_port_and_says_a_tls_certificate_is_self_signed() {
    // A bare port is 127.0.0.1:PORT (0: any free one).
    let (lines, child) = serve(&["--addr", "0"]);
    stop(child);
    assert!(
        lines[0].starts_with("reqlife serve: listening on http://127.0.0.1:"),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("self-signed")),
        "{lines:?}"
    );
    let (lines, child) = serve(&["--addr", "0", "--tls"]);
    stop(child);
    assert!(
        lines[0].starts_with("reqlife serve: listening on https://127.0.0.1:"),
        "{lines:?}"
    );
    let note = lines.last().unwrap();
    assert!(
        note.contains("self-signed") && note.contains("-k") && note.contains("--cacert"),
        "{lines:?}"
    );
    // Not an address at all: said with the forms that are.
    let out = run(&["serve", "--addr", "localhost"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("or a port (8080)"),
        "{}",
        stderr(&out)
    );
}

/// Other tools' flags each get one line naming reqlife's way (issue 37), not clap's tips
/// ("use '-- -z'", "a similar argument exists: '--value-size'"), and exit 2.
#[test]
fn other_tools_flags_get_reqlifes_way() {
    let url = "http://127.0.0.1:9/";
    // (arguments, the line)
    let rows: [(&[&str], &str); 21] = [
        (
            &["run", "-z", "5s", url],
            "-z is oha's duration: here it is -d (e.g. -d 5s)",
        ),
        (
            &[url, "-z5s"],
            "-z is oha's duration: here it is -d (e.g. -d 5s)",
        ),
        (
            &["run", "-s", "post.lua", url],
            "-s is wrk's Lua script: reqlife has no scripting; for a method and a body use -m POST --body TEXT (or --body-file FILE), for varied requests --targets FILE (vegeta's list) or --scenario FILE (TOML, weights and templates)",
        ),
        (
            &["run", "--disable-keepalive", url],
            "--disable-keepalive is oha's: here it is --no-keepalive (a new connection for every request)",
        ),
        (
            &["run", "--no-keepalive", "--no-tui", url],
            "--no-tui is oha's: reqlife shows no live view unless --live is given; drop it (--quiet hides the progress bar too)",
        ),
        (
            &["run", "--vus", "10", url],
            "--vus is k6's virtual users: here a closed loop of -c 10 connections, each sending its next request when the last one ended",
        ),
        (
            &["run", "-d", "-5s", url],
            "-d takes a positive value, not -5s (e.g. -d 5s)",
        ),
        (
            &["run", "--timeout", "-1s", url],
            "--timeout takes a positive value, not -1s (e.g. --timeout 1s)",
        ),
        (
            &["rnu", url],
            "no subcommand 'rnu': did you mean 'run'? (reqlife run …; reqlife --help lists them)",
        ),
        (
            &["reprot", "r.json"],
            "no subcommand 'reprot': did you mean 'report'? (reqlife report …; reqlife --help lists them)",
        ),
        // k6's (issue 46): clap told --iterations about --targets, and script.js was a host.
        (
            &["run", "--iterations", "100", url],
            "--iterations is k6's: here it is -n 100 (requests in all, over every connection)",
        ),
        (
            &["run", "script.js"],
            "'script.js' is a script (k6's JavaScript): reqlife runs no scripts; its requests come from a scenario file, --scenario FILE with a URL (TOML: requests, templates, weights, phases; see examples/kv.toml), or from a target list, --targets FILE (vegeta's)",
        ),
        (
            &["run", "-c", "10", "post.lua"],
            "'post.lua' is a script (wrk's Lua): reqlife runs no scripts; its requests come from a scenario file, --scenario FILE with a URL (TOML: requests, templates, weights, phases; see examples/kv.toml), or from a target list, --targets FILE (vegeta's)",
        ),
        // vegeta's: its subcommand, Go's one-dash flags, the flags reqlife spells otherwise.
        (
            &["attack", "-rate=50", "-duration=2s"],
            "attack is vegeta's subcommand: here it is run, and the report follows it (vegeta attack -rate=50/1s -duration=2s -targets=FILE is reqlife run -R 50/1s -d 2s --targets FILE; - reads the list from standard input)",
        ),
        (
            &["run", "-rate=50/1s", "-duration=2s", url],
            "-rate is Go's style (vegeta's one dash): reqlife's long flags take two: --rate 50/1s (or -R 50/1s)",
        ),
        (
            &[url, "-duration", "2s"],
            "-duration is Go's style (vegeta's one dash): reqlife's long flags take two: --duration 2s (or -d 2s)",
        ),
        (
            &["run", "-targets=-", "-n", "1"],
            "-targets is Go's style (vegeta's one dash): reqlife's long flags take two: --targets -",
        ),
        (
            &["run", "-output=r.json", url],
            "-output is Go's style (vegeta's one dash): reqlife's long flags take two: --output r.json (or -o r.json)",
        ),
        (
            &["run", "-insecure", url],
            "-insecure is Go's style (vegeta's one dash): reqlife's long flags take two: --insecure (or -k)",
        ),
        (
            &["run", "-body", "b.json", url],
            "-body is vegeta's body file: here it is --body-file b.json (--body TEXT sends the text itself)",
        ),
        (
            &["run", "-keepalive=false", url],
            "-keepalive is vegeta's: here connections are kept open unless --no-keepalive is given (vegeta's -keepalive=false)",
        ),
    ];
    for (args, line) in rows {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim(), format!("error: {line}"), "{args:?}");
    }
    // reqlife's own flags are not taken for habits: -s as a value, a URL-first line; nor a
    // script's name as a flag's value, nor a URL whose path ends in .js.
    let out = run(&["run", "--scenario", "-s", url]);
    assert!(!stderr(&out).contains("wrk's"), "{}", stderr(&out));
    let out = run(&["run", "--body-file", "post.lua", url]);
    assert!(!stderr(&out).contains("a script"), "{}", stderr(&out));
    let out = run(&["run", "example.com/app.js"]);
    assert!(
        stderr(&out).contains("did you mean http://example.com/app.js?"),
        "{}",
        stderr(&out)
    );
}

/// `serve --http3` prints the command that works against it as printed (issue 37: without
/// `-k` it exited 3 on the self-signed certificate).
#[test]
fn serve_http3_prints_a_command_that_works() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reqlife"))
        .args(["serve", "--addr", "0", "--http3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut command = None;
    for _ in 0..6 {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        if let Some(at) = line.find("(reqlife run ") {
            command = Some(line[at + 1..].trim_end().trim_end_matches(')').to_string());
            break;
        }
    }
    let command = command.expect("serve --http3 prints a command");
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..4], ["reqlife", "run", "--http3", "-k"], "{command}");
    let mut args = words[1..].to_vec();
    args.splice(1..1, ["-n", "20", "-c", "2", "-t", "1", "--quiet"]);
    let out = run(&args);
    stop(child);
    assert_eq!(out.status.code(), Some(0), "{command}: {}", stderr(&out));
}

/// curl's `--resolve HOST:PORT:ADDR` (issue 37): a name DNS does not know, connected at ADDR
/// over HTTP/1.1, HTTP/2 and HTTP/3 (TLS: the name is the SNI), and the name in the Host
/// header; a bad entry is one line, exit 2.
#[test]
fn resolve_connects_to_the_address_and_keeps_the_name() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_reqlife"))
        .args(["serve", "--addr", "0", "--tls", "--http3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let port = first
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("{first}"));
    let name = "reqlife-test.invalid";
    let entry = format!("{name}:{port}:127.0.0.1");
    let url = format!("https://{name}:{port}/");
    for proto in [&[][..], &["--http2"][..], &["--http3"][..]] {
        let mut args = vec!["run", "-n", "20", "-c", "2", "-t", "1", "-k", "--json"];
        args.extend_from_slice(proto);
        args.extend_from_slice(&["--resolve", &entry, &url]);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(0), "{proto:?}: {}", stderr(&out));
        assert_eq!(count(&summary(&out), "requests.ok"), 20, "{proto:?}");
    }
    stop(child);
    // The Host header is the name.
    let hosts = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = hosts.clone();
    let addr = raw_server(move |mut s| {
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") && s.read(&mut b).unwrap_or(0) == 1 {
            head.push(b[0]);
        }
        let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
        if let Some(h) = head.lines().find(|l| l.starts_with("host:")) {
            seen.lock().unwrap().push(h.to_string());
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    let entry = format!("{name}:{}:127.0.0.1", addr.port());
    let url = format!("http://{name}:{}/", addr.port());
    run_ok(&[
        "run",
        "-n",
        "3",
        "-c",
        "1",
        "-t",
        "1",
        "--quiet",
        "--resolve",
        &entry,
        &url,
    ]);
    let hosts = hosts.lock().unwrap();
    assert_eq!(hosts.len(), 3, "{hosts:?}");
    let expected = format!("host: {name}:{}", addr.port());
    assert!(hosts.iter().all(|h| *h == expected), "{hosts:?}");
    // Bad entries: one line, exit 2.
    for (entry, line) in [
        ("nope", "error: --resolve 'nope': three parts are needed (HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1)"),
        ("a:1:x", "error: --resolve 'a:1:x': 'x' is not an IP address (HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1)"),
        ("other:1:127.0.0.1", "error: --resolve 'other:1:127.0.0.1' is for other:1, but the URL names reqlife-test.invalid:9"),
    ] {
        let out = run(&["run", "-n", "1", "--resolve", entry, "http://reqlife-test.invalid:9/"]);
        assert_eq!(out.status.code(), Some(2), "{entry}");
        assert_eq!(stderr(&out).trim(), line);
    }
}
