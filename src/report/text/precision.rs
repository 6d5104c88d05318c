//! How precise the total's percentiles are: their 95% intervals (`analysis::precision`), in
//! one labelled line under the phases' table, and which method gave them.

use super::cell;
use crate::recorder::hist::{Ci, Stats};
use crate::recorder::record::RunRecord;
use crate::util::units::counted;
use std::fmt::Write as _;

/// The percentiles' names and intervals of `st`, in order; those without one left out.
pub(crate) fn intervals(st: &Stats) -> Vec<(&'static str, Ci)> {
    [
        ("p50", st.p50_ci_us),
        ("p90", st.p90_ci_us),
        ("p99", st.p99_ci_us),
        ("p99.9", st.p999_ci_us),
        ("p99.99", st.p9999_ci_us),
    ]
    .into_iter()
    .filter_map(|(name, ci)| Some((name, ci?)))
    .collect()
}

/// `[low, high]` in human units; `-` for a bound the run cannot give.
pub(crate) fn bounds(ci: &Ci) -> String {
    format!("[{}, {}]", cell(ci[0]), cell(ci[1]))
}

/// The total's intervals: `  Precision    95%: p50 [808us, 815us], …`, with the method and
/// what a `-` bound means.
pub(super) fn precision(out: &mut String, r: &RunRecord) {
    let total = &r.summary.latency.total;
    let shown = intervals(total);
    if shown.is_empty() {
        return;
    }
    let list: Vec<String> = shown
        .iter()
        .map(|(name, ci)| format!("{name} {}", bounds(ci)))
        .collect();
    let method = match &total.ci_batches {
        // Batch means are never of fewer than 5 batches: "batches" is always plural.
        Some(b) => format!(
            "batch means over {} batches of {} (lag-1 {:.2}) for {}, order statistics for the rest",
            b.batches,
            counted(b.intervals_each, "interval"),
            b.lag1,
            b.percentiles.join(", ")
        ),
        None => "order statistics".to_string(),
    };
    let open = shown
        .iter()
        .any(|(_, ci)| ci[0].is_none() || ci[1].is_none());
    let dash = if open {
        "; -: too few values beyond it to bound it"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  Precision    total at 95%: {} ({method}{dash})",
        list.join(", ")
    );
}

/// `--until`'s outcome in one labelled line (`label`: a level's, before its figures): reached
/// and when, or not by the cap; each target's half-width.
pub(super) fn until(out: &mut String, label: &str, summary: &crate::recorder::record::Summary) {
    let Some(u) = &summary.until else { return };
    let targets: Vec<String> = u
        .targets
        .iter()
        .map(|t| {
            let (figure, asked) = t.target.rsplit_once(':').unwrap_or((&t.target, "?"));
            match t.half_width_pct {
                Some(h) => format!("{figure} ±{h:.1}% (asked ±{asked})"),
                None => format!("{figure} unbounded (asked ±{asked})"),
            }
        })
        .collect();
    let said = match u.after_s {
        Some(s) if u.converged => format!("reached after {s:.2}s"),
        _ => "NOT reached by the cap".to_string(),
    };
    let _ = writeln!(out, "  Until        {label}{said}: {}", targets.join(", "));
}

/// `--until`'s line of each level of a sweep.
pub(super) fn levels_until(out: &mut String, r: &RunRecord) {
    for l in &r.levels {
        until(out, &format!("{}: ", l.label), &l.summary);
    }
}
