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
    pub ns: f64,
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
pub(crate) mod tests {
    use super::*;

    /// Checks what every plot must be: one SVG, themeable (no black left), its text drawn as
    /// `<text>`, named for screen readers, with the texts asked for (axis descriptions,
    /// legend entries).
    pub fn assert_plot(svg: &str, texts: &[&str]) {
        assert!(
            svg.starts_with("<svg class=\"plot\" role=\"img\" aria-label=\""),
            "{svg}"
        );
        assert_eq!(svg.matches("<svg").count(), 1);
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(!svg.contains("#000000"), "black not themed");
        assert!(!svg.contains("cannot draw"), "{svg}");
        for t in texts {
            assert!(svg.contains(&escape(t)), "missing text {t:?}");
        }
    }

    #[test]
    fn units_and_labels() {
        // (largest value ns, unit symbol)
        for (max, symbol) in [
            (999.0, "ns"),
            (1_000.0, "µs"),
            (250_000.0, "µs"),
            (1.5e6, "ms"),
            (3e9, "s"),
        ] {
            assert_eq!(latency_unit(max).symbol, symbol, "{max}");
        }
        // (value, decimals, label)
        for (v, d, s) in [
            (1.5, 2, "1.5"),
            (2.0, 2, "2"),
            (0.126, 2, "0.13"),
            (10.0, 0, "10"),
        ] {
            assert_eq!(tick(v, d), s);
        }
        assert_eq!(human(1_250_000.0), "1.25ms");
        assert_eq!(upper(0.0), 1.0);
        assert_eq!(upper(f64::NAN), 1.0);
        assert_eq!(time_end(2.5), 2.5);
        assert_eq!(time_end(0.0), 1.0);
    }

    #[test]
    fn colours_are_themed_and_labels_escaped() {
        let svg = render((100, 50), "a <label> & more", |root| {
            root.draw(&Text::new(
                "x < y",
                (5, 5),
                (FONT, 12).into_font().color(&FG),
            ))?;
            Ok(())
        });
        assert!(
            svg.contains("aria-label=\"a &lt;label&gt; &amp; more\""),
            "{svg}"
        );
        assert!(svg.contains("x &lt; y"), "{svg}");
        assert!(svg.contains("fill=\"currentColor\""), "{svg}");
        assert_plot(&svg, &[]);
    }

    #[test]
    fn a_failed_drawing_is_said_not_panicked() {
        let svg = render((100, 50), "broken", |_| Err("no luck".into()));
        assert!(svg.contains("broken: cannot draw (no luck)"), "{svg}");
    }
}
