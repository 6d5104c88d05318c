//! `--live`: a terminal view of the run as it goes (ratatui on crossterm), drawn from the
//! merged intervals the run's collector hands over as each is final — the same snapshots as
//! `--every` and `--metrics-addr`, never the workers. It shows the throughput and errors over
//! time, p50/p99/max of the total per interval, the phase breakdown of the last interval, the
//! schedule lag and the workers' CPU, the status codes, and the time left.
//!
//! Keys: `q` (or Ctrl-C: raw mode turns it into a key) ends the run as Ctrl-C does; `p`
//! pauses the display only. The terminal is restored when the view is dropped, on a panic
//! (a hook), and by [`restore`] before an exit at once (a second signal).

use crate::model::{ErrorKind, Phase};
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
}

impl LiveState {
    pub fn new(interval: Duration) -> Self {
        LiveState {
            interval,
            ..LiveState::default()
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
        let _ = self
            .terminal
            .draw(|f| frame(f, state, &title, elapsed, length));
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

fn frame(
    f: &mut ratatui::Frame,
    s: &LiveState,
    title: &str,
    elapsed: Duration,
    length: Option<Duration>,
) {
    let [head, charts, bottom] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Percentage(50),
        Constraint::Min(6),
    ])
    .areas(f.area());
    let time = match length {
        Some(l) => format!(
            "{:.0}s of {:.0}s, {:.0}s left",
            elapsed.as_secs_f64(),
            l.as_secs_f64(),
            l.saturating_sub(elapsed).as_secs_f64()
        ),
        None => format!("{:.0}s", elapsed.as_secs_f64()),
    };
    let errors: u64 = s.errors.iter().sum();
    let head_text = vec![
        Line::from(vec![
            Span::styled(title, Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(format!(
                "   {time}   {} requests, {errors} errors",
                s.requests
            )),
        ]),
        Line::from(Span::styled(
            "q: stop the run (report and record as for Ctrl-C)   p: pause the display",
            Style::default().fg(Color::DarkGray),
        )),
    ];
    f.render_widget(
        Paragraph::new(head_text).block(Block::bordered().title(" reqlife --live ")),
        head,
    );
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
    let top = rate
        .iter()
        .chain(errs.iter())
        .map(|p| p.1)
        .fold(1.0, f64::max);
    let x_axis = |x0: f64, x1: f64| {
        Axis::default()
            .bounds([x0, x1])
            .labels([format!("{x0:.0}s"), format!("{x1:.0}s")])
    };
    f.render_widget(
        Chart::new(vec![
            Dataset::default()
                .name("req/s")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Cyan))
                .data(&rate),
            Dataset::default()
                .name("errors/s")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Red))
                .data(&errs),
        ])
        .block(Block::bordered().title(" throughput and errors per interval "))
        .x_axis(x_axis(x0, x1))
        .y_axis(
            Axis::default()
                .bounds([0.0, top * 1.1])
                .labels(["0".to_string(), format!("{:.0}", top * 1.1)]),
        ),
        left,
    );
    let lat = |pick: fn((u64, u64, u64)) -> u64| -> Vec<(f64, f64)> {
        s.points
            .values()
            .filter_map(|p| p.total.map(|t| (secs(p.index), ms(pick(t)))))
            .collect()
    };
    let (p50, p99, max) = (lat(|t| t.0), lat(|t| t.1), lat(|t| t.2));
    let ltop = max.iter().map(|p| p.1).fold(0.001, f64::max);
    f.render_widget(
        Chart::new(vec![
            Dataset::default()
                .name("p50")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Green))
                .data(&p50),
            Dataset::default()
                .name("p99")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Yellow))
                .data(&p99),
            Dataset::default()
                .name("max")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(Color::Red))
                .data(&max),
        ])
        .block(Block::bordered().title(" total latency per interval (ms) "))
        .x_axis(x_axis(x0, x1))
        .y_axis(
            Axis::default()
                .bounds([0.0, ltop * 1.1])
                .labels(["0".to_string(), format!("{:.2}", ltop * 1.1)]),
        ),
        right,
    );
    let [phases, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
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
    let last = s
        .newest
        .map(|i| format!(" phases of the last interval ({:.0}s) ", secs(i)))
        .unwrap_or_else(|| " phases of the last interval ".into());
    f.render_widget(
        Table::new(
            rows,
            [
                Constraint::Length(13),
                Constraint::Length(8),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(10),
            ],
        )
        .header(
            Row::new(["phase", "count", "p50", "p99", "max"])
                .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::bordered().title(last)),
        phases,
    );
    let mut lines = vec![
        Line::from(format!(
            "schedule lag p99  {}",
            s.lag_p99
                .map(|ns| human_ns(ns as f64))
                .unwrap_or_else(|| "-".into())
        )),
        Line::from(format!(
            "workers' CPU      {}",
            s.busy
                .map(|b| format!("{:.0}% (busiest)", b * 100.0))
                .unwrap_or_else(|| "-".into())
        )),
        Line::from(""),
    ];
    let codes: Vec<String> = s.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    lines.push(Line::from(format!(
        "status  {}",
        if codes.is_empty() {
            "-".to_string()
        } else {
            codes.join("  ")
        }
    )));
    for kind in ErrorKind::ALL {
        let n = s.errors[kind.index()];
        if n > 0 {
            lines.push(Line::from(Span::styled(
                format!("error {}: {n}", kind.name()),
                Style::default().fg(Color::Red),
            )));
        }
    }
    f.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" generator and answers ")),
        side,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{Counters, PhaseHists};

    #[test]
    fn a_frame_draws_the_figures_of_the_snapshots() {
        let mut h = PhaseHists::new(hist::new_interval_hist);
        for v in [1_000_000u64, 2_000_000, 30_000_000] {
            hist::record(&mut h.0[Phase::Total.index()], v);
            hist::record(&mut h.0[Phase::Wait.index()], v / 2);
        }
        let counters = Counters {
            requests: 3,
            ok: 3,
            ..Counters::default()
        };
        let mut snap = crate::recorder::snapshot(0, counters, &h, Vec::new());
        snap.status = vec![(200, 3)];
        snap.busy_max = Some(0.25);
        let mut s = LiveState::new(Duration::from_secs(1));
        s.push(&snap);
        let backend = ratatui::backend::TestBackend::new(120, 40);
        let mut t = ratatui::Terminal::new(backend).unwrap();
        t.draw(|f| {
            frame(
                f,
                &s,
                "GET http://x/",
                Duration::from_secs(1),
                Some(Duration::from_secs(10)),
            )
        })
        .unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        for want in [
            "9s left",
            "3 requests",
            "200: 3",
            "25% (busiest)",
            "wait",
            "total",
        ] {
            assert!(text.contains(want), "{want} not in the frame");
        }
    }
}
