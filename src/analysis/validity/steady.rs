//! Whether the run measured a steady state, on the intervals' p50 and p99 of the total: the
//! **warmup** check (MSER on the p50, the cut kept in the figures when it differs enough) and
//! the **drift** check (Mann-Kendall, sized by Theil-Sen's line).

use super::{
    judged, levels_differ, stats, Judged, DRIFT_CHANGE, DRIFT_P, MIN_INTERVALS, WARMUP_CHANGE,
};
use crate::recorder::record::validity::CheckState;
use crate::recorder::record::RunRecord;
use crate::util::units::{counted, human_ns};

/// The intervals' p50 or p99 of the total (µs), those that recorded a request.
fn series(r: &RunRecord, p99: bool) -> Vec<f64> {
    r.intervals
        .iter()
        .filter_map(|i| i.latency.get(&crate::model::Phase::Total))
        .filter(|s| s.count > 0)
        .map(|s| if p99 { s.p99_us } else { s.p50_us })
        .collect()
}

/// Drift and warm-up are not sought: why, if so.
fn no_series(r: &RunRecord, n: usize) -> Option<String> {
    if let Some(why) = levels_differ(r) {
        return Some(why.into());
    }
    (n < MIN_INTERVALS).then(|| {
        format!(
            "{} with requests, fewer than {MIN_INTERVALS} (a longer run, or a shorter --interval)",
            counted(n as u64, "interval")
        )
    })
}

/// The warm-up check.
pub(super) fn warmup(r: &RunRecord) -> Judged {
    let y = series(r, false);
    if let Some(why) = no_series(r, y.len()) {
        return judged("warmup", CheckState::NotApplicable, None, None)
            .says(format!("not applicable: {why}"));
    }
    let m = if y.len() >= 50 { 5 } else { 1 };
    let d = stats::mser(&stats::batch_means(&y, m)).unwrap_or(0) * m;
    let secs = d as f64 * r.config.interval_s;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (before, after) = (mean(&y[..d]), mean(&y[d..]));
    let change = if d > 0 && after > 0.0 {
        (before - after) / after
    } else {
        0.0
    };
    if change.abs() < WARMUP_CHANGE {
        let says = match d {
            0 => format!("no warm-up in the {} intervals' p50 (MSER-{m})", y.len()),
            _ => format!(
                "MSER-{m} cuts {} but their p50 is within {:.0}% of the rest's: no warm-up to speak of",
                counted(d as u64, "interval"),
                100.0 * WARMUP_CHANGE
            ),
        };
        return judged("warmup", CheckState::Pass, Some(0.0), None).says(says);
    }
    // A start slower than the rest is a warm-up; a faster one is a start unlike the rest all
    // the same, not to be called a warm-up.
    let what = if before < after {
        format!("a first {secs:.1}s faster than the rest")
    } else {
        format!("{secs:.1}s of warm-up")
    };
    let short = format!(
        "the figures include {what} (p50 {} then {})",
        human_ns(before * 1e3),
        human_ns(after * 1e3)
    );
    judged("warmup", CheckState::Fail, Some(secs), None)
        .says(format!(
            "{short}, found by MSER-{m} on the {} intervals' p50: give --warmup {secs:.0}s or more",
            y.len()
        ))
        .short(short)
}

/// The drift check.
pub(super) fn drift(r: &RunRecord) -> Judged {
    let p50 = series(r, false);
    if let Some(why) = no_series(r, p50.len()) {
        return judged("drift", CheckState::NotApplicable, None, None)
            .says(format!("not applicable: {why}"));
    }
    let p99 = series(r, true);
    let n = p50.len();
    let trends: Vec<(&str, stats::Trend)> = [("p50", &p50), ("p99", &p99)]
        .into_iter()
        .filter_map(|(name, y)| Some((name, stats::mann_kendall(y)?)))
        .collect();
    let words = |(name, t): &(&str, stats::Trend)| {
        format!(
            "{name} {:+.0}% (Mann-Kendall p {:.2e})",
            100.0 * t.change(n),
            t.p
        )
    };
    let drifting = |t: &stats::Trend| t.p < DRIFT_P && t.change(n).abs() >= DRIFT_CHANGE;
    let figure = trends
        .iter()
        .map(|(_, t)| t.change(n))
        .max_by(|a, b| a.abs().total_cmp(&b.abs()));
    let all: Vec<String> = trends.iter().map(words).collect();
    let Some(worst) = trends
        .iter()
        .filter(|(_, t)| drifting(t))
        .max_by(|a, b| a.1.change(n).abs().total_cmp(&b.1.change(n).abs()))
    else {
        return judged("drift", CheckState::Pass, figure, Some(DRIFT_CHANGE)).says(format!(
            "no drift over the {n} intervals: {}",
            all.join(", ")
        ));
    };
    let (name, t) = worst;
    let way = if t.slope > 0.0 { "rose" } else { "fell" };
    let short = format!(
        "latency {way} {:.0}% over the run ({name}): not a steady state",
        100.0 * t.change(n).abs()
    );
    judged(
        "drift",
        CheckState::Fail,
        Some(t.change(n)),
        Some(DRIFT_CHANGE),
    )
    .says(format!(
        "{short}; over the {n} intervals: {}",
        all.join(", ")
    ))
    .short(short)
}
