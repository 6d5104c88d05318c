//! The search of `reqlife knee` as a pure state machine ([`Search`]): which rate to try next
//! (doubling, then bisection, then confirmation), given the verdict of each step.

use super::{Verdict, MAX_CONFIRM, MAX_HALVINGS, MAX_STEPS};

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
    /// The rate whose step failed on the generator's health and is run once more.
    retrying: Option<f64>,
    /// The answer held when its step was repeated.
    pub confirmed: bool,
    /// What stopped the search going higher: `server`, `client` or `max`.
    pub limited_by: &'static str,
}

impl Search {
    /// A search that starts at `start_rps` and stops when its bounds are within `precision` (a
    /// fraction of the rate), never above `max_rps`.
    pub fn new(start_rps: f64, precision: f64, max_rps: Option<f64>) -> Self {
        Search {
            precision,
            max_rps,
            lo: None,
            hi: None,
            stage: Stage::Explore { halvings: 0 },
            next: max_rps.map_or(start_rps, |m| start_rps.min(m)),
            steps: 0,
            retrying: None,
            confirmed: false,
            limited_by: "server",
        }
    }

    /// Whether the next step runs again a rate whose step failed on the generator's health.
    pub fn retrying(&self) -> bool {
        self.retrying.is_some()
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
        if verdict == Verdict::Client && self.retrying != Some(rate) {
            // The generator's health failed once: one blip (a timer, another process) must
            // not end the search. The same step runs again.
            self.retrying = Some(rate);
            return;
        }
        self.retrying = None;
        if verdict == Verdict::Client {
            // Twice at this rate: nothing above this can be measured from here.
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
