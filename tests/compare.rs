//! `reqlife compare`: two runs of the same target are "no significant change"; a target made
//! slower (a 5 ms delay made 10 ms) is "slower", and `--fail-if-slower`
//! exits 99; single runs carry the caveat that they cannot see run-to-run variance, with a
//! minimum detectable effect; repeated runs are compared across runs with an exact rank test
//! whose p agrees with the verdict (3 against 3: "too few runs"; 6 against 6: a 30% slowdown
//! called); interleaved rounds (`--run`) see no change in the same server, nor in a server
//! that drifts; reruns of one run compared pair by pair call at most one row in 20 changed,
//! and the table fits 100 columns; too few intervals to resample is a clear error; two records
//! with the tail's table (`--server-probes`) have its shares compared part by part, and one
//! without it is named.

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
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_single_runs_same_and_slower() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let single = ["-d", "2s", "--interval", "100ms"];
    let a = record(dir.path(), "a.json", &s.url("/delay/5"), &single);
    let b = record(dir.path(), "b.json", &s.url("/delay/5"), &single);
    // Four times the server's delay. A 5 ms delay made 6 ms was too small a change for single
    // runs on a loaded 2-core machine: with two busy loops beside it, the throughput's interval
    // reached 0 in each of 6 tries, and in CI once p50's did too. 10 ms was called slower in
    // every row, every time (p50 +72% to +82%, throughput -36% to -41%) until each run's own
    // drift widened the intervals (issue 46): with other builds loading the VM, the 5 ms run's
    // p50 moved so much between its quarters (8.0 ms at p50) that 12.9 ms was +61% within
    // [+0.2%, +160%], its MDE 95%, adjusted p 0.24.
    let slow = record(dir.path(), "slow.json", &s.url("/delay/20"), &single);

    // A shared CI machine moves several percent between runs (p50 of two runs of one load on
    // that loaded machine: intervals up to [+1.0%, +7.2%]): 10% is noise here.
    let same = summary(&run_ok(&["compare", &a, &b, "--json", "--noise", "10"]));
    assert_eq!(same["method"], "intervals");
    for figure in ["throughput", "total p50", "total p90"] {
        assert_eq!(
            row(&same, figure)["verdict"],
            "no_significant_change",
            "{figure}: {same}"
        );
    }

    // One run a side cannot see the run-to-run variance: the output says so, with the
    // smallest change each row could detect.
    let text = stdout(&run_ok(&["compare", &a, &b]));
    assert!(text.contains("Caveat: single runs"), "{text}");
    assert!(text.contains("MDE"), "{text}");
    assert!(same["caveat"].is_string(), "{same}");
    assert!(row(&same, "total p50")["mde"].as_f64().unwrap() > 0.0);

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
    // A run passes the gate against itself. (Two single runs of the same load need not: on a
    // loaded CI machine b's p99 came out 36% above a's, a change inside each run's own
    // intervals that the caveat above says single runs cannot tell from the machine's drift.)
    let out = run(&["compare", &a, &a, "--fail-if-slower", "5%"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

/// Every row's verdict agrees with the test the row shows: a change is called only with
/// p < 0.05 and an interval wholly beyond the noise band; a row without a call says why.
fn verdicts_agree_with_their_statistics(c: &Value) {
    let noise = c["noise"].as_f64().unwrap();
    for r in c["rows"].as_array().unwrap() {
        let (lo, hi) = (
            r["change"]["lo"].as_f64().unwrap(),
            r["change"]["hi"].as_f64().unwrap(),
        );
        match r["verdict"].as_str().unwrap() {
            "faster" | "slower" => {
                if let Some(p) = r["p_value"].as_f64() {
                    assert!(p < 0.05, "{r}");
                }
                assert!(r["p_adjusted"].as_f64().unwrap() < 0.05, "{r}");
                assert!(lo > noise || hi < -noise, "{r}");
            }
            "no_significant_change" | "too_few_runs" => {
                assert!(r["note"].is_string(), "{r}")
            }
            v => panic!("verdict {v}: {r}"),
        }
        // A latency row carries each side's interval as its record gives it, and one that
        // calls no change over disjoint intervals says so.
        if r["figure"] == "throughput" {
            continue;
        }
        let bounds = |side: &str| {
            let ci = r[side]
                .as_array()
                .unwrap_or_else(|| panic!("no {side}: {r}"));
            (ci[0].as_f64(), ci[1].as_f64())
        };
        let disjoint = match (bounds("a_ci"), bounds("b_ci")) {
            ((Some(alo), Some(ahi)), (Some(blo), Some(bhi))) => ahi < blo || bhi < alo,
            _ => false,
        };
        if disjoint && r["verdict"] == "no_significant_change" {
            assert!(
                r["note"].as_str().unwrap().contains("do not overlap"),
                "{r}"
            );
        }
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_repeated_runs_are_compared_across_runs() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let rep = |n: &'static str| ["-d", "700ms", "--repeat", n, "--pause", "100ms"];
    // The server's delay made 30% longer: 10 ms, then 13 ms.
    let a3 = record(dir.path(), "a3.json", &s.url("/delay/10"), &rep("3"));
    let slow3 = record(dir.path(), "slow3.json", &s.url("/delay/13"), &rep("3"));
    let a6 = record(dir.path(), "a6.json", &s.url("/delay/10"), &rep("6"));
    let slow6 = record(dir.path(), "slow6.json", &s.url("/delay/13"), &rep("6"));
    let same6 = record(dir.path(), "same6.json", &s.url("/delay/10"), &rep("6"));

    // 3 against 3: the smallest exact two-sided p is 0.1 (every B above every A), so no row
    // can call a change, however clear: each says so instead of a verdict.
    let c = summary(&run_ok(&["compare", &a3, &slow3, "--json"]));
    assert_eq!(c["method"], "runs");
    assert_eq!((c["n_a"].as_u64(), c["n_b"].as_u64()), (Some(3), Some(3)));
    verdicts_agree_with_their_statistics(&c);
    for r in c["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "too_few_runs", "{r}");
        assert!(r["p_value"].as_f64().unwrap() >= 0.1 - 1e-9, "{r}");
    }
    let text = stdout(&run_ok(&["compare", &a3, &slow3]));
    assert!(text.contains("across repeated runs (3 and 3)"), "{text}");
    assert!(
        text.contains("too few runs: 4+ per side can show a change"),
        "{text}"
    );
    assert!(
        text.contains("Verdict rule: a change is called when"),
        "{text}"
    );

    // 6 against 6: a 30% slower server is called slower, with p < 0.05 on the row once
    // adjusted for the ~33 rows. (5 against 5, whose smallest p is 0.008, no longer sufficed
    // on the loaded VM: total p50 p = 0.008, 0.052 adjusted, when only 5 rows had that p.)
    let c = summary(&run_ok(&["compare", &a6, &slow6, "--json"]));
    verdicts_agree_with_their_statistics(&c);
    let p50 = row(&c, "total p50");
    assert_eq!(p50["verdict"], "slower", "{p50}");
    let p = p50["p_value"].as_f64().unwrap();
    assert!(p < 0.05, "{p50}");
    assert!(p50["change"]["lo"].as_f64().unwrap() > 0.1, "{p50}");
    // Throughput fell too (its interval wholly below 0), though with the runs' ranks
    // overlapping on the loaded VM its p (0.026) did not pass the adjustment for ~33 rows.
    let rps = row(&c, "throughput");
    assert!(rps["change"]["hi"].as_f64().unwrap() < 0.0, "{rps}");
    assert_ne!(rps["verdict"], "faster", "{rps}");

    // The same server twice, 6 against 6: no change called on the main figures.
    let c = summary(&run_ok(&["compare", &a6, &same6, "--json", "--noise", "5"]));
    verdicts_agree_with_their_statistics(&c);
    for figure in ["throughput", "total p50", "total p90"] {
        assert_eq!(
            row(&c, figure)["verdict"],
            "no_significant_change",
            "{figure}: {c}"
        );
    }
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_interleaved_rounds_see_no_change_in_the_same_server_nor_in_a_drift() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let each = [
        "--", "-d", "600ms", "-c", "8", "-t", "1", "--pause", "100ms",
    ];
    let interleaved = |a: &str, b: &str, rounds: &str, extra: &[&str]| {
        let mut args = vec!["compare", "--run", a, b, "--rounds", rounds, "--json"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&each);
        summary(&run_ok(&args))
    };
    // The same server twice.
    let url = s.url("/delay/5");
    let c = interleaved(&url, &url, "4", &["--noise", "5"]);
    assert_eq!(c["method"], "interleaved");
    assert_eq!((c["n_a"].as_u64(), c["n_b"].as_u64()), (Some(4), Some(4)));
    verdicts_agree_with_their_statistics(&c);
    for figure in ["throughput", "total p50", "total p90"] {
        assert_eq!(
            row(&c, figure)["verdict"],
            "no_significant_change",
            "{figure}: {c}"
        );
    }
    // A server that slows down by 10% of its delay every second: over the rounds (about 6 s)
    // the delay grows by half, but A and B take turns (AB, BA, AB, BA), so the drift falls on
    // both alike and is no verdict.
    let url = s.url("/drift/5");
    let c = interleaved(&url, &url, "4", &[]);
    verdicts_agree_with_their_statistics(&c);
    let p50 = row(&c, "total p50");
    assert!(
        p50["p_value"].as_f64().unwrap() > 0.2,
        "the drift shows in p: {p50}"
    );
    for figure in ["throughput", "total p50", "total p90"] {
        // No verdict ("too few runs" when a loaded machine left a run without the figure).
        let v = row(&c, figure)["verdict"].clone();
        assert!(
            v == "no_significant_change" || v == "too_few_runs",
            "{figure}: {c}"
        );
    }
    // Run flags that make no sense per run are refused.
    let out = run(&["compare", "--run", &url, &url, "--", "--repeat", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--repeat"), "{}", stderr(&out));
}

#[test]
#[ignore = "timing: run alone by .ci/test's timing step"]
fn timing_reruns_of_one_run_call_at_most_one_row_in_20_changed() {
    let _turn = turn();
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    // One command run 10 times (the embedded target's `/`, with its Server-Timing: some 33
    // rows a comparison), compared as 5 pairs. Before mid-quantiles, the drift of each run and
    // the adjustment for many rows, 4 s runs on the loaded 2-core VM had 52 of 198 rows called
    // changed over 6 pairs (10, 5, 13, 16, 4 and 4); these 1.5 s runs 45 of 125 over 5 pairs,
    // with a widest line of 433 columns.
    let each = ["-d", "1500ms", "--interval", "100ms"];
    let runs: Vec<String> = (0..10)
        .map(|i| record(dir.path(), &format!("r{i}.json"), &s.url("/"), &each))
        .collect();
    let (mut rows, mut called, mut widest) = (0, Vec::new(), (0, String::new()));
    let mut wrong = Vec::new();
    for pair in runs.chunks(2) {
        let c = summary(&run_ok(&["compare", &pair[0], &pair[1], "--json"]));
        assert_eq!(c["adjustment"], "benjamini-hochberg", "{c}");
        for r in c["rows"].as_array().unwrap() {
            rows += 1;
            if r["verdict"] == "faster" || r["verdict"] == "slower" {
                called.push(format!("{}: {}", r["figure"], r["change"]));
            }
            // Every interval holds its estimate; none is a point where A and B differ (a
            // figure rounded to 100 ns once made one).
            let e = |k: &str| r["change"][k].as_f64().unwrap();
            let (lo, point, hi) = (e("lo"), e("point"), e("hi"));
            let slack = 1e-9 * point.abs().max(1.0);
            let differ = r["a"] != r["b"];
            if lo > point + slack || point > hi + slack || (differ && hi <= lo) {
                wrong.push(format!("{}: {}", r["figure"], r["change"]));
            }
        }
        let text = stdout(&run_ok(&["compare", &pair[0], &pair[1]]));
        assert!(text.contains("(Benjamini-Hochberg)"), "{text}");
        let w = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        if w > widest.0 {
            widest = (w, text);
        }
    }
    println!("{} of {rows} rows called changed: {called:?}", called.len());
    assert!(rows >= 100, "{rows} rows");
    let n = called.len();
    assert!(
        n * 20 <= rows,
        "{n} of {rows} rows called changed: {called:#?}"
    );
    assert!(
        wrong.is_empty(),
        "intervals that miss their estimate: {wrong:#?}"
    );
    // The table within 100 columns.
    assert!(
        widest.0 <= 100,
        "a line of {} columns:\n{}",
        widest.0,
        widest.1
    );
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

/// `record` (a file `run -o` wrote) as a run with `--server-probes` writes it, its tail's
/// table of `p99`: the slowest 1%'s share in the server's socket and in its handling (the
/// rest `wait left`), and their mean total, µs; written to `name` beside it.
fn probed_copy(record: &str, name: &str, socket: f64, handle: f64, mean_us: f64) -> String {
    let mut r: Value = serde_json::from_str(&std::fs::read_to_string(record).unwrap()).unwrap();
    let shares = |socket: f64, handle: f64| {
        serde_json::json!({
            "send": 0.05, "server: socket": socket, "server: handle": handle,
            "server: return": 0.02, "wait left": 0.93 - socket - handle
        })
    };
    // The shape of nginx's probed run in docs/server-side.md, its phases' figures left out.
    r["summary"]["server_probes"] = serde_json::json!({
        "pids": [4242], "process": "nginx", "sample": 1, "phases": {}, "order": [],
        "what": {}, "hits": {}, "notes": [],
        "cost": {"uprobe_hit_ns": null, "tracepoint_hit_ns": 600.0, "probe_cpu_s": 0.01,
                 "server_cpu_s": 1.2, "share_of_server_cpu": 0.008},
        "joining": {"requests": 3000, "joined": 3000, "unjoined": {}, "dropped": 0,
                    "shared_read": 0, "several_writes": 0, "held_back": 0,
                    "lost_events": 0, "other_events": 0, "stray_hits": 0,
                    "served_by": [4242], "events": [3000, 3000, 3000, 3000, 0]},
        "tail": [
            {"which": "p50", "requests": 300, "from_us": 160.0, "mean_us": 166.29,
             "shares": shares(0.70, 0.07)},
            {"which": "p99", "requests": 30, "from_us": 900.0, "mean_us": mean_us,
             "shares": shares(socket, handle)},
        ]
    });
    let p = Path::new(record).with_file_name(name);
    std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn the_tails_shares_are_compared_when_both_records_have_them() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let plain = record(
        dir.path(),
        "plain.json",
        &s.url("/"),
        &["-d", "1s", "--interval", "100ms"],
    );
    // B's slowest 1% waited in the server's socket: 30% of their time in A, 80% in B.
    let a = probed_copy(&plain, "a.json", 0.30, 0.20, 1_000.0);
    let b = probed_copy(&plain, "b.json", 0.80, 0.05, 10_610.0);
    let c = summary(&run_ok(&["compare", &a, &b, "--json"]));
    let p99 = &c["tail"]["groups"][1];
    assert_eq!(p99["which"], "p99", "{c}");
    let socket = p99["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["part"] == "server: socket")
        .unwrap_or_else(|| panic!("{p99}"));
    assert_eq!(socket["points"], 50.0, "{socket}");
    assert_eq!(
        (p99["a_mean_us"].as_f64(), p99["b_mean_us"].as_f64()),
        (Some(1000.0), Some(10610.0))
    );
    assert!(
        c["tail"]["note"].as_str().unwrap().contains("no interval"),
        "{c}"
    );
    let text = stdout(&run_ok(&["compare", &a, &b]));
    let row = text
        .lines()
        .find(|l| l.starts_with("  server: socket"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        row.split_whitespace().collect::<Vec<_>>(),
        ["server:", "socket", "70.0%", "70.0%", "+0.0pt", "30.0%", "80.0%", "+50.0pt"],
        "{text}"
    );
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("mean total 166.29us 166.29us +0.0% 1.00ms 10.61ms +961.0%"),
        "{text}"
    );
    let html = dir.path().join("c.html");
    run_ok(&["compare", &a, &b, "--html", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<section id=\"tail\">") && page.contains("+50.0 pt"),
        "{page}"
    );

    // Only one has it: one line says which lacks it, and why.
    let text = stdout(&run_ok(&["compare", &a, &plain]));
    assert!(
        text.contains("B has no tail table: it was run without --server-probes"),
        "{text}"
    );
    // Neither: nothing of it.
    let c = summary(&run_ok(&["compare", &plain, &plain, "--json"]));
    assert!(c.get("tail").is_none(), "{c}");
}
