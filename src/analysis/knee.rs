//! The stable-load search of `reqlife knee`: the highest open-loop rate that meets every SLO.
//! The search is a pure state machine ([`Search`]) fed with the verdict of each step, so that
//! its path can be tested without a server:
//!
//! 1. exponential: from the start rate, double while steps pass (halve while the first ones
//!    fail, to find a first pass);
//! 2. bisection: between the highest pass `lo` and the lowest fail `hi`, try `(lo + hi) / 2`
//!    until `(hi − lo) / hi ≤ precision`;
//! 3. confirmation: run `lo` once more; if it fails now, step down by the precision and confirm
//!    again (at most [`MAX_CONFIRM`] times).
//!
//! A step passes when every SLO holds and the achieved rate is at least 99% of the offered one,
//! less the share still in flight at the step's end (mean latency / step length, by Little's
//! law: those responses come back after the step, a 1 s step at 20 ms loses 2% that way).
//! A step that fails is the generator's (the client is the limit, not the server) when a
//! worker thread was saturated, or when its lateness could explain every failure: each failed
//! latency SLO would hold with the schedule lag at its quantile taken off, that lag being over
//! its bound (`--max-lag`, 1 ms by default as in every run's warnings); a rate shortfall is
//! explained when the lag after the start-up is over its bound and the shortfall within that
//! lag's share of the step. A lagging generator cannot make a step look better (latencies are measured from
//! the intended send times, the achieved rate is checked), so a step that passes passes. The
//! lag is judged on enough data ([`settled_lag`]): only the lag after the step's start-up (its
//! first fifth, at most 2 s), at the highest quantile the step has enough samples for, 10
//! beyond it: p99 with 1,000 samples or more, p90 with 100, p50 with 20; under 20 samples the
//! lag does not judge. A step judged the generator's is run once more before the search
//! concludes that the client is the limit; it stops there and says so, rather than blaming the
//! server.

mod search;

pub use search::Search;

use super::expr::{Check, Expr};
use crate::recorder::hist;
pub use crate::recorder::knee::{KneeResult, KneeStep, Verdict};
use crate::recorder::record::{RunRecord, Summary, BUSY_WARN};

/// Steps run at most, confirmation included.
pub const MAX_STEPS: usize = 24;
/// Confirmations tried at most, each a precision lower than the one before.
pub const MAX_CONFIRM: usize = 3;
/// Halvings tried at most when the first steps fail.
const MAX_HALVINGS: usize = 6;
/// The share of the offered rate a step must achieve.
pub const ACHIEVED_SHARE: f64 = 0.99;

/// The share of a step that is its start-up, not judged for the generator's health.
pub const STARTUP_SHARE: f64 = 0.2;
/// The longest start-up.
pub const STARTUP_MAX_S: f64 = 2.0;
/// Samples beyond a quantile for it to be used: p99 needs 1,000 samples, p90 100, p50 20.
pub const BEYOND: f64 = 10.0;

/// The schedule-lag histogram of the step after its start-up (the whole step's for a record
/// without interval histograms).
fn lag_after_startup(record: &RunRecord) -> Option<hdrhistogram::Histogram<u64>> {
    let startup = (record.summary.duration_s * STARTUP_SHARE).min(STARTUP_MAX_S);
    let mut lag = hist::new_hist();
    let mut any = false;
    for i in record
        .intervals
        .iter()
        .filter(|i| i.start_s >= startup - 1e-9)
    {
        if let Some(h) = i
            .histograms
            .get("schedule_lag")
            .and_then(|t| hist::decode(t).ok())
        {
            let _ = lag.add(&h);
            any = true;
        }
    }
    if any {
        Some(lag)
    } else {
        record.histogram("schedule_lag").ok()
    }
}

/// The schedule lag after the step's start-up, judged on enough data: the value (µs), its
/// quantile and the samples. The start-up is the intervals that begin in the first
/// [`STARTUP_SHARE`] of the step (at most [`STARTUP_MAX_S`]); the quantile is the highest of
/// p99, p90, p50 with at least [`BEYOND`] samples beyond it (p99: 1,000 samples). `None` for
/// the value under 20 samples. A record without interval histograms is judged whole.
pub fn settled_lag(record: &RunRecord) -> (Option<f64>, Option<&'static str>, u64) {
    let Some(lag) = lag_after_startup(record) else {
        return (None, None, 0);
    };
    let n = lag.len();
    let usable = [("p99", 0.99), ("p90", 0.9), ("p50", 0.5)]
        .into_iter()
        .find(|(_, q)| n as f64 >= (BEYOND / (1.0 - q)).round());
    match usable {
        Some((name, q)) => (
            Some(lag.value_at_quantile(q) as f64 / 1000.0),
            Some(name),
            n,
        ),
        None => (None, None, n),
    }
}

/// Judges one step's record (see the module's rule): pass, fail (the server), or the client's
/// (a saturated worker thread, or a schedule lag after the start-up ([`settled_lag`]) beyond
/// `max_lag_us` that could explain every failure). With the step, what its generator's health
/// was found to be when the verdict is the client's (empty otherwise): the step's warnings say
/// that ([`step_warnings`]), and nothing else of the generator.
pub fn judge(
    record: &RunRecord,
    offered: f64,
    slos: &[Expr],
    confirmation: bool,
    max_lag_us: f64,
) -> (KneeStep, Vec<String>) {
    let s = &record.summary;
    let t = &s.latency.total;
    let mut reasons = Vec::new();
    let (lag_us, lag_quantile, lag_samples) = settled_lag(record);
    let lag = lag_us.unwrap_or(0.0);
    let busiest = s.generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    // The pacer's slack is lateness by design: only the lag beyond it is falling behind.
    let slack_us = record.config.pacer_slack_s.unwrap_or(0.0) * 1e6;
    let lagged = lag > max_lag_us + slack_us;
    let saturated = busiest > BUSY_WARN;
    // Whether the generator's lateness alone could explain every failure: a latency SLO that
    // would hold if each latency were lower by the lag at the SLO's quantile, a shortfall of
    // the rate within `lag` of the step's length.
    let mut explained = true;
    let shortfall = rate_shortfall(s, offered, lag);
    if let Some((reason, within_lag)) = &shortfall {
        reasons.push(reason.clone());
        explained &= lagged && *within_lag;
    }
    let mut slo = slo_failures(record, slos, (max_lag_us + slack_us) * 1000.0);
    let failed_slos = slo.reasons.len();
    reasons.append(&mut slo.reasons);
    explained &= slo.explained;
    let health = {
        let mut h = Vec::new();
        if lagged {
            h.push(format!(
                "the generator fell behind (schedule lag {} {} over {lag_samples} samples after the start-up)",
                lag_quantile.unwrap_or("p99"),
                crate::util::units::human_ns(lag * 1e3)
            ));
        }
        if let (Some(stall), true) = (slo.late_stall.clone(), explained && !lagged) {
            h.push(stall);
        }
        if saturated {
            h.push(format!(
                "a worker thread was on a CPU {:.0}% of the step",
                busiest * 100.0
            ));
        }
        h
    };
    let (verdict, reasons, blamed) = verdict_of(reasons, health, saturated || explained, lagged);
    let undecided = resting_on(verdict, &slo, shortfall.is_some(), failed_slos);
    let step = KneeStep {
        offered_rps: offered,
        achieved_rps: s.throughput_rps,
        p50_us: t.p50_us,
        p90_us: t.p90_us,
        p99_us: t.p99_us,
        mean_us: t.mean_us,
        errors: s.requests.errors,
        verdict,
        reasons,
        confirmation,
        lag_us,
        lag_quantile: lag_quantile.map(String::from),
        lag_samples,
        measurements: 1,
        undecided,
    };
    (step, blamed)
}

/// A step's verdict from its failures (`reasons`) and the generator's `health`, with the
/// reasons it gives and the health it blames; `excused`: the generator was saturated, or its
/// lateness alone could explain every failure.
///
/// A generator that lags can only make a step look worse (its latencies are measured from
/// the intended send times, and the rate achieved is checked): a step that passes passes;
/// one that fails is the client's only when its health could explain the failure.
fn verdict_of(
    mut reasons: Vec<String>,
    health: Vec<String>,
    excused: bool,
    lagged: bool,
) -> (Verdict, Vec<String>, Vec<String>) {
    let verdict = if reasons.is_empty() {
        Verdict::Pass
    } else if excused {
        Verdict::Client
    } else {
        Verdict::Fail
    };
    let blamed = match verdict {
        Verdict::Client => health.clone(),
        _ => Vec::new(),
    };
    match verdict {
        Verdict::Client => {
            let mut all = health;
            all.append(&mut reasons);
            reasons = all;
        }
        Verdict::Fail if lagged => reasons.push(format!(
            "{}, too little to explain this",
            health.first().cloned().unwrap_or_default()
        )),
        _ => {}
    }
    (verdict, reasons, blamed)
}

/// A step's warnings once judged: the record's own, with the generator's health as the knee
/// judged it (`blamed`, from [`judge`]) instead of the run's rule.
pub fn step_warnings(record: &RunRecord, blamed: &[String]) -> Vec<String> {
    crate::recorder::record::step_warnings(record, blamed)
}

/// The share of a step's length that `secs` is (0..1; all of it for a step of no length).
fn share_of_step(s: &Summary, secs: f64) -> f64 {
    if s.duration_s > 0.0 {
        (secs / s.duration_s).clamp(0.0, 1.0)
    } else {
        1.0
    }
}

/// Why a step fell short of the rate `offered`, if it did, and whether the shortfall is
/// within a schedule lag of `lag_us` over the step's length (lateness could explain it).
fn rate_shortfall(s: &Summary, offered: f64, lag_us: f64) -> Option<(String, bool)> {
    // The rate counts the responses within the step; those still in flight at its end, about
    // rate × mean latency (Little's law), come back after it: that share is not a shortfall.
    let in_flight = share_of_step(s, s.latency.total.mean_us.unwrap_or(0.0) / 1e6);
    let needed = ACHIEVED_SHARE * offered * (1.0 - in_flight);
    if s.throughput_rps >= needed {
        return None;
    }
    let reason = format!(
        "achieved {:.1} of {offered:.0} req/s (needed {needed:.0}: 99% less the {:.1}% in flight at the end)",
        s.throughput_rps,
        in_flight * 100.0
    );
    let within_lag = s.throughput_rps >= needed * (1.0 - share_of_step(s, lag_us / 1e6));
    Some((reason, within_lag))
}

/// The SLOs a step failed, and how much of that the generator's lateness explains.
struct SloFailures {
    /// Each failed SLO, in words.
    reasons: Vec<String>,
    /// Every failed SLO would hold with its latencies lower by the lag at its quantile.
    explained: bool,
    /// The lateness that explained one, in words.
    late_stall: Option<String>,
    /// The SLOs whose 95% interval held their limit, in words: those that failed and those
    /// that passed.
    undecided_failed: Vec<String>,
    undecided_passed: Vec<String>,
}

/// Checks `slos` on a step's record. A failed latency SLO is explained by lateness when the
/// schedule lag at its quantile is over `bound_ns` and the SLO would hold without it.
fn slo_failures(record: &RunRecord, slos: &[Expr], bound_ns: f64) -> SloFailures {
    let mut out = SloFailures {
        reasons: Vec::new(),
        explained: true,
        late_stall: None,
        undecided_failed: Vec::new(),
        undecided_passed: Vec::new(),
    };
    // The whole step's lag, start-up included, as the SLOs see the whole step.
    let lag_hist = record.histogram("schedule_lag").ok();
    for c in slos.iter().map(|e| e.check(record)) {
        if c.undecided {
            let words = undecided(&c);
            match c.pass {
                true => out.undecided_passed.push(words),
                false => out.undecided_failed.push(words),
            }
        }
        if !c.pass {
            out.reasons.push(failed(&c));
            let latency = matches!(
                c.expr.unit,
                super::expr::Unit::Ns
                    | super::expr::Unit::Us
                    | super::expr::Unit::Ms
                    | super::expr::Unit::S
            );
            // The lag at the SLO's own quantile (the late requests are the slow ones): the
            // latency that lateness explains.
            let late_ns = lag_hist.as_ref().map_or(0.0, |h| match c.expr.figure {
                super::expr::Figure::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
                super::expr::Figure::Mean => h.mean(),
                _ => h.max() as f64,
            });
            let this = match c.measured {
                Some(v) if latency && late_ns > bound_ns => {
                    c.expr.op.holds(v - late_ns, c.expr.threshold())
                }
                _ => false,
            };
            if this && out.late_stall.is_none() {
                out.late_stall = Some(format!(
                    "the generator sent late (schedule lag {} over the step)",
                    c.expr.show(late_ns)
                ));
            }
            out.explained &= this;
        }
    }
    out
}

/// An undecided SLO in words: `p99<=2ms (measured 1.9ms, 95% interval 1.7ms to 2.4ms)`.
fn undecided(c: &Check) -> String {
    let bound = |b: Option<f64>| b.map_or("unbounded".to_string(), |v| c.expr.show(v));
    let [lo, hi] = c.interval.unwrap_or([None, None]);
    format!(
        "{} (measured {}, 95% interval {} to {})",
        c.expr,
        c.measured.map_or("nothing".to_string(), |v| c.expr.show(v)),
        bound(lo),
        bound(hi)
    )
}

/// The undecided SLOs a verdict rests on: with a pass, any that held (one of them may not);
/// with a failure, the undecided failed ones when they are its only reasons (no rate
/// shortfall, no SLO decidedly failed); none for the generator's verdict.
fn resting_on(verdict: Verdict, slo: &SloFailures, shortfall: bool, failed: usize) -> Vec<String> {
    match verdict {
        Verdict::Pass => slo.undecided_passed.clone(),
        Verdict::Fail if !shortfall && slo.undecided_failed.len() == failed => {
            slo.undecided_failed.clone()
        }
        _ => Vec::new(),
    }
}

fn failed(c: &Check) -> String {
    match (c.measured, &c.note) {
        (Some(v), _) => format!("{} (measured {})", c.expr, c.expr.show(v)),
        (None, Some(note)) => format!("{} ({note})", c.expr),
        (None, None) => c.expr.to_string(),
    }
}

/// What a step's row adds to its verdict: how many runs it took when re-measured, and the
/// SLOs it could not decide (judged by the measured figures then).
pub fn step_notes(s: &KneeStep) -> Vec<String> {
    let mut notes = Vec::new();
    if s.measurements > 1 {
        notes.push(format!("judged on {} runs together", s.measurements));
    }
    if !s.undecided.is_empty() {
        notes.push(format!(
            "undecided, judged by the measured figure: {}",
            s.undecided.join("; ")
        ));
    }
    notes
}

/// The answer in plain words.
pub fn summary_of(r: &KneeResult) -> String {
    let slos = r.slos.join(", ");
    match (r.answer_rps, r.limited_by.as_str()) {
        (Some(a), "client") => format!(
            "the server met {slos} up to {a:.0} req/s; above that the generator, not the server, was the limit (use more threads or generators to search higher)"
        ),
        (Some(a), "max") => format!(
            "the server met {slos} at {a:.0} req/s, the highest rate searched (--max-rate)"
        ),
        (Some(a), _) if r.confirmed => format!(
            "the highest rate that meets {slos} is {a:.0} req/s (within {:.0}%, confirmed by a repeated step)",
            r.precision * 100.0
        ),
        (Some(a), _) => format!(
            "the highest rate that met {slos} is {a:.0} req/s, not confirmed by a repeated step"
        ),
        (None, "client") => format!(
            "the generator could not keep its schedule even at the lowest rate tried: no answer about {slos}"
        ),
        (None, _) => format!("no rate tried met {slos}"),
    }
}

#[cfg(test)]
mod tests;
