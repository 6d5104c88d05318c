use super::*;

#[test]
fn records_that_cannot_be_compared_are_bad_input() {
    use crate::util::exit::ExitCode;
    let b = crate::report::fixture::plain();
    let mut a = b.clone();
    a.summary.requests.ok = 0;
    let e = compare(&a, &b, 0.02, 1).unwrap_err();
    assert_eq!(e.to_string(), "A has no complete response to compare");
    assert_eq!(e.exit_code(), crate::util::exit::EXIT_USAGE);
}

#[test]
fn log_buckets_are_within_one_percent() {
    for ns in [1u64, 999, 12_345, 1_000_000, 3_600_000_000_000] {
        let back = value_of(bucket_of(ns));
        assert!((back / ns as f64 - 1.0).abs() <= 0.011, "{ns}: {back}");
    }
}
