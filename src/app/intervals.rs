//! The feed of one run's closed intervals from the collector's channel, and what reads it:
//! `--every`'s lines, `--abort-on-fail`'s thresholds on what was measured so far, and `--until`'s
//! precision.

use super::out;
use crate::plan::RunPlan;
use crate::watch::live::LivePrinter;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The feed of one run's closed intervals and what reads it: `--every` lines, `--abort-on-fail`'s
/// thresholds on what was measured so far (and the one lost, if one was), fed from the
/// collector's channel.
pub(super) struct IntervalFeed<'a> {
    live: Option<LivePrinter>,
    /// How far the collector's intervals are final, as it says, and as read before the
    /// channel's snapshots were last taken: the `--every` lines print up to there.
    final_below: Arc<AtomicU64>,
    final_seen: u64,
    partial: Option<crate::analysis::expr::PartialRun>,
    /// `--until`: how precise the run is so far.
    precise: Option<super::until::Precise>,
    rx: Option<std::sync::mpsc::Receiver<crate::recorder::IntervalSnapshot>>,
    abort: &'a [crate::analysis::expr::Expr],
    /// `--every` lines go to stderr (stdout carries `--json` or a file).
    json: bool,
    /// The threshold that stopped the run, as `EXPR (measured V)`.
    pub(super) lost: Option<String>,
}

impl<'a> IntervalFeed<'a> {
    /// The feed of a run of `plan`, and the sender the collector feeds it by (none when
    /// nothing reads it: not `--every`, `--abort-on-fail` or the view).
    pub(super) fn new(
        plan: &RunPlan,
        every: Option<Duration>,
        abort: &'a [crate::analysis::expr::Expr],
        json: bool,
        view: bool,
    ) -> (Self, Option<crate::recorder::collector::Live>) {
        let live = every.map(|_| LivePrinter::new(plan.interval, &plan.server_total));
        let partial =
            (!abort.is_empty()).then(|| crate::analysis::expr::PartialRun::new(plan.interval));
        let precise = super::until::Precise::new(&plan.until);
        let final_below = Arc::new(AtomicU64::new(0));
        let (tx, rx) = if live.is_some() || partial.is_some() || precise.is_some() || view {
            let (tx, rx) = std::sync::mpsc::channel();
            let tx = crate::recorder::collector::Live {
                tx,
                final_below: final_below.clone(),
            };
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let feed = IntervalFeed {
            live,
            final_below,
            final_seen: 0,
            partial,
            precise,
            rx,
            abort,
            json,
            lost: None,
        };
        (feed, tx)
    }

    /// Takes the intervals closed since the last call, each shown to `view` too; whether
    /// there were any.
    pub(super) fn take(
        &mut self,
        mut view: impl FnMut(&crate::recorder::IntervalSnapshot),
    ) -> bool {
        // Read before the channel: every snapshot of an interval below it is in there now.
        self.final_seen = self.final_below.load(Ordering::Acquire);
        let mut any = false;
        while let Some(snap) = self.rx.as_ref().and_then(|rx| rx.try_recv().ok()) {
            any = true;
            if let Some(p) = &mut self.partial {
                p.add(&snap);
            }
            if let Some(p) = &mut self.precise {
                p.add(&snap);
            }
            view(&snap);
            if let Some(live) = &mut self.live {
                live.push(snap);
            }
        }
        any
    }

    /// Prints the `--every` lines due `elapsed` into the run.
    pub(super) fn print_lines(&mut self, bar: &Option<indicatif::ProgressBar>, elapsed: Duration) {
        if let Some(live) = &mut self.live {
            print_live(bar, &live.lines(elapsed, self.final_seen), self.json);
        }
    }

    /// Whether one of the `--abort-on-fail` thresholds fails on what was measured so far
    /// (one with no data yet does not); the one that failed is kept in `lost`.
    pub(super) fn lost_threshold(&mut self) -> bool {
        let Some(p) = &self.partial else { return false };
        let failed = self
            .abort
            .iter()
            .map(|e| e.check(p))
            .find(|c| !c.pass && c.measured.is_some());
        if let Some(c) = failed {
            let v = c.measured.map(|v| c.expr.show(v)).unwrap_or_default();
            self.lost = Some(format!("{} (measured {v})", c.expr));
        }
        self.lost.is_some()
    }

    /// Whether every `--until` target is met on what was measured so far (never without
    /// `--until`).
    pub(super) fn precise(&mut self) -> bool {
        self.precise.as_mut().is_some_and(|p| p.check())
    }

    /// The last `--every` lines, with the intervals that closed as the run ended.
    pub(super) fn last_lines(&mut self, recorded: Duration) {
        self.take(|_| {});
        if let Some(live) = &mut self.live {
            print_live(&None, &live.last_lines(recorded), self.json);
        }
    }
}

/// Prints `--every` lines: on stdout, or on stderr when stdout carries `--json`; above the
/// progress bar if there is one.
fn print_live(bar: &Option<indicatif::ProgressBar>, lines: &str, json: bool) {
    if lines.is_empty() {
        return;
    }
    let lines = lines.trim_end_matches('\n');
    match (bar, json) {
        (Some(bar), _) => bar.println(lines),
        (None, true) => eprintln!("{lines}"),
        (None, false) => out(&format!("{lines}\n")),
    }
}
