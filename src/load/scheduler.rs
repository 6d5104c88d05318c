//! The scheduler: hands connections their next [`Ticket`] and applies the stop rule. In the
//! closed loop a request is intended the moment its connection is free, so `intended` is
//! "now"; in an open loop each thread's pacer says when a request is due and the scheduler
//! only admits it under the stop rule. A request count is shared by all threads through one atomic claim counter (claims
//! start after the warm-up), so the run sends exactly `-n` recorded requests whatever the
//! threads' speeds; a duration ends issuing at `record_from + duration`. An open loop's
//! scheduler begins only once the plan's connections are open ([`super::start`]).
//!
//! Bursts ([`Scheduler::burst`]) take their tickets here too, a burst at a time: the warm-up
//! and the deadline as for the other models, and the numbers of the whole plan, request `c`
//! (the plan's number of its connection, [`Scheduler::connection`]) of burst `k` being the
//! plan's request `k·N + c`. Their count is in whole bursts: the burst pacer
//! ([`super::pacer::BurstPacer`]) ends after K, so no request count is claimed for them.

use crate::model::{Segment, StopRule, Ticket, WindowEnd};
use crate::plan::RunPlan;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// Issues tickets for every load model of the plan.
pub struct Scheduler {
    /// Set once, when the load starts.
    window: OnceLock<Window>,
    /// The window's end, shared with the recorders: a timed run's deadline, moved earlier when
    /// the run has measured enough ([`Scheduler::close`]).
    end: Arc<WindowEnd>,
    /// [`Scheduler::close`] was called.
    closed: AtomicBool,
    /// This process's stop rule (its segment's share of a request count).
    stop: StopRule,
    segment: Segment,
    claims: AtomicU64,
}

/// The recorded window's start: the end of the warm-up.
#[derive(Debug, Clone, Copy)]
struct Window {
    record_from: Instant,
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
            end: Arc::new(WindowEnd::open()),
            closed: AtomicBool::new(false),
            stop: plan.local_stop(),
            segment: plan.segment,
            claims: AtomicU64::new(0),
        }
    }

    /// Starts recording at `record_from` (the first call wins).
    pub fn begin(&self, record_from: Instant) {
        if self.window.set(Window { record_from }).is_ok() {
            if let StopRule::Duration(d) = self.stop {
                self.end.set(Some(record_from + d));
            }
        }
    }

    /// The end of the recorded window: a timed run's deadline (once begun), or where
    /// [`Scheduler::close`] moved it.
    pub fn deadline(&self) -> Option<Instant> {
        self.end.get()
    }

    /// Ends the window at `at` (if it ended later): no request is issued after it, and what
    /// ends after it was in flight (drained), as at a timed run's deadline.
    pub fn close(&self, at: Instant) {
        self.closed.store(true, Ordering::Relaxed);
        self.end.close(at);
    }

    /// Whether [`Scheduler::close`] ended the window.
    pub fn closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// The window's end, for the recorders.
    pub fn end(&self) -> Arc<WindowEnd> {
        self.end.clone()
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

    /// The plan's number of this thread's connection `local` (`thread` of `threads`):
    /// connections interleave over the threads (thread i holds i, i+T, i+2T, …), then over
    /// the segments ([`Segment::global`]), so every generator's connections are numbered apart.
    pub fn connection(&self, local: usize, thread: usize, threads: usize) -> u64 {
        self.segment.global((local * threads + thread) as u64)
    }

    /// Admits a burst of the plan's `size` requests starting `now`, `recorded` bursts having
    /// been recorded before it: numbered `recorded`, unnumbered when it starts in the warm-up
    /// (sent, not recorded), `None` once the duration is over.
    pub fn burst(&self, recorded: u64, size: u64, now: Instant) -> Option<Burst> {
        if self.deadline().is_some_and(|d| now >= d) {
            return None;
        }
        let number = match self.window.get() {
            Some(w) if now >= w.record_from => Some(recorded),
            _ => None,
        };
        Some(Burst {
            number,
            size,
            intended: now,
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

/// A burst the scheduler admitted: every request of it is intended when it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Burst {
    /// Its number among the recorded bursts; `None`: a warm-up burst, sent and not recorded.
    pub number: Option<u64>,
    /// The whole plan's burst size N.
    size: u64,
    /// When it starts.
    pub intended: Instant,
}

impl Burst {
    /// Whether its requests and its figures are recorded (it is not in the warm-up).
    pub fn recorded(&self) -> bool {
        self.number.is_some()
    }

    /// The ticket of its request on the plan's connection `connection`: the plan's request
    /// `k·N + c` for burst k; unnumbered (`u64::MAX`) in a warm-up burst, as the other
    /// models' warm-up requests.
    pub fn ticket(&self, connection: u64) -> Ticket {
        Ticket {
            seq: self.number.map_or(u64::MAX, |k| k * self.size + connection),
            intended: self.intended,
            released: self.intended,
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
    fn a_closed_window_issues_nothing_after_it_and_the_recorders_see_its_end() {
        let t0 = Instant::now();
        for flags in [&["-d", "10s"][..], &["-n", "1000"]] {
            let s = Scheduler::new(&plan(flags), t0);
            let end = s.end();
            assert!(!s.closed());
            s.close(t0 + Duration::from_secs(1));
            assert!(s.closed(), "{flags:?}");
            assert_eq!(end.get(), Some(t0 + Duration::from_secs(1)), "{flags:?}");
            assert!(s.ticket_at(t0 + Duration::from_millis(999)).is_some());
            assert!(
                s.ticket_at(t0 + Duration::from_secs(1)).is_none(),
                "{flags:?}"
            );
            // Never later: a timed run's deadline does not come back.
            s.close(t0 + Duration::from_secs(5));
            assert_eq!(s.deadline(), Some(t0 + Duration::from_secs(1)));
        }
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

    #[test]
    fn a_burst_is_numbered_over_the_plan_after_the_warm_up_until_the_deadline() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        // 5 connections per burst over 2 generators: segment 2 holds connections 1 and 3.
        let flags = [
            "--burst",
            "5",
            "-d",
            "1s",
            "--warmup",
            "100ms",
            "--segment",
            "2/2",
        ];
        let s = Scheduler::new(&plan(&flags), t0 + ms(100));
        let conns: Vec<u64> = (0..2).map(|local| s.connection(local, 0, 1)).collect();
        assert_eq!(conns, [1, 3]);
        // (start ms, bursts recorded before, its requests' numbers; None = the run is over)
        let rows = [
            (0, 0, Some(vec![u64::MAX; 2])), // in the warm-up: sent, not numbered
            (99, 0, Some(vec![u64::MAX; 2])),
            (100, 0, Some(vec![1, 3])), // burst 0: requests 0..5 of the plan
            (150, 1, Some(vec![6, 8])), // burst 1: 5..10
            (900, 7, Some(vec![36, 38])),
            (1100, 8, None), // the duration (1 s after the warm-up) is over
        ];
        for (at, recorded, want) in rows {
            let burst = s.burst(recorded, 5, t0 + ms(at));
            if let Some(b) = burst {
                assert_eq!(b.intended, t0 + ms(at));
                assert_eq!(b.recorded(), at >= 100, "at {at} ms");
            }
            let seqs = burst.map(|b| conns.iter().map(|&c| b.ticket(c).seq).collect::<Vec<_>>());
            assert_eq!(seqs, want, "at {at} ms");
        }
    }

    #[test]
    fn connections_are_numbered_over_threads_then_segments() {
        // 2 threads in segment 1 of 3: thread 1's connection 2 is the thread-level 5th
        // (2·2 + 1), the plan's 5·3 + 0.
        let s = Scheduler::new(
            &plan(&["-c", "12", "-d", "1s", "--segment", "1/3"]),
            Instant::now(),
        );
        assert_eq!(s.connection(2, 1, 2), 15);
        assert_eq!(s.connection(0, 0, 2), 0);
        assert_eq!(s.connection(0, 1, 2), 3);
    }
}
