//! The invariants of every summary, on real runs against the embedded target: each phase's
//! percentiles in order within [min, max], and (closed loops, where every connection is opened
//! by a request) the client phases of the requests adding up to their totals within rounding
//! (a request that opened its connection included: its connect runs from its dispatch). The same checks run as property tests on synthetic requests
//! (`recorder::record`, `recorder::hist`) and, for the first, as a debug assertion on every
//! summary built.

use crate::common::*;
use reqlife::recorder::record::RunRecord;

/// An open loop opens its connections ahead of the load: their connect time is in the
/// connect figures and in no request's total, so the phases tile the totals only in a closed
/// loop (and without errors: a failed request has phases and no total).
fn check(r: &RunRecord, what: &str) {
    let closed = r.config.load_model == reqlife::model::LoadKind::Closed;
    let s = &r.summary;
    let v = s.latency.violations(closed && s.requests.errors == 0);
    assert!(v.is_empty(), "{what}: {v:?}");
    for l in r.levels.iter().chain(&r.repetitions) {
        let v = l
            .summary
            .latency
            .violations(closed && l.summary.requests.errors == 0);
        assert!(v.is_empty(), "{what}, {}: {v:?}", l.label);
    }
}

#[test]
fn every_summary_of_real_runs_keeps_its_invariants() {
    let s = embedded(reqlife::server::ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    // (what, flags)
    let rows: [(&str, Vec<&str>); 4] = [
        ("closed loop", vec!["-n", "400", "-c", "4"]),
        (
            "a connection per request",
            vec!["-n", "200", "-c", "2", "--no-keepalive"],
        ),
        ("open loop", vec!["-R", "400", "-d", "500ms", "-c", "8"]),
        (
            "repeated",
            vec!["-n", "100", "-c", "2", "--repeat", "2", "--pause", "50ms"],
        ),
    ];
    for (what, flags) in rows {
        let rec = dir.path().join("r.json");
        let url = s.url("/delay/1");
        let mut args = vec!["run", "-t", "1", "--quiet", "-o", rec.to_str().unwrap()];
        args.extend(flags);
        args.push(&url);
        run_ok(&args);
        let r: RunRecord = serde_json::from_str(&std::fs::read_to_string(&rec).unwrap())
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(r.summary.requests.ok > 0, "{what}");
        check(&r, what);
    }
}
