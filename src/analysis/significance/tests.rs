use super::*;

#[test]
fn the_smallest_p_of_small_designs() {
    assert!((min_p(3, 3) - 0.1).abs() < 1e-12);
    assert!((min_p(4, 4) - 2.0 / 70.0).abs() < 1e-12);
    assert!((min_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
    assert_eq!(runs_needed(), 4);
}

#[test]
fn the_permutation_p_is_exact_with_and_without_ties() {
    // Without ties it is the exact Mann-Whitney p.
    let (a, b) = (vec![1., 2., 3., 4., 5.], vec![6., 7., 8., 9., 10.]);
    let p = rank_permutation_p(&a, &b).unwrap();
    assert!((p - mann_whitney(&a, &b).p_two_sided).abs() < 1e-12, "{p}");
    let (a, b) = (vec![1.1, 2.2, 3.3, 4.4], vec![2.5, 3.5, 4.5, 5.5, 6.5]);
    assert!((rank_permutation_p(&a, &b).unwrap() - 0.1111111111111111).abs() < 1e-9);
    // 3 against 3 with ties inside each side, fully separated: still 2 of 20 splits,
    // where the normal approximation says 0.047.
    let (a, b) = (vec![5.0, 5.0, 5.0], vec![6.0, 6.0, 6.0]);
    assert!((rank_permutation_p(&a, &b).unwrap() - 0.1).abs() < 1e-12);
    assert!(mann_whitney(&a, &b).p_two_sided < 0.05);
    // Identical samples: p = 1.
    assert!((rank_permutation_p(&[1.0, 2.0, 3.0], &[1.0, 2.0, 3.0]).unwrap() - 1.0).abs() < 1e-12);
    assert!(rank_permutation_p(&vec![1.0; 30], &vec![2.0; 30]).is_none());
}

#[test]
fn verdicts_across_runs_need_the_test_and_the_interval() {
    let e = |point, lo, hi| Estimate { point, lo, hi };
    let slow = e(0.3, 0.25, 0.35);
    assert_eq!(
        verdict_of_runs(slow, (0.1, 0.1), 3, 3, 0.02, false).0,
        Verdict::TooFewRuns
    );
    assert_eq!(
        verdict_of_runs(slow, (0.008, 0.008), 5, 5, 0.02, false).0,
        Verdict::Slower
    );
    // p says change, the interval does not (it reaches the noise band): no call.
    let (v, why) = verdict_of_runs(e(0.03, 0.01, 0.05), (0.008, 0.008), 5, 5, 0.02, false);
    assert_eq!(v, Verdict::NoSignificantChange);
    assert!(why.unwrap().contains("noise band"));
    // The interval says change, p does not: no call, the p named.
    let (v, why) = verdict_of_runs(slow, (0.056, 0.056), 5, 5, 0.02, false);
    assert_eq!(v, Verdict::NoSignificantChange);
    assert!(why.unwrap().contains("0.056"));
    // p below 0.05 alone, not once adjusted for the many rows: no call, both named.
    let (v, why) = verdict_of_runs(slow, (0.008, 0.256), 5, 5, 0.02, false);
    assert_eq!(v, Verdict::NoSignificantChange);
    let why = why.unwrap();
    assert!(
        why.contains("0.008") && why.contains("0.256 adjusted"),
        "{why}"
    );
}

#[test]
fn the_band_p_agrees_with_the_interval() {
    // (ln B/A, se, df, noise): p < 0.05 exactly when the t interval clears the band.
    for (d, se, df) in [
        (0.10f64, 0.02, 10.0),
        (0.05, 0.02, 10.0),
        (-0.08, 0.03, 4.0),
        (0.03, 0.001, 30.0),
        (0.0, 0.01, 5.0),
    ] {
        let noise = 0.02;
        let t = t_quantile(0.975, df);
        let (lo, hi) = ((d - t * se).exp() - 1.0, (d + t * se).exp() - 1.0);
        let clears = lo > noise || hi < -noise;
        let p = band_p(d, se, df, noise);
        assert_eq!(p < 0.05, clears, "{d} ± {se}: p {p}, [{lo}, {hi}]");
    }
    // Inside the band: p = 1; a zero standard error: 0 beyond the band, 1 within.
    assert_eq!(band_p(0.01, 0.05, 10.0, 0.02), 1.0);
    assert_eq!(band_p(0.5, 0.0, 10.0, 0.02), 0.0);
    assert_eq!(band_p(0.01, 0.0, 10.0, 0.02), 1.0);
}

#[test]
fn mann_whitney_agrees_with_scipy() {
    // (a, b, exact?, U, p): from scipy.stats.mannwhitneyu(a, b, alternative='two-sided',
    // method='exact' or 'asymptotic', use_continuity=True), scipy 1.x
    type Row = (Vec<f64>, Vec<f64>, bool, f64, f64);
    let rows: Vec<Row> = vec![
        (
            vec![1., 2., 3., 4., 5.],
            vec![6., 7., 8., 9., 10.],
            true,
            0.0,
            0.007936507936507936,
        ),
        (
            vec![1.1, 2.2, 3.3, 4.4],
            vec![2.5, 3.5, 4.5, 5.5, 6.5],
            true,
            3.0,
            0.1111111111111111,
        ),
        (vec![10., 20., 30.], vec![15., 25., 35.], true, 3.0, 0.7),
        (
            // ties: the normal approximation with the tie correction
            vec![3., 1., 4., 1., 5., 9., 2., 6.],
            vec![5., 3., 5., 8., 9., 7., 9., 3.],
            false,
            17.0,
            0.12415307686326289,
        ),
        (
            (0..30).map(f64::from).collect(),
            (5..35).map(f64::from).collect(),
            false,
            312.5,
            0.04274735330571392,
        ),
    ];
    for (a, b, exact, u, p) in rows {
        let r = mann_whitney(&a, &b);
        assert_eq!(r.exact, exact, "{a:?}");
        assert_eq!(r.u, u, "{a:?}");
        assert!(
            (r.p_two_sided - p).abs() < 1e-6,
            "{a:?}: {} vs {p}",
            r.p_two_sided
        );
    }
}

#[test]
fn the_normal_tail_is_accurate() {
    // (x, 1 − Φ(x)) from scipy.stats.norm.sf
    for (x, want) in [
        (0.0, 0.5),
        (1.0, 0.15865525393145707),
        (1.96, 0.024997895148220435),
        (-1.0, 0.8413447460685429),
        (4.0, 3.167124183311998e-05),
    ] {
        let got = normal_sf(x);
        assert!(
            (got - want).abs() < 2e-7 * want.max(1e-3) + 1e-9,
            "{x}: {got} vs {want}"
        );
    }
}

/// A lognormal sample of `n` with median `median` (Box-Muller from the seed).
fn lognormal(n: usize, median: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            let (u1, u2) = (rng.unit_open(), rng.unit_open());
            let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            median * (0.5 * z).exp()
        })
        .collect()
}

#[test]
fn the_median_ratio_interval_covers_the_truth_about_95_percent_of_the_time() {
    // Medians 100 and 120: the true ratio is 1.2.
    let trials = 200;
    let covered = (0..trials)
        .filter(|&t| {
            let a = lognormal(40, 100.0, 1000 + t);
            let b = lognormal(40, 120.0, 5000 + t);
            let e = bootstrap_median_ratio(&a, &b, 400, 0.95, t);
            e.lo <= 1.2 && 1.2 <= e.hi
        })
        .count();
    let coverage = covered as f64 / trials as f64;
    println!("median-ratio bootstrap coverage: {coverage}");
    assert!((0.88..=0.99).contains(&coverage), "coverage {coverage}");
}

/// An AR(1) series x_t = φ·x_{t−1} + e_t around `mean`.
fn ar1(n: usize, phi: f64, mean: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix64(seed);
    let mut x = 0.0;
    (0..n)
        .map(|_| {
            let (u1, u2) = (rng.unit_open(), rng.unit_open());
            let e = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
            x = phi * x + e;
            mean + x
        })
        .collect()
}

fn mean_of(v: &[&f64]) -> f64 {
    v.iter().map(|x| **x).sum::<f64>() / v.len() as f64
}

#[test]
fn blocks_respect_autocorrelation() {
    let n = 200;
    let series = ar1(n, 0.8, 50.0, 7);
    let width = |l: usize| {
        let mut reps = block_bootstrap(&series, l, 1000, 3, mean_of);
        let (lo, hi) = percentile_interval(&mut reps, 0.95);
        hi - lo
    };
    // Single items pretend the values are independent: too narrow an interval.
    let (iid, blocks) = (width(1), width(block_len(n).max(8)));
    assert!(blocks > 1.5 * iid, "blocks {blocks} vs i.i.d. {iid}");
    // And the block intervals cover the true mean in most trials.
    let trials = 100;
    let covered = (0..trials)
        .filter(|&t| {
            let s = ar1(n, 0.8, 50.0, 100 + t);
            let mut reps = block_bootstrap(&s, 12, 400, t, mean_of);
            let (lo, hi) = percentile_interval(&mut reps, 0.95);
            lo <= 50.0 && 50.0 <= hi
        })
        .count();
    println!("AR(1) block bootstrap coverage: {covered}/{trials}");
    assert!(covered >= 75, "{covered}/{trials}");
}

#[test]
fn verdicts() {
    let e = |point, lo, hi| Estimate { point, lo, hi };
    // (change with its interval, higher is better?, verdict)
    let rows = [
        (e(0.20, 0.15, 0.25), false, Verdict::Slower), // latency 20% up
        (e(-0.20, -0.25, -0.15), false, Verdict::Faster), // latency 20% down
        (e(0.20, 0.15, 0.25), true, Verdict::Faster),  // throughput 20% up
        (e(0.05, -0.01, 0.11), false, Verdict::NoSignificantChange), // the interval holds 0
        (e(0.005, 0.001, 0.009), false, Verdict::NoSignificantChange), // within the noise
        (e(0.04, 0.01, 0.07), false, Verdict::NoSignificantChange), // reaches the noise band
    ];
    for (change, higher, want) in rows {
        assert_eq!(verdict(change, 0.02, higher), want, "{change:?}");
    }
    // Identical samples: no change.
    let a = lognormal(30, 100.0, 1);
    let r = bootstrap_median_ratio(&a, &a, 300, 0.95, 2);
    let change = Estimate {
        point: r.point - 1.0,
        lo: r.lo - 1.0,
        hi: r.hi - 1.0,
    };
    assert_eq!(verdict(change, 0.02, false), Verdict::NoSignificantChange);
    assert!(mann_whitney(&a, &a).p_two_sided > 0.9);
}
