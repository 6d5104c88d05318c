//! The control side of a run, shared by `run`, `knee` and `calibrate`: one control runtime
//! that watches SIGINT/SIGTERM for the whole command (the first stops the current run; only a
//! third, a second or more after the first, exits at once: [`super::interrupt`]), has one
//! plan's run executed ([`crate::load::executor`]: the start gate, deadline, drain and why it
//! ended) as [`Reporting`] says, shows its progress, `--every` lines and the live view, and
//! hands back what was measured ([`Executed`]).

mod observer;

use super::failure::Failure;
use super::interrupt;
use super::intervals::IntervalFeed;
use super::now_rfc3339;
use crate::engine::SessionConfig;
use crate::load::executor::{self, RunOptions};
use crate::load::StopSignal;
use crate::model::StopReason;
use crate::plan::RunPlan;
use crate::watch::tui::{Key, LiveState, LiveView, StepRow};
use observer::RunObserver;
use std::cell::RefCell;
use std::io::IsTerminal;
use std::time::Duration;

/// What a run gave, before it becomes a record.
pub(crate) struct Executed {
    pub measured: crate::recorder::Measured,
    pub recorded: Duration,
    /// How long after the window the drain of the requests in flight ended.
    pub drained: Duration,
    pub stop_reason: StopReason,
    pub start_time: String,
    /// The first error writing `--hdr-log`, if one was asked for.
    pub log_error: Option<crate::recorder::RecordError>,
    /// The fail-fast rule stopped the run: what went wrong and the fix, in one line.
    pub fail_fast: Option<String>,
}

/// The control thread of a run: its runtime, and the signal watcher that interrupts it.
pub(crate) struct Control {
    runtime: tokio::runtime::Runtime,
    /// Stopped by the first SIGINT/SIGTERM.
    interrupt: StopSignal,
    /// The signals taken (the first one's number is the run's).
    signals: interrupt::Shared,
    /// The run was stopped from the live view (`q`): the user's choice, not a signal.
    quit: std::cell::Cell<bool>,
    /// `--metrics-addr`: fed each level's plan and final intervals.
    metrics: Option<crate::watch::metrics::Exporter>,
    /// `--live`: the title of the terminal view, up from the first run until
    /// [`Control::close_view`] (across the levels and steps of one command).
    live_title: Option<String>,
    view: RefCell<Option<Viewing>>,
    /// The steps the view lists (title, rows), if the command runs steps.
    steps: RefCell<Option<(String, Vec<StepRow>)>>,
    /// `--server-probes`: attached, given the run's window, stopped when it ends.
    probes: RefCell<Option<crate::probe::Attached>>,
}

/// The live view on the terminal, and what it shows.
struct Viewing {
    view: LiveView,
    /// The current run's figures, and its time (elapsed, length) when last drawn.
    state: LiveState,
    elapsed: Duration,
    length: Option<Duration>,
}

impl Control {
    pub fn new() -> Result<Self, Failure> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("reqlife-control")
            .enable_all()
            .build()
            .map_err(|e| Failure::Failed(format!("cannot start the control runtime: {e}")))?;
        let interrupt = StopSignal::default();
        let signals = interrupt::Shared::default();
        runtime.block_on(interrupt::watch_signals(interrupt.clone(), signals.clone()))?;
        Ok(Control {
            runtime,
            interrupt,
            signals,
            quit: std::cell::Cell::new(false),
            metrics: None,
            live_title: None,
            view: RefCell::new(None),
            steps: RefCell::new(None),
            probes: RefCell::new(None),
        })
    }

    /// The watchers a command asks for: the terminal view (`--live`, when stdout is a
    /// terminal; `title` heads it) and the Prometheus exporter (`--metrics-addr`, listening
    /// from now on; `segment` labels its series).
    pub fn watchers(mut self, watch: &crate::cli::WatchPlan) -> Result<Self, Failure> {
        if watch.live {
            if std::io::stdout().is_terminal() {
                self.live_title = Some(watch.title.clone());
            } else {
                eprintln!("reqlife: --live needs a terminal on stdout: running without the view");
            }
        }
        if let Some(addr) = watch.metrics_addr {
            let m = crate::watch::metrics::Exporter::start(addr, watch.segment)
                .map_err(|e| Failure::Failed(format!("--metrics-addr {addr}: {e}")))?;
            if !watch.quiet {
                eprintln!(
                    "reqlife: metrics for Prometheus at http://{}/metrics",
                    m.addr()
                );
            }
            self.metrics = Some(m);
        }
        Ok(self)
    }

    /// Whether the live view shows the runs (lines on stderr would draw over it).
    pub fn viewing(&self) -> bool {
        self.live_title.is_some()
    }

    /// The steps the view lists from now on (a knee search's, a calibration's), under
    /// `title`; drawn at once if the view is up.
    pub fn show_steps(&self, title: &str, rows: Vec<StepRow>) {
        if let Some(v) = self.view.borrow_mut().as_mut() {
            v.view.set_steps(title, rows.clone());
            v.view.draw(&v.state, v.elapsed, v.length);
        }
        // For a view not up yet, and kept for the next one.
        *self.steps.borrow_mut() = Some((title.to_string(), rows));
    }

    /// Gives the terminal back (the report prints after it).
    pub fn close_view(&self) {
        self.view.borrow_mut().take();
    }

    /// The view for a run of `plan`: taken over at the first run, its figures reset.
    fn view_begin(&self, plan: &RunPlan) -> Result<(), Failure> {
        let Some(title) = &self.live_title else {
            return Ok(());
        };
        let mut slot = self.view.borrow_mut();
        match slot.as_mut() {
            Some(v) => v.state = LiveState::of(plan),
            None => {
                let mut view = LiveView::start(title.clone()).map_err(|e| {
                    Failure::Failed(format!("--live: cannot take over the terminal: {e}"))
                })?;
                if let Some((title, rows)) = self.steps.borrow().clone() {
                    view.set_steps(&title, rows);
                }
                *slot = Some(Viewing {
                    view,
                    state: LiveState::of(plan),
                    elapsed: Duration::ZERO,
                    length: None,
                });
            }
        }
        Ok(())
    }

    /// Reads the view's keys (`q` stops the run as Ctrl-C does) and draws it, `elapsed` of
    /// `length` into the run (`None`: as last drawn).
    fn view_tick(&self, time: Option<(Duration, Option<Duration>)>) {
        let mut slot = self.view.borrow_mut();
        let Some(v) = slot.as_mut() else { return };
        if v.view.keys() == Some(Key::Quit) {
            if self.signals.signal() == 0 {
                self.quit.set(true);
            }
            self.interrupt_as(libc::SIGINT);
        }
        if let Some((elapsed, length)) = time {
            (v.elapsed, v.length) = (elapsed, length);
        }
        v.view.draw(&v.state, v.elapsed, v.length);
    }

    /// Stops the run as a first `signal` would (`q` in the live view: as Ctrl-C).
    fn interrupt_as(&self, signal: i32) {
        if self.signals.signal() == 0 {
            self.signals.take(signal);
        }
        self.interrupt.stop();
    }

    /// After the run, keeps serving the metrics for `linger` (`--metrics-linger`, ended
    /// early by a signal), then stops the exporter.
    pub fn linger_metrics(&mut self, linger: Duration) {
        if let Some(m) = self.metrics.take() {
            m.end();
            if !linger.is_zero() {
                self.pause(linger);
            }
        }
    }

    /// The signal that interrupted the run, or 0.
    pub fn signal(&self) -> i32 {
        self.signals.signal()
    }

    /// Whether that "signal" was the user's `q` in the live view.
    pub fn quit(&self) -> bool {
        self.quit.get()
    }

    /// Waits until `--start-at` or the start `--coordinator` gave (`flag`, for its lines; at
    /// once if that time has passed); false if interrupted.
    pub fn wait_start(&self, start: crate::util::units::StartAt, quiet: bool, flag: &str) -> bool {
        let wait = match start {
            crate::util::units::StartAt::In(d) => d,
            crate::util::units::StartAt::At(t) => {
                match t.duration_since(std::time::SystemTime::now()) {
                    Ok(d) => d,
                    Err(late) => {
                        eprintln!(
                            "reqlife: {flag} was {:.3}s ago: starting now",
                            late.duration().as_secs_f64()
                        );
                        Duration::ZERO
                    }
                }
            }
        };
        if !quiet && !wait.is_zero() {
            eprintln!("reqlife: starting in {:.3}s ({flag})", wait.as_secs_f64());
        }
        self.pause(wait)
    }

    /// Waits `pause` between levels; false if interrupted.
    pub fn pause(&self, pause: Duration) -> bool {
        self.runtime.block_on(async {
            let end = tokio::time::sleep(pause);
            tokio::pin!(end);
            // The view's keys are read meanwhile (`q` stops the command).
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = &mut end => break true,
                    _ = self.interrupt.stopped() => break false,
                    _ = tick.tick() => self.view_tick(None),
                }
            }
        })
    }

    /// Probes on the server (`--server-probes`), attached: the next run gives them its window
    /// and stops them when it ends.
    pub fn attach_probes(&self, probes: crate::probe::Attached) {
        *self.probes.borrow_mut() = Some(probes);
    }

    /// The run has ended: what its probes measured, into `measured`; or, when the agent of
    /// another host `refused` its start, the run's failure (nothing to finish there).
    fn finish_probes(
        &self,
        refused: Option<crate::probe::ProbeError>,
        measured: &mut crate::recorder::Measured,
    ) -> Result<(), Failure> {
        let probes = self.probes.borrow_mut().take();
        if let Some(e) = refused {
            return Err(e.into());
        }
        let Some(p) = probes else { return Ok(()) };
        match p.finish() {
            Ok(mut acc) => {
                // Per request: the joined phases, their series, and the kept requests with
                // their server phases.
                if let Some(joined) = measured.joined.take() {
                    measured.exemplars = joined.kept.clone();
                    match joined.remote {
                        Some(_) => acc.use_remote_joined(*joined),
                        None => acc.use_joined(*joined),
                    }
                }
                measured.series.merge(std::mem::take(&mut acc.series));
                measured.probes = Some(acc);
            }
            Err(e) => eprintln!("reqlife: the server's phases are lost: {e}"),
        }
        Ok(())
    }

    /// Runs the workers of `plan` until the stop rule, a signal, or a threshold of
    /// `reporting`'s lost on the way ends the run, shown as `reporting` says.
    pub fn execute(
        &self,
        plan: &RunPlan,
        config: SessionConfig,
        reporting: Reporting,
    ) -> Result<Executed, Failure> {
        let start_time = now_rfc3339();
        // --live: drawn from the collector's intervals (never the workers'), on this thread.
        self.view_begin(plan)?;
        let view = self.view.borrow().is_some();
        let (mut feed, live_tx) =
            IntervalFeed::new(plan, reporting.every, reporting.abort, reporting.json, view);
        if let Some(m) = &self.metrics {
            m.begin(plan);
        }
        // --server-probes here: the kernel's events go to the run's joiner from before its
        // connections open (the probes learn them as they open).
        // On another host, the joiner pulls the kept or logged requests' events from the
        // agent (the metrics endpoint gets the agent's ticks).
        let join = self.probes.borrow().as_ref().and_then(|p| {
            let spec = p.join_spec(plan)?;
            let remote = p.puller();
            let sink = match remote {
                Some(_) => None,
                None => self.metrics.as_ref().map(|m| m.joined_sink(&spec)),
            };
            let (input, events) = crate::recorder::join::JoinInput::new(spec, sink);
            p.join(events);
            Some(match remote {
                Some((puller, offset_ns)) => input.remote(puller, offset_ns),
                None => input,
            })
        });
        let options = RunOptions {
            runtime: self.runtime.handle(),
            interrupt: &self.interrupt,
            sinks: crate::recorder::collector::Sinks {
                live: live_tx,
                log: reporting.log,
                on_interval: self.metrics.as_ref().map(|m| m.sink()),
                join,
            },
        };
        let mut observer = RunObserver::new(self, plan, &mut feed, reporting.quiet || view);
        let ran = executor::execute(plan, config, options, &mut observer)
            .map_err(|e| Failure::Failed(format!("cannot start worker threads: {e}")))?;
        let refused = observer.refused.take();
        let (mut measured, recorded) = (ran.measured, ran.recorded);
        self.finish_probes(refused, &mut measured)?;
        if let Some(m) = &self.metrics {
            // Every interval is in (the collector has ended): the load is over.
            m.end();
        }
        feed.last_lines(recorded);
        let ran = executor::Ran { measured, ..ran };
        let (stop_reason, fail_fast) = ran.ending(plan, self.signal(), feed.lost.take());
        Ok(Executed {
            stop_reason: match stop_reason {
                StopReason::Interrupted(_) if self.quit.get() => StopReason::Quit,
                r => r,
            },
            measured: ran.measured,
            recorded,
            drained: ran.drained,
            start_time,
            log_error: ran.log_error,
            fail_fast,
        })
    }
}

/// How a run is shown, and what else may end it: the command's choice.
#[derive(Default)]
pub(crate) struct Reporting<'a> {
    /// No progress bar.
    pub quiet: bool,
    /// `--every`: a line per interval of this length as the run goes.
    pub every: Option<Duration>,
    /// The `--every` lines go to stderr (stdout carries `--json` or a file).
    pub json: bool,
    /// `--abort-on-fail`: the thresholds that stop the run as soon as one fails on what was
    /// measured so far (checked as each interval closes, k6's habit).
    pub abort: &'a [crate::analysis::expr::Expr],
    /// `--hdr-log`: the intervals written as they are final.
    pub log: Option<crate::recorder::hdrlog::LogFile>,
}

impl Reporting<'_> {
    /// A step of a command that runs several plans: no bar, no lines, no thresholds.
    pub fn quiet() -> Self {
        Reporting {
            quiet: true,
            ..Reporting::default()
        }
    }
}

/// The target of a command ([`TargetChoice`](crate::cli::TargetChoice)): the user's URL, or
/// the embedded target started in-process on a free loopback port, and the URL to load (the
/// embedded target's `route`).
pub(crate) fn target(
    choice: &crate::cli::TargetChoice,
    route: &str,
) -> Result<(Option<crate::server::RunningServer>, String), Failure> {
    match choice {
        crate::cli::TargetChoice::Url(u) => Ok((None, u.clone())),
        crate::cli::TargetChoice::Embedded(config) => {
            let s = crate::server::spawn(config.clone())
                .map_err(|e| Failure::Failed(format!("cannot start the embedded target: {e}")))?;
            let url = s.url(route);
            Ok((Some(s), url))
        }
    }
}

/// One step of a command that runs several plans (knee, calibrate, compare --run): `plan`
/// executed, its record, and what was measured (to combine steps exactly).
pub(crate) fn run_plan(
    control: &Control,
    plan: &RunPlan,
    command_line: &[String],
    embedded: bool,
) -> Result<
    (
        crate::recorder::record::RunRecord,
        crate::recorder::Measured,
    ),
    Failure,
> {
    let config = SessionConfig::new(plan)?;
    let o = control.execute(plan, config, Reporting::quiet())?;
    if let Some(line) = o.fail_fast {
        return Err(Failure::FailFast(line));
    }
    let record = crate::recorder::record::RunRecord::build(
        plan,
        &o.measured,
        crate::recorder::record::Ending {
            recorded: o.recorded,
            drained: o.drained,
            stop_reason: o.stop_reason,
            interrupted: control.signal() != 0,
            start_time: o.start_time,
            command_line: command_line.to_vec(),
            embedded_target: embedded,
        },
    );
    Ok((record, o.measured))
}
