use super::stats::*;
use super::*;
use crate::model::Phase;
use crate::recorder::hist::IntervalStats;
use crate::recorder::record::validity::Arrivals;

/// Data sets drawn by numpy (`np.random.default_rng(48)`, in this order: exponential(1000, 40),
/// uniform(0, 2000, 40), gamma(3, 300, 30), exponential(5, 12), each rounded to 3 decimals),
/// with `scipy.stats.anderson(x, 'expon')`'s A² and 5% critical value (scipy 1.17.1).
const SCIPY_AD: [(&[f64], f64, f64, bool); 4] = [
    (
        &[
            2984.171, 1152.989, 1625.692, 1434.946, 89.591, 593.877, 1708.037, 3664.681, 412.421,
            404.502, 291.85, 143.913, 1968.99, 2440.932, 271.712, 1093.68, 757.305, 1286.615,
            1321.401, 861.005, 54.657, 1021.231, 392.517, 627.307, 792.825, 1001.589, 1639.99,
            617.484, 591.744, 731.562, 3513.225, 220.425, 370.632, 899.813, 1494.56, 1594.915,
            4443.027, 459.86, 33.811, 757.218,
        ],
        0.42316543384620786,
        1.301,
        false,
    ),
    (
        &[
            1212.664, 564.463, 240.344, 679.879, 118.851, 1977.581, 51.437, 765.294, 1204.957,
            369.902, 745.016, 1914.894, 1195.594, 1982.244, 1888.604, 1622.117, 23.715, 258.752,
            540.45, 820.499, 1832.905, 1379.589, 1160.803, 409.841, 1408.321, 61.908, 1336.854,
            1168.662, 127.99, 1591.353, 443.802, 968.48, 135.623, 185.549, 1167.651, 912.649,
            1236.535, 1972.081, 909.581, 261.556,
        ],
        1.3119346819699231,
        1.301,
        true,
    ),
    (
        &[
            802.773, 754.585, 641.632, 1271.262, 676.725, 892.69, 1670.959, 908.843, 720.818,
            459.103, 1083.889, 1819.079, 741.822, 787.529, 2926.699, 403.745, 1467.924, 148.234,
            1116.683, 506.818, 734.649, 1266.081, 580.82, 968.297, 1244.281, 313.008, 753.426,
            768.324, 573.807, 293.603,
        ],
        3.3251304307564524,
        1.295,
        true,
    ),
    (
        &[
            1.237, 3.418, 0.012, 1.318, 24.179, 11.213, 1.925, 5.253, 2.653, 1.294, 5.374, 5.414,
        ],
        0.5459176589752079,
        1.258,
        false,
    ),
];

#[test]
fn anderson_darling_is_scipys() {
    for (x, a2, critical, rejects) in SCIPY_AD {
        let ad = anderson_expon(x).unwrap();
        assert!(
            (ad.a2 - a2).abs() < 1e-9,
            "A² {} against scipy's {a2}",
            ad.a2
        );
        assert_eq!(ad.critical, critical, "n {}", x.len());
        assert_eq!(ad.rejects(), rejects, "A² {a2}");
    }
    // A gap of 0: ln F(0) = −∞, as scipy's A² is.
    assert_eq!(anderson_expon(&[0.0, 1.0, 2.0]).unwrap().a2, f64::INFINITY);
    assert_eq!(anderson_expon(&[1.0]), None);
    assert_eq!(anderson_expon(&[0.0, 0.0]), None);
}

/// `np.round(rng.normal(0, 1, 15) + 0.15 * np.arange(15), 2)` from the same generator after
/// the sets above, three values made equal (ties); `scipy.stats.kendalltau(np.arange(15), y,
/// method='asymptotic')` gives p 0.04676366364533333, `scipy.stats.theilslopes(y)` the slope
/// 0.19363636363636363.
const TRENDING: [f64; 15] = [
    -0.72, -1.57, 1.03, 2.54, -0.58, 1.22, -0.63, 2.54, 1.4, 1.23, 2.54, 0.62, 0.96, 3.16, 2.32,
];

#[test]
fn mann_kendall_is_kendalls_tau_against_the_index() {
    let t = mann_kendall(&TRENDING).unwrap();
    assert!((t.p - 0.046_763_663_645_333_33).abs() < 1e-6, "p {}", t.p);
    assert!(
        (t.slope - 0.193_636_363_636_363_63).abs() < 1e-12,
        "slope {}",
        t.slope
    );
    // By hand: 1, 2, 3 rising: S = 3, var = 3·2·11/18; a tie takes its pairs out.
    let t = mann_kendall(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!((t.s, t.var_s), (3.0, 66.0 / 18.0));
    let t = mann_kendall(&[1.0, 1.0, 3.0]).unwrap();
    assert_eq!((t.s, t.var_s), (2.0, (66.0 - 18.0) / 18.0));
    // A line from 100 rising 10 a step: +90% over 10 steps.
    let line: Vec<f64> = (0..10).map(|i| 100.0 + 10.0 * i as f64).collect();
    let t = mann_kendall(&line).unwrap();
    assert!((t.change(10) - 0.9).abs() < 1e-12, "{t:?}");
    assert!(t.p < 1e-3, "{t:?}");
    assert_eq!(mann_kendall(&[5.0; 10]).unwrap().p, 1.0);
}

#[test]
fn mser_cuts_the_transient_and_nothing_of_a_flat_series() {
    let mut y = vec![
        10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.1, 10.0, 10.2, 9.9, 10.0, 10.1,
    ];
    assert_eq!(mser(&y), Some(0));
    y[0] = 30.0;
    y[1] = 20.0;
    assert_eq!(mser(&y), Some(2));
    assert_eq!(mser(&[1.0, 2.0, 3.0]), None);
    assert_eq!(batch_means(&[1.0, 3.0, 5.0, 7.0, 9.0], 2), vec![2.0, 6.0]);
}

/// A plain 10 s record with 10 intervals of 1 s: an open loop at 1000 req/s when `open`.
fn record(open: bool) -> RunRecord {
    let flags: &[&str] = match open {
        true => &[
            "-d",
            "10s",
            "--interval",
            "1s",
            "-R",
            "1000",
            "--arrival",
            "poisson",
        ],
        false => &["-d", "10s", "--interval", "1s"],
    };
    let shape = crate::report::fixture::Shape {
        requests: 10_000,
        seconds: 10,
        ..Default::default()
    };
    crate::report::fixture::record(flags, shape)
}

/// Sets each interval's total p50 and p99 from `p50` (p99 = 3 × p50).
fn set_series(r: &mut RunRecord, p50: &[f64]) {
    for (i, v) in r.intervals.iter_mut().zip(p50) {
        i.latency.insert(
            Phase::Total,
            IntervalStats {
                count: 1000,
                p50_us: *v,
                p99_us: 3.0 * v,
                max_us: 10.0 * v,
            },
        );
    }
}

fn check<'a>(v: &'a Validity, name: &str) -> &'a ValidityCheck {
    v.checks.iter().find(|c| c.check == name).unwrap()
}

#[test]
fn a_steady_closed_loop_is_valid_and_its_open_loop_checks_do_not_apply() {
    let mut r = record(false);
    assert_eq!(r.intervals.len(), 10);
    set_series(
        &mut r,
        &[
            100.0, 103.0, 98.0, 101.0, 99.0, 102.0, 97.0, 100.0, 101.0, 99.0,
        ],
    );
    let v = judge(&r);
    assert!(v.valid, "{v:#?}");
    assert!(v.line.starts_with("Load valid: "), "{}", v.line);
    for name in ["arrivals", "rate", "client"] {
        assert_eq!(check(&v, name).state, CheckState::NotApplicable, "{name}");
    }
    for name in ["warmup", "drift"] {
        assert_eq!(check(&v, name).state, CheckState::Pass, "{name}");
    }
}

#[test]
fn a_latency_that_grows_is_drift_and_a_slow_start_is_warm_up() {
    let mut r = record(false);
    let rising: Vec<f64> = (0..10).map(|i| 100.0 + 8.0 * i as f64).collect();
    set_series(&mut r, &rising);
    let v = judge(&r);
    let d = check(&v, "drift");
    assert_eq!(d.state, CheckState::Fail, "{d:?}");
    assert!(!v.valid);
    assert!(
        v.line.contains("latency rose 72% over the run"),
        "{}",
        v.line
    );
    // Under the bound of change: a trend, not drift.
    let gentle: Vec<f64> = (0..10).map(|i| 100.0 + 2.0 * i as f64).collect();
    set_series(&mut r, &gentle);
    assert_eq!(check(&judge(&r), "drift").state, CheckState::Pass);
    set_series(
        &mut r,
        &[
            300.0, 200.0, 101.0, 99.0, 100.0, 102.0, 98.0, 100.0, 101.0, 99.0,
        ],
    );
    let v = judge(&r);
    let w = check(&v, "warmup");
    assert_eq!((w.state, w.figure), (CheckState::Fail, Some(2.0)), "{w:?}");
    assert!(v.line.contains("2.0s of warm-up"), "{}", v.line);
    // A first stretch faster than the rest is not called a warm-up (the README's first run in
    // a fresh clone: p50 554.50us, then 746.32us).
    set_series(
        &mut r,
        &[
            50.0, 60.0, 101.0, 99.0, 100.0, 102.0, 98.0, 100.0, 101.0, 99.0,
        ],
    );
    let v = judge(&r);
    assert_eq!(check(&v, "warmup").state, CheckState::Fail);
    assert!(
        v.line
            .contains("the figures include a first 2.0s faster than the rest"),
        "{}",
        v.line
    );
}

#[test]
fn a_client_that_fell_behind_is_not_valid() {
    let mut r = record(true);
    r.summary.latency.schedule_lag.p99_us = Some(4200.0);
    r.summary.latency.uncorrected.p99_us = Some(100.0);
    let v = judge(&r);
    assert_eq!(check(&v, "client").state, CheckState::Fail);
    assert!(
        v.line
            .contains("the client fell behind (schedule lag p99 4.20ms vs service p99 100.00us)"),
        "{}",
        v.line
    );
    // Within the bound (1 ms beyond the pacer's slack): kept its schedule.
    r.summary.latency.schedule_lag.p99_us = Some(900.0);
    assert_eq!(check(&judge(&r), "client").state, CheckState::Pass);
}

#[test]
fn poisson_sends_pass_and_bunched_ones_fail() {
    let mut r = record(true);
    // The fixture's lag is 0: the resolution is the 50 µs slack.
    assert_eq!(resolution_ns(&r), 50_000.0);
    // Exponential gaps of mean 1 ms beyond the 50 µs slack, by the inverse CDF at even
    // quantiles (shuffled: their order does not matter).
    let n = 1000;
    let gaps: Vec<u64> = (0..n)
        .map(|i| {
            let u = ((i * 7919) % n) as f64 / n as f64 + 0.5 / n as f64;
            50_000 + (-(1.0 - u).ln() * 1e6) as u64
        })
        .collect();
    r.arrivals = Some(Arrivals { gaps_ns: gaps });
    let v = judge(&r);
    assert_eq!(check(&v, "arrivals").state, CheckState::Pass, "{v:#?}");
    // Sends in pairs: every other gap 60 µs (10 µs beyond the slack), the others long.
    let pairs: Vec<u64> = (0..n)
        .map(|i| {
            if i % 2 == 0 {
                60_000
            } else {
                1_900_000 + i as u64 * 100
            }
        })
        .collect();
    r.arrivals = Some(Arrivals { gaps_ns: pairs });
    let v = judge(&r);
    let a = check(&v, "arrivals");
    assert_eq!(a.state, CheckState::Fail, "{a:?}");
    assert!(v.line.contains("the sends were not Poisson"), "{}", v.line);
}

#[test]
fn percentiles_on_too_few_values_are_marked_not_failed() {
    assert_eq!(too_few(10_000), vec!["p99.99"]);
    assert_eq!(too_few(1_000_000), Vec::<&str>::new());
    assert_eq!(too_few(0), Vec::<&str>::new());
    let r = record(false);
    let v = judge(&r);
    let s = check(&v, "samples");
    assert_eq!(s.state, CheckState::Marked);
    assert!(v.valid);
    assert!(v.line.contains("p99.99 marked ~"), "{}", v.line);
}
