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
//! A step passes when every SLO holds, the achieved rate is at least 99% of the offered one and
//! the generator kept up (schedule lag p99 within its bound, `--max-lag`, 1 ms by default as in
//! every run's warnings; no worker thread saturated). When
//! the generator is the limit the search stops there and says so, rather than blaming the
//! server.

use super::expr::{Check, Expr};
use crate::recorder::record::{RunRecord, BUSY_WARN};
use serde::{Deserialize, Serialize};

/// Steps run at most, confirmation included.
pub const MAX_STEPS: usize = 24;
/// Confirmations tried at most, each a precision lower than the one before.
pub const MAX_CONFIRM: usize = 3;
/// Halvings tried at most when the first steps fail.
const MAX_HALVINGS: usize = 6;
/// The share of the offered rate a step must achieve.
pub const ACHIEVED_SHARE: f64 = 0.99;

/// How one step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    /// An SLO failed, or the server did not answer at the offered rate.
    Fail,
    /// The generator could not keep its schedule: the client, not the server, is the limit.
    Client,
}

/// One step's figures and verdict, as the record keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeStep {
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub errors: u64,
    pub verdict: Verdict,
    /// Why it did not pass (the SLOs that failed, the rate not achieved, the generator).
    pub reasons: Vec<String>,
    /// This step repeated the answer to confirm it.
    pub confirmation: bool,
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeResult {
    pub slos: Vec<String>,
    pub precision: f64,
    /// The highest rate that met every SLO (and held when repeated), req/s.
    pub answer_rps: Option<f64>,
    pub confirmed: bool,
    /// `server` (a step above the answer failed its SLOs), `client` (the generator could not
    /// go higher), or `max` (the search reached --max-rate).
    pub limited_by: String,
    pub steps: Vec<KneeStep>,
    /// The answer in plain words.
    pub summary: String,
}

/// Judges one step's record; the generator kept up when its schedule lag p99 stayed within
/// `max_lag_us` and no worker thread was saturated.
pub fn judge(
    record: &RunRecord,
    offered: f64,
    slos: &[Expr],
    confirmation: bool,
    max_lag_us: f64,
) -> KneeStep {
    let s = &record.summary;
    let t = &s.latency.total;
    let mut reasons = Vec::new();
    let lag = s.latency.schedule_lag.p99_us.unwrap_or(0.0);
    let busiest = s.generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    let client = lag > max_lag_us || busiest > BUSY_WARN;
    if lag > max_lag_us {
        reasons.push(format!(
            "the generator fell behind (schedule lag p99 {lag:.0} us)"
        ));
    }
    if busiest > BUSY_WARN {
        reasons.push(format!(
            "a worker thread was on a CPU {:.0}% of the step",
            busiest * 100.0
        ));
    }
    if s.throughput_rps < ACHIEVED_SHARE * offered {
        reasons.push(format!(
            "achieved {:.0} of {offered:.0} req/s",
            s.throughput_rps
        ));
    }
    for c in slos.iter().map(|e| e.check(record)) {
        if !c.pass {
            reasons.push(failed(&c));
        }
    }
    let verdict = match (client, reasons.is_empty()) {
        (true, _) => Verdict::Client,
        (false, true) => Verdict::Pass,
        (false, false) => Verdict::Fail,
    };
    KneeStep {
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
    }
}

fn failed(c: &Check) -> String {
    match (c.measured, &c.note) {
        (Some(v), _) => format!("{} (measured {})", c.expr, c.expr.show(v)),
        (None, Some(note)) => format!("{} ({note})", c.expr),
        (None, None) => c.expr.to_string(),
    }
}

/// Where the search is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    /// Going up by doubling (or down by halving until a first pass).
    Explore {
        halvings: usize,
    },
    Bisect,
    /// Repeating `lo`; how many times.
    Confirm(usize),
    Done,
}

/// The search state machine: [`Search::next`] says which rate to try, [`Search::record`] takes
/// the verdict.
#[derive(Debug, Clone)]
pub struct Search {
    precision: f64,
    max_rps: Option<f64>,
    /// Highest passing rate, lowest failing rate.
    lo: Option<f64>,
    hi: Option<f64>,
    stage: Stage,
    next: f64,
    steps: usize,
    pub confirmed: bool,
    pub limited_by: &'static str,
}

impl Search {
    pub fn new(start_rps: f64, precision: f64, max_rps: Option<f64>) -> Self {
        Search {
            precision,
            max_rps,
            lo: None,
            hi: None,
            stage: Stage::Explore { halvings: 0 },
            next: max_rps.map_or(start_rps, |m| start_rps.min(m)),
            steps: 0,
            confirmed: false,
            limited_by: "server",
        }
    }

    /// The rate to try next, and whether it confirms the answer; `None` when done.
    pub fn next(&self) -> Option<(f64, bool)> {
        if self.stage == Stage::Done || self.steps >= MAX_STEPS {
            return None;
        }
        Some((self.next, matches!(self.stage, Stage::Confirm(_))))
    }

    /// The answer so far.
    pub fn answer(&self) -> Option<f64> {
        self.lo
    }

    fn bisect_or_confirm(&mut self) {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) if (hi - lo) / hi > self.precision => {
                self.stage = Stage::Bisect;
                self.next = ((lo + hi) / 2.0).round();
            }
            (Some(lo), _) => {
                self.stage = Stage::Confirm(0);
                self.next = lo;
            }
            (None, _) => self.stage = Stage::Done,
        }
    }

    /// Takes the verdict of the step at the rate [`Search::next`] gave.
    pub fn record(&mut self, verdict: Verdict) {
        self.steps += 1;
        let rate = self.next;
        if verdict == Verdict::Client {
            // Nothing above this can be measured from here.
            self.limited_by = "client";
            if matches!(self.stage, Stage::Confirm(_)) {
                self.confirmed = false;
            }
            self.stage = Stage::Done;
            return;
        }
        let pass = verdict == Verdict::Pass;
        match self.stage {
            Stage::Explore { halvings } => {
                if pass {
                    self.lo = Some(rate);
                    match self.max_rps {
                        Some(max) if rate >= max => {
                            self.limited_by = "max";
                            self.stage = Stage::Confirm(0);
                            self.next = rate;
                        }
                        _ if self.hi.is_some() => self.bisect_or_confirm(),
                        Some(max) => self.next = (rate * 2.0).min(max),
                        None => self.next = rate * 2.0,
                    }
                } else {
                    self.hi = Some(rate);
                    if self.lo.is_some() {
                        self.bisect_or_confirm();
                    } else if halvings < MAX_HALVINGS {
                        self.stage = Stage::Explore {
                            halvings: halvings + 1,
                        };
                        self.next = (rate / 2.0).round().max(1.0);
                    } else {
                        self.stage = Stage::Done;
                    }
                }
            }
            Stage::Bisect => {
                if pass {
                    self.lo = Some(rate);
                } else {
                    self.hi = Some(rate);
                }
                self.bisect_or_confirm();
            }
            Stage::Confirm(n) => {
                if pass {
                    self.confirmed = true;
                    self.stage = Stage::Done;
                } else if n + 1 < MAX_CONFIRM {
                    // It did not hold: a precision lower, and confirm again.
                    self.hi = Some(rate);
                    let lower = (rate * (1.0 - self.precision)).round();
                    self.lo = Some(lower);
                    self.stage = Stage::Confirm(n + 1);
                    self.next = lower;
                } else {
                    self.lo = None;
                    self.stage = Stage::Done;
                }
            }
            Stage::Done => {}
        }
    }
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
mod tests {
    use super::*;

    /// The rates a search tries against a server whose steps pass below `capacity`, and its
    /// answer.
    fn path(start: f64, capacity: f64, precision: f64, max: Option<f64>) -> (Vec<f64>, Search) {
        let mut s = Search::new(start, precision, max);
        let mut tried = Vec::new();
        while let Some((rate, _)) = s.next() {
            tried.push(rate);
            s.record(if rate <= capacity {
                Verdict::Pass
            } else {
                Verdict::Fail
            });
        }
        (tried, s)
    }

    #[test]
    fn doubles_then_bisects_then_confirms() {
        let (tried, s) = path(100.0, 500.0, 0.05, None);
        // 100, 200, 400 pass; 800 fails; bisect 600 (fail), 500 (pass), 550 (fail), 525
        // (fail), then 500 is within 5% of 525 and is confirmed.
        assert_eq!(
            tried,
            [100.0, 200.0, 400.0, 800.0, 600.0, 500.0, 550.0, 525.0, 500.0]
        );
        assert_eq!(s.answer(), Some(500.0));
        assert!(s.confirmed);
    }

    #[test]
    fn answers_are_within_the_precision_of_the_capacity() {
        // (start, capacity, precision)
        for (start, cap, p) in [
            (100.0, 500.0, 0.05),
            (1000.0, 37_000.0, 0.05),
            (50.0, 13.0, 0.05),   // the first steps fail: halve until one passes
            (10.0, 1234.0, 0.02), // a finer precision
        ] {
            let (tried, s) = path(start, cap, p, None);
            let a = s
                .answer()
                .unwrap_or_else(|| panic!("no answer for {cap}: {tried:?}"));
            assert!(
                a <= cap && a >= cap * (1.0 - p) - 1.0,
                "{cap}: {a} via {tried:?}"
            );
            assert!(tried.len() <= MAX_STEPS);
        }
    }

    #[test]
    fn the_generator_limit_stops_the_search() {
        let mut s = Search::new(100.0, 0.05, None);
        s.record(Verdict::Pass); // 100
        s.record(Verdict::Pass); // 200
        s.record(Verdict::Client); // 400: the client could not keep up
        assert_eq!(s.next(), None);
        assert_eq!(s.answer(), Some(200.0));
        assert_eq!(s.limited_by, "client");
    }

    #[test]
    fn a_failed_confirmation_steps_down_and_confirms_again() {
        let mut s = Search::new(100.0, 0.1, Some(100.0));
        s.record(Verdict::Pass); // 100 = max: confirm
        assert_eq!(s.next(), Some((100.0, true)));
        s.record(Verdict::Fail); // it did not hold: 90
        assert_eq!(s.next(), Some((90.0, true)));
        s.record(Verdict::Pass);
        assert_eq!(s.answer(), Some(90.0));
        assert!(s.confirmed);
    }

    #[test]
    fn no_rate_meets_the_slos() {
        let (tried, s) = path(100.0, 0.0, 0.05, None);
        assert_eq!(s.answer(), None);
        assert_eq!(tried.len(), MAX_HALVINGS + 1, "{tried:?}");
    }
}
