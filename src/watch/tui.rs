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

use crate::model::{ErrorKind, Phase};
use crate::plan::RunPlan;
use crate::recorder::{hist, IntervalSnapshot};
use crate::util::units::human_ns;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::{cursor, execute, terminal};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table};
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

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn frame(f: &mut ratatui::Frame, s: &LiveState, v: &Shown) {
    let [head, charts, bottom] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Percentage(50),
        Constraint::Min(6),
    ])
    .areas(f.area());
    f.render_widget(head_of(s, v), head);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(charts);
    let secs = |i: u64| s.interval.as_secs_f64() * (i as f64 + 1.0);
    let rate: Vec<(f64, f64)> = s
        .points
        .values()
        .map(|p| (secs(p.index), s.rate(p.requests)))
        .collect();
    let errs: Vec<(f64, f64)> = s
        .points
        .values()
        .map(|p| (secs(p.index), s.rate(p.errors)))
        .collect();
    let x0 = rate.first().map_or(0.0, |p| p.0 - s.interval.as_secs_f64());
    let x1 = rate.last().map_or(1.0, |p| p.0).max(x0 + 1.0);
    let lat = |pick: fn((u64, u64, u64)) -> u64| -> Vec<(f64, f64)> {
        s.points
            .values()
            .filter_map(|p| p.total.map(|t| (secs(p.index), ms(pick(t)))))
            .collect()
    };
    let (p50, p99, max) = (lat(|t| t.0), lat(|t| t.1), lat(|t| t.2));
    let x = [x0, x1];
    let throughput = [
        ("req/s", Color::Cyan, &rate[..]),
        ("errors/s", Color::Red, &errs[..]),
    ];
    let title = " throughput and errors per interval ";
    f.render_widget(chart(title, x, &throughput, 1.0, 0), left);
    let latency = [
        ("p50", Color::Green, &p50[..]),
        ("p99", Color::Yellow, &p99[..]),
        ("max", Color::Red, &max[..]),
    ];
    let title = " total latency per interval (ms) ";
    f.render_widget(chart(title, x, &latency, 0.001, 2), right);
    let [phases, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
    let last = s
        .newest
        .map(|i| format!(" phases of the last interval ({:.0}s) ", secs(i)))
        .unwrap_or_else(|| " phases of the last interval ".into());
    f.render_widget(phase_table(s).block(Block::bordered().title(last)), phases);
    let lines = generator_lines(s);
    let height = lines.len() as u16 + 2;
    let answers = Paragraph::new(lines).block(Block::bordered().title(" generator and answers "));
    // The generator's lines first; the steps or stages below, as many as fit.
    let [top, below] =
        Layout::vertical([Constraint::Length(height), Constraint::Min(3)]).areas(side);
    match context(s, v, below.height.saturating_sub(2) as usize) {
        Some((title, lines)) => {
            f.render_widget(answers, top);
            let block = Block::bordered().title(title);
            f.render_widget(Paragraph::new(lines).block(block), below);
        }
        None => f.render_widget(answers, side),
    }
}

/// The head: the title, the time (and what is left), the requests and errors so far.
fn head_of<'a>(s: &LiveState, v: &Shown<'a>) -> Paragraph<'a> {
    let time = match v.length {
        Some(l) => format!(
            "{:.0}s of {:.0}s, {:.0}s left",
            v.elapsed.as_secs_f64(),
            l.as_secs_f64(),
            l.saturating_sub(v.elapsed).as_secs_f64()
        ),
        None => format!("{:.0}s", v.elapsed.as_secs_f64()),
    };
    let errors: u64 = s.errors.iter().sum();
    let head_text = vec![
        Line::from(vec![
            Span::styled(v.title, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "   {time}   {}, {}",
                crate::util::units::counted(s.requests, "request"),
                crate::util::units::counted(errors, "error")
            )),
        ]),
        Line::from(Span::styled(
            "q: stop the run (report and record as for Ctrl-C)   p: pause the display",
            Style::default().fg(Color::DarkGray),
        )),
    ];
    Paragraph::new(head_text).block(Block::bordered().title(" reqlife --live "))
}

/// A line of a chart: its name, colour and points (seconds, value).
type Curve<'a> = (&'a str, Color, &'a [(f64, f64)]);

/// A chart of `lines` (name, colour, points) over `x` seconds, from 0 to a tenth above the
/// highest point (at least `floor`), its top labelled with `decimals`.
fn chart<'a>(
    title: &'a str,
    x: [f64; 2],
    lines: &[Curve<'a>],
    floor: f64,
    decimals: usize,
) -> Chart<'a> {
    let top = lines
        .iter()
        .flat_map(|l| l.2.iter().map(|p| p.1))
        .fold(floor, f64::max)
        * 1.1;
    let sets = lines
        .iter()
        .map(|(name, color, data)| {
            Dataset::default()
                .name(*name)
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(*color))
                .data(data)
        })
        .collect();
    Chart::new(sets)
        .block(Block::bordered().title(title))
        .x_axis(
            Axis::default()
                .bounds(x)
                .labels([format!("{:.0}s", x[0]), format!("{:.0}s", x[1])]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), format!("{top:.decimals$}")]),
        )
}

/// The phases of the newest interval: count, p50, p99, max.
fn phase_table(s: &LiveState) -> Table<'static> {
    let rows: Vec<Row> = s
        .phases
        .iter()
        .map(|(p, n, p50, p99, max)| {
            Row::new(vec![
                p.name().to_string(),
                n.to_string(),
                human_ns(*p50 as f64),
                human_ns(*p99 as f64),
                human_ns(*max as f64),
            ])
        })
        .collect();
    let widths = [13, 8, 10, 10, 10].map(Constraint::Length);
    Table::new(rows, widths).header(
        Row::new(["phase", "count", "p50", "p99", "max"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
}

/// The generator's health (schedule lag, CPU) and the answers (status codes, errors).
fn generator_lines(s: &LiveState) -> Vec<Line<'static>> {
    let or_dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let codes: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    let mut lines = vec![
        Line::from(format!(
            "schedule lag p99  {}",
            or_dash(s.lag_p99.map(|ns| human_ns(ns as f64)))
        )),
        Line::from(format!(
            "workers' CPU      {}",
            or_dash(s.busy.map(|b| format!("{:.0}% (busiest)", b * 100.0)))
        )),
        Line::from(""),
        Line::from(format!(
            "status  {}",
            or_dash((!codes.is_empty()).then(|| codes.join("  ")))
        )),
    ];
    for kind in ErrorKind::ALL {
        let n = s.errors[kind.index()];
        if n > 0 {
            lines.push(Line::from(Span::styled(
                format!("error {}: {n}", kind.name()),
                Style::default().fg(Color::Red),
            )));
        }
    }
    lines
}

/// The steps so far (a knee search's, a calibration's: the last ones, under a header) or the
/// stages (from the one before the current, marked): the panel's title and at most `room`
/// lines; `None` when there is neither.
fn context(s: &LiveState, v: &Shown, room: usize) -> Option<(String, Vec<Line<'static>>)> {
    if let Some(steps) = v.steps {
        let header = Line::from(Span::styled(
            format!("{:>4} {:>10} {:>10}  verdict", "step", "req/s", "p99"),
            Style::default().add_modifier(Modifier::BOLD),
        ));
        let skip = steps.rows.len().saturating_sub(room.saturating_sub(1));
        let rows = steps.rows.iter().enumerate().skip(skip).map(|(i, r)| {
            let p99 = r.p99_us.map_or("-".into(), |us| human_ns(us * 1e3));
            let style = match r.verdict.as_str() {
                "pass" | "kept up" => Style::default().fg(Color::Green),
                "running" => Style::default().add_modifier(Modifier::BOLD),
                _ => Style::default().fg(Color::Red),
            };
            let text = format!("{:>4} {:>10.0} {p99:>10}  {}", i + 1, r.rate_rps, r.verdict);
            Line::from(Span::styled(text, style))
        });
        return Some((
            steps.title.clone(),
            std::iter::once(header).chain(rows).collect(),
        ));
    }
    let n = s.stages.len();
    let ends: Vec<Duration> = s
        .stages
        .iter()
        .scan(Duration::ZERO, |end, (_, d)| {
            *end += *d;
            Some(*end)
        })
        .collect();
    let now = ends
        .iter()
        .position(|e| v.elapsed < *e)
        .unwrap_or(n.checked_sub(1)?);
    let lines = s
        .stages
        .iter()
        .zip(&ends)
        .enumerate()
        .skip(now.saturating_sub(1));
    let lines = lines.take(room).map(|(i, ((label, length), end))| {
        let line = format!("{}/{n}  {label}  ({:.0}s)", i + 1, length.as_secs_f64());
        if i != now {
            return Line::from(format!("  {line}"));
        }
        let left = end.saturating_sub(v.elapsed).as_secs_f64();
        let bold = Style::default().add_modifier(Modifier::BOLD);
        Line::from(Span::styled(format!("> {line}: {left:.0}s left"), bold))
    });
    Some((" stages ".into(), lines.collect()))
}

#[cfg(test)]
mod tests;
