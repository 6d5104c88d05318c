use super::*;
use crate::recorder::hist::{new_hist, record};

/// `scipy.stats.quantile_test(np.arange(n), q=0, p=p).confidence_interval(0.95)` (scipy 1.17.1):
/// the 0-based ranks of its bounds (the values are their ranks), `None` for scipy's NaN.
const SCIPY: [(u64, f64, Option<u64>, Option<u64>); 8] = [
    (10, 0.5, Some(1), Some(8)),
    (100, 0.99, Some(96), None),
    (1000, 0.99, Some(982), Some(996)),
    (2000, 0.999, Some(1994), None),
    (5000, 0.9999, Some(4997), None),
    (123_457, 0.9, Some(110_903), Some(111_318)),
    (1_000_000, 0.999, Some(998_937), Some(999_061)),
    (37, 0.9, Some(28), Some(36)),
];

#[test]
fn the_order_ranks_are_scipys() {
    for (n, p, lo, hi) in SCIPY {
        assert_eq!(order_ranks(n, p, LEVEL), (lo, hi), "n {n}, p {p}");
    }
    assert_eq!(order_ranks(0, 0.99, LEVEL), (None, None));
    assert_eq!(order_ranks(1, 0.99, LEVEL), (Some(0), None));
}

#[test]
fn the_binomials_mass_adds_up_and_its_tails_are_in_order() {
    for (n, p) in [(7, 0.3), (1000, 0.999), (10_000_000, 0.5), (3, 0.9999)] {
        let b = Binomial::new(n, p);
        let sum: f64 = b.pmf.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "n {n} p {p}: {sum}");
        assert!(b.ppf(0.025) <= b.isf(0.025), "n {n} p {p}");
        // The mean is near n·p.
        let mean: f64 = b
            .pmf
            .iter()
            .enumerate()
            .map(|(i, m)| (b.start + i as u64) as f64 * m)
            .sum();
        assert!(
            (mean - n as f64 * p).abs() < 1e-6 * n as f64 + 1e-6,
            "{mean}"
        );
    }
}

/// A histogram of `values` (µs).
fn hist_of(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = new_hist();
    for v in values {
        record(&mut h, v * 1000);
    }
    h
}

#[test]
fn an_order_interval_is_the_sorted_values_at_its_ranks_within_a_bucket() {
    // 1..=1000 µs: the i-th smallest is i + 1.
    let h = hist_of(1..=1000);
    let [lo, hi] = order_interval(&h, 0.99);
    let (lo, hi) = (lo.unwrap(), hi.unwrap());
    // scipy's ranks 982 and 996: the values 983 and 997 µs, within HdrHistogram's 0.1%.
    assert!((lo - 983.0).abs() <= 0.001 * 983.0, "{lo}");
    assert!((hi - 997.0).abs() <= 0.001 * 997.0, "{hi}");
    let p99 = h.value_at_quantile(0.99) as f64 / 1000.0;
    assert!(lo <= p99 && p99 <= hi, "{lo} {p99} {hi}");
    // Too few values beyond p99.9 of 1000 for a high bound.
    assert_eq!(order_interval(&h, 0.999)[1], None);
}

/// Intervals of `n` values each: `f(i, j)` µs for the j-th of interval i.
fn intervals(k: usize, n: u64, f: impl Fn(usize, u64) -> u64) -> Vec<Histogram<u64>> {
    (0..k)
        .map(|i| {
            let mut h = hist::new_interval_hist();
            for j in 0..n {
                record(&mut h, f(i, j) * 1000);
            }
            h
        })
        .collect()
}

/// A pseudo-random spread of values: uniform over 100..=1099 µs, the same draw for (i, j).
fn spread(i: usize, j: u64) -> u64 {
    let mut rng = crate::util::rng::SplitMix64((i as u64) << 32 | j);
    100 + rng.below(1000)
}

/// `parts` merged into one histogram: the whole run.
fn merged(parts: &[Histogram<u64>]) -> Histogram<u64> {
    let mut whole = new_hist();
    for p in parts {
        whole.add(p).unwrap();
    }
    whole
}

#[test]
fn batch_means_of_steady_intervals_hold_the_percentile_tightly() {
    let parts = intervals(20, 1000, spread);
    let b = batch_means(&merged(&parts), &parts, 0.99).unwrap();
    assert_eq!(b.batches * b.intervals_each, 20, "{b:?}");
    let [lo, hi] = b.ci;
    let (lo, hi) = (lo.unwrap(), hi.unwrap());
    // The distribution's p99 is 1089 us; the batches' mean holds it within a few us.
    assert!(lo <= 1089.0 && 1089.0 <= hi, "{lo} {hi}");
    assert!(hi - lo < 20.0, "{lo} {hi}");
}

#[test]
fn batch_means_widen_correlated_batches_and_give_up_when_too_few() {
    // A slow drift: each interval's values 10 µs over the one before's.
    let parts = intervals(40, 1000, |i, j| spread(i, j) + 10 * i as u64);
    let b = batch_means(&merged(&parts), &parts, 0.99).unwrap();
    assert!(b.intervals_each > 1, "{b:?}");
    assert!(b.batches >= MIN_BATCHES, "{b:?}");
    // Four intervals: fewer than the fewest batches.
    assert_eq!(batch_means(&merged(&parts[..4]), &parts[..4], 0.5), None);
    // 100 values an interval, 2,000 in all: 2 beyond p99.9, under 10 a batch of 5.
    let small = intervals(20, 100, spread);
    assert_eq!(batch_means(&merged(&small), &small, 0.999), None);
}

#[test]
fn fill_keeps_the_wider_and_names_batch_means_where_it_is_kept() {
    // Drifting intervals: the batches' spread is far wider than the order statistics'.
    let parts = intervals(40, 1000, |i, j| spread(i, j) + 10 * i as u64);
    let whole = merged(&parts);
    let mut st = Stats::of(&whole);
    fill(&mut st, &whole, &parts);
    let ci = st.p50_ci_us.unwrap();
    let order = order_interval(&whole, 0.5);
    assert!(width(&ci) > width(&order), "{ci:?} {order:?}");
    let b = st.ci_batches.as_ref().unwrap();
    assert!(b.percentiles.contains(&"p50".to_string()), "{b:?}");
    // p99.99 of 40,000: batches cannot hold 10 beyond it; order statistics, with no high bound.
    assert_eq!(st.p9999_ci_us, Some(order_interval(&whole, 0.9999)));
    assert!(!b.percentiles.contains(&"p99.99".to_string()));
    // Steady intervals: order statistics are kept where batch means are not wider.
    let steady = intervals(20, 1000, spread);
    let whole = merged(&steady);
    let mut st = Stats::of(&whole);
    fill(&mut st, &whole, &steady);
    for (name, p) in PERCENTILES {
        let ci = *slot(&mut st, name);
        let ci = ci.unwrap();
        assert!(width(&ci) >= width(&order_interval(&whole, p)), "{name}");
    }
}

#[test]
fn batch_means_of_independent_intervals_are_near_order_statistics_and_a_stall_widens_them() {
    // 25 intervals of 400 values (5 s at 2,000 req/s in 200 ms intervals), drawn alike: the
    // batches' spread is the sampling's own, so batch means is about as wide as order
    // statistics (before, each batch's own p99, on 4 values beyond it, was several times wider).
    let parts = intervals(25, 400, spread);
    let whole = merged(&parts);
    let width_of = |ci: &Ci| ci[1].unwrap() - ci[0].unwrap();
    let order = width_of(&order_interval(&whole, 0.99));
    let b = batch_means(&whole, &parts, 0.99).unwrap();
    assert!(width_of(&b.ci) < 2.0 * order, "{b:?} against {order}");
    let p99 = whole.value_at_quantile(0.99) as f64 / 1000.0;
    assert!(
        b.ci[0].unwrap() <= p99 && p99 <= b.ci[1].unwrap(),
        "{b:?} {p99}"
    );
    // Two intervals of a stall (every value 3 ms later): the run's p99 is the stall's, and the
    // batches say how little of the run holds it: far wider than order statistics.
    let stalled = intervals(25, 400, |i, j| {
        spread(i, j) + if (10..12).contains(&i) { 3000 } else { 0 }
    });
    let whole = merged(&stalled);
    let b = batch_means(&whole, &stalled, 0.99).unwrap();
    let order = order_interval(&whole, 0.99);
    assert!(
        width(&b.ci) > 3.0 * width(&order),
        "{b:?} against {order:?}"
    );
}
