//! Pacers of the open-loop models: each answers "when is request n due", as an offset from
//! the start of the schedule. One scheduler runs them all.
//!
//! The maths, written out:
//! - constant rate `r` (req/s): request n is due at `t(n) = n / r`.
//! - a linear ramp from `r0` to `r1` over `D` seconds has rate `r(t) = r0 + (r1 − r0)·t/D`,
//!   so the number due by time t is `N(t) = r0·t + (r1 − r0)·t²/(2D)`. Request n is due when
//!   `N(t) = n`: with `a = (r1 − r0)/(2D)`, `a·t² + r0·t − n = 0`, so
//!   `t = 2n / (r0 + sqrt(r0² + 4·a·n))` (the stable form of the positive root; it is `n/r0`
//!   when `a = 0`). Stages chain ramps and holds: request n falls in the first stage whose
//!   cumulative count exceeds n.
//! - poisson: the gaps are exponential with mean `1/r`, `gap = −ln(U)/r` for U uniform in (0, 1];
//!   the sequence is reproducible from its seed.
//!
//! Work is split over T threads by interleaving: thread i takes requests i, i+T, i+2T, … of the
//! one global schedule, so the threads together follow it exactly (a poisson schedule gives each
//! thread an independent poisson process of rate r/T, whose superposition is poisson of rate r).
//! Over S generators (`--segment s/S`) the same holds one level up: segment s takes requests
//! s, s+S, s+2S, … of the plan's schedule, and its threads interleave within that share, so
//! thread i of segment s takes request `(k·T + i)·S + s` as its k-th.
//!
//! Bursts ([`BurstPacer`]) follow the server instead of a clock: a burst waits for every
//! answer, then pauses. With `a(k)` the time of the last answer of burst k and `D` the pause,
//! `t(0) = 0` and `t(k+1) = a(k) + D`; with a count K, no burst k ≥ K is due.

use crate::model::{Arrival, LoadModel, RateStage, Schedule, Segment};
use crate::util::rng::SplitMix64;
use std::time::Duration;

/// Requests due over the whole stage: the area under the rate, `(r0 + r1)/2 · D`.
pub fn stage_requests(stage: &RateStage) -> f64 {
    (stage.from_rps + stage.to_rps) / 2.0 * stage.duration.as_secs_f64()
}

/// Seconds into `stage` at which its request `n` (0-based) is due.
fn stage_offset_of(stage: &RateStage, n: f64) -> f64 {
    let d = stage.duration.as_secs_f64();
    let r0 = stage.from_rps;
    let a = (stage.to_rps - stage.from_rps) / (2.0 * d);
    if n <= 0.0 {
        return 0.0;
    }
    let root = (r0 * r0 + 4.0 * a * n).max(0.0).sqrt();
    if r0 + root <= 0.0 {
        return d;
    }
    (2.0 * n / (r0 + root)).min(d)
}

impl Schedule {
    /// When request `n` (0-based, of the whole run) is due, from the start of the schedule;
    /// `None` when the schedule has ended before it.
    pub fn due(&self, n: u64) -> Option<Duration> {
        match self {
            Schedule::Constant { rate } => {
                if *rate <= 0.0 {
                    return None;
                }
                Some(Duration::from_secs_f64(n as f64 / rate))
            }
            Schedule::Stages(stages) => {
                // As for the constant rate, request n is due when N(t) = n.
                let mut before = 0.0; // requests due in earlier stages
                let mut start = 0.0; // seconds at which this stage starts
                let n = n as f64;
                for stage in stages {
                    let count = stage_requests(stage);
                    if n < before + count {
                        return Some(Duration::from_secs_f64(
                            start + stage_offset_of(stage, n - before),
                        ));
                    }
                    before += count;
                    start += stage.duration.as_secs_f64();
                }
                None
            }
        }
    }

    /// How many requests of the whole run fall due before `t` from the start: `N(t)`, the
    /// area under the rate (`r·t` at a constant rate; a stage's `r0·τ + a·τ²` τ into it, the
    /// stages before it whole). Not rounded: request n is due before t when `n < N(t)`.
    pub fn due_before(&self, t: Duration) -> f64 {
        let t = t.as_secs_f64();
        match self {
            Schedule::Constant { rate } => (rate * t).max(0.0),
            Schedule::Stages(stages) => {
                let (mut before, mut start) = (0.0, 0.0);
                for stage in stages {
                    let d = stage.duration.as_secs_f64();
                    if t < start + d {
                        let tau = t - start;
                        let a = (stage.to_rps - stage.from_rps) / (2.0 * d);
                        return before + stage.from_rps * tau + a * tau * tau;
                    }
                    before += stage_requests(stage);
                    start += d;
                }
                before
            }
        }
    }

    /// Total length of the schedule, if it has one.
    pub fn length(&self) -> Option<Duration> {
        match self {
            Schedule::Constant { .. } => None,
            Schedule::Stages(stages) => Some(stages.iter().map(|s| s.duration).sum()),
        }
    }
}

/// The due times of one thread's share of a schedule, in order.
#[derive(Debug, Clone)]
pub struct ThreadPacer {
    schedule: Schedule,
    thread: u64,
    threads: u64,
    segment: Segment,
    /// Next request of this thread (its k-th).
    k: u64,
    arrival: Arrival,
    rng: SplitMix64,
    /// Poisson: time of the previous arrival, seconds.
    clock_s: f64,
}

impl ThreadPacer {
    /// The pacer of worker `thread` of `threads` in `segment` of the plan, drawing Poisson gaps
    /// from `seed`.
    pub fn new(
        schedule: Schedule,
        arrival: Arrival,
        thread: usize,
        threads: usize,
        segment: Segment,
        seed: u64,
    ) -> Self {
        // Every (segment, thread) pair draws its own poisson sequence from the one seed.
        let salt = (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
            ^ segment.index.wrapping_mul(0xD1B5_4A32_D192_ED03);
        ThreadPacer {
            schedule,
            thread: thread as u64,
            threads: threads.max(1) as u64,
            segment,
            k: 0,
            arrival,
            rng: SplitMix64(seed ^ salt),
            clock_s: 0.0,
        }
    }

    /// The plan's number of this thread's `k`-th request.
    fn global(&self, k: u64) -> u64 {
        self.segment.global(k * self.threads + self.thread)
    }

    /// The due time of this thread's next request, or `None` when its schedule is over.
    pub fn next_due(&mut self) -> Option<Duration> {
        let n = self.global(self.k);
        self.k += 1;
        match self.arrival {
            Arrival::Constant => self.schedule.due(n),
            Arrival::Poisson => {
                // The local mean rate at the current time: the schedule's rate there, from the
                // spacing of its due times around this request.
                let here = self.schedule.due(n)?;
                let next = self.schedule.due(self.global(self.k));
                let gap_mean = match next {
                    Some(next) => (next - here).as_secs_f64(),
                    None => return None,
                };
                let u = self.rng.unit_open();
                self.clock_s += -u.ln() * gap_mean;
                if let Some(len) = self.schedule.length() {
                    if self.clock_s >= len.as_secs_f64() {
                        return None;
                    }
                }
                Some(Duration::from_secs_f64(self.clock_s))
            }
        }
    }
}

/// Due times drawn one by one when [`ThreadPacer::count_before`] counts the rest of a
/// schedule; beyond them it counts from the schedule's `N(t)`.
pub const COUNTED_ONE_BY_ONE: u64 = 1 << 16;

impl ThreadPacer {
    /// Counts (and draws) this thread's due times before `end`, from the start of the
    /// schedule: the requests due in a timed run's window that were never sent. The first
    /// [`COUNTED_ONE_BY_ONE`] are drawn one at a time (exact); the rest are counted at once
    /// from the schedule's `N(t)` ([`Schedule::due_before`]): with constant arrivals the
    /// thread's share of the plan's requests `n < N(end)`, exact but for the rounding of
    /// `N`; with poisson arrivals the expected number, `(N(end) − N(clock))/(T·S)`, whose
    /// standard deviation (its square root) is under 0.4% of it there. So a run behind its
    /// schedule by 300 million requests counts them in microseconds, not seconds.
    pub fn count_before(&mut self, end: Duration) -> u64 {
        let mut counted = 0;
        while counted < COUNTED_ONE_BY_ONE {
            match self.next_due() {
                Some(due) if due < end => counted += 1,
                _ => return counted,
            }
        }
        let n_end = self.schedule.due_before(end);
        let share = (self.threads * self.segment.count) as f64;
        let rest = match self.arrival {
            Arrival::Constant => {
                // The plan's requests n < N(end) of this thread: n = (k·T + i)·S + s.
                let first = self.global(0) as f64;
                let due = n_end.ceil();
                let mine = if due > first {
                    ((due - first) / share).ceil() as u64
                } else {
                    0
                };
                mine.saturating_sub(self.k)
            }
            Arrival::Poisson => {
                let since = self
                    .schedule
                    .due_before(Duration::from_secs_f64(self.clock_s));
                ((n_end - since) / share).max(0.0).round() as u64
            }
        };
        counted + rest
    }
}

/// When each burst of a burst load is due (`--burst N --burst-interval D [--bursts K]`).
///
/// The maths, written out: a burst sends its N requests at once and waits for every answer,
/// so its pace follows the server. Burst 0 is due at the start, `t(0) = 0`; burst k+1 is due
/// `D` after the last answer of burst k, `t(k+1) = a(k) + D`, where `a(k) ≥ t(k)` is when
/// that answer came. Hence `t(k) = k·D + Σ_{j<k} (a(j) − t(j))`: k pauses plus the bursts'
/// own lengths. With a count K, bursts `k ≥ K` are never due; K counts the recorded bursts
/// (those sent in a warm-up are not counted, as `-n` does not count warm-up requests).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstPacer {
    /// `D`: the pause between the last answer of a burst and the next burst.
    pub interval: Duration,
    /// `K`: the number of bursts to record; `None`: until the duration ends.
    pub bursts: Option<u64>,
}

impl BurstPacer {
    /// The pacer of a burst load; `None` for the other load models.
    pub fn of(load: &LoadModel) -> Option<BurstPacer> {
        match load {
            LoadModel::Burst {
                interval, bursts, ..
            } => Some(BurstPacer {
                interval: *interval,
                bursts: *bursts,
            }),
            _ => None,
        }
    }

    /// When the next burst is due, from the start: `t(0) = 0` when no burst has been sent yet
    /// (`last_answer` is `None`), else `t(k+1) = a(k) + D` with `a(k) = last_answer`; `None`
    /// once `recorded` bursts reach the count K.
    pub fn due(&self, recorded: u64, last_answer: Option<Duration>) -> Option<Duration> {
        if self.bursts.is_some_and(|k| recorded >= k) {
            return None;
        }
        Some(last_answer.map_or(Duration::ZERO, |a| a + self.interval))
    }
}

#[cfg(test)]
mod tests;
