//! Bursts (`--burst N`): fire N requests at once, one per connection, wait for every answer,
//! pause, repeat. When each burst is due is the burst pacer's ([`BurstPacer`]); whether it
//! goes, whether it is recorded and how its requests are numbered is the scheduler's
//! ([`Scheduler::burst`]). What is particular to bursts is here: every request of a burst is
//! dispatched at once, intended at the burst's start, and per recorded burst two figures are
//! kept: the time to dispatch all N (until the last request was written, connection creation
//! included when connections are new) and the time then blocked waiting for the answers (until
//! the last one ended) — the two halves of an async client's burst.

use super::pacer::BurstPacer;
use super::scheduler::Burst;
use super::{Progress, Scheduler};
use crate::engine::{Send, Session};
use crate::model::Timestamps;
use crate::recorder::Recorder;
use crate::workload::request::Rendered;
use crate::workload::Renderer;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

/// One connection of a burst run: its session, its buffer for rendered requests, and its
/// number over the whole plan's connections ([`Scheduler::connection`]).
pub struct BurstSession {
    pub session: Session,
    pub buf: Rendered,
    pub index: u64,
}

/// What one burst run needs.
pub struct BurstRun {
    pub sessions: Vec<BurstSession>,
    /// The whole plan's burst size (requests per burst over every thread and segment).
    pub size: u64,
    pub pacer: BurstPacer,
    pub scheduler: Arc<Scheduler>,
    pub recorder: Rc<RefCell<Recorder>>,
    pub progress: Arc<Progress>,
    pub fail_fast: Arc<super::FailFast>,
    pub thread: usize,
    /// The worker's index over every generator's threads (for its requests' trace ids).
    pub worker: usize,
    /// A workload's renderer; `None`: the fixed request.
    pub renderer: Option<Rc<RefCell<Renderer>>>,
}

impl BurstRun {
    /// Sends bursts while the pacer has one due and the scheduler admits it.
    pub async fn run(mut self) {
        let origin = Instant::now();
        let (mut recorded, mut last_answer) = (0, None);
        while let Some(due) = self.pacer.due(recorded, last_answer) {
            // Never asleep past the deadline: a burst due after it is not admitted.
            let wake = self
                .scheduler
                .deadline()
                .map_or(origin + due, |d| d.min(origin + due));
            if wake > Instant::now() {
                tokio::time::sleep_until(wake.into()).await;
            }
            // As in a closed loop, a burst is intended when it starts.
            let Some(burst) = self.scheduler.burst(recorded, self.size, Instant::now()) else {
                break;
            };
            let (written, answered) = self.fire(&burst).await;
            if burst.recorded() {
                self.recorder
                    .borrow_mut()
                    .record_burst(written - burst.intended, answered - written);
                recorded += 1;
            }
            last_answer = Some(answered - origin);
        }
    }

    /// Dispatches one request per connection at once and waits for every answer; gives when
    /// the last request was written and when the last answer came.
    async fn fire(&mut self, burst: &Burst) -> (Instant, Instant) {
        let t0 = burst.intended;
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..self.sessions.len() {
            self.recorder.borrow_mut().sending(1);
        }
        for BurstSession {
            mut session,
            mut buf,
            index,
        } in self.sessions.drain(..)
        {
            let ticket = burst.ticket(index);
            let trace = session
                .config()
                .trace
                .as_ref()
                .map(|c| c.ids(self.worker, ticket.seq));
            session.trace_next(trace);
            let who = super::Who {
                request: 0,
                connection: index as u32,
                trace,
            };
            let (slot, head) = match &self.renderer {
                Some(r) => {
                    let (slot, head) = r.borrow_mut().render(ticket.seq, &mut buf);
                    (slot, Some(head))
                }
                None => (0, None),
            };
            set.spawn_local(async move {
                let mut stamps = Timestamps::new(ticket.intended, ticket.intended);
                let send = match head {
                    Some(head) => Send::Rendered {
                        rendered: &buf,
                        head,
                    },
                    None => Send::Fixed { seq: ticket.seq },
                };
                let outcome = session.request(&mut stamps, send).await;
                (
                    session,
                    buf,
                    index,
                    stamps,
                    outcome,
                    super::Who {
                        request: slot,
                        ..who
                    },
                )
            });
        }
        let (mut last_written, mut last_done) = (t0, t0);
        while let Some(joined) = set.join_next().await {
            let Ok((session, buf, index, stamps, outcome, who)) = joined else {
                continue;
            };
            let ended = stamps.done.unwrap_or_else(Instant::now);
            last_written = last_written.max(stamps.written.unwrap_or(ended));
            last_done = last_done.max(ended);
            super::record_outcome(
                &self.recorder,
                &self.progress.0[self.thread],
                &self.fail_fast,
                stamps,
                &outcome,
                &session,
                who,
            );
            self.sessions.push(BurstSession {
                session,
                buf,
                index,
            });
        }
        (last_written, last_done)
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{plan::build, Cli, Command};
    use crate::load::{start, Progress, StopSignal};
    use crate::recorder::{collector::Sinks, Measured};
    use crate::server::{spawn, ServerConfig, ServerTls};
    use clap::Parser;
    use std::time::{Duration, Instant};

    /// Runs `reqlife run FLAGS` against the embedded target (its workers in this process,
    /// bounded to 10 s); gives what they measured and how long they ran by themselves.
    fn burst_run(path: &str, flags: &[&str]) -> (Measured, Duration) {
        let server = spawn(ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            ServerTls::None,
        ))
        .unwrap();
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let plan = build(&args, &server.url(path)).unwrap();
        let config = crate::engine::SessionConfig::new(&plan).unwrap();
        let sinks = Sinks {
            live: None,
            log: None,
            on_interval: None,
            join: None,
        };
        let stop = StopSignal::default();
        let t0 = Instant::now();
        let mut workers = start(&plan, config, stop.clone(), Progress::new(1), sinks).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let finished = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), workers.all_finished())
                .await
                .is_ok()
        });
        let ran = t0.elapsed();
        stop.stop();
        assert!(finished, "the bursts did not end by themselves within 10 s");
        (workers.join().0, ran)
    }

    fn bursts(m: &Measured) -> u64 {
        m.bursts.as_ref().map_or(0, |b| b.dispatch.len())
    }

    #[test]
    fn a_burst_count_sends_exactly_k_bursts_of_n_after_the_warm_up() {
        // (flags, bursts recorded, requests recorded)
        let rows: [(&[&str], u64, u64); 3] = [
            (
                &["--burst", "5", "--bursts", "3", "--burst-interval", "1ms"],
                3,
                15,
            ),
            // The warm-up's bursts are sent, and neither recorded nor counted.
            (
                &[
                    "--burst",
                    "4",
                    "--bursts",
                    "3",
                    "--burst-interval",
                    "20ms",
                    "--warmup",
                    "50ms",
                ],
                3,
                12,
            ),
            // Generator 1 of 2 holds 3 of the 5 connections: its 3 bursts send 9.
            (
                &[
                    "--burst",
                    "5",
                    "--bursts",
                    "3",
                    "--burst-interval",
                    "1ms",
                    "--segment",
                    "1/2",
                ],
                3,
                9,
            ),
        ];
        for (flags, want_bursts, want_requests) in rows {
            let (m, _) = burst_run("/", flags);
            assert_eq!(bursts(&m), want_bursts, "{flags:?}");
            assert_eq!(m.counts.counters.requests, want_requests, "{flags:?}");
            assert_eq!(m.counts.counters.ok, want_requests, "{flags:?}");
            assert_eq!(m.counts.counters.in_flight_at_end, 0, "{flags:?}");
        }
    }

    #[test]
    #[ignore = "timing: run alone by .ci/test's timing step"]
    fn timing_a_timed_burst_run_stops_at_the_deadline() {
        // Bursts of 3 with pauses of 1 s for 1.5 s: bursts at 0 and at 1 s and a bit; the
        // third would be due 1 s after the second's answers (after 2 s), past the deadline, so
        // the run ends at the deadline, not when that burst would have been due.
        let flags = ["--burst", "3", "--burst-interval", "1s", "-d", "1500ms"];
        let (m, ran) = burst_run("/", &flags);
        println!(
            "{} bursts, {} requests, ended after {ran:?}",
            bursts(&m),
            m.counts.counters.requests
        );
        assert_eq!(bursts(&m), 2);
        assert_eq!(m.counts.counters.requests, 6);
        assert!(ran >= Duration::from_millis(1500), "ended early: {ran:?}");
        assert!(
            ran < Duration::from_secs(2),
            "slept past the deadline: {ran:?}"
        );
    }
}
