//! The single-run method of [`compare`](super::compare): the runs' interval series resampled by
//! blocks ([`resample`](super::resample)), each figure's change `ln(B/A) ± t · se` and its p
//! against the noise band, and the caveat that names what single runs cannot see.

use super::{
    decide, resample, rule_of_intervals, stats, Comparison, Estimate, Figure, Hist, Measured,
    ADJUSTMENT, CONFIDENCE,
};
use crate::recorder::record::{Interval, RunRecord};

/// The comparison of two single runs by their interval series (method `intervals`).
pub(super) fn across_intervals(
    a: &RunRecord,
    b: &RunRecord,
    figs: &[Figure],
    noise: f64,
    seed: u64,
) -> Comparison {
    let mut keys: Vec<Hist> = figs.iter().filter_map(|f| f.key.clone()).collect();
    keys.dedup();
    // Intervals before the first and after the last request are the run's edges, not data.
    let trim = |r: &RunRecord| -> Vec<Interval> {
        r.intervals
            .iter()
            .filter(|i| i.requests > 0)
            .cloned()
            .collect()
    };
    let (ia, ib) = (trim(a), trim(b));
    let mut values = resample::Values::default();
    let (mut sa, mut sb) = (
        resample::slices(&ia, &keys, &mut values),
        resample::slices(&ib, &keys, &mut values),
    );
    values.compact([&mut sa, &mut sb]);
    let spreads = resample::spreads(&sa, &sb, figs, &keys, &values, seed);
    let measured: Vec<Measured> = figs
        .iter()
        .zip(&spreads)
        .filter_map(|(f, s)| interval_row(f, s, noise))
        .collect();
    let mde_of = |label: &str| {
        measured
            .iter()
            .find(|m| m.figure == label)
            .and_then(|m| m.mde)
            .map_or("-".to_string(), |m| format!("{:.1}%", m * 100.0))
    };
    let caveat = format!(
        "single runs: the intervals see the noise inside each run, not the run-to-run \
         variance of the machine (often a few percent on a shared one); within these runs the \
         smallest detectable change (MDE column) of throughput is {} and of total p50 {}, and \
         a change of a few percent cannot be told from drift between the two runs. Compare \
         interleaved runs (`compare --run URL_A URL_B --rounds 6`) or {}+ repeated runs a \
         side (`run --repeat N`)",
        mde_of("throughput"),
        mde_of("total p50"),
        stats::runs_needed()
    );
    Comparison {
        method: "intervals".into(),
        n_a: sa.len(),
        n_b: sb.len(),
        noise,
        adjustment: ADJUSTMENT.into(),
        rule: rule_of_intervals(noise),
        caveat: Some(caveat),
        rows: decide(measured, noise),
        tail: None,
    }
}

/// A figure's row from its [`resample::Spread`]: the change `d = ln(B/A)` with its interval
/// `d ± t · se`, its p against `noise` and the smallest detectable change; none when the
/// figure is missing or zero in A or B, or its spread unknown.
fn interval_row(f: &Figure, s: &resample::Spread, noise: f64) -> Option<Measured> {
    let d = (s.b / s.a).ln();
    if !(s.a > 0.0 && d.is_finite() && s.se.is_finite()) {
        return None;
    }
    let t = stats::t_quantile(1.0 - (1.0 - CONFIDENCE) / 2.0, s.df);
    Some(Measured {
        figure: f.label.clone(),
        higher_is_better: f.higher_is_better(),
        a: s.a,
        b: s.b,
        change: Estimate {
            point: d.exp() - 1.0,
            lo: (d - t * s.se).exp() - 1.0,
            hi: (d + t * s.se).exp() - 1.0,
        },
        p: stats::band_p(d, s.se, s.df, noise),
        mde: stats::mde_of_log_se(s.se, s.df),
        runs: None,
    })
}
