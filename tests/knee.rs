//! `reqlife knee` against a target of known capacity: the embedded target's `/serial/4` serves
//! one request at a time for 4 ms each, 250 req/s at most. The search finds the knee within
//! ±10%, prints a row per step and the answer, and keeps every step in the record. Bad input
//! is refused.

mod common;

use common::*;
use reqlife::server::ServerTls;

#[test]
fn the_knee_of_a_known_capacity_is_found_within_ten_percent() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("knee.json");
    let out = run_ok(&[
        "knee",
        "--slo",
        "p99<=60ms",
        "--slo",
        "errors<=0.1%",
        "--step",
        "1s",
        "--pause",
        "500ms",
        // A loaded CI machine delays timers by milliseconds: the bound on the generator's own
        // lateness is loosened so that only the server's limit decides.
        "--max-lag",
        "50ms",
        "-c",
        "50",
        "-t",
        "1",
        "--quiet",
        "-o",
        rec.to_str().unwrap(),
        &s.url("/serial/4"),
    ]);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rec).unwrap()).unwrap();
    let k = &r["knee"];
    let steps = k["steps"].as_array().unwrap();
    let path: Vec<String> = steps
        .iter()
        .map(|s| format!("{} {} p99 {}", s["offered_rps"], s["verdict"], s["p99_us"]))
        .collect();
    let answer = k["answer_rps"]
        .as_f64()
        .unwrap_or_else(|| panic!("no answer: {path:?}"));
    assert!(
        (225.0..=275.0).contains(&answer),
        "knee at {answer} req/s: {path:?}"
    );
    // Steps above the capacity failed, naming why; the answer was confirmed by a repeat.
    assert!(steps.iter().any(|s| s["verdict"] == "fail"), "{k}");
    assert!(steps.iter().any(|s| s["confirmation"] == true), "{k}");
    for s in steps.iter().filter(|s| s["verdict"] == "fail") {
        assert!(s["offered_rps"].as_f64().unwrap() > answer);
        let why = s["reasons"][0].as_str().unwrap();
        assert!(
            why.contains("achieved") || why.contains("p99<=60ms"),
            "{why}"
        );
    }
    // Every step's histograms are kept, as levels.
    assert_eq!(r["levels"].as_array().unwrap().len(), steps.len());
    let text = stdout(&out);
    assert!(
        text.contains("Knee search for p99<=60ms, errors<=0.1%"),
        "{text}"
    );
    assert!(
        text.contains("Answer: the highest rate that meets"),
        "{text}"
    );
}

#[test]
fn knee_bad_input_is_refused() {
    // (flags, a part of the message)
    let rows = [
        (vec!["knee", "http://127.0.0.1:9/"], "at least one --slo"),
        (
            vec!["knee", "--slo", "p99<5", "http://127.0.0.1:9/"],
            "needs a unit",
        ),
        (
            vec![
                "knee",
                "--slo",
                "p99<5ms",
                "-R",
                "100",
                "http://127.0.0.1:9/",
            ],
            "-R/--rate conflicts with knee",
        ),
        (
            vec![
                "knee",
                "--slo",
                "p99<5ms",
                "--precision",
                "80",
                "http://127.0.0.1:9/",
            ],
            "--precision",
        ),
    ];
    for (args, want) in rows {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}
