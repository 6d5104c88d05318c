//! Workloads end to end: a scenario that fills the embedded target's key-value store and then
//! reads it (every GET finds its key), figures per request name, mix proportions over a run,
//! HTTP/2 with rendered requests, a fill split over generators that puts each key once, a
//! vegeta target list (from a file, or on standard input at vegeta's `-R 200/2s`), and scenario
//! errors through the command line.

use crate::common::*;
use serde_json::Value;
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A fill of `keys` keys, then a second of reads over them, with `extra` flags.
const KV: &str = r#"
seed = 3
[[request]]
name = "put"
method = "PUT"
path = "/kv/{seq:1:2000}"
body = "{random_text:50}"
[[request]]
name = "get"
path = "/kv/{uniform:1:2000}"
[[request]]
name = "head"
method = "HEAD"
path = "/kv/{zipf:2000:1.1}"
[[phase]]
name = "fill"
requests = ["put"]
count = 2000
connections = 4
[[phase]]
name = "read"
mix = { get = 3, head = 1 }
connections = 4
duration = "1s"
"#;

fn record(path: &str) -> Value {
    read_json(path)
}

fn n(v: &Value, path: &str) -> u64 {
    path.split('.').fold(v, |v, k| &v[k]).as_u64().unwrap_or(0)
}

#[test]
fn fill_then_read_finds_every_key() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write(dir.path(), "kv.toml", KV);
    let out_path = dir.path().join("kv.json");
    let out = run_ok(&[
        "run",
        "--scenario",
        &sc,
        "-t",
        "2",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let r = record(out_path.to_str().unwrap());
    let phases = r["levels"].as_array().unwrap();
    let labels: Vec<&str> = phases
        .iter()
        .map(|l| l["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["fill", "read"]);
    assert!(r["config"]["sweep"].is_null(), "phases are not a sweep");
    assert_eq!(r["config"]["workload"], format!("scenario {sc}"));

    // The fill put each key once: 2000 creations, no replacement.
    let fill = &phases[0]["summary"]["by_request"]["put"];
    assert_eq!(n(fill, "requests.total"), 2000);
    assert_eq!(n(fill, "status.201"), 2000, "{fill}");
    assert_eq!(n(fill, "status.204"), 0, "a key put twice: {fill}");

    // Every read found its key.
    let read = &phases[1]["summary"]["by_request"];
    let (gets, heads) = (
        n(read, "get.requests.total"),
        n(read, "head.requests.total"),
    );
    assert!(gets > 100 && heads > 30, "{read}");
    assert_eq!(n(read, "get.status.200"), gets, "{read}");
    assert_eq!(n(read, "head.status.200"), heads, "{read}");
    assert!(read["get"]["status"].get("404").is_none());
    // The mix is 3 to 1.
    let share = gets as f64 / (gets + heads) as f64;
    assert!((0.70..=0.80).contains(&share), "get share {share}");
    // The store's own work is in the server's breakdown.
    assert!(n(&r, "summary.server_timing.lookup.count") > 0);
    assert_eq!(n(&phases[0], "summary.server_timing.insert.count"), 2000);
    // Each name's histograms are in the record.
    assert!(phases[1]["histograms"]["request.get.total"].is_string());

    let text = stdout(&out);
    assert!(text.contains("fill") && text.contains("read"), "{text}");
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("get ")),
        "a row per request name: {text}"
    );
}

#[test]
fn a_scenario_without_phases_uses_the_command_line_s_load_and_http2_renders_too() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write(
        dir.path(),
        "mix.toml",
        r#"
[[request]]
name = "hello"
path = "/"
weight = 1
[[request]]
name = "echo"
method = "POST"
path = "/echo?n={seq}"
body = "{random_text:20}"
weight = 4
"#,
    );
    for extra in [vec![], vec!["--http2", "--streams", "2"]] {
        let mut args = vec!["run", "--scenario", &sc, "-n", "2000", "-c", "4", "--json"];
        args.extend_from_slice(&extra);
        let j = summary(&run_ok(&args));
        let by = &j["by_request"];
        let (hello, echo) = (n(by, "hello.requests.total"), n(by, "echo.requests.total"));
        assert_eq!(hello + echo, 2000, "{extra:?}");
        // Weights 1 to 4: echo's share within 0.8 ± 0.03 over 2000 draws (±3.4 sigma).
        let share = echo as f64 / 2000.0;
        assert!(
            (0.77..=0.83).contains(&share),
            "{extra:?}: echo share {share}"
        );
        assert_eq!(n(by, "echo.status.200"), echo, "{extra:?}");
        // The echoed bodies are the rendered 20 characters.
        assert_eq!(n(&j, "bytes.body"), hello * 12 + echo * 20, "{extra:?}");
    }
}

#[test]
fn a_fill_split_over_generators_puts_each_key_once() {
    let dir = tempfile::tempdir().unwrap();
    let sc = write(
        dir.path(),
        "fill.toml",
        r#"
[[request]]
name = "put"
method = "PUT"
path = "/kv/{seq:1:3000}"
body = "x"
[[phase]]
name = "fill"
requests = ["put"]
count = 3000
connections = 6
"#,
    );
    let s = embedded(reqlife::server::ServerTls::None);
    let url = s.url("/");
    let mut parts = Vec::new();
    let children: Vec<_> = (1..=3)
        .map(|i| {
            let out = dir.path().join(format!("p{i}.json"));
            parts.push(out.to_str().unwrap().to_string());
            reqlife()
                .args([
                    "run",
                    "--scenario",
                    &sc,
                    "--segment",
                    &format!("{i}/3"),
                    "-t",
                    "1",
                    "--quiet",
                    "-o",
                    out.to_str().unwrap(),
                    &url,
                ])
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let mut args = vec!["merge", "--json"];
    args.extend(parts.iter().map(String::as_str));
    let j = summary(&run_ok(&args));
    // 3000 keys over three generators: each created once, none replaced.
    assert_eq!(n(&j, "requests.total"), 3000);
    assert_eq!(n(&j, "status.201"), 3000, "{}", j["status"]);
    assert_eq!(n(&j, "by_request.put.status.201"), 3000);
}

#[test]
fn a_segmented_burst_numbers_every_request_once_over_the_generators() {
    // Two generators of one burst plan (6 requests per burst, 5 bursts): each PUTs the key
    // of its requests' `{seq}`, so a number rendered twice would replace a key (200) instead
    // of creating it (201). Before, every generator numbered its bursts alike.
    let dir = tempfile::tempdir().unwrap();
    let sc = write(
        dir.path(),
        "burst.toml",
        r#"
[[request]]
name = "put"
method = "PUT"
path = "/kv/b{seq}"
body = "x"
"#,
    );
    let s = embedded(reqlife::server::ServerTls::None);
    let url = s.url("/");
    let mut parts = Vec::new();
    for i in 1..=2 {
        let out = dir.path().join(format!("b{i}.json"));
        let segment = format!("{i}/2");
        run_ok(&[
            "run",
            "--scenario",
            &sc,
            "--burst",
            "6",
            "--bursts",
            "5",
            "--burst-interval",
            "1ms",
            "--segment",
            &segment,
            "--quiet",
            "-o",
            out.to_str().unwrap(),
            &url,
        ]);
        parts.push(out.to_str().unwrap().to_string());
    }
    let mut args = vec!["merge", "--json"];
    args.extend(parts.iter().map(String::as_str));
    let j = summary(&run_ok(&args));
    assert_eq!(n(&j, "requests.total"), 30);
    assert_eq!(n(&j, "status.201"), 30, "{}", j["status"]);
}

#[test]
fn a_target_list_is_sent_in_turn() {
    let s = embedded(reqlife::server::ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let body = write(dir.path(), "body.txt", "0123456789");
    let list = format!(
        "GET {0}\n\nPOST {1}\nContent-Type: text/plain\n@{body}\n\n# a comment\nGET {2}\n",
        s.url("/"),
        s.url("/echo"),
        s.url("/status/201")
    );
    let targets = write(dir.path(), "targets.txt", &list);
    let j = summary(&run_ok(&[
        "run",
        "--targets",
        &targets,
        "-n",
        "300",
        "-c",
        "3",
        "--json",
    ]));
    assert_eq!(n(&j, "status.200"), 200);
    assert_eq!(n(&j, "status.201"), 100);
    let by = &j["by_request"];
    assert_eq!(n(by, "POST /echo.requests.total"), 100, "{by}");
    assert!(n(&j, "bytes.written") > 0);
    // A URL besides the list is refused: the list names the server.
    let out = run(&["run", "--targets", &targets, &s.url("/")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("drop the URL"), "{}", stderr(&out));
}

/// vegeta's habits (issue 46): the target list on standard input (`--targets -`, vegeta's
/// default) and a rate per a duration (`-R 200/2s`: 100 req/s); an empty list or a bad line
/// there is one line naming "standard input", exit 2.
#[test]
fn a_target_list_on_standard_input_at_a_rate_per_a_duration() {
    let s = embedded(reqlife::server::ServerTls::None);
    let with_stdin = |args: &[&str], input: &str| run_with_input(args, input.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let out = out.to_str().unwrap();
    let list = format!("GET {}\n\nGET {}\n", s.url("/"), s.url("/status/201"));
    let args = [
        "run",
        "--targets",
        "-",
        "-R",
        "200/2s",
        "-n",
        "20",
        "-c",
        "2",
        "-t",
        "1",
        "-q",
        "-o",
        out,
    ];
    let run = with_stdin(&args, &list);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let r = record(out);
    assert_eq!(
        r["config"]["rate_rps"].as_f64(),
        Some(100.0),
        "{}",
        r["config"]
    );
    assert_eq!(n(&r, "summary.status.200"), 10);
    assert_eq!(n(&r, "summary.status.201"), 10);
    for (input, line) in [
        ("", "error: standard input: no target: expected lines 'METHOD URL' (e.g. GET http://127.0.0.1:8080/path)"),
        ("GET /x\n", "error: standard input:1: invalid URL '/x': no scheme; expected http://host[:port][/path] or https://host[:port][/path]"),
    ] {
        let bad = with_stdin(&["run", "--targets", "-", "-n", "1"], input);
        assert_eq!(bad.status.code(), Some(2), "{input:?}: {}", stderr(&bad));
        assert_eq!(stderr(&bad).trim(), line, "{input:?}");
    }
}

#[test]
fn scenario_errors_name_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    // (scenario text, parts of the one error line)
    let rows = [
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\ncolour = 1\n",
            vec![":4:", "colour"],
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{zipf:0:1}\"\n",
            vec![":3:", "zipf"],
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n",
            vec![":4:", "weight"],
        ),
        (
            "[[request]]\nname = \"a\"\npath = \"/{line:missing.txt}\"\n",
            vec![":3:", "missing.txt"],
        ),
    ];
    for (i, (text, parts)) in rows.iter().enumerate() {
        let sc = write(dir.path(), &format!("bad{i}.toml"), text);
        let out = run(&["run", "--scenario", &sc, "-n", "1"]);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(&sc), "{err}");
        for p in parts {
            assert!(err.contains(p), "{text}: {err}");
        }
    }
    // The command line's request flags conflict with a scenario's requests.
    let sc = write(
        dir.path(),
        "ok.toml",
        "[[request]]\nname = \"a\"\npath = \"/\"\n",
    );
    let out = run(&["run", "--scenario", &sc, "-m", "POST", "-n", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("-m/--method conflicts with --scenario"));
    // And the shipped example parses.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/kv.toml");
    assert!(reqlife::workload::scenario::load(Path::new(example)).is_ok());
}
