//! Several generators, one plan: three `--segment i/3` processes against one embedded target,
//! started together with `--start-at`, merged by `reqlife merge` into the record of the whole
//! plan: counts add up exactly to those of one process running the whole plan, the merged
//! histograms are exactly the sum of the parts', and the interval series line up. Records
//! that are not parts of one plan are refused.

mod common;

use common::*;
use reqlife::recorder::hist;
use reqlife::recorder::record::RunRecord;
use reqlife::server::ServerTls;
use std::path::{Path, PathBuf};
use std::process::Stdio;

fn load(p: &Path) -> RunRecord {
    reqlife::app::load_record(p).unwrap()
}

/// Runs the three segments of `flags` at once, as separate processes; their record paths.
fn segments(dir: &Path, flags: &[&str], url: &str) -> Vec<PathBuf> {
    let children: Vec<(PathBuf, std::process::Child)> = (1..=3)
        .map(|i| {
            let path = dir.join(format!("seg{i}.json"));
            let seg = format!("{i}/3");
            let mut args: Vec<&str> = flags.to_vec();
            args.extend_from_slice(&[
                "--segment",
                &seg,
                "--start-at",
                "+1s",
                "--quiet",
                "-o",
                path.to_str().unwrap(),
                url,
            ]);
            let child = reqlife()
                .arg("run")
                .args(&args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (path, child)
        })
        .collect();
    children
        .into_iter()
        .map(|(path, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            path
        })
        .collect()
}

fn merge_ok(parts: &[PathBuf], out: &Path) -> RunRecord {
    let mut args = vec!["merge".to_string()];
    args.extend(parts.iter().map(|p| p.display().to_string()));
    args.extend(["-o".into(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run_ok(&args);
    load(out)
}

#[test]
fn three_segments_merge_into_the_whole_plan() {
    let s = embedded(ServerTls::None);
    let url = s.url("/");
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-n", "3000", "-c", "6", "-t", "1"];

    let whole = dir.path().join("whole.json");
    let mut args = vec!["run"];
    args.extend_from_slice(&flags);
    args.extend_from_slice(&["--quiet", "-o", whole.to_str().unwrap(), &url]);
    run_ok(&args);
    let whole = load(&whole);

    let parts = segments(dir.path(), &flags, &url);
    let seg: Vec<RunRecord> = parts.iter().map(|p| load(p)).collect();
    // Each segment ran its share: 1000 requests on 2 connections, and said which it was.
    for (i, r) in seg.iter().enumerate() {
        assert_eq!(r.summary.requests.total, 1000);
        assert_eq!(r.summary.connections.opened, 2);
        assert_eq!(
            r.config.segment.as_deref(),
            Some(format!("{}/3", i + 1).as_str())
        );
    }
    let merged = merge_ok(&parts, &dir.path().join("all.json"));

    // Counts: exactly those of one process running the whole plan.
    let (m, w) = (&merged.summary, &whole.summary);
    assert_eq!(m.requests, w.requests);
    assert_eq!(m.status, w.status);
    assert_eq!(m.connections.opened, w.connections.opened);
    assert_eq!(m.bytes.body, w.bytes.body);
    assert_eq!(m.latency.total.count, w.latency.total.count);
    assert_eq!(
        m.server_timing["total"].count,
        w.server_timing["total"].count
    );
    assert_eq!(merged.config.segment, None);

    // Histograms: exactly the sum of the parts', per phase and server metric.
    for key in ["total", "wait", "connect", "server_timing.total"] {
        let mut sum = hist::new_hist();
        for r in &seg {
            sum.add(r.histogram(key).unwrap()).unwrap();
        }
        let got = merged.histogram(key).unwrap();
        assert_eq!(got.len(), sum.len(), "{key}");
        for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(
                got.value_at_quantile(q),
                sum.value_at_quantile(q),
                "{key} q{q}"
            );
        }
    }
    let p99 = merged.summary.latency.total.p99_us.unwrap();
    let exact = merged.histogram("total").unwrap().value_at_quantile(0.99) as f64 / 1000.0;
    assert_eq!(
        p99, exact,
        "the summary is computed from the merged histogram"
    );

    // The merged record is a record like any other: it validates and re-reports.
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schema/runrecord.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let json = serde_json::to_value(&merged).unwrap();
    assert!(validator.is_valid(&json));
    let text = stdout(&run_ok(&[
        "report",
        dir.path().join("all.json").to_str().unwrap(),
    ]));
    assert!(text.contains("3000 total"), "{text}");
}

#[test]
fn open_loop_segments_offer_the_whole_rate_together_and_line_up_in_time() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let parts = segments(
        dir.path(),
        &[
            "-R",
            "600",
            "-d",
            "2s",
            "-c",
            "6",
            "-t",
            "1",
            "--interval",
            "500ms",
        ],
        &s.url("/"),
    );
    for p in &parts {
        let r = load(p);
        // 600 req/s over 3: each offered 200.
        assert_eq!(r.summary.generator.offered_rps, Some(200.0));
    }
    let merged = merge_ok(&parts, &dir.path().join("all.json"));
    assert_eq!(merged.summary.generator.offered_rps, Some(600.0));
    let total = merged.summary.requests.total;
    assert!(
        (1180..=1200).contains(&total),
        "{total} requests for 600 req/s over 2 s"
    );
    // Started together, the parts' intervals merge slot by slot: 4 of 500 ms, ~300 each.
    let n = merged.intervals.len();
    assert!((4..=5).contains(&n), "{n} intervals");
    for i in &merged.intervals[..4] {
        assert!(
            (270..=330).contains(&i.requests),
            "{} at {}s",
            i.requests,
            i.start_s
        );
    }
    assert_eq!(
        merged.intervals.iter().map(|i| i.requests).sum::<u64>(),
        total
    );
}

#[test]
fn records_that_are_not_parts_of_one_plan_are_refused() {
    let s = embedded(ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let record = |name: &str, extra: &[&str], url: &str| {
        let p = d.join(name);
        let mut args = vec!["run", "-n", "60", "-c", "3", "-t", "1", "--quiet", "-o"];
        args.push(p.to_str().unwrap());
        args.extend_from_slice(extra);
        args.push(url);
        run_ok(&args);
        p.to_str().unwrap().to_string()
    };
    let seg1 = record("s1.json", &["--segment", "1/3"], &s.url("/"));
    let seg2_of_2 = record("t2.json", &["--segment", "2/2"], &s.url("/"));
    let whole = record("w.json", &[], &s.url("/"));
    let other = record("o.json", &[], &s.url("/status/201"));
    // (files, a part of the message)
    let rows = [
        (vec![&seg1, &seg1], "given twice"),
        (vec![&seg1, &whole], "some records are segments"),
        (vec![&seg1, &seg2_of_2], "share n"),
        (vec![&whole, &other], "not the same plan"),
    ];
    for (files, want) in rows {
        let mut args = vec!["merge"];
        args.extend(files.iter().map(|f| f.as_str()));
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{files:?}");
        assert!(stderr(&out).contains(want), "{files:?}: {}", stderr(&out));
    }
    // A missing segment is merged, with a warning saying so.
    let out = run_ok(&["merge", &seg1, "--json"]);
    assert!(
        stdout(&out).contains("segments 2/3, 3/3 are missing"),
        "{}",
        stdout(&out)
    );
    // Not a record at all.
    let out = run(&["merge", "/nonexistent.json"]);
    assert_eq!(out.status.code(), Some(2));
}
