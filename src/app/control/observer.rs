//! What watches one run for the [`Control`] as the executor calls it ([`RunObserver`]): the
//! probes given the run's window, the progress bar, the live view and the feed of the closed
//! intervals (`--every`, `--abort-on-fail`, `--until`).

use super::Control;
use crate::app::intervals::IntervalFeed;
use crate::app::reach::Reach;
use crate::load::executor;
use crate::load::Progress;
use crate::model::StopRule;
use crate::plan::RunPlan;
use std::io::IsTerminal;
use std::time::Instant;

/// What observes one run for the control, as the executor calls it: the probes given the
/// window, the progress bar, the view and the feed of the closed intervals.
pub(super) struct RunObserver<'a, 'w> {
    control: &'a Control,
    plan: &'a RunPlan,
    feed: &'a mut IntervalFeed<'w>,
    /// No progress bar (`--quiet`, or the view shows the run).
    quiet: bool,
    bar: Option<indicatif::ProgressBar>,
    /// An open loop's rate out of reach, said once the first second shows it.
    reach: Reach,
    /// Why the probes' agent of another host refused the run's start (another run open
    /// there): the run stops, and fails with it.
    pub(super) refused: Option<crate::probe::ProbeError>,
}

impl<'a, 'w> RunObserver<'a, 'w> {
    /// The observer of `plan`'s run for `control`, its closed intervals to `feed`; `quiet`:
    /// no progress bar.
    pub(super) fn new(
        control: &'a Control,
        plan: &'a RunPlan,
        feed: &'a mut IntervalFeed<'w>,
        quiet: bool,
    ) -> Self {
        RunObserver {
            control,
            plan,
            feed,
            quiet,
            bar: None,
            reach: Reach::new(plan),
            refused: None,
        }
    }
}

impl executor::Observer for RunObserver<'_, '_> {
    fn opened(&mut self, window: &executor::Window) {
        let control = self.control;
        if let Some(p) = control.probes.borrow_mut().as_mut() {
            // The agent's phases go to the metrics endpoint by tick; a run here's by its
            // joiner.
            let sink = match p {
                crate::probe::Attached::There(_) => {
                    control.metrics.as_ref().map(|m| m.probe_sink())
                }
                crate::probe::Attached::Here(_) => None,
            };
            if let Err(e) = p.begin(window.from, self.plan.interval, sink) {
                self.refused = Some(e);
            }
        }
        self.bar = progress_bar(self.plan, self.quiet);
    }

    /// The progress bar, the intervals closed since (to the view, `--every`,
    /// `--abort-on-fail` and `--until`), the view drawn. Stops when a threshold was lost; has
    /// enough once `--until`'s percentiles are that precise.
    fn tick(&mut self, window: &executor::Window, progress: &Progress) -> executor::Tick {
        let (plan, control) = (self.plan, self.control);
        if self.refused.is_some() {
            return executor::Tick::Stop;
        }
        update_bar(&self.bar, progress, plan.stop, window.from);
        let new_snapshots = self.feed.take(|snap| {
            if let Some(v) = control.view.borrow_mut().as_mut() {
                v.state.push(snap);
            }
        });
        let elapsed = window.elapsed();
        let length = match plan.stop {
            StopRule::Duration(d) => Some(d),
            StopRule::Requests(_) => None,
        };
        control.view_tick(Some((elapsed, length)));
        self.feed.print_lines(&self.bar, elapsed);
        if let Some(line) = self.reach.check(elapsed, progress).filter(|_| !self.quiet) {
            match &self.bar {
                Some(bar) => bar.println(line),
                None => eprintln!("{line}"),
            }
        }
        match new_snapshots {
            true if self.feed.lost_threshold() => executor::Tick::Stop,
            true if self.feed.precise() => executor::Tick::Enough,
            _ => executor::Tick::Go,
        }
    }

    /// The view's keys are read meanwhile.
    fn draining(&mut self) {
        self.control.view_tick(None);
    }

    fn stopped(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn progress_bar(plan: &RunPlan, quiet: bool) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, template) = match plan.stop {
        StopRule::Duration(d) => (
            d.as_secs().max(1),
            "{elapsed_precise} [{wide_bar}] {pos}/{len}s {msg}",
        ),
        StopRule::Requests(n) => (n, "{elapsed_precise} [{wide_bar}] {pos}/{len} {msg}"),
    };
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_length(len);
    Some(bar)
}

fn update_bar(
    bar: &Option<indicatif::ProgressBar>,
    progress: &Progress,
    stop: StopRule,
    record_from: Instant,
) {
    let Some(bar) = bar else { return };
    let (requests, errors) = progress.totals();
    let elapsed = Instant::now().saturating_duration_since(record_from);
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        requests as f64 / secs
    } else {
        0.0
    };
    bar.set_position(match stop {
        StopRule::Duration(_) => elapsed.as_secs(),
        StopRule::Requests(_) => requests,
    });
    bar.set_message(format!(
        "{rate:.0} req/s, {}",
        crate::util::units::counted(errors, "error")
    ));
}
