//! The scheduler: hands connections their next [`Ticket`] and applies the stop rule. In the
//! closed loop a request is intended the moment its connection is free, so `intended` is
//! "now"; in an open loop each thread's pacer says when a request is due and the scheduler
//! only admits it under the stop rule. A request count is shared by all threads through one atomic claim counter (claims
//! start after the warm-up), so the run sends exactly `-n` recorded requests whatever the
//! threads' speeds; a duration ends issuing at `record_from + duration`.

use crate::model::{RunPlan, Segment, StopRule, Ticket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Issues tickets for every load model of the plan.
pub struct Scheduler {
    record_from: Instant,
    /// This process's stop rule (its segment's share of a request count).
    stop: StopRule,
    segment: Segment,
    deadline: Option<Instant>,
    claims: AtomicU64,
}

impl Scheduler {
    pub fn new(plan: &RunPlan, record_from: Instant) -> Self {
        let stop = plan.local_stop();
        let deadline = match stop {
            StopRule::Duration(d) => Some(record_from + d),
            StopRule::Requests(_) => None,
        };
        Scheduler {
            record_from,
            stop,
            segment: plan.segment,
            deadline,
            claims: AtomicU64::new(0),
        }
    }

    /// The end of a timed run's recorded window.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The next ticket for a connection that is free now, or `None` when the run is over.
    pub fn next_ticket(&self) -> Option<Ticket> {
        self.ticket_at(Instant::now())
    }

    /// The ticket for a connection free at `now`.
    pub fn ticket_at(&self, now: Instant) -> Option<Ticket> {
        if self.deadline.is_some_and(|d| now >= d) {
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
        if intended < self.record_from {
            return Some(u64::MAX);
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
    fn closed_loop_intends_now() {
        let t0 = Instant::now();
        let s = Scheduler::new(&plan(&["-d", "1s"]), t0);
        let at = t0 + Duration::from_millis(7);
        assert_eq!(s.ticket_at(at).unwrap().intended, at);
    }
}
