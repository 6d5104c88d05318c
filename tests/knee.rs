//! `reqlife knee` against a target of known capacity: the embedded target's `/serial/4` serves
//! one request at a time for 4 ms each, 250 req/s at most. At the default bound on the
//! generator's lag, three searches with steps of 1 s and one with steps of 3 s each find the knee
//! within ±10%, print a row per step and the answer, and keep every step in the record. Bad
//! input is refused.

mod common;

use common::*;
use reqlife::server::ServerTls;

/// One search against `/serial/4` with steps of `step`, at the default `--max-lag` (1 ms): the
/// answer, the steps' path, the record and the text.
fn search(step: &str) -> (f64, Vec<String>, serde_json::Value, String) {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("knee.json");
    let out = run(&[
        "knee",
        "--slo",
        "p99<=60ms",
        "--slo",
        "errors<=0.1%",
        "--step",
        step,
        "--pause",
        "500ms",
        "-c",
        "50",
        "-t",
        "1",
        "--quiet",
        "-o",
        rec.to_str().unwrap(),
        &s.url("/serial/4"),
    ]);
    assert!(
        out.status.success(),
        "knee --step {step}: exit {:?}\n{}{}",
        out.status.code(),
        stdout(&out),
        stderr(&out)
    );
    let r: serde_json::Value = read_json(&rec);
    let steps = r["knee"]["steps"].as_array().unwrap();
    let path: Vec<String> = steps
        .iter()
        .map(|s| {
            format!(
                "{} {} p99 {} lag {} {}",
                s["offered_rps"], s["verdict"], s["p99_us"], s["lag_quantile"], s["lag_us"]
            )
        })
        .collect();
    let answer = r["knee"]["answer_rps"]
        .as_f64()
        .unwrap_or_else(|| panic!("no answer: {path:?}"));
    println!("knee --step {step}: {answer} req/s via {path:?}");
    (answer, path, r, stdout(&out))
}

/// `searches` searches with steps of `step`: every answer within ±10% of 250 req/s. The
/// searches take turns: `/serial/4` is one line for the whole test process.
fn searches(step: &str, searches: usize) {
    static ONE_LINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_LINE.lock().unwrap_or_else(|e| e.into_inner());
    for _ in 0..searches {
        let (answer, path, r, text) = search(step);
        assert!(
            (225.0..=275.0).contains(&answer),
            "--step {step}: knee at {answer} req/s: {path:?}"
        );
        let k = &r["knee"];
        let steps = k["steps"].as_array().unwrap();
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
        // The generator's health is judged at a quantile its samples support: a 1 s step of
        // 60-500 req/s has too few for p99 (1,000).
        for s in steps {
            let n = s["lag_samples"].as_u64().unwrap();
            match s["lag_quantile"].as_str() {
                Some("p99") => assert!(n >= 1000, "{s}"),
                Some("p90") => assert!(n >= 100, "{s}"),
                Some("p50") => assert!(n >= 20, "{s}"),
                _ => assert!(n < 20, "{s}"),
            }
        }
        // Every step's histograms are kept, as levels.
        assert_eq!(r["levels"].as_array().unwrap().len(), steps.len());
        assert!(
            text.contains("Knee search for p99<=60ms, errors<=0.1%"),
            "{text}"
        );
        assert!(text.contains("Answer: the highest rate that"), "{text}");
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_knee_of_a_known_capacity_is_found_within_ten_percent_with_one_second_steps() {
    searches("1s", 3);
}

/// One search, not three (about 50 s): steps of another length, so another start-up cut (a
/// fifth of the step) and other intervals (a tenth), find the same knee.
#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_the_knee_of_a_known_capacity_is_found_within_ten_percent_with_three_second_steps() {
    searches("3s", 1);
}

/// A search from 400 to at most 800 req/s against `/serial/1` (1,000 req/s at most) with
/// `p90<=10ms`, steps of 2 s in intervals of 200 ms: steady, it passes 400 and 800 (the
/// answer, the highest rate searched). With `stall`, a 100 ms stall of the server 1.5 s after
/// the first step ends (in the second, at 800 req/s). The answer, each step's `(offered,
/// verdict, measurements)` and the record.
fn noisy_search(stall: bool, remeasure: &str) -> (Option<f64>, Vec<(f64, String, u64)>, String) {
    use std::io::{BufRead, BufReader, Read, Write};
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("knee.json");
    let mut child = reqlife()
        .args([
            "knee",
            "--slo",
            "p90<=10ms",
            "--start-rate",
            "400",
            "--max-rate",
            "800",
        ])
        .args([
            "--step",
            "2s",
            "--interval",
            "200ms",
            "--pause",
            "500ms",
            "-c",
            "20",
        ])
        .args(["--remeasure", remeasure, "-o", rec.to_str().unwrap()])
        .arg(s.url("/serial/1"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if stall && line.contains("step 1:") {
            let addr = s.addr();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(1500));
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.write_all(b"GET /stall/100 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    .unwrap();
                let _ = c.read_to_end(&mut Vec::new());
            });
        }
        said.push_str(&line);
        said.push('\n');
    }
    assert!(child.wait().unwrap().code().is_some(), "{said}");
    let r: serde_json::Value = read_json(&rec);
    let steps = r["knee"]["steps"].as_array().unwrap();
    let path = steps
        .iter()
        .map(|s| {
            let v = s["verdict"].as_str().unwrap().to_string();
            (
                s["offered_rps"].as_f64().unwrap(),
                v,
                s["measurements"].as_u64().unwrap(),
            )
        })
        .collect();
    println!("stall {stall}, --remeasure {remeasure}:\n{said}");
    (r["knee"]["answer_rps"].as_f64(), path, said)
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_noisy_step_is_measured_again_and_the_knee_is_the_same() {
    static ONE_LINE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_LINE.lock().unwrap_or_else(|e| e.into_inner());
    let (steady, path, _) = noisy_search(false, "2");
    assert_eq!(steady, Some(800.0), "{path:?}");
    // The noise alone, trusted: the 800 req/s step fails and the answer is lower.
    let (trusted, path, _) = noisy_search(true, "0");
    assert_eq!(path[1], (800.0, "fail".to_string(), 1), "{path:?}");
    assert!(
        trusted.is_some_and(|a| a < 800.0),
        "{trusted:?} via {path:?}"
    );
    // Re-measured: the noisy step's interval held the limit, it ran again, and together its
    // runs give the steady search's answer.
    let (remeasured, path, said) = noisy_search(true, "2");
    assert!(
        said.contains("step 2: 800 req/s: undecided (p90<=10ms"),
        "{said}"
    );
    assert!(said.contains("measuring it again"), "{said}");
    assert_eq!((path[1].0, path[1].1.as_str()), (800.0, "pass"), "{path:?}");
    assert!(path[1].2 >= 2, "{path:?}");
    assert_eq!(remeasured, steady, "{path:?}");
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
