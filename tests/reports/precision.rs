//! Every percentile with its 95% interval (issue 48): in the record beside each figure, for the
//! total and every phase, holding the figure; and in a merge of records.

use crate::common::*;
use reqlife::server::ServerTls;
use serde_json::Value;

const PERCENTILES: [&str; 5] = ["p50", "p90", "p99", "p999", "p9999"];

/// Each percentile of `st` has an interval that holds it (a bound may be null: too few values
/// beyond it); the names of those checked.
fn holds(name: &str, st: &Value) {
    for p in PERCENTILES {
        let figure = st[format!("{p}_us")].as_f64().unwrap();
        let ci = st[format!("{p}_ci_us")]
            .as_array()
            .unwrap_or_else(|| panic!("{name} {p}: no interval in {st}"));
        assert_eq!(ci.len(), 2, "{name} {p}: {st}");
        if let Some(lo) = ci[0].as_f64() {
            assert!(lo <= figure, "{name} {p}: {lo} > {figure}");
        }
        if let Some(hi) = ci[1].as_f64() {
            assert!(figure <= hi, "{name} {p}: {figure} > {hi}");
        }
    }
}

#[test]
fn every_percentile_of_the_total_and_the_phases_has_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    run_ok(&[
        "run",
        "-R",
        "1000",
        "-d",
        "2s",
        "-c",
        "2",
        "-t",
        "1",
        "--interval",
        "200ms",
        "--quiet",
        "-o",
        path.to_str().unwrap(),
    ]);
    let r = read_json(&path);
    let l = &r["summary"]["latency"];
    holds("total", &l["total"]);
    let phases = l["phases"].as_object().unwrap();
    assert!(phases.contains_key("wait"), "{phases:?}");
    for (name, st) in phases {
        if st["count"].as_u64().unwrap() > 0 && name != "events" {
            holds(name, st);
        }
    }
    // Too few values beyond p99.99 of about 2,000 to bound it above: no batch holds 10
    // beyond it either, so the interval is the order statistics', open above.
    let t = &l["total"];
    assert!(t["p9999_ci_us"][1].is_null(), "{t}");
    // The text report says them.
    let text = run_ok(&["report", path.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Precision    total at 95%: p50 ["), "{text}");
}

#[test]
fn a_merge_has_the_intervals_of_its_merged_histograms() {
    let server = embedded(ServerTls::None);
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<String> = (0..2)
        .map(|i| {
            let path = dir.path().join(format!("r{i}.json"));
            let p = path.to_str().unwrap().to_string();
            run_ok(&[
                "run", "-n", "500", "-c", "2", "-t", "1", "--quiet", "-o", &p, &url,
            ]);
            p
        })
        .collect();
    let merged = dir.path().join("m.json");
    run_ok(&[
        "merge",
        &paths[0],
        &paths[1],
        "-o",
        merged.to_str().unwrap(),
    ]);
    let m = read_json(&merged);
    let t = &m["summary"]["latency"]["total"];
    assert_eq!(t["count"].as_u64(), Some(1000), "{t}");
    holds("merged total", t);
}
