//! `reqlife compare`: two runs of the same target are "no significant change"; a target made
//! slower (a 5 ms delay made 6 ms: +20% of server time) is "slower", and `--fail-if-slower`
//! exits 99; repeated runs are compared across runs with a p-value; too few intervals to
//! resample is a clear error.

mod common;

use common::*;
use reqlife::server::ServerTls;
use serde_json::Value;
use std::path::Path;

/// The tests of this file take turns: two runs measured while another test loads the machine
/// differ for real, and compare would rightly say so.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn record(dir: &Path, name: &str, url: &str, extra: &[&str]) -> String {
    let p = dir.join(name);
    let mut args = vec![
        "run",
        "-c",
        "8",
        "-t",
        "1",
        "--quiet",
        "-o",
        p.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.push(url);
    run_ok(&args);
    p.to_str().unwrap().to_string()
}

fn row<'a>(c: &'a Value, figure: &str) -> &'a Value {
    c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["figure"] == figure)
        .unwrap_or_else(|| panic!("no {figure} in {c}"))
}

#[test]
fn single_runs_same_and_slower() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let single = ["-d", "2s", "--interval", "100ms"];
    let a = record(dir.path(), "a.json", &s.url("/delay/5"), &single);
    let b = record(dir.path(), "b.json", &s.url("/delay/5"), &single);
    let slow = record(dir.path(), "slow.json", &s.url("/delay/6"), &single);

    // A shared CI machine moves a few percent between runs: 5% is noise here.
    let same = summary(&run_ok(&["compare", &a, &b, "--json", "--noise", "5"]));
    assert_eq!(same["method"], "intervals");
    for figure in ["throughput", "total p50", "total p90"] {
        assert_eq!(
            row(&same, figure)["verdict"],
            "no_significant_change",
            "{figure}: {same}"
        );
    }

    let slower = summary(&run_ok(&["compare", &a, &slow, "--json"]));
    let p50 = row(&slower, "total p50");
    assert_eq!(p50["verdict"], "slower", "{p50}");
    assert!(p50["change"]["lo"].as_f64().unwrap() > 0.0, "{p50}");
    assert_eq!(row(&slower, "throughput")["verdict"], "slower");
    // A CI gate: slower by more than 5% exits 99, and says which figures.
    let out = run(&["compare", &a, &slow, "--fail-if-slower", "5%"]);
    assert_eq!(out.status.code(), Some(99));
    assert!(stderr(&out).contains("total p50"), "{}", stderr(&out));
    assert!(stdout(&out).contains("slower"));
    // The same two runs pass the gate.
    let out = run(&["compare", &a, &b, "--fail-if-slower", "5%", "--noise", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[test]
fn repeated_runs_are_compared_across_runs() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rep = ["-d", "700ms", "--repeat", "3", "--pause", "100ms"];
    let a = record(dir.path(), "a.json", &s.url("/delay/5"), &rep);
    let slow = record(dir.path(), "slow.json", &s.url("/delay/6"), &rep);
    let c = summary(&run_ok(&["compare", &a, &slow, "--json"]));
    assert_eq!(c["method"], "runs");
    assert_eq!((c["n_a"].as_u64(), c["n_b"].as_u64()), (Some(3), Some(3)));
    let p50 = row(&c, "total p50");
    assert_eq!(p50["verdict"], "slower", "{p50}");
    // 3 runs against 3: the smallest exact two-sided p is 0.1 (every B above every A); runs
    // whose medians tie (HdrHistogram buckets) go to the normal approximation, ~0.05-0.2.
    let p = p50["p_value"].as_f64().unwrap();
    assert!(p > 0.0 && p <= 0.25, "{p50}");
    let text = stdout(&run_ok(&["compare", &a, &slow]));
    assert!(text.contains("across repeated runs (3 and 3)"), "{text}");
}

#[test]
fn too_few_intervals_is_a_clear_error() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let a = record(dir.path(), "a.json", &s.url("/"), &["-n", "100"]);
    let out = run(&["compare", &a, &a]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--repeat"), "{}", stderr(&out));
    let out = run(&["compare", &a, "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(2));
}
