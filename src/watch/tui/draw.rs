//! One frame of the live view drawn from its [`LiveState`] and what is shown ([`Shown`]): the
//! head line, the throughput and latency charts, the phase breakdown, the generator's health,
//! and the context (the stages or the steps so far).

use super::{LiveState, Shown};
use crate::model::ErrorKind;
use crate::util::units::human_ns;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table};
use std::time::Duration;

/// Nanoseconds as milliseconds.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Draws the view of `s` as `v` says into `f`.
pub(super) fn frame(f: &mut ratatui::Frame, s: &LiveState, v: &Shown) {
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
