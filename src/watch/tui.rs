//! `--live`: a terminal view of the run as it goes (ratatui on crossterm), drawn from the
//! merged intervals the run's collector hands over as each is final — the same snapshots as
//! `--every` and `--metrics-addr`, never the workers. It shows the throughput and errors over
//! time, p50/p99/max of the total per interval, the phase breakdown of the last interval, the
//! schedule lag and the workers' CPU, the status codes, and the time left; for a run in
//! stages, the stages with the current one marked; for a command that runs steps (a knee
//! search, a calibration), the steps so far (rate, p99, verdict), kept across its runs.
//!
//! Keys: `q` (or Ctrl-C: raw mode turns it into a key) ends the run as Ctrl-C does; `p`
//! pauses the display only. The terminal is restored when the view is dropped, on a panic
//! (a hook), and by [`restore`] before an exit at once (a signal again, a second after the
//! first).

mod draw;

use crate::model::{ErrorKind, Phase};
use crate::plan::RunPlan;
use crate::recorder::{hist, IntervalSnapshot};
use draw::frame;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Intervals kept for the charts (older ones scroll out).
const KEPT: usize = 600;

/// One interval's figures, as drawn.
#[derive(Debug, Clone, Default)]
struct Point {
    index: u64,
    requests: u64,
    errors: u64,
    /// p50, p99, max of the total, ns.
    total: Option<(u64, u64, u64)>,
}

/// What the view knows, from the collector's snapshots alone.
#[derive(Debug, Default)]
pub struct LiveState {
    interval: Duration,
    points: BTreeMap<u64, Point>,
    /// The newest interval's phases: (phase, count, p50, p99, max).
    phases: Vec<(Phase, u64, u64, u64, u64)>,
    newest: Option<u64>,
    lag_p99: Option<u64>,
    busy: Option<f64>,
    status: BTreeMap<u16, u64>,
    errors: [u64; ErrorKind::ALL.len()],
    requests: u64,
    /// The plan's stages (label, length), empty without stages.
    stages: Vec<(String, Duration)>,
}

impl LiveState {
    /// An empty view of a run whose intervals are `interval` long.
    pub fn new(interval: Duration) -> Self {
        LiveState {
            interval,
            ..LiveState::default()
        }
    }

    /// Nothing received yet of a run of `plan` (its interval, its stages).
    pub fn of(plan: &RunPlan) -> Self {
        LiveState {
            stages: plan
                .stage_labels()
                .into_iter()
                .zip(plan.stage_durations())
                .collect(),
            ..LiveState::new(plan.interval)
        }
    }

    /// Takes one final interval (or a late part of one) from the collector.
    pub fn push(&mut self, snap: &IntervalSnapshot) {
        let c = &snap.counters;
        self.requests += c.requests;
        for (a, b) in self.errors.iter_mut().zip(c.errors.iter()) {
            *a += b;
        }
        for &(code, n) in &snap.status {
            *self.status.entry(code).or_default() += n;
        }
        let point = self.points.entry(snap.index).or_insert_with(|| Point {
            index: snap.index,
            ..Point::default()
        });
        point.requests += c.requests;
        point.errors += c.error_total();
        let newest = self.newest.is_none_or(|n| snap.index >= n);
        if newest {
            self.newest = Some(snap.index);
            self.phases.clear();
            self.busy = snap.busy_max;
            self.lag_p99 = None;
        }
        for (phase, bytes) in &snap.hists {
            let Ok(h) = hist::decode_bytes(bytes) else {
                continue;
            };
            if h.is_empty() {
                continue;
            }
            let stats = (h.value_at_quantile(0.5), h.value_at_quantile(0.99), h.max());
            if *phase == Phase::Total {
                // A late part of an interval already drawn: its own figures are kept when
                // they are worse (the view is a glance, the record is exact).
                point.total = Some(match point.total {
                    Some(t) if t.1 >= stats.1 => t,
                    _ => stats,
                });
            }
            if newest {
                if *phase == Phase::Lag {
                    self.lag_p99 = Some(stats.1);
                }
                self.phases
                    .push((*phase, h.len(), stats.0, stats.1, stats.2));
            }
        }
        while self.points.len() > KEPT {
            self.points.pop_first();
        }
    }

    fn rate(&self, n: u64) -> f64 {
        n as f64 / self.interval.as_secs_f64().max(1e-9)
    }
}

/// Whether the terminal is in the view's mode (raw, alternate screen) now.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Puts the terminal back (cooked mode, main screen, cursor shown) if the view changed it;
/// safe to call more than once, from anywhere (a panic hook, before `process::exit`).
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = terminal::disable_raw_mode();
        let _ = execute!(
            std::io::stdout(),
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
    }
}

/// One step of a command that runs several (a knee search's, a calibration's), as the view
/// lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The rate of the step (offered; achieved for a closed loop), req/s.
    pub rate_rps: f64,
    /// p99 of the total, µs (`None` while it runs).
    pub p99_us: Option<f64>,
    /// `pass`, `fail`, `running`, ...
    pub verdict: String,
}

impl StepRow {
    /// The step now running at `rate_rps`.
    pub fn running(rate_rps: f64) -> StepRow {
        StepRow {
            rate_rps,
            p99_us: None,
            verdict: "running".into(),
        }
    }
}

/// The steps shown, under their title.
#[derive(Debug, Clone, Default)]
struct Steps {
    title: String,
    rows: Vec<StepRow>,
}

/// What a frame shows beside the state: the title, the time, the steps.
struct Shown<'a> {
    title: &'a str,
    elapsed: Duration,
    length: Option<Duration>,
    steps: Option<&'a Steps>,
}

/// What a key asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// `q`, Esc or Ctrl-C: end the run as Ctrl-C does.
    Quit,
}

/// The view on the terminal (stdout); restores it when dropped.
pub struct LiveView {
    terminal: ratatui::Terminal<ratatui::backend::CrosstermBackend<std::io::Stdout>>,
    paused: bool,
    /// Whether the frame marked paused is on the screen.
    pause_drawn: bool,
    title: String,
    steps: Option<Steps>,
}

impl LiveView {
    /// Takes over the terminal on stdout (which must be one).
    pub fn start(title: String) -> std::io::Result<LiveView> {
        static HOOK: std::sync::Once = std::sync::Once::new();
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                restore();
                previous(info);
            }));
        });
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let mut out = std::io::stdout();
        if let Err(e) = execute!(out, terminal::EnterAlternateScreen, cursor::Hide) {
            restore();
            return Err(e);
        }
        let mut terminal =
            match ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(out)) {
                Ok(t) => t,
                Err(e) => {
                    restore();
                    return Err(e);
                }
            };
        // A terminal that keeps the main screen's text in the alternate one (or lines written
        // meanwhile, the run's header on stderr) would show through the cells the view leaves
        // blank: clear it once, so the first frame is drawn whole.
        if let Err(e) = terminal.clear() {
            restore();
            return Err(e);
        }
        Ok(LiveView {
            terminal,
            paused: false,
            pause_drawn: false,
            title,
            steps: None,
        })
    }

    /// Reads the keys pressed since the last call (never waits); `p` toggles the pause here.
    pub fn keys(&mut self) -> Option<Key> {
        while event::poll(Duration::ZERO).unwrap_or(false) {
            let Ok(Event::Key(k)) = event::read() else {
                continue;
            };
            if k.kind == KeyEventKind::Release {
                continue;
            }
            match k.code {
                KeyCode::Char('q') | KeyCode::Esc => return Some(Key::Quit),
                KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Some(Key::Quit)
                }
                KeyCode::Char('p') => {
                    self.paused = !self.paused;
                    self.pause_drawn = false;
                }
                _ => {}
            }
        }
        None
    }

    /// The steps to show from now on (a knee search's, a calibration's), under `title`.
    pub fn set_steps(&mut self, title: &str, rows: Vec<StepRow>) {
        self.steps = Some(Steps {
            title: title.to_string(),
            rows,
        });
    }

    /// Draws `state`, `elapsed` of `length`; paused, the screen stays as it was (marked
    /// paused once) while the run and the figures go on.
    pub fn draw(&mut self, state: &LiveState, elapsed: Duration, length: Option<Duration>) {
        if self.paused && self.pause_drawn {
            return;
        }
        self.pause_drawn = self.paused;
        let title = if self.paused {
            format!("{}   [display paused: p resumes]", self.title)
        } else {
            self.title.clone()
        };
        let shown = Shown {
            title: &title,
            elapsed,
            length,
            steps: self.steps.as_ref(),
        };
        let _ = self.terminal.draw(|f| frame(f, state, &shown));
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        let _ = self.terminal.show_cursor();
        restore();
    }
}

#[cfg(test)]
mod tests;
