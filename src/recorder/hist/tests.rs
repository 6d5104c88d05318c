use super::*;

#[test]
fn the_encoding_is_v2_deflate_serializer_s_byte_for_byte() {
    use hdrhistogram::serialization::V2DeflateSerializer;
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    let mut hists = vec![new_hist(), new_interval_hist()];
    for n in [1u64, 10, 1000, 100_000] {
        let mut h = new_hist();
        let mut small = new_interval_hist();
        for _ in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let ns = 1 + rng % 50_000_000;
            record(&mut h, ns);
            record(&mut small, ns / 7);
        }
        hists.push(h);
        hists.push(small);
    }
    // Twice over, so the kept compressor is used again after a reset.
    for h in hists.iter().chain(hists.iter()) {
        let mut want = Vec::new();
        V2DeflateSerializer::new().serialize(h, &mut want).unwrap();
        let got = encode_bytes(h);
        assert_eq!(got, want, "{} values", h.len());
        assert_eq!(decode_bytes(&got).unwrap(), *h);
    }
}

#[test]
fn a_growing_histogram_starts_at_16_kib_and_grows_to_what_it_records() {
    let mut h = new_growing_hist();
    assert_eq!(
        h.distinct_values(),
        2048,
        "counts of a phase that records nothing"
    );
    let mut full = new_hist();
    for v in [1u64, 2047, 2048, 12_345, 5_000_000] {
        record(&mut h, v);
        record(&mut full, v);
    }
    // Up to 5 ms: 14 of the full range's 33 half-buckets of 1,024 counts.
    assert_eq!(h.distinct_values(), 14 * 1024);
    assert_eq!(full.distinct_values(), 33 * 1024);
    for v in [7_000_000_000, MAX_NS * 2] {
        record(&mut h, v);
        record(&mut full, v);
    }
    assert_eq!(h.len(), 7);
    // The same counts at the same values as the full-range histogram, the clamp included.
    let counts = |h: &Histogram<u64>| {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&h), counts(&full));
}

#[test]
fn encode_decode_round_trip_is_exact() {
    let mut h = new_hist();
    for v in [1u64, 999, 12_345, 1_000_000, 7_000_000_000, MAX_NS * 2] {
        record(&mut h, v);
    }
    let back = decode(&encode(&h)).unwrap();
    assert_eq!(back.len(), 6);
    assert_eq!(back, h);
    assert_eq!(back.max(), h.highest_equivalent(MAX_NS)); // clamped, still counted
}

#[test]
fn stats_in_microseconds() {
    let mut h = new_hist();
    for v in 1..=1000u64 {
        record(&mut h, v * 1000); // 1 µs .. 1000 µs
    }
    let s = Stats::of(&h);
    assert_eq!(s.count, 1000);
    assert_eq!(s.min_us, Some(1.0));
    // HdrHistogram precision: 3 significant digits.
    let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() <= b * 0.001 + 0.001;
    assert!(close(s.p50_us, 500.0), "{:?}", s.p50_us);
    assert!(close(s.p90_us, 900.0), "{:?}", s.p90_us);
    assert!(close(s.p99_us, 990.0), "{:?}", s.p99_us);
    assert!(close(s.max_us, 1000.0), "{:?}", s.max_us);
    assert!(close(s.mean_us, 500.5), "{:?}", s.mean_us);
}

#[test]
fn empty_stats_are_none() {
    let s = Stats::of(&new_hist());
    assert_eq!(s.count, 0);
    assert_eq!(s.p50_us, None);
}

#[test]
fn interval_hist_grows_and_merges_into_a_phase_hist() {
    let mut i = new_interval_hist();
    record(&mut i, 50_000_000_000); // 50 s, beyond the initial 1 ms
    let mut total = new_hist();
    total.add(&i).unwrap();
    assert_eq!(total.len(), 1);
    let back = decode_bytes(&encode_bytes(&i)).unwrap();
    assert_eq!(back.len(), 1);
}

#[test]
fn a_stall_beyond_the_range_is_clamped_and_counted() {
    let mut h = new_hist();
    record(&mut h, 5_000);
    record(&mut h, MAX_NS * 3); // three hours: beyond the range
    record(&mut h, u64::MAX);
    let s = Stats::of(&h);
    assert_eq!((s.count, s.clamped), (3, 2));
    assert!(s.violations().is_empty(), "{:?}", s.violations());
    // An interval histogram (auto-resizing) clamps the same way.
    let mut i = new_interval_hist();
    record(&mut i, u64::MAX);
    assert_eq!((i.len(), clamped(&i)), (1, 1));
}

proptest::proptest! {
    /// Whatever the values (zero, beyond the range), every one is counted, those beyond
    /// the range are clamped and counted as such, and the summary's invariants hold.
    #[test]
    fn summaries_keep_their_invariants(values in proptest::collection::vec(
        proptest::prop_oneof![
            0u64..2_000,
            0u64..10_000_000_000,
            MAX_NS - 10..MAX_NS + 10,
            proptest::prelude::any::<u64>(),
        ],
        0..300,
    )) {
        let mut h = new_hist();
        for &v in &values {
            record(&mut h, v);
        }
        let s = Stats::of(&h);
        proptest::prop_assert_eq!(s.count, values.len() as u64);
        let top = h.lowest_equivalent(MAX_NS);
        let beyond = values.iter().filter(|&&v| v.min(MAX_NS) >= top).count() as u64;
        proptest::prop_assert_eq!(s.clamped, beyond);
        proptest::prop_assert!(s.violations().is_empty(), "{:?}", s.violations());
        // Merged into an interval histogram and back: the same.
        let mut i = new_interval_hist();
        i.add(&h).unwrap();
        proptest::prop_assert_eq!(Stats::of(&i), s);
    }
}

#[test]
fn bad_encodings_are_errors() {
    assert!(decode("not base64!").is_err());
    assert!(decode("aGVsbG8=").is_err());
}
