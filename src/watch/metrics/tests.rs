//! The exporter's unit tests: buckets, the exposition, named requests, probed phases.

use super::*;
use crate::recorder::{Counters, PhaseHists};

#[test]
fn the_bounds_rise_by_at_most_a_seventh() {
    assert_eq!(BOUNDS_NS[0], 1_000);
    assert_eq!(BOUNDS_NS[BUCKETS - 1], 100_000_000_000);
    for w in BOUNDS_NS.windows(2) {
        assert!(w[1] > w[0]);
        assert!(w[1] as f64 / w[0] as f64 <= 1.143, "{w:?}");
    }
    // 1-2-5 are bounds.
    for ns in [1_000_000, 2_000_000, 5_000_000] {
        assert!(BOUNDS_NS.contains(&ns));
    }
    assert_eq!(seconds(1_120), "0.00000112");
    assert_eq!(seconds(100_000_000_000), "100");
    assert_eq!(seconds(2_500_000_000), "2.5");
}

fn snap(index: u64, values_ns: &[u64], status: u16) -> IntervalSnapshot {
    let mut h = PhaseHists::new(hist::new_interval_hist);
    for &v in values_ns {
        hist::record(&mut h.0[Phase::Total.index()], v);
    }
    let n = values_ns.len() as u64;
    let counters = Counters {
        requests: n,
        ok: n,
        ..Counters::default()
    };
    let mut s = crate::recorder::snapshot(index, counters, &h, Vec::new());
    s.status = vec![(status, n)];
    s
}

#[test]
fn named_requests_get_their_own_series() {
    let mut m = Metrics::new(None);
    m.level = Some(Level {
        interval: Duration::from_secs(1),
        schedule: None,
        share: 1.0,
        connections: 1,
        names: vec!["get \"a\"".into(), "put".into()],
    });
    let mut s = snap(0, &[1_500_000, 3_000_000], 200);
    let part = snap(0, &[3_000_000], 200);
    s.by_request = vec![(1, part.counters.clone(), part.hists.clone())];
    m.add(&s);
    let text = m.render();
    assert!(
        text.contains("reqlife_request_requests_total{request=\"put\"} 1\n"),
        "{text}"
    );
    assert!(text.contains(
        "reqlife_request_latency_seconds_bucket{request=\"put\",phase=\"total\",le=\"+Inf\"} 1\n"
    ));
    assert_eq!(escape("get \"a\""), "get \\\"a\\\"");
}

#[test]
fn the_exposition_is_cumulative_and_well_formed() {
    let mut m = Metrics::new(Some(Segment { index: 1, count: 3 }));
    m.add(&snap(0, &[1_500_000, 3_000_000], 200));
    m.add(&snap(1, &[1_500_000], 503));
    let text = m.render();
    assert!(text.ends_with("# EOF\n"));
    assert!(
        text.contains("reqlife_requests_total{segment=\"2/3\"} 3\n"),
        "{text}"
    );
    assert!(text.contains("reqlife_responses_total{segment=\"2/3\",status=\"503\"} 1\n"));
    assert!(text.contains(
        "reqlife_latency_seconds_bucket{segment=\"2/3\",phase=\"total\",le=\"0.0016\"} 2\n"
    ));
    assert!(text.contains(
        "reqlife_latency_seconds_bucket{segment=\"2/3\",phase=\"total\",le=\"+Inf\"} 3\n"
    ));
    // Every sample line names a series of SERIES, and each family is declared once.
    let mut types = std::collections::BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            assert!(types.insert(rest.split(' ').next().unwrap().to_string()));
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let name = line.split(['{', ' ']).next().unwrap();
        assert!(SERIES.contains(&name), "{name}");
        let value = line.rsplit(' ').next().unwrap();
        assert!(value.parse::<f64>().is_ok(), "{line}");
    }
}

#[test]
fn the_servers_probed_phases_are_a_histogram_family_of_their_own() {
    let phases = [("socket".to_string(), "in its socket".to_string())];
    let mut acc = crate::recorder::probes::ProbeAcc::new(vec![1], "srv".into(), 1, &phases, &[]);
    let key = crate::recorder::probes::bucket_key(20_000);
    let snap = acc.add_tick(Some(0), &[(0, key, 3)]).expect("a snapshot");
    let mut m = Metrics::new(None);
    m.add_probed(&snap);
    m.add_probed(&snap);
    let text = m.render();
    assert!(
        text.contains("# TYPE reqlife_server_probe_seconds histogram"),
        "{text}"
    );
    assert!(
        text.contains("reqlife_server_probe_seconds_count{phase=\"socket\"} 6"),
        "{text}"
    );
    // Probe ticks move no request counter.
    assert!(text.contains("reqlife_requests_total 0"), "{text}");
}
