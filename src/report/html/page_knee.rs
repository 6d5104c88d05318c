//! The page's knee section (`reqlife knee`): the steps' latency and achieved rate against the
//! offered rate with the latency SLOs drawn, a row per step (passed apart from failed, with
//! why), and the answer.

use super::{cell, Knee};
use crate::recorder::record::RunRecord;
use crate::report::plot;

/// A knee's steps as its plot draws them, each with the intervals of its level (step i is
/// level i of the record: an interrupted last step has a level and no row).
fn plotted_steps(r: &RunRecord, k: &crate::analysis::knee::KneeResult) -> Vec<plot::knee::Step> {
    use crate::analysis::knee::Verdict;
    let bar = |i: usize, q: &str| {
        let st = &r.levels.get(i)?.summary.latency.total;
        match st.named(q)?.1? {
            [Some(lo), Some(hi)] => Some((lo * 1e3, hi * 1e3)),
            _ => None,
        }
    };
    k.steps
        .iter()
        .enumerate()
        .map(|(i, s)| plot::knee::Step {
            offered_rps: s.offered_rps,
            achieved_rps: s.achieved_rps,
            p50_ns: s.p50_us.unwrap_or(0.0) * 1e3,
            p99_ns: s.p99_us.unwrap_or(0.0) * 1e3,
            p50_ci_ns: bar(i, "p50"),
            p99_ci_ns: bar(i, "p99"),
            pass: s.verdict == Verdict::Pass,
        })
        .collect()
}

/// A knee search: latency and achieved rate against the offered rate, a row per step, the
/// answer.
pub(super) fn knee(r: &RunRecord) -> Option<Knee> {
    use crate::analysis::knee::Verdict;
    let k = r.knee.as_ref()?;
    let steps = plotted_steps(r, k);
    let (slos, drawn) = latency_slos(&k.slos);
    // The steps that passed apart from those that did not, each in search order: which
    // passed, which failed and why.
    let mut passed = Vec::new();
    let mut failed = Vec::new();
    for (i, s) in k.steps.iter().enumerate() {
        let notes = crate::analysis::knee::step_notes(s);
        let mut said: Vec<String> = s
            .confirmation
            .then(|| "confirmation".to_string())
            .into_iter()
            .collect();
        said.extend(notes.iter().cloned());
        if s.verdict == Verdict::Pass {
            passed.push((
                (i + 1).to_string(),
                vec![
                    format!("{:.0}", s.offered_rps),
                    format!("{:.1}", s.achieved_rps),
                    cell(s.p50_us),
                    cell(s.p90_us),
                    cell(s.p99_us),
                    cell(s.mean_us),
                    s.errors.to_string(),
                    said.join("; "),
                ],
            ));
        } else {
            failed.push(super::FailedStep {
                step: (i + 1).to_string(),
                cells: vec![
                    format!("{:.0}", s.offered_rps),
                    format!("{:.1}", s.achieved_rps),
                    cell(s.p50_us),
                    cell(s.p99_us),
                    s.errors.to_string(),
                ],
                result: match s.verdict {
                    Verdict::Client => "client limit".to_string(),
                    _ => "fail".to_string(),
                } + if s.confirmation {
                    " (confirmation)"
                } else {
                    ""
                },
                reasons: if s.reasons.is_empty() && notes.is_empty() {
                    vec!["-".into()]
                } else {
                    s.reasons.iter().chain(&notes).cloned().collect()
                },
            });
        }
    }
    Some(Knee {
        svg: plot::knee::svg(&steps, &slos, k.answer_rps),
        passed,
        failed,
        answer: k.summary.clone(),
        drawn,
    })
}

/// The knee's SLOs drawn on its plot (those on the total's latency, with their bounds), and
/// which they are in words.
fn latency_slos(slos: &[String]) -> (Vec<(String, f64)>, String) {
    use crate::analysis::expr::{Expr, Figure, Scope};
    let slos: Vec<(String, f64)> = slos
        .iter()
        .filter_map(|text| {
            let e = Expr::parse(text).ok()?;
            let latency = matches!(e.figure, Figure::Percentile(_) | Figure::Mean);
            (latency && e.scope == Scope::Phase(crate::model::Phase::Total))
                .then(|| (text.clone(), e.threshold()))
        })
        .collect();
    let drawn = if slos.is_empty() {
        "none of the SLOs is a latency of the total".to_string()
    } else {
        slos.iter()
            .map(|s| s.0.clone())
            .collect::<Vec<_>>()
            .join(", ")
    };
    (slos, drawn)
}
