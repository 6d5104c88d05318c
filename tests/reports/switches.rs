//! The switches of the benchmarks' before figures, flags since issue 47 (environment variables
//! before, which no record kept): `--pacer-timer coarse` (the open-loop pacer waits on tokio's
//! 1 ms sleep), `--pacer-naps off` (its thread woken by each response), `--h2-writes at-once`
//! (HTTP/2's new requests written without waiting one turn of the runtime). A run's record
//! keeps each one given (a run without them, or with their defaults, claims none), and each is
//! refused in one line, exit 2, where it does not apply.

use crate::common::*;
use reqlife::server::ServerTls;

/// The config's fields of the switches.
const SWITCHES: [&str; 3] = ["pacer_timer", "pacer_naps", "h2_writes"];

/// The record of `reqlife run` with `flags` at `url`, checked against the schema, after every
/// request succeeded.
fn record(flags: &[&str], url: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    Run::new()
        .args(["-t", "1", "-c", "2", "-q", "-o", path.to_str().unwrap()])
        .args(flags)
        .url(url)
        .ok();
    let r = read_json(&path);
    assert_valid_record(&r);
    let requests = &r["summary"]["requests"];
    assert!(count(requests, "ok") > 0, "{flags:?}: {requests}");
    assert_eq!(count(requests, "errors"), 0, "{flags:?}: {requests}");
    r
}

#[test]
fn the_record_keeps_a_switch_given_and_a_run_without_claims_none() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let open = ["-R", "200", "-d", "300ms"];
    let h2 = ["--http2", "--streams", "2", "-n", "100"];
    let pacer = record(
        &[
            &open[..],
            &["--pacer-timer", "coarse", "--pacer-naps", "off"],
        ]
        .concat(),
        &url,
    );
    assert_eq!(
        pacer["config"]["pacer_timer"], "coarse",
        "{}",
        pacer["config"]
    );
    assert_eq!(pacer["config"]["pacer_naps"], "off", "{}", pacer["config"]);
    assert!(pacer["config"].get("h2_writes").is_none());
    let writes = record(&[&h2[..], &["--h2-writes", "at-once"]].concat(), &url);
    assert_eq!(
        writes["config"]["h2_writes"], "at-once",
        "{}",
        writes["config"]
    );
    for key in ["pacer_timer", "pacer_naps"] {
        assert!(writes["config"].get(key).is_none(), "{}", writes["config"]);
    }
    // Left out, or given their defaults, the record claims none: it says what ran.
    let defaults = [
        open.to_vec(),
        h2.to_vec(),
        [
            &open[..],
            &["--pacer-timer", "precise", "--pacer-naps", "on"],
        ]
        .concat(),
        [&h2[..], &["--h2-writes", "gather"]].concat(),
    ];
    for flags in &defaults {
        let config = &record(flags, &url)["config"];
        for key in SWITCHES {
            assert!(config.get(key).is_none(), "{flags:?}: {key} in {config}");
        }
    }
}

#[test]
fn a_switch_where_it_does_not_apply_is_refused_in_one_line() {
    // Refused before any connection: nothing listens on port 9.
    // (flags, URL, a part of the line)
    let rows: &[(&[&str], &str, &str)] = &[
        (
            &["-n", "10", "--pacer-timer", "coarse"],
            "http://127.0.0.1:9/",
            "--pacer-timer applies to an open loop: give -R/--rate too",
        ),
        // An explicit default is given too, and refused where it does not apply.
        (
            &["--burst", "4", "--pacer-naps", "on"],
            "http://127.0.0.1:9/",
            "--pacer-naps applies to an open loop: give -R/--rate too",
        ),
        (
            &["-R", "100", "--h2-writes", "at-once"],
            "http://127.0.0.1:9/",
            "--h2-writes applies to HTTP/2: give --http2 too",
        ),
        (
            &["--http3", "--h2-writes", "gather"],
            "https://127.0.0.1:9/",
            "--h2-writes applies to HTTP/2, not to --http3",
        ),
        (
            &["--http2", "--h2-coalesce", "1ms", "--h2-writes", "at-once"],
            "http://127.0.0.1:9/",
            "--h2-writes and --h2-coalesce conflict",
        ),
        (
            &["--data", "hi", "--http2", "--h2-writes", "at-once"],
            "ws://127.0.0.1:9/",
            "--h2-writes does not apply to WebSocket",
        ),
    ];
    for (flags, url, want) in rows {
        let out = Run::new().args(*flags).url(url).exits(2);
        let err = stderr(&out);
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{flags:?}: {err}");
        assert!(
            lines[0].starts_with("error: ") && lines[0].contains(want),
            "{flags:?}: {err}"
        );
    }
}
