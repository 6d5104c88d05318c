//! The verdict on the load itself (issue 48): a client that cannot keep up is not valid, naming
//! the check, and `--strict` fails it with exit 6; a steady run is valid; a server whose latency
//! grows is drifting; the record keeps the checks (and the send gaps) as its schema says.

use crate::common::*;
use reqlife::server::ServerTls;
use serde_json::Value;

/// A run's exit code, record and report ([`run_recorded`]).
fn judged(args: &[&str]) -> (i32, Value, String) {
    run_recorded(args)
}

/// The state of check `name` in `record`'s validity.
fn state<'a>(record: &'a Value, name: &str) -> &'a str {
    record["validity"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {}", record["validity"]))["state"]
        .as_str()
        .unwrap()
}

#[test]
fn a_client_that_cannot_keep_up_is_not_valid_and_strict_exits_6() {
    // 100,000 req/s on one connection against the embedded target (tens of µs a request, 100
    // µs and more in a debug build): it carries a small share.
    let server = embedded(ServerTls::None);
    let url = server.url("/");
    let args = [
        "run", "-R", "100000", "-c", "1", "-t", "1", "-d", "2s", &url,
    ];
    let (code, r, text) = judged(&args);
    assert_eq!(
        code, 0,
        "without --strict the verdict is said, not an exit code"
    );
    let v = &r["validity"];
    assert_eq!(v["valid"], false, "{v}");
    assert_eq!(state(&r, "client"), "fail", "{v}");
    assert_eq!(state(&r, "rate"), "fail", "{v}");
    let line = v["line"].as_str().unwrap();
    assert!(
        line.starts_with("Load NOT VALID: ")
            && line.contains("the client sent ")
            && line.contains("; the connections could not carry the rate (queue p99 "),
        "{line}"
    );
    // The report's line is the record's, at its top: before the first figures.
    let at = text
        .find(line)
        .unwrap_or_else(|| panic!("{line}\nnot in\n{text}"));
    assert!(at < text.find("Requests").unwrap(), "{text}");
    // The send gaps were kept (the first 1,000 at most), and judged.
    let gaps = r["arrivals"]["gaps_ns"].as_array().unwrap().len();
    assert!((50..=1000).contains(&gaps), "{gaps}");
    assert_ne!(state(&r, "arrivals"), "not_applicable", "{v}");
    let mut strict: Vec<&str> = args.to_vec();
    strict.insert(1, "--strict");
    let out = run(&strict);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("reqlife: --strict: Load NOT VALID: "),
        "{}",
        stderr(&out)
    );
    // A lost threshold outranks it.
    strict.extend(["--threshold", "p50<1us"]);
    assert_eq!(run(&strict).status.code(), Some(99));
    // `report --strict` judges a saved record the same way, a threshold outranking it too.
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("r.json");
    std::fs::write(&saved, serde_json::to_string(&r).unwrap()).unwrap();
    let saved = saved.to_str().unwrap();
    assert_eq!(run(&["report", saved]).status.code(), Some(0));
    let out = run(&["report", saved, "--strict"]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("reqlife: --strict: Load NOT VALID: "));
    let out = run(&["report", saved, "--strict", "--threshold", "p50<1us"]);
    assert_eq!(out.status.code(), Some(99), "{}", stderr(&out));
}

#[test]
fn a_closed_loop_has_no_arrivals_to_judge_and_knee_refuses_strict() {
    let (code, r, text) = judged(&["run", "-n", "2000", "-c", "2", "-t", "1", "--strict"]);
    for name in ["arrivals", "rate", "client"] {
        assert_eq!(
            state(&r, name),
            "not_applicable",
            "{name}: {}",
            r["validity"]
        );
    }
    assert!(r.get("arrivals").is_none(), "{}", r["arrivals"]);
    // p99.99 of 2,000 values rests on none beyond it: marked, not failed.
    assert_eq!(state(&r, "samples"), "marked");
    assert!(text.contains("~: fewer than 10 values beyond"), "{text}");
    assert_eq!(r["validity"]["valid"], true, "{}", r["validity"]);
    assert_eq!(code, 0);
    let out = run(&["knee", "--strict", "--slo", "p99<10ms"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--strict"), "{}", stderr(&out));
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_steady_run_is_valid() {
    // A server that takes 5 ms a request, as the drifting one below starts: its latency is its
    // own. (The embedded target's own tens of µs left the p99 to the machine's noise: on a
    // busy 2-core CI machine it fell 43% over a run, Mann-Kendall p 0.009, and drift failed.)
    let server = embedded(ServerTls::None);
    let url = server.url("/delay/5");
    let (code, r, text) = judged(&["run", "-c", "2", "-t", "1", "-d", "10s", "--strict", &url]);
    let v = &r["validity"];
    assert_eq!(v["valid"], true, "{v}");
    assert_eq!(code, 0, "{v}");
    for name in ["warmup", "drift"] {
        assert_eq!(state(&r, name), "pass", "{name}: {v}");
    }
    assert!(text.contains("Load valid: warmup, drift passed"), "{text}");
    // An open loop's sends: a Poisson process, all sent. A seed whose schedule's gaps are well
    // within the test (A² about 0.4: a Poisson schedule fails it at 5% by chance); a low rate.
    // (Its client check is not asserted: a debug build on a busy 2-core machine was late by
    // over 1 ms at p99 even at 100 req/s, which is for that check to say.)
    let args = "run -R 100 --arrival poisson --seed 4800 -c 4 -t 1 -d 10s";
    let (_, r, _) = judged(&args.split(' ').collect::<Vec<_>>());
    for name in ["arrivals", "rate"] {
        assert_eq!(state(&r, name), "pass", "{name}: {}", r["validity"]);
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_a_server_whose_latency_grows_is_drifting() {
    // Its delay grows by a tenth of 5 ms each second: from 5 ms to 10 ms over the run (a
    // delay of 1 ms, its timer's granularity and the client's time in the total diluted the
    // growth to +25% of the p50 in a debug build).
    let server = embedded(ServerTls::None);
    let url = server.url("/drift/5");
    let (code, r, _) = judged(&["run", "-c", "2", "-t", "1", "-d", "10s", "--strict", &url]);
    let v = &r["validity"];
    assert_eq!(state(&r, "drift"), "fail", "{v}");
    assert_eq!(code, 6, "{v}");
    let line = v["line"].as_str().unwrap();
    assert!(
        line.contains("latency rose")
            && line.contains("over the run")
            && line.contains("not a steady state"),
        "{line}"
    );
}

#[test]
fn each_level_of_a_sweep_is_judged_and_the_sweep_valid_only_when_they_all_are() {
    let server = embedded(ServerTls::None);
    let url = server.url("/");
    let args = [
        "run",
        "-R",
        "100,100000",
        "-c",
        "1",
        "-t",
        "1",
        "-d",
        "1s",
        "--pause",
        "100ms",
        &url,
    ];
    let (code, r, text) = judged(&args);
    assert_eq!(code, 0);
    let levels = r["levels"].as_array().unwrap();
    let top = &levels[1];
    assert_eq!(top["label"], "100000 req/s");
    let v = &top["validity"];
    assert_eq!(v["valid"], false, "{v}");
    let rate = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "rate")
        .unwrap();
    assert_eq!(rate["state"], "fail", "{v}");
    assert!(levels[0]["validity"]["checks"].is_array(), "{}", levels[0]);
    // The sweep's own line names the levels that were not valid; each is said under the table.
    let line = r["validity"]["line"].as_str().unwrap();
    assert_eq!(r["validity"]["valid"], false, "{line}");
    assert!(
        line.starts_with("Load NOT VALID in ")
            && line.contains("of 2 levels: ")
            && line.contains("100000 req/s"),
        "{line}"
    );
    assert!(
        text.contains("  100000 req/s: Load NOT VALID: the client sent "),
        "{text}"
    );
    let mut strict = args.to_vec();
    strict.insert(1, "--strict");
    assert_eq!(run(&strict).status.code(), Some(6));
}
