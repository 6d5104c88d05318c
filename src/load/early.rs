//! Wake early, send on time: the open-loop pacer's wait for a due time.
//!
//! A sleeping thread wakes late by the timer's latency: on a VM, 20-120 µs after the time it
//! asked for, even with a timer slack of 1 ns. That lateness is the schedule lag of every
//! request the wake-up releases, and it sits inside every corrected figure. So the pacer learns
//! this thread's lateness as it runs (the last [`SAMPLES`] sleeps), sleeps until the due time
//! less a lead taken from that distribution, and covers the rest by spinning on the clock.
//!
//! Spinning costs CPU, so it is bounded by a budget, a share of one core (`--pacer-spin`,
//! default [`DEFAULT_SPIN`]): the lead is the highest of the quantiles of `QUANTILES` whose
//! expected spin (the mean of `lead − lateness` over the samples, where positive) times the
//! rate of wake-ups fits the budget, and a token bucket filled at the budget's rate stops any
//! spin the estimate got wrong. At low and mid rates (a few thousand wake-ups a second) a
//! lead near the lateness's p95 fits, and requests leave within a few µs of their due time; at
//! high rates, where the wake-ups themselves cost most, the lead shrinks to what fits, down
//! to none (the plain sleep). No spin buys a lateness far within the pacer's slack: with a
//! lead of at most an eighth of `--pacer-slack` (at `1ms`, or on a machine whose wake-ups are
//! late by under 6.25 µs at the default 50 µs) the thread sleeps to the due time. The time
//! spun is counted and reported (`pacer_spin`).

use std::time::{Duration, Instant};

/// The default budget of spinning: 5% of one core per worker thread. On the 2-core VM the
/// benchmarks run on, a lead at the lateness's p90-p95 costs 2-4% of a core at 1,000-2,000
/// wake-ups a second; 5% keeps that precision there while a thread at 20,000 req/s, whose
/// wake-ups already cost a quarter of its core, adds at most a twentieth.
pub const DEFAULT_SPIN: f64 = 0.05;

/// The sleeps whose lateness the lead is learnt from: the last 64.
pub const SAMPLES: usize = 64;

/// The quantiles of the lateness the lead may be, highest first.
const QUANTILES: [f64; 6] = [0.99, 0.95, 0.9, 0.75, 0.5, 0.25];

/// No spin for a lead of at most this share of the slack (1/8): the default 50 µs slack spins
/// for a lateness over 6.25 µs (on a VM it is 10-120 µs), `--pacer-slack 1ms` for one over
/// 125 µs.
const SLACK_SHARE: u32 = 8;

/// The lead is chosen anew after this many sleeps.
const RECHOOSE: u32 = 16;

/// The most the token bucket holds, in seconds of spinning: a short burst of wake-ups may
/// spin beyond the rate of the budget by this much.
const BUCKET_S: f64 = 0.002;

/// One thread's precise wait: its learnt lateness, its lead and its spin budget.
#[derive(Debug, Clone)]
pub struct EarlyWake {
    /// The lateness of the last sleeps, ns (a ring).
    late_ns: [u32; SAMPLES],
    filled: usize,
    next: usize,
    since_choice: u32,
    lead: Duration,
    /// The budget, a share of one core (0: never spin).
    budget: f64,
    /// Seconds of spinning the budget still allows (a token bucket).
    tokens_s: f64,
    refilled: Instant,
    /// Wake-ups a second, as an exponential average of the gaps between sleeps.
    gap_s: f64,
    last_sleep: Option<Instant>,
    /// The pacer's slack: no spin buys a lateness the slack already allows.
    slack: Duration,
    /// Time spun in all.
    pub spun: Duration,
}

impl EarlyWake {
    /// A pacer's wait with a spin budget of `budget` (a share of one core, 0..=1) under the
    /// pacer's `slack`.
    pub fn new(budget: f64, slack: Duration, now: Instant) -> Self {
        EarlyWake {
            late_ns: [0; SAMPLES],
            filled: 0,
            next: 0,
            since_choice: 0,
            lead: Duration::ZERO,
            budget: budget.clamp(0.0, 1.0),
            tokens_s: 0.0,
            refilled: now,
            gap_s: 1.0,
            last_sleep: None,
            slack,
            spun: Duration::ZERO,
        }
    }

    /// The lead in use: how long before a due time the thread asks to be woken.
    pub fn lead(&self) -> Duration {
        self.lead
    }

    /// When to be woken for a release at `at`: early by the lead, if the budget has room
    /// for a spin of that long (else a wake-up early would have to sleep again), and if the
    /// lead is more than an eighth of the slack (`SLACK_SHARE`): a thread allowed to leave
    /// up to the slack late gains little it asked for by spinning off a lateness far within it
    /// (at `--pacer-slack 1ms` and 20,000 req/s the spin cost a tenth of the thread's CPU to
    /// move lags spread over a millisecond by some 50 µs).
    pub fn aim(&mut self, at: Instant, now: Instant) -> Instant {
        self.refill(now);
        if self.lead * SLACK_SHARE <= self.slack || self.tokens_s < self.lead.as_secs_f64() {
            return at;
        }
        at.checked_sub(self.lead).unwrap_or(at)
    }

    /// A sleep aimed at `aimed` ended at `woke`: its lateness is learnt.
    pub fn woke(&mut self, aimed: Instant, woke: Instant) {
        let late = woke.saturating_duration_since(aimed);
        self.late_ns[self.next] = late.as_nanos().min(u32::MAX as u128) as u32;
        self.next = (self.next + 1) % SAMPLES;
        self.filled = (self.filled + 1).min(SAMPLES);
        if let Some(last) = self.last_sleep {
            let gap = woke.saturating_duration_since(last).as_secs_f64();
            self.gap_s = 0.9 * self.gap_s + 0.1 * gap;
        }
        self.last_sleep = Some(woke);
        self.since_choice += 1;
        if self.since_choice >= RECHOOSE || self.filled < RECHOOSE as usize {
            self.since_choice = 0;
            self.lead = choose_lead(&self.late_ns[..self.filled], self.budget, self.gap_s);
        }
    }

    /// Whether the budget holds a spin from `now` to `at` (a spin is never longer than what the
    /// bucket holds, whatever the lateness learnt: a stall of the machine among the samples
    /// does not become a long spin).
    pub fn may_spin(&mut self, now: Instant, at: Instant) -> bool {
        self.refill(now);
        self.budget > 0.0 && self.tokens_s >= at.saturating_duration_since(now).as_secs_f64()
    }

    /// Spins until `at` (returns at it or just after), counting the time against the budget.
    pub fn spin_until(&mut self, at: Instant) {
        let start = Instant::now();
        let mut now = start;
        while now < at {
            std::hint::spin_loop();
            now = Instant::now();
        }
        let spun = now - start;
        self.spun += spun;
        self.tokens_s -= spun.as_secs_f64();
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.refilled = now;
        self.tokens_s = (self.tokens_s + dt * self.budget).min(BUCKET_S);
    }
}

/// The highest lead among the quantiles of `late_ns` whose expected spin per wake-up (the
/// mean of `lead − lateness` where positive), at one wake-up every `gap_s` seconds, fits
/// `budget` (a share of a core); none (zero) if even the lowest does not.
pub fn choose_lead(late_ns: &[u32], budget: f64, gap_s: f64) -> Duration {
    if late_ns.is_empty() || budget <= 0.0 {
        return Duration::ZERO;
    }
    let mut sorted = late_ns.to_vec();
    sorted.sort_unstable();
    let n = sorted.len();
    for q in QUANTILES {
        let lead = sorted[((q * n as f64) as usize).min(n - 1)] as f64;
        let spin_ns: f64 = sorted
            .iter()
            .map(|&x| (lead - x as f64).max(0.0))
            .sum::<f64>()
            / n as f64;
        if spin_ns * 1e-9 <= budget * gap_s.max(1e-9) {
            return Duration::from_nanos(lead as u64);
        }
    }
    Duration::ZERO
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lead_is_the_highest_quantile_the_budget_pays_for() {
        // Lateness of 10, 20, 30 and 40 µs, 16 sleeps each. A lead of 40 µs (p75 and up)
        // spins 15 µs a wake-up on average (30, 20, 10, 0), 30 µs (p50) 7.5 µs, 20 µs (p25)
        // 2.5 µs.
        let late: Vec<u32> = (0..64).map(|i| (10 + 10 * (i / 16)) * 1000).collect();
        // (budget, seconds between wake-ups, lead µs): the budget pays budget × gap a wake-up.
        let rows = [
            (0.05, 1e-3, 40), // 50 µs a wake-up: the highest quantile
            (0.01, 1e-3, 30), // 10 µs: the p50
            (0.05, 1e-4, 20), // 5 µs: the p25
            (0.01, 1e-4, 0),  // 1 µs: not even the p25, no lead
            (0.0, 1e-3, 0),   // no budget, no lead
        ];
        for (budget, gap, want) in rows {
            let got = choose_lead(&late, budget, gap).as_micros();
            assert_eq!(got, want, "budget {budget}, a wake-up every {gap} s");
        }
        assert_eq!(choose_lead(&[], 0.05, 1e-3), Duration::ZERO);
    }

    #[test]
    fn it_learns_the_lateness_and_aims_early_by_it() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut w = EarlyWake::new(0.05, Duration::ZERO, t0);
        assert_eq!(w.aim(ms(1), t0), ms(1), "nothing learnt: no lead");
        // A sleep every ms, each 30 µs late: the lead becomes 30 µs, and with tokens in the
        // bucket the aim is 30 µs before the due time.
        for n in 1..=64 {
            w.woke(ms(n), ms(n) + Duration::from_micros(30));
        }
        assert_eq!(w.lead(), Duration::from_micros(30));
        assert_eq!(w.aim(ms(100), ms(99)), ms(100) - Duration::from_micros(30));
        // No budget: never early.
        let mut none = EarlyWake::new(0.0, Duration::ZERO, t0);
        for n in 1..=64 {
            none.woke(ms(n), ms(n) + Duration::from_micros(30));
        }
        assert_eq!(none.aim(ms(100), ms(99)), ms(100));
        assert!(!none.may_spin(ms(99), ms(100)));
    }

    #[test]
    fn no_spin_buys_a_lateness_the_slack_allows() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        // The same 30 µs lateness: a slack of 8 × 30 µs or more is allowed it (no early aim);
        // a shorter one is not (the aim is the lead early).
        for (slack_us, early) in [(1000, false), (240, false), (200, true), (50, true)] {
            let mut w = EarlyWake::new(0.05, Duration::from_micros(slack_us), t0);
            for n in 1..=64 {
                w.woke(ms(n), ms(n) + Duration::from_micros(30));
            }
            assert_eq!(w.lead(), Duration::from_micros(30));
            let aim = w.aim(ms(100), ms(99));
            assert_eq!(aim < ms(100), early, "slack {slack_us} µs");
        }
    }

    #[test]
    fn a_spin_is_counted_against_the_budget() {
        let t0 = Instant::now();
        let mut w = EarlyWake::new(0.05, Duration::ZERO, t0);
        // 20 ms at 5% fill the bucket with 1 ms of spinning: a spin of 300 µs fits, one of
        // 1.5 ms does not.
        let later = t0 + Duration::from_millis(20);
        assert!(!w.may_spin(later, later + Duration::from_micros(1500)));
        assert!(w.may_spin(later, later + Duration::from_micros(300)));
        let at = Instant::now() + Duration::from_micros(300);
        w.spin_until(at);
        assert!(Instant::now() >= at, "never early");
        assert!(w.spun >= Duration::from_micros(290), "spun {:?}", w.spun);
        // Spinning more than the bucket holds empties it: no more spin until it refills.
        let now = Instant::now();
        w.refilled = now;
        w.spin_until(now + Duration::from_millis(2));
        let now = Instant::now();
        assert!(!w.may_spin(now, now + Duration::from_nanos(1)));
    }
}
