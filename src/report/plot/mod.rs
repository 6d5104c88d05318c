//! The HTML report's plots: one module per kind, each a pure function from plain data (no
//! RunRecord) to an SVG string drawn by plotters' SVG backend. No font is loaded: plotters is
//! built without `ttf`/`ab_glyph`, lays text out with its own estimate and writes `<text>`
//! elements that the browser sets in its own sans-serif.
//!
//! Colours read on a light and on a dark page: axes, text and markers are drawn in pure black
//! and written as `currentColor` (they take the page's text colour, black when printed), no
//! background is painted, and the series use mid-tone colours ([`PALETTE`]) whose contrast
//! holds on white and on near-black. Legends go in a row under the plot, never over data.

pub mod boxes;
pub mod breakdown;
pub mod histogram;
pub mod knee;
pub mod latency_time;
pub mod spectrum;
pub mod throughput;

use plotters::coord::Shift;
use plotters::prelude::*;
use std::error::Error;

/// The font family of every text (the browser's own).
pub(crate) const FONT: &str = "sans-serif";
/// Axis, tick and legend text size, in plotters' unit (it writes size / 1.24 px: 13 px).
pub(crate) const LABEL_PX: u32 = 16;
/// Axis description size (14 px).
pub(crate) const DESC_PX: u32 = 17;
/// Foreground (axes, text, markers): written as `currentColor`.
pub(crate) const FG: RGBColor = RGBColor(0, 0, 0);

/// Series colours, in order of use: mid tones that keep their contrast on white and on
/// near-black (lightness about 55-70%).
pub const PALETTE: [RGBColor; 9] = [
    RGBColor(0x4C, 0x9B, 0xE8), // blue
    RGBColor(0xE8, 0x91, 0x2D), // orange
    RGBColor(0x3D, 0xAA, 0x6D), // green
    RGBColor(0xA7, 0x7B, 0xD8), // purple
    RGBColor(0xD4, 0xB5, 0x2B), // yellow
    RGBColor(0x2B, 0xB3, 0xB8), // teal
    RGBColor(0xE0, 0x6F, 0xA8), // pink
    RGBColor(0x9C, 0x8A, 0x6E), // brown
    RGBColor(0x8C, 0x8C, 0x8C), // grey
];
/// Errors and failures.
pub const RED: RGBColor = RGBColor(0xE0, 0x53, 0x4A);

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A latency unit for an axis: nanoseconds per unit and its symbol.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    /// Nanoseconds per unit.
    pub ns: f64,
    /// The unit's symbol (`ms`, `µs`).
    pub symbol: &'static str,
}

/// The unit in which `max_ns` reads best: ns below 1 µs, µs below 1 ms, ms below 1 s, else s.
pub fn latency_unit(max_ns: f64) -> Unit {
    let (ns, symbol) = if max_ns < 1e3 {
        (1.0, "ns")
    } else if max_ns < 1e6 {
        (1e3, "µs")
    } else if max_ns < 1e9 {
        (1e6, "ms")
    } else {
        (1e9, "s")
    };
    Unit { ns, symbol }
}

/// A latency axis for values from `lo` to `hi` ns: its unit, and a log₁₀ scale when they are
/// more than two decades apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct LatencyScale {
    pub unit: Unit,
    pub log: bool,
}

impl LatencyScale {
    pub fn of(lo: f64, hi: f64) -> Self {
        LatencyScale {
            unit: latency_unit(hi),
            log: lo > 0.0 && hi / lo > 100.0,
        }
    }

    /// A value's place on the axis: in the unit, or its log₁₀.
    pub fn y(&self, ns: f64) -> f64 {
        let v = ns / self.unit.ns;
        if self.log {
            v.max(1e-9).log10()
        } else {
            v
        }
    }

    /// The axis range for values from `lo` to `hi` ns (whole decades on a log scale; from 0
    /// with a margin on a linear one).
    pub fn range(&self, lo: f64, hi: f64) -> (f64, f64) {
        if self.log {
            (
                (lo / self.unit.ns).log10().floor(),
                (hi / self.unit.ns).log10().ceil(),
            )
        } else {
            (0.0, upper(hi / self.unit.ns))
        }
    }
}

impl LatencyScale {
    /// The ticks of the axis over `range` (its own coordinates, from [`LatencyScale::range`])
    /// `px` pixels long, spaced at least `min_px` apart: powers of ten (with 2 and 5 between
    /// them when there is room) on a log scale, multiples of a 1-2-5 step on a linear one.
    pub fn ticks(&self, range: (f64, f64), px: f64, min_px: f64) -> Vec<f64> {
        if self.log {
            log_ticks(range.0, range.1, px, min_px)
        } else {
            linear_ticks(range.0, range.1, px, &|_| min_px)
        }
    }

    /// A tick's label: the value in the unit, short (`1`, `20`, `0.5`, `1k`).
    pub fn label(&self, v: f64) -> String {
        if self.log {
            short(10f64.powf(v))
        } else {
            short(v)
        }
    }
}

/// The 1-2-5 series (… 0.5, 1, 2, 5, 10, 20 …): its first value at least `v`.
pub(crate) fn nice_step(v: f64) -> f64 {
    if !(v.is_finite() && v > 0.0) {
        return 1.0;
    }
    let decade = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|s| *s >= v * (1.0 - 1e-9))
        .unwrap_or(10.0 * decade)
}

/// The multiples of `step` from `lo` to `hi`.
fn multiples(lo: f64, hi: f64, step: f64) -> Vec<f64> {
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// Linear ticks from `lo` to `hi` on an axis `px` pixels long: multiples of the finest 1-2-5
/// step whose neighbours stay at least `room(v)` pixels apart (the width of a label, and a
/// gap, on an x axis; a line of text on a y axis). Labels never overlap by construction.
pub(crate) fn linear_ticks(lo: f64, hi: f64, px: f64, room: &dyn Fn(f64) -> f64) -> Vec<f64> {
    if !(hi - lo).is_finite() || hi <= lo || px.is_nan() || px <= 0.0 {
        return vec![lo];
    }
    let mut step = nice_step((hi - lo) / 50.0);
    loop {
        let ticks = multiples(lo, hi, step);
        let spacing = px * step / (hi - lo);
        let needed = ticks.iter().map(|v| room(*v)).fold(0.0, f64::max);
        if spacing >= needed || ticks.len() <= 2 {
            return ticks;
        }
        step = nice_step(step * 1.5);
    }
}

/// Ticks of a log₁₀ axis from 10^`lo` to 10^`hi` (in exponents, whole decades), `px` pixels
/// long, at least `min_px` apart: 1, 2 and 5 of every decade when they fit, else every
/// decade, else every other one (or fewer), always powers of ten.
pub(crate) fn log_ticks(lo: f64, hi: f64, px: f64, min_px: f64) -> Vec<f64> {
    let (lo, hi) = (lo.floor() as i64, hi.ceil() as i64);
    let decades = (hi - lo).max(1) as f64;
    let per_decade = px / decades;
    // The closest neighbours of 1-2-5 are 1 and 2 (and 5 and 10): log₁₀ 2 of a decade apart.
    if per_decade * 2f64.log10() >= min_px {
        let mut ticks = Vec::new();
        for k in lo..hi {
            let k = k as f64;
            ticks.extend([k, k + 2f64.log10(), k + 5f64.log10()]);
        }
        ticks.push(hi as f64);
        return ticks;
    }
    let every = ((min_px / per_decade).ceil() as i64).max(1);
    (lo..=hi)
        .filter(|k| (k - lo) % every == 0)
        .map(|k| k as f64)
        .collect()
}

/// A tick's label, short: `0.5`, `20`, `250`, `2.5k`, `1M` (no more than three decimals, none
/// that are zeros).
pub(crate) fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", tick(v / 1e6, 3))
    } else if a >= 1e3 {
        format!("{}k", tick(v / 1e3, 3))
    } else if a >= 1e-3 || a == 0.0 {
        tick(v, 3)
    } else {
        format!("{v:e}")
    }
}

/// The width of a tick label in px as the browser sets it: about 0.6 em per character of
/// 13 px, and a gap of 14 px to the next.
pub(crate) fn label_room(text: &str) -> f64 {
    text.chars().count() as f64 * LABEL_PX as f64 / 1.24 * 0.6 + 14.0
}

/// The room a y tick label needs: a line of text and a gap.
pub(crate) const Y_LABEL_ROOM_PX: f64 = 34.0;

/// A tick label: the value with no more decimals than it needs (up to `decimals`).
pub(crate) fn tick(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A duration in nanoseconds in its own unit, short: `850ns`, `1.25ms`.
pub(crate) fn human(ns: f64) -> String {
    let u = latency_unit(ns);
    format!("{}{}", tick(ns / u.ns, 2), u.symbol)
}

/// The upper end of an axis that starts at zero: `max` plus a margin, never empty.
pub(crate) fn upper(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.08
    } else {
        1.0
    }
}

/// The end of a time axis that starts at zero: the last time itself, never an empty axis.
pub(crate) fn time_end(last_s: f64) -> f64 {
    if last_s.is_finite() && last_s > 0.0 {
        last_s
    } else {
        1.0
    }
}

pub(crate) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A continuous axis whose ticks are chosen here ([`linear_ticks`], [`LatencyScale::ticks`]):
/// plotters' own choice puts 3.162 on a log axis and lets labels touch on a narrow one.
pub(crate) struct Ticked {
    range: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

/// The axis over `range` with labels at `ticks`.
pub(crate) fn ticked(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Ticked {
    Ticked {
        range: range.into(),
        ticks,
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// The size in px (width, height) of the plotting area that a chart with `margin` and label
/// areas of `x_label` (under it) and `y_label` (left of it) px leaves in `area`.
pub(crate) fn plot_px(area: &Area<'_>, margin: u32, x_label: u32, y_label: u32) -> (f64, f64) {
    let (w, h) = area.dim_in_pixel();
    (
        (w as f64 - 2.0 * margin as f64 - y_label as f64).max(1.0),
        (h as f64 - 2.0 * margin as f64 - x_label as f64).max(1.0),
    )
}
/// A chart with two continuous axes.
pub(crate) type XyChart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;
pub(crate) type DrawResult = Result<(), Box<dyn Error>>;

/// Draws a plot of `size` px with `draw` and returns its SVG, with the colours made
/// light/dark friendly and `label` as its accessible name. A drawing error (none is expected
/// from an in-memory SVG) gives a small SVG that says so instead of a panic.
pub(crate) fn render(
    size: (u32, u32),
    label: &str,
    draw: impl for<'a> FnOnce(&Area<'a>) -> DrawResult,
) -> String {
    let mut svg = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = draw(&root);
        let presented = root.present().map_err(|e| Box::new(e) as Box<dyn Error>);
        drawn.and(presented)
    };
    match result {
        Ok(()) => finish(&svg, label),
        Err(e) => failed(size, label, &e.to_string()),
    }
}

/// Escapes text for XML content and attributes.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Makes plotters' SVG themeable: black becomes `currentColor`, and the root gets a class,
/// a role and a name.
fn finish(svg: &str, label: &str) -> String {
    let svg = svg.replace("\"#000000\"", "\"currentColor\"");
    svg.replacen(
        "<svg ",
        &format!(
            "<svg class=\"plot\" role=\"img\" aria-label=\"{}\" ",
            escape(label)
        ),
        1,
    )
}

fn failed(size: (u32, u32), label: &str, why: &str) -> String {
    format!(
        "<svg class=\"plot\" role=\"img\" aria-label=\"{l}\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\" fill=\"currentColor\">{l}: cannot draw ({e})</text></svg>\n",
        l = escape(label),
        w = size.0,
        h = size.1,
        e = escape(why)
    )
}

/// The mesh every x-y plot shares: faint grid, labelled axes in the foreground colour.
pub(crate) fn mesh<'a, X, Y, XT, YT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&XT) -> String,
    y_fmt: &dyn Fn(&YT) -> String,
) -> DrawResult
where
    X: Ranged<ValueType = XT> + plotters::coord::ranged1d::ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + plotters::coord::ranged1d::ValueFormatter<YT>,
{
    mesh_with_ticks(chart, x_desc, y_desc, x_fmt, y_fmt, 10)
}

/// [`mesh`] with about `y_ticks` labels on the y axis.
pub(crate) fn mesh_with_ticks<'a, X, Y, XT, YT>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    x_desc: &str,
    y_desc: &str,
    x_fmt: &dyn Fn(&XT) -> String,
    y_fmt: &dyn Fn(&YT) -> String,
    y_ticks: usize,
) -> DrawResult
where
    X: Ranged<ValueType = XT> + plotters::coord::ranged1d::ValueFormatter<XT>,
    Y: Ranged<ValueType = YT> + plotters::coord::ranged1d::ValueFormatter<YT>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_labels(y_ticks)
        .x_label_formatter(x_fmt)
        .y_label_formatter(y_fmt)
        .label_style((FONT, LABEL_PX).into_font().color(&FG))
        .axis_desc_style((FONT, DESC_PX).into_font().color(&FG))
        .axis_style(FG.mix(0.55))
        .bold_line_style(FG.mix(0.12))
        .light_line_style(FG.mix(0.0))
        .draw()?;
    Ok(())
}

/// How a legend entry is marked.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    /// A filled square (bars, areas).
    Swatch(RGBColor),
    /// A short line of the series' colour and width.
    Line(RGBAColor, u32),
    /// A dot (a scatter).
    Dot(RGBAColor),
    /// A short vertical bar in the foreground colour (a marker line).
    Tick,
}

/// Height of one legend row, px.
const LEGEND_ROW_PX: i32 = 20;

/// Where each legend entry goes in an area `width` px wide: left to right, wrapping to a new
/// row when the next does not fit (text width estimated at 0.55 em per character).
fn legend_layout(entries: &[(String, Mark)], width: u32) -> Vec<(i32, i32)> {
    let (mut x, mut y) = (16i32, 12i32);
    entries
        .iter()
        .map(|(text, _)| {
            let w = 24 + (text.chars().count() as f64 * LABEL_PX as f64 / 1.24 * 0.55) as i32 + 18;
            if x + w > width as i32 && x > 16 {
                x = 16;
                y += LEGEND_ROW_PX;
            }
            let at = (x, y);
            x += w;
            at
        })
        .collect()
}

/// The height a legend row under a plot of `width` px needs.
pub(crate) fn legend_height(entries: &[(String, Mark)], width: u32) -> u32 {
    let rows = legend_layout(entries, width)
        .last()
        .map_or(0, |(_, y)| (y - 12) / LEGEND_ROW_PX + 1);
    (rows * LEGEND_ROW_PX + 10) as u32
}

/// Splits `root` into the plot and, under it, the room for the legend of `entries`.
pub(crate) fn with_legend_room<'a>(
    root: &Area<'a>,
    entries: &[(String, Mark)],
) -> (Area<'a>, Area<'a>) {
    let (w, h) = root.dim_in_pixel();
    root.split_vertically(h.saturating_sub(legend_height(entries, w)))
}

/// Draws the legend of `entries` in `area` (under the plot: legends never hide data).
pub(crate) fn legend_row(area: &Area<'_>, entries: &[(String, Mark)]) -> DrawResult {
    let (width, _) = area.dim_in_pixel();
    let font = (FONT, LABEL_PX)
        .into_font()
        .color(&FG)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
    for ((text, mark), (x, y)) in entries.iter().zip(legend_layout(entries, width)) {
        match *mark {
            Mark::Swatch(c) => {
                area.draw(&Rectangle::new(
                    [(x + 2, y - 5), (x + 12, y + 5)],
                    c.filled(),
                ))?;
            }
            Mark::Line(c, width) => {
                area.draw(&PathElement::new(
                    vec![(x, y), (x + 16, y)],
                    c.stroke_width(width),
                ))?;
            }
            Mark::Dot(c) => area.draw(&Circle::new((x + 8, y), 3, c.filled()))?,
            Mark::Tick => {
                area.draw(&PathElement::new(
                    vec![(x + 7, y - 7), (x + 7, y + 7)],
                    FG.stroke_width(2),
                ))?;
            }
        }
        area.draw(&Text::new(text.clone(), (x + 22, y), font.clone()))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests;
