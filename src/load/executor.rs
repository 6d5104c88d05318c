//! The life of one run, from its start to what it measured: the worker threads started, the
//! recorded window opened (an open loop's once its connections are open, then the warm-up),
//! the run followed until the workers finish, its deadline, an interrupt or its observer's
//! stop; after a deadline, the requests in flight drained (for the plan's `drain`); then the
//! workers stopped and joined, and why the run ended. What shows the run as it goes (a
//! progress bar, live lines, a terminal view, thresholds checked on the way) is the caller's,
//! through an [`Observer`].

use super::failfast::Tripped;
use super::{start, Progress, StopSignal, Workers};
use crate::engine::SessionConfig;
use crate::model::{StopReason, StopRule};
use crate::plan::RunPlan;
use crate::recorder::collector::Sinks;
use crate::recorder::{Measured, RecordError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the observer is called while a run goes.
const TICK: Duration = Duration::from_millis(200);

/// How a run is executed, besides its plan.
pub struct RunOptions<'a> {
    /// The runtime that waits for the run (the caller's control runtime, not a worker's).
    pub runtime: &'a tokio::runtime::Handle,
    /// Stops the run early (a signal, the user's `q`); the requests in flight are then not
    /// drained.
    pub interrupt: &'a StopSignal,
    /// Where the collector sends the intervals as they close (the caller's watchers, an
    /// interval log).
    pub sinks: Sinks,
}

/// The recorded window of a run: from `from` (its load started, the warm-up past), until
/// `deadline` for a timed run.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// When recording starts.
    pub from: Instant,
    /// When a timed run's window ends (`None`: a count of requests ends it).
    pub deadline: Option<Instant>,
}

impl Window {
    /// How far into the window now is.
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(self.from)
    }
}

/// What an [`Observer`] says of the run at a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// It goes on.
    Go,
    /// It stops now, undrained (a threshold lost on the way).
    Stop,
    /// It has measured enough (`--until`): it ends as at its deadline, the requests in flight
    /// drained.
    Enough,
}

/// What observes a run while it goes: called on the runtime's thread, never the workers'.
pub trait Observer {
    /// The recorded window has opened.
    fn opened(&mut self, window: &Window);
    /// A tick while the load goes (`progress`: the workers' counters so far): whether the run
    /// goes on.
    fn tick(&mut self, window: &Window, progress: &Progress) -> Tick;
    /// A tick while waiting for the requests in flight after the deadline.
    fn draining(&mut self);
    /// The load is over: nothing more is sent (the workers are joined next).
    fn stopped(&mut self);
}

/// What a run gave, with how it ended.
pub struct Ran {
    /// What the workers measured, merged.
    pub measured: Measured,
    /// The length of the recorded window, up to the deadline at most.
    pub recorded: Duration,
    /// How long after the window the drain of the requests in flight ended.
    pub drained: Duration,
    /// The first error writing the interval log, if one was asked for.
    pub log_error: Option<RecordError>,
    /// Why the fail-fast rule stopped the run, if it did.
    pub tripped: Option<Tripped>,
    /// The observer had enough before the stop rule (`--until`): the window was closed early.
    pub enough: bool,
}

impl Ran {
    /// Why the run of `plan` ended: the fail-fast rule (unless `signal`, the signal that
    /// interrupted it, or 0), the threshold `lost` on the way, the signal, or the stop rule;
    /// with the fail-fast rule's one line (what went wrong and the fix).
    pub fn ending(
        &self,
        plan: &RunPlan,
        signal: i32,
        lost: Option<String>,
    ) -> (StopReason, Option<String>) {
        let tripped = self.tripped.as_ref().filter(|_| signal == 0);
        (
            stop_reason(signal, plan.stop, tripped, lost, self.enough),
            tripped.map(|t| fail_fast_line(plan, t)),
        )
    }
}

/// Runs the workers of `plan` until its stop rule, an interrupt or `observer` ends the run;
/// an error: the worker threads could not start.
pub fn execute(
    plan: &RunPlan,
    config: SessionConfig,
    options: RunOptions,
    observer: &mut dyn Observer,
) -> std::io::Result<Ran> {
    let stop = StopSignal::default();
    let progress = Progress::new(plan.threads);
    let mut workers = start(plan, config, stop.clone(), progress.clone(), options.sinks)?;
    let run = Running {
        plan,
        runtime: options.runtime,
        interrupt: options.interrupt,
        progress,
    };
    let from = run.opened(&mut workers);
    let window = Window {
        from,
        deadline: match plan.stop {
            StopRule::Duration(d) => Some(from + d),
            StopRule::Requests(_) => None,
        },
    };
    observer.opened(&window);
    let (ended, drain) = run.follow(&window, &mut workers, observer);
    let enough = workers.closed();
    if drain {
        run.drain(&mut workers, observer);
    }
    // The drain ended this long after the window (its deadline, or where it was closed).
    let drained = match (drain, window.deadline) {
        (true, Some(end)) => Instant::now().saturating_duration_since(end.min(ended)),
        (true, None) => Instant::now().saturating_duration_since(ended),
        _ => Duration::ZERO,
    };
    stop.stop();
    observer.stopped();
    let tripped = workers.tripped();
    let (measured, log_error) = workers.join();
    // Workers that end by themselves at the deadline may report a moment after it.
    let recorded = ended.saturating_duration_since(from);
    let recorded = match window.deadline {
        Some(d) => recorded.min(d.saturating_duration_since(from)),
        None => recorded,
    };
    Ok(Ran {
        measured,
        recorded,
        drained,
        log_error,
        tripped,
        enough,
    })
}

/// A run going: what its waits need.
struct Running<'a> {
    plan: &'a RunPlan,
    runtime: &'a tokio::runtime::Handle,
    interrupt: &'a StopSignal,
    progress: Arc<Progress>,
}

impl Running<'_> {
    /// When the recorded window starts: once an open loop's connections are open (an
    /// interrupt, or workers that end first, start it now), plus the warm-up.
    fn opened(&self, workers: &mut Workers) -> Instant {
        let gate = workers.gate();
        let from = self.runtime.block_on(async {
            tokio::select! {
                r = gate.opened() => Some(r + self.plan.warmup),
                _ = self.interrupt.stopped() => None,
                _ = workers.all_finished() => None,
            }
        });
        from.unwrap_or_else(Instant::now)
    }

    /// Follows the run until the workers finish, an interrupt, the deadline (then it drains)
    /// or the observer's stop: when it ended, and whether to drain.
    fn follow(
        &self,
        window: &Window,
        workers: &mut Workers,
        observer: &mut dyn Observer,
    ) -> (Instant, bool) {
        let deadline = window.deadline;
        self.runtime.block_on(async {
            let mut tick = tokio::time::interval(TICK);
            loop {
                tokio::select! {
                    _ = workers.all_finished() => break (Instant::now(), false),
                    _ = self.interrupt.stopped() => break (Instant::now(), false),
                    _ = sleep_until(deadline) => {
                        break (deadline.unwrap_or_else(Instant::now), true)
                    }
                    _ = tick.tick() => match observer.tick(window, &self.progress) {
                        Tick::Go => {}
                        Tick::Stop => break (Instant::now(), false),
                        Tick::Enough => {
                            let now = Instant::now();
                            workers.close(now);
                            break (now, true);
                        }
                    },
                }
            }
        })
    }

    /// The duration is over: nothing more is sent; the requests in flight may end (and are
    /// recorded) for up to the plan's drain. The observer ticks meanwhile.
    fn drain(&self, workers: &mut Workers, observer: &mut dyn Observer) {
        self.runtime.block_on(async {
            let end = tokio::time::sleep(self.plan.drain);
            tokio::pin!(end);
            let mut tick = tokio::time::interval(TICK);
            loop {
                tokio::select! {
                    _ = workers.all_finished() => break,
                    _ = self.interrupt.stopped() => break,
                    _ = &mut end => break,
                    _ = tick.tick() => observer.draining(),
                }
            }
        });
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Why a run of a plan stopped by `rule` ended: the fail-fast rule (`tripped`, with no
/// signal), a lost threshold, a signal, or its stop rule.
fn stop_reason(
    signal: i32,
    rule: StopRule,
    tripped: Option<&Tripped>,
    lost: Option<String>,
    enough: bool,
) -> StopReason {
    match (signal, rule) {
        _ if tripped.is_some() => {
            StopReason::FailFast(tripped.map_or("", |t| t.cause.name()).to_string())
        }
        _ if lost.is_some() => StopReason::ThresholdLost(lost.unwrap_or_default()),
        (libc::SIGINT | libc::SIGTERM, _) => StopReason::Interrupted(Some(signal)),
        _ if enough => StopReason::Precise,
        (_, StopRule::Duration(_)) => StopReason::Duration,
        (_, StopRule::Requests(_)) => StopReason::Requests,
    }
}

/// The one line that says why the fail-fast rule stopped a run, and the fix.
fn fail_fast_line(plan: &RunPlan, t: &Tripped) -> String {
    format!(
        "{} (run stopped: the first {} connection attempts failed this way within {:.2}s and no request succeeded; first: {})",
        t.cause.hint(plan),
        t.failures,
        t.after.as_secs_f64(),
        t.first
    )
}
