//! The scheduler: hands connections their next [`Ticket`] and applies the stop rule. In the
//! closed loop a request is intended the moment its connection is free, so `intended` is
//! "now"; in an open loop each thread's pacer says when a request is due and the scheduler
//! only admits it under the stop rule. A request count is shared by all threads through one atomic claim counter (claims
//! start after the warm-up), so the run sends exactly `-n` recorded requests whatever the
//! threads' speeds; a duration ends issuing at `record_from + duration`. An open loop's
//! scheduler begins only once the plan's connections are open ([`super::start`]).

use crate::model::{Segment, StopRule, Ticket};
use crate::plan::RunPlan;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// Issues tickets for every load model of the plan.
pub struct Scheduler {
    /// Set once, when the load starts.
    window: OnceLock<Window>,
    /// This process's stop rule (its segment's share of a request count).
    stop: StopRule,
    segment: Segment,
    claims: AtomicU64,
}

/// The recorded window: from the end of the warm-up to the end of the duration.
#[derive(Debug, Clone, Copy)]
struct Window {
    record_from: Instant,
    deadline: Option<Instant>,
}

impl Scheduler {
    /// A scheduler whose recording starts at `record_from`.
    pub fn new(plan: &RunPlan, record_from: Instant) -> Self {
        let s = Scheduler::pending(plan);
        s.begin(record_from);
        s
    }

    /// A scheduler that waits for [`Scheduler::begin`]: until then every request it admits
    /// is a warm-up request.
    pub fn pending(plan: &RunPlan) -> Self {
        Scheduler {
            window: OnceLock::new(),
            stop: plan.local_stop(),
            segment: plan.segment,
            claims: AtomicU64::new(0),
        }
    }

    /// Starts recording at `record_from` (the first call wins).
    pub fn begin(&self, record_from: Instant) {
        let deadline = match self.stop {
            StopRule::Duration(d) => Some(record_from + d),
            StopRule::Requests(_) => None,
        };
        let _ = self.window.set(Window {
            record_from,
            deadline,
        });
    }

    /// The end of a timed run's recorded window (once begun).
    pub fn deadline(&self) -> Option<Instant> {
        self.window.get().and_then(|w| w.deadline)
    }

    /// The next ticket for a connection that is free now, or `None` when the run is over.
    pub fn next_ticket(&self) -> Option<Ticket> {
        self.ticket_at(Instant::now())
    }

    /// The ticket for a connection free at `now`.
    pub fn ticket_at(&self, now: Instant) -> Option<Ticket> {
        if self.deadline().is_some_and(|d| now >= d) {
            return None;
        }
        let seq = self.admit(now)?;
        Some(Ticket {
            seq,
            intended: now,
            released: now,
        })
    }

    /// Admits a request intended at `intended` under the stop rule: its sequence number in
    /// the whole plan (over every segment), or `None` when the count is reached. Requests
    /// intended during the warm-up are not counted (their number is `u64::MAX`: they are not
    /// recorded).
    pub fn admit(&self, intended: Instant) -> Option<u64> {
        match self.window.get() {
            Some(w) if intended >= w.record_from => {}
            _ => return Some(u64::MAX),
        }
        let claim = self.claims.fetch_add(1, Ordering::Relaxed);
        match self.stop {
            StopRule::Requests(n) if claim >= n => None,
            _ => Some(self.segment.global(claim)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{plan::build, Cli, Command};
    use clap::Parser;
    use std::time::Duration;

    fn plan(flags: &[&str]) -> RunPlan {
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        build(&args, "http://127.0.0.1:9/").unwrap()
    }

    #[test]
    fn request_count_is_exact_and_starts_after_warmup() {
        let t0 = Instant::now();
        let from = t0 + Duration::from_secs(1);
        let s = Scheduler::new(&plan(&["-n", "3"]), from);
        // (time offset ms, ticket seq expected; None = run over)
        let rows = [
            (0, Some(u64::MAX)), // warm-up: issued, not numbered
            (999, Some(u64::MAX)),
            (1000, Some(0)),
            (1001, Some(1)),
            (1002, Some(2)),
            (1003, None), // the count is reached
            (1004, None),
        ];
        for (ms, want) in rows {
            let got = s.ticket_at(t0 + Duration::from_millis(ms)).map(|t| t.seq);
            assert_eq!(got, want, "at {ms} ms");
        }
    }

    #[test]
    fn a_segment_sends_its_share_with_the_plan_s_numbers() {
        let t0 = Instant::now();
        // 10 requests over 3 segments: segment 2 sends 3 of them, numbered 1, 4, 7.
        let s = Scheduler::new(&plan(&["-n", "10", "--segment", "2/3"]), t0);
        let seqs: Vec<u64> = std::iter::from_fn(|| s.ticket_at(t0).map(|t| t.seq)).collect();
        assert_eq!(seqs, [1, 4, 7]);
        // Segment 1 takes the extra one.
        let s = Scheduler::new(&plan(&["-n", "10", "--segment", "1/3"]), t0);
        let seqs: Vec<u64> = std::iter::from_fn(|| s.ticket_at(t0).map(|t| t.seq)).collect();
        assert_eq!(seqs, [0, 3, 6, 9]);
    }

    #[test]
    fn duration_ends_at_the_deadline() {
        let t0 = Instant::now();
        let s = Scheduler::new(&plan(&["-d", "2s"]), t0);
        assert!(s.ticket_at(t0 + Duration::from_millis(1999)).is_some());
        assert!(s.ticket_at(t0 + Duration::from_secs(2)).is_none());
    }

    #[test]
    fn a_pending_scheduler_counts_nothing_until_it_begins() {
        let t0 = Instant::now();
        let s = Scheduler::pending(&plan(&["-n", "2", "-R", "100"]));
        assert_eq!(s.deadline(), None);
        assert_eq!(
            s.admit(t0),
            Some(u64::MAX),
            "before the start: not numbered"
        );
        s.begin(t0 + Duration::from_millis(5));
        s.begin(t0 + Duration::from_secs(9)); // ignored: the first begin wins
        assert_eq!(s.admit(t0 + Duration::from_millis(5)), Some(0));
        assert_eq!(s.admit(t0 + Duration::from_millis(6)), Some(1));
        assert_eq!(s.admit(t0 + Duration::from_millis(7)), None);
        let d = Scheduler::pending(&plan(&["-d", "2s", "-R", "100"]));
        d.begin(t0);
        assert_eq!(d.deadline(), Some(t0 + Duration::from_secs(2)));
    }

    #[test]
    fn closed_loop_intends_now() {
        let t0 = Instant::now();
        let s = Scheduler::new(&plan(&["-d", "1s"]), t0);
        let at = t0 + Duration::from_millis(7);
        assert_eq!(s.ticket_at(at).unwrap().intended, at);
    }
}
