//! The invariants of every summary, on real runs against the embedded target: each phase's
//! percentiles in order within [min, max], and (closed loops, where every connection is opened
//! by a request) the client phases of the requests adding up to their totals within rounding
//! (a request that opened its connection included: its connect runs from its dispatch). The same checks run as property tests on synthetic requests
//! (`recorder::record`, `recorder::hist`) and, for the first, as a debug assertion on every
//! summary built. And the relations between a summary's counts (issue 37: requests, errors,
//! throughput, drained, server closes against connections, bytes read against headers and
//! body), on successful runs and on failed ones (nothing listening, bodies cut at --max-body,
//! a server that drips its body, a server that ends its connections).

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
    let v = s.count_violations(r.config.connections);
    assert!(v.is_empty(), "{what}: {v:?}");
    for l in r.levels.iter().chain(&r.repetitions) {
        let v = l
            .summary
            .latency
            .violations(closed && l.summary.requests.errors == 0);
        assert!(v.is_empty(), "{what}, {}: {v:?}", l.label);
        let v = l.summary.count_violations(r.config.connections);
        assert!(v.is_empty(), "{what}, {}: {v:?}", l.label);
    }
}

/// The record of `reqlife run -t 1 --quiet -o FILE FLAGS… URL` (any exit code).
fn record_of(flags: &[&str], url: &str) -> RunRecord {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("r.json");
    let mut args = vec!["run", "-t", "1", "--quiet", "-o", rec.to_str().unwrap()];
    args.extend(flags);
    args.push(url);
    let o = run(&args);
    let text = std::fs::read_to_string(&rec)
        .unwrap_or_else(|e| panic!("{flags:?}: no record ({e}): {}", stderr(&o)));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{flags:?}: {e}"))
}

#[test]
fn the_counts_of_failed_runs_follow_from_each_other() {
    // Nothing listens: every request fails to connect; nothing was read or written.
    let refused = format!("http://{}/", refused_addr());
    let r = record_of(&["-d", "2s", "-c", "8"], &refused);
    check(&r, "refused");
    assert_eq!(r.summary.requests.ok, 0);
    assert_eq!(r.summary.bytes.read, 0);
    // Bodies cut at --max-body: the bytes the server sent before the cut are read.
    let s = embedded(reqlife::server::ServerTls::None);
    let flags = [
        "-n",
        "6",
        "-c",
        "2",
        "--max-body",
        "100K",
        "--stream",
        "sse",
    ];
    let r = record_of(&flags, &s.url("/sse/100000/0"));
    check(&r, "cut at --max-body");
    let protocol = r.summary.errors["protocol"];
    assert_eq!(protocol, 6, "{:?}", r.summary.errors);
    assert!(
        r.summary.bytes.read >= 6 * 100_000,
        "6 bodies cut at 100 KB, {} bytes read",
        r.summary.bytes.read
    );
    // The same over HTTP/2: the stream's share of the connection.
    let r = record_of(
        &[&flags[..], &["--http2"]].concat(),
        &s.url("/sse/100000/0"),
    );
    check(&r, "cut at --max-body, HTTP/2");
    assert!(r.summary.bytes.read >= 6 * 100_000, "{:?}", r.summary.bytes);
    // A body dripped a byte a second until the timeout: its head and bytes were read.
    let f = reqlife::server::faults::spawn("127.0.0.1:0".parse().unwrap()).unwrap();
    let r = record_of(
        &["-n", "2", "-c", "2", "--timeout", "1500ms"],
        &f.url("drip"),
    );
    check(&r, "drip");
    assert_eq!(r.summary.errors["timeout"], 2, "{:?}", r.summary.errors);
    assert!(r.summary.bytes.read > 2 * 20, "{:?}", r.summary.bytes);
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
