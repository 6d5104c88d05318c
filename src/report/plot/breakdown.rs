//! The life of a request at p50, p90 and p99: one horizontal bar per percentile, stacked
//! from the client phases (queue, connect, TLS, write), the server's own metrics
//! (`Server-Timing`), the network and client overhead and the read, each segment the phase's
//! value at that percentile. Percentiles do not add up (the p99 of a sum is not the sum of
//! the p99s), so the total latency at the same percentile is marked on each bar: the gap or
//! overshoot between the stack and the mark is that difference.

use super::{
    latency_unit, legend_row, mesh, render, tick, upper, with_legend_room, Area, DrawResult, Mark,
    FG, FONT, LABEL_PX,
};
use plotters::prelude::*;

/// The percentiles of the bars, top to bottom.
pub const PERCENTILES: [&str; 3] = ["p50", "p90", "p99"];

/// One segment of the stack: its name and its value (ns) at p50, p90 and p99.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// The segment's name (a phase, or a server metric).
    pub name: String,
    /// Its value at p50, p90 and p99, ns.
    pub ns: [f64; 3],
}

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 300);

/// The plot of `segments` stacked in order, with the total latency `total_ns` at p50, p90
/// and p99 marked on each bar and written at its right.
pub fn svg(segments: &[Segment], total_ns: [f64; 3]) -> String {
    let stacks: Vec<f64> = (0..3)
        .map(|i| segments.iter().map(|s| s.ns[i]).sum())
        .collect();
    let x_max = stacks
        .iter()
        .chain(total_ns.iter())
        .cloned()
        .fold(0.0, f64::max);
    let unit = latency_unit(x_max);
    let mut entries: Vec<(String, Mark)> = segments
        .iter()
        .enumerate()
        .map(|(k, s)| (s.name.clone(), Mark::Swatch(super::color(k))))
        .collect();
    entries.push(("total latency at the percentile".into(), Mark::Tick));
    render(SIZE, "the life of a request at p50, p90 and p99", |root| {
        let (top, bottom) = with_legend_room(root, &entries);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .margin_right(120)
            .x_label_area_size(44)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..upper(x_max / unit.ns), (0..2usize).into_segmented())?;
        mesh(
            &mut chart,
            &format!(
                "latency ({}): each phase at the percentile, stacked",
                unit.symbol
            ),
            "",
            &|v| tick(*v, 3),
            &|v| match v {
                SegmentValue::CenterOf(r) => PERCENTILES
                    .get(2usize.saturating_sub(*r))
                    .map_or(String::new(), |p| p.to_string()),
                _ => String::new(),
            },
        )?;
        for (k, seg) in segments.iter().enumerate() {
            let color = super::color(k);
            chart.draw_series((0..3).map(|i| {
                let x0: f64 = segments[..k].iter().map(|s| s.ns[i]).sum::<f64>() / unit.ns;
                let x1 = x0 + seg.ns[i] / unit.ns;
                let mut r = Rectangle::new(
                    [
                        (x0, SegmentValue::Exact(row(i))),
                        (x1, SegmentValue::Exact(row(i) + 1)),
                    ],
                    color.filled(),
                );
                r.set_margin(10, 10, 0, 0);
                r
            }))?;
        }
        marks(root, &mut chart, total_ns, unit.ns)?;
        legend_row(&bottom, &entries)
    })
}

/// Bar i (0 = p50) is drawn in row 2 − i, so that p50 is on top.
fn row(i: usize) -> usize {
    2 - i
}

type BarChart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<
        plotters::coord::types::RangedCoordf64,
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
    >,
>;

/// A mark at the total latency of each bar, and its value in the right margin.
fn marks(
    root: &Area<'_>,
    chart: &mut BarChart<'_>,
    total_ns: [f64; 3],
    unit_ns: f64,
) -> DrawResult {
    let style = FG.stroke_width(2);
    let right = chart.plotting_area().get_pixel_range().0.end;
    for (i, &ns) in total_ns.iter().enumerate() {
        let x = ns / unit_ns;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![
                (x, SegmentValue::Exact(row(i))),
                (x, SegmentValue::Exact(row(i) + 1)),
            ],
            style,
        )))?;
        let (_, y) = chart.backend_coord(&(0.0, SegmentValue::CenterOf(row(i))));
        root.draw(&Text::new(
            format!("total {}", super::human(ns)),
            (right + 8, y),
            (FONT, LABEL_PX)
                .into_font()
                .color(&FG)
                .pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                )),
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::assert_plot;

    fn segments() -> Vec<Segment> {
        // (name, p50, p90, p99 in µs): the embedded target's shape.
        [
            ("write", [4.0, 6.0, 30.0]),
            ("server handler", [60.0, 90.0, 200.0]),
            ("server serialize", [5.0, 8.0, 20.0]),
            ("network+client", [40.0, 120.0, 400.0]),
            ("read", [4.0, 6.0, 9.0]),
        ]
        .iter()
        .map(|(name, us)| Segment {
            name: name.to_string(),
            ns: us.map(|v| v * 1e3),
        })
        .collect()
    }

    #[test]
    fn snapshot() {
        let svg = svg(&segments(), [115e3, 240e3, 700e3]);
        assert_plot(
            &svg,
            &[
                "p50",
                "p90",
                "p99",
                "server handler",
                "network+client",
                "total latency at the percentile",
                "total 115µs",
                "total 700µs",
                "latency (µs): each phase at the percentile, stacked",
            ],
        );
        // A bar per percentile per segment, and a swatch per segment in the legend.
        assert_eq!(svg.matches("<rect").count(), 3 * 5 + 5, "{svg}");
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn the_axis_reaches_the_longest_stack_or_total() {
        // The p99s of the phases add up to 659 µs, more than the total's p99 (500 µs): the
        // axis must reach the stack; with a total beyond the stack, the total.
        for (total_p99_ns, reach_us) in [(500e3, 659.0), (900e3, 900.0)] {
            let svg = svg(&segments(), [100e3, 200e3, total_p99_ns]);
            let ticks: Vec<f64> = svg
                .split("</text>")
                .filter_map(|t| t.rsplit('>').next()?.trim().parse::<f64>().ok())
                .collect();
            let top = ticks.iter().cloned().fold(0.0, f64::max);
            assert!(
                top >= reach_us * 0.9 && top <= reach_us * 1.2,
                "{top} for {reach_us}: {ticks:?}"
            );
        }
    }
}
