//! A verdict on the load itself (issue 48, point 3): did the run measure the server under the
//! load asked for? Six checks, each with its figure, passed or not, kept in the record's
//! `validity` with the one line the report prints at its top; `run --strict` exits non-zero
//! when one failed.
//!
//! - **arrivals**: the achieved send instants against the process asked for (an open loop at
//!   a constant rate). The first [`GAPS`](crate::recorder::sends::GAPS) gaps between sends are
//!   kept by the workers (`recorder::sends`). The pacer sends requests due within its slack
//!   together by design, and late by its typical lateness: the gaps are judged at that
//!   resolution ([`resolution_ns`]: the slack and the schedule lag's p50). `--arrival poisson`:
//!   the gaps longer than it, less it (exponential with the same mean if the gaps are, the
//!   exponential having no memory), by Anderson-Darling at 5% (scipy's `anderson(x, 'expon')`);
//!   `--arrival constant`: the gaps' interquartile range within [`CONSTANT_SPREAD`] of their
//!   mean (or the resolution, if wider).
//! - **rate**: the requests sent against those due in the window, the warnings' rule (under
//!   99%: `warnings::sent_share`).
//! - **client**: the client's own queuing, the warnings' rule (`open_loop_limit`): the
//!   generator fell behind its schedule (schedule lag p99 beyond the slack over 1 ms), or the
//!   connections could not carry the rate (requests queued for a connection); said against the
//!   service time (the uncorrected p99). Behind in a few intervals only, the run's p99 within
//!   the bound, the check passes and the line says that the tail beyond p99 includes it.
//! - **warmup**: MSER on the intervals' p50 (MSER-5 from 50 intervals, else MSER-1); the
//!   intervals it cuts are a warm-up the figures include when their p50 differs from the
//!   rest's by [`WARMUP_CHANGE`] or more.
//! - **drift**: Mann-Kendall on the intervals' p50 and p99 (normal approximation, ties out),
//!   its size by Theil-Sen's line: drifting when p < [`DRIFT_P`] and the line moved by
//!   [`DRIFT_CHANGE`] or more over the run.
//! - **samples**: the printed percentiles of the total with fewer than
//!   [`BEYOND_MIN`] values beyond them: marked in the report (`~`), not hidden; the run
//!   stays valid.
//!
//! Computed after the run from the record: nothing on the hot path but the workers' bounded
//! keeping of their first sends.

pub mod stats;
mod steady;
#[cfg(test)]
mod tests;

use crate::analysis::precision::{BEYOND_MIN, PERCENTILES};
use crate::model::LoadKind;
use crate::recorder::record::validity::{CheckState, Validity, ValidityCheck};
use crate::recorder::record::warnings::{self, OpenLoopLimit, LAG_WARN_US};
use crate::recorder::record::RunRecord;
use crate::util::units::{counted, human_ns};
use steady::{drift, warmup};

/// Fewest gaps the arrival test judges.
pub const MIN_GAPS: usize = 50;
/// `--arrival constant`: the widest interquartile range of the gaps, as a share of their mean.
pub const CONSTANT_SPREAD: f64 = 0.25;
/// Fewest intervals the drift and warm-up are sought in.
pub const MIN_INTERVALS: usize = 8;
/// The Mann-Kendall p-value under which a trend is drift (with its size).
pub const DRIFT_P: f64 = 0.01;
/// The least change of Theil-Sen's line over the run that is drift (with its p-value).
pub const DRIFT_CHANGE: f64 = 0.25;
/// The least difference of the warm-up's p50 from the rest's that is a warm-up.
pub const WARMUP_CHANGE: f64 = 0.25;
/// The rate achieved under this share of the offered is a shortfall (the warnings' rule).
pub const RATE_SHARE: f64 = 0.99;

/// A check's verdict and the few words the report's line gives it.
struct Judged {
    check: ValidityCheck,
    short: String,
}

fn judged(name: &str, state: CheckState, figure: Option<f64>, limit: Option<f64>) -> Judged {
    Judged {
        check: ValidityCheck {
            check: name.into(),
            state,
            figure: figure.filter(|f| f.is_finite()),
            limit,
            says: String::new(),
        },
        short: String::new(),
    }
}

impl Judged {
    fn says(mut self, says: String) -> Self {
        self.check.says = says;
        self
    }

    fn short(mut self, short: String) -> Self {
        self.short = short;
        self
    }
}

/// Sets `record.validity`.
pub fn annotate(record: &mut RunRecord) {
    record.validity = Some(judge(record));
    annotate_parts(record);
}

/// Each level of a sweep or knee search, and each repetition, judged as a run of its own: its
/// figures, its series and its offered rate (its send gaps are not kept: the arrivals check
/// does not apply).
fn annotate_parts(record: &mut RunRecord) {
    let mut levels = std::mem::take(&mut record.levels);
    let mut repetitions = std::mem::take(&mut record.repetitions);
    let knee = record.knee.take();
    let arrivals = record.arrivals.take();
    for level in levels.iter_mut().chain(repetitions.iter_mut()) {
        level.validity = Some(alone(record, level));
    }
    // A sweep's or a repetition's load is valid when each level's was (a knee search's steps
    // beyond its answer fail to carry their rate by design: the knee judges them itself).
    let failed: Vec<&str> = levels
        .iter()
        .chain(repetitions.iter())
        .filter(|l| l.validity.as_ref().is_some_and(|v| !v.valid))
        .map(|l| l.label.as_str())
        .collect();
    if let (None, false, Some(v)) = (&knee, failed.is_empty(), record.validity.as_mut()) {
        v.valid = false;
        v.line = format!(
            "Load NOT VALID in {} of {}: {} (each under the table, with why)",
            failed.len(),
            counted(
                (levels.len() + repetitions.len()) as u64,
                if levels.is_empty() { "run" } else { "level" }
            ),
            failed.join(", ")
        );
    }
    record.levels = levels;
    record.repetitions = repetitions;
    record.knee = knee;
    record.arrivals = arrivals;
}

/// The verdict on `level` alone: `r` (its levels taken out) with the level's figures in place
/// of its own while it is judged.
fn alone(r: &mut RunRecord, level: &mut crate::recorder::record::Level) -> Validity {
    let swap = |r: &mut RunRecord, l: &mut crate::recorder::record::Level| {
        std::mem::swap(&mut r.summary, &mut l.summary);
        std::mem::swap(&mut r.intervals, &mut l.intervals);
        std::mem::swap(&mut r.histograms, &mut l.histograms);
    };
    swap(r, level);
    let rate = std::mem::replace(&mut r.config.rate_rps, level.offered_rps);
    let v = judge(r);
    r.config.rate_rps = rate;
    swap(r, level);
    v
}

/// The verdict on `r`'s load: every check, and the line that sums them up.
pub fn judge(r: &RunRecord) -> Validity {
    let all = [
        arrivals(r),
        rate(r),
        client(r),
        warmup(r),
        drift(r),
        samples(r),
    ];
    let valid = all.iter().all(|j| j.check.held());
    Validity {
        valid,
        line: line(valid, &all),
        checks: all.into_iter().map(|j| j.check).collect(),
    }
}

/// `Load valid (...)` or `Load NOT VALID: ...`, naming the failed checks in a few words.
fn line(valid: bool, all: &[Judged]) -> String {
    let of =
        |s: CheckState| -> Vec<&Judged> { all.iter().filter(|j| j.check.state == s).collect() };
    let names = |js: &[&Judged]| -> String {
        js.iter()
            .map(|j| j.check.check.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut notes = Vec::new();
    let na = of(CheckState::NotApplicable);
    if !na.is_empty() {
        notes.push(format!("not applicable: {}", names(&na)));
    }
    // Marked figures, and what a passed check noted (the client late in a few intervals).
    notes.extend(
        all.iter()
            .filter(|j| matches!(j.check.state, CheckState::Marked | CheckState::Pass))
            .filter(|j| !j.short.is_empty())
            .map(|j| j.short.clone()),
    );
    let head = match valid {
        true => match of(CheckState::Pass) {
            passed if passed.is_empty() => "Load valid: no check failed".to_string(),
            passed => format!("Load valid: {} passed", names(&passed)),
        },
        false => {
            let failed: Vec<&str> = of(CheckState::Fail)
                .iter()
                .map(|j| j.short.as_str())
                .collect();
            format!("Load NOT VALID: {}", failed.join("; "))
        }
    };
    std::iter::once(head)
        .chain(notes)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A sweep or a knee search: levels at rates and connections of their own, one after another.
fn levels_differ(r: &RunRecord) -> Option<&'static str> {
    match (&r.knee, r.levels.is_empty(), r.repetitions.is_empty()) {
        (Some(_), _, _) => Some("a knee search's steps differ by design"),
        (None, false, _) => Some("a sweep's levels differ by design"),
        (None, true, false) => Some("repetitions, each from its own start"),
        _ => None,
    }
}

/// The service time the client's delays are set against: the uncorrected p99.
fn service_p99(r: &RunRecord) -> String {
    human_ns(r.summary.latency.uncorrected.p99_us.unwrap_or(0.0) * 1e3)
}

fn arrivals(r: &RunRecord) -> Judged {
    let na = |why: String| {
        judged("arrivals", CheckState::NotApplicable, None, None)
            .says(format!("not applicable: {why}"))
    };
    let c = &r.config;
    if c.load_model != LoadKind::Open {
        return na("no arrivals were asked for (a closed loop or bursts)".into());
    }
    let (Some(arrival), Some(_)) = (&c.arrival, c.rate_rps) else {
        return na("the rate changes over the run (--stages), or levels differ".into());
    };
    let gaps = r.arrivals.as_ref().map_or(&[][..], |a| &a.gaps_ns[..]);
    let slack_ns = resolution_ns(r);
    if gaps.len() < MIN_GAPS {
        return na(format!(
            "{} kept, too few to judge",
            counted(gaps.len() as u64, "gap")
        ));
    }
    match arrival.as_str() {
        "poisson" => poisson(gaps, slack_ns),
        _ => constant(gaps, slack_ns),
    }
}

/// The finest time the client sends at, ns: the pacer's slack (requests due within it leave
/// together) and its typical lateness (the schedule lag's p50). Gaps shorter than this are the
/// client's, not the schedule's.
pub fn resolution_ns(r: &RunRecord) -> f64 {
    let lag_p50_us = r.summary.latency.schedule_lag.p50_us.unwrap_or(0.0);
    r.config.pacer_slack_s.unwrap_or(0.0) * 1e9 + lag_p50_us * 1e3
}

/// The gaps of `--arrival poisson` beyond the client's resolution, less it (ns): the values the
/// Anderson-Darling test judges.
pub fn poisson_values(gaps_ns: &[u64], resolution_ns: f64) -> Vec<f64> {
    gaps_ns
        .iter()
        .map(|&g| g as f64 - resolution_ns)
        .filter(|&g| g > 0.0)
        .collect()
}

fn poisson(gaps: &[u64], slack_ns: f64) -> Judged {
    let x = poisson_values(gaps, slack_ns);
    let Some(ad) = stats::anderson_expon(&x).filter(|_| x.len() >= MIN_GAPS) else {
        return judged("arrivals", CheckState::NotApplicable, None, None).says(format!(
            "not applicable: {} of the {} gaps beyond the client's resolution, too few to judge",
            x.len(),
            gaps.len()
        ));
    };
    let state = if ad.rejects() {
        CheckState::Fail
    } else {
        CheckState::Pass
    };
    let figures = format!(
        "Anderson-Darling A² {:.3} {} {:.3} (5%) on the {} of the first {} send gaps beyond the \
         client's resolution of {} (the pacer's slack and the schedule lag's p50), less it",
        ad.a2,
        if ad.rejects() { "over" } else { "within" },
        ad.critical,
        ad.n,
        gaps.len(),
        human_ns(slack_ns)
    );
    let says = match ad.rejects() {
        true => format!("the sends were not a Poisson process: {figures}"),
        false => format!("the sends were a Poisson process as asked: {figures}"),
    };
    let j = judged("arrivals", state, Some(ad.a2), Some(ad.critical)).says(says);
    match ad.rejects() {
        true => j.short(format!(
            "the sends were not Poisson (Anderson-Darling A² {:.2} over {:.2})",
            ad.a2, ad.critical
        )),
        false => j,
    }
}

fn constant(gaps: &[u64], slack_ns: f64) -> Judged {
    let mut g: Vec<f64> = gaps.iter().map(|&v| v as f64).collect();
    let mean = g.iter().sum::<f64>() / g.len() as f64;
    g.sort_by(f64::total_cmp);
    let at = |q: f64| g[((g.len() - 1) as f64 * q).round() as usize];
    let iqr = at(0.75) - at(0.25);
    let spread = iqr / mean;
    let limit = CONSTANT_SPREAD.max(slack_ns / mean);
    let state = if spread > limit {
        CheckState::Fail
    } else {
        CheckState::Pass
    };
    let figures = format!(
        "the middle half of the first {} send gaps spans {} around a mean of {} ({:.0}%, the \
         bound {:.0}%)",
        g.len(),
        human_ns(iqr),
        human_ns(mean),
        100.0 * spread,
        100.0 * limit
    );
    let says = match state {
        CheckState::Fail => format!("the sends were not evenly spaced: {figures}"),
        _ => format!("the sends were evenly spaced as asked: {figures}"),
    };
    let j = judged("arrivals", state, Some(spread), Some(limit)).says(says);
    match state {
        CheckState::Fail => j.short(format!(
            "the sends were not evenly spaced (gaps' spread {:.0}% of their mean)",
            100.0 * spread
        )),
        _ => j,
    }
}

fn rate(r: &RunRecord) -> Judged {
    let s = &r.summary;
    let open = r.config.load_model == LoadKind::Open;
    let (Some(offered), Some((sent, share))) = (
        s.generator.offered_rps.filter(|_| open),
        warnings::sent_share(r),
    ) else {
        return judged("rate", CheckState::NotApplicable, None, None).says(
            "not applicable: no one rate was offered (a closed loop, bursts, or levels)".into(),
        );
    };
    match warnings::shortfall(r) {
        Some(words) => judged("rate", CheckState::Fail, Some(share), Some(RATE_SHARE))
            .says(format!("the rate offered was not sent: {words}"))
            .short(format!(
                "the client sent {:.1}% of the requests due",
                100.0 * share
            )),
        None => judged("rate", CheckState::Pass, Some(share), Some(RATE_SHARE)).says(format!(
            "sent {sent:.1} req/s of the {offered:.0} offered, {:.1}% of the requests due in \
             the window",
            100.0 * share
        )),
    }
}

fn client(r: &RunRecord) -> Judged {
    if r.config.load_model != LoadKind::Open {
        return judged("client", CheckState::NotApplicable, None, None)
            .says("not applicable: a closed loop has no schedule to fall behind".into());
    }
    let (lag_p99, _, slack_us) = warnings::lag_beyond_slack(r);
    let bound = LAG_WARN_US + slack_us;
    let service = service_p99(r);
    let lag = human_ns(lag_p99 * 1e3);
    let queue_p99 = r.summary.latency.phases.get(&crate::model::Phase::Queue);
    let queue = human_ns(queue_p99.and_then(|q| q.p99_us).unwrap_or(0.0) * 1e3);
    let limit = warnings::open_loop_limit(r);
    let (state, short, says) = match limit {
        Some(OpenLoopLimit::Pool) => {
            let carry = warnings::queued(r).map(|(_, c)| c).unwrap_or_default();
            let short = format!(
                "the connections could not carry the rate (queue p99 {queue} vs service p99 {service})"
            );
            (CheckState::Fail, short.clone(), format!("{short}: {carry}; raise -c or lower -R"))
        }
        Some(OpenLoopLimit::Behind) => {
            let short = format!("the client fell behind (schedule lag p99 {lag} vs service p99 {service})");
            (CheckState::Fail, short.clone(), format!("{short}: the client, not the server, made the tail"))
        }
        Some(OpenLoopLimit::BehindInPart) => {
            // The run's lag p99 kept within its bound: the tail beyond it holds the lateness.
            let short = format!(
                "the client fell behind in {}: the corrected tail beyond p99 includes it",
                lagging(r, bound)
            );
            let says = format!(
                "{short} (schedule lag p99 over {} there; the run's {lag}, service p99 {service})",
                human_ns(bound * 1e3)
            );
            (CheckState::Pass, short, says)
        }
        Some(OpenLoopLimit::Server) => (
            CheckState::Pass,
            String::new(),
            format!(
                "requests queued for a connection (queue p99 {queue}) while the client kept its \
                 schedule (lag p99 {lag}): the server's wait, not the client's"
            ),
        ),
        Some(OpenLoopLimit::Near) | None => (
            CheckState::Pass,
            String::new(),
            format!("the client kept its schedule: schedule lag p99 {lag} (bound {} beyond the pacer's slack) vs service p99 {service}", human_ns(LAG_WARN_US * 1e3)),
        ),
    };
    judged("client", state, Some(lag_p99), Some(bound))
        .says(says)
        .short(short)
}

/// `3 of 10 intervals`: those whose schedule lag p99 passed `bound_us`.
fn lagging(r: &RunRecord, bound_us: f64) -> String {
    let n = r
        .intervals
        .iter()
        .filter(|i| {
            i.latency
                .get(&crate::model::Phase::Lag)
                .is_some_and(|l| l.p99_us > bound_us)
        })
        .count();
    format!("{n} of {}", counted(r.intervals.len() as u64, "interval"))
}

/// The printed percentiles of a figure of `count` values with fewer than
/// [`BEYOND_MIN`] values beyond them.
pub fn too_few(count: u64) -> Vec<&'static str> {
    PERCENTILES
        .iter()
        .filter(|(_, p)| count > 0 && (count as f64 * (1.0 - p)) < BEYOND_MIN)
        .map(|(name, _)| *name)
        .collect()
}

fn samples(r: &RunRecord) -> Judged {
    let count = r.summary.latency.total.count;
    if count == 0 {
        return judged("samples", CheckState::NotApplicable, None, None)
            .says("not applicable: no request recorded".into());
    }
    let few = too_few(count);
    if few.is_empty() {
        return judged("samples", CheckState::Pass, Some(count as f64), None).says(format!(
            "every printed percentile of the total has {BEYOND_MIN} values or more beyond it ({count} values)"
        ));
    }
    let short = format!(
        "{} marked ~ (fewer than {BEYOND_MIN} values beyond)",
        few.join(", ")
    );
    judged("samples", CheckState::Marked, Some(count as f64), None)
        .says(format!(
            "{} of the total {} on fewer than {BEYOND_MIN} values beyond ({count} values): marked ~ in the report, a rough figure",
            few.join(", "),
            if few.len() == 1 { "rests" } else { "rest" }
        ))
        .short(short)
}
