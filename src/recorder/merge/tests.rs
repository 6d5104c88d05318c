use super::*;

/// An interval of `requests` at `start_s` lasting `duration_s`, with no histograms.
fn iv(start_s: f64, duration_s: f64, requests: u64) -> Interval {
    Interval {
        start_s,
        duration_s,
        requests,
        ok: requests,
        errors: 0,
        throughput_rps: 0.0,
        bytes_read: 0,
        latency: BTreeMap::new(),
        server_timing: BTreeMap::new(),
        server_probes: BTreeMap::new(),
        histograms: BTreeMap::new(),
        generator: None,
        slowest: Vec::new(),
    }
}

#[test]
fn narrow_intervals_add_up_in_the_wider_slots() {
    // A long run's series (20 ms wide, the last one partial) and a short run's (10 ms).
    let wide = [iv(0.0, 0.02, 2), iv(0.02, 0.02, 4), iv(0.04, 0.01, 1)];
    let narrow: Vec<Interval> = (0..5).map(|i| iv(i as f64 * 0.01, 0.01, 1)).collect();
    let merged = intervals(&[&wide, &narrow], &[0.0, 0.0], 0.01).unwrap();
    let got: Vec<(f64, f64, u64)> = merged
        .iter()
        .map(|i| (i.start_s, i.duration_s, i.requests))
        .collect();
    assert_eq!(
        got,
        vec![(0.0, 0.02, 4), (0.02, 0.02, 6), (0.04, 0.01, 2)],
        "{got:?}"
    );
}

#[test]
fn equal_widths_merge_by_rounded_offset_as_before() {
    let a = [iv(0.0, 1.0, 1), iv(1.0, 1.0, 2)];
    let b = [iv(0.0, 1.0, 10), iv(1.0, 0.5, 20)];
    // b started 1.1 s after a: its intervals land in slots 1 and 2.
    let merged = intervals(&[&a, &b], &[0.0, 1.1], 1.0).unwrap();
    let got: Vec<(f64, f64, u64)> = merged
        .iter()
        .map(|i| (i.start_s, i.duration_s, i.requests))
        .collect();
    assert_eq!(got, vec![(0.0, 1.0, 1), (1.0, 1.0, 12), (2.0, 0.5, 20)]);
}
