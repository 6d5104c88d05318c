//! Box plots side by side: one box per level of a sweep (its total latency) or per burst
//! figure (the time to dispatch a burst, the time then waiting for its answers). For latency
//! the tail is the point, so the whiskers reach p1 and p99 (not 1.5 IQR) and the maximum is
//! a dot: box p25–p75, a line at the median.
//!
//! When the values span more than two decades, y is logarithmic (log₁₀ of the value, tick
//! labels in the unit), so that a saturated level does not flatten the others.

use super::{human, mesh, plot_px, render, ticked, FG, Y_LABEL_ROOM_PX};
use hdrhistogram::Histogram;
use plotters::prelude::*;

/// The figures of one box, in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxStats {
    /// The box's label under it (`100 connections`, `dispatch`).
    pub label: String,
    /// The 1st percentile: the lower whisker.
    pub p1_ns: f64,
    /// The 25th percentile: the box's bottom.
    pub p25_ns: f64,
    /// The median.
    pub p50_ns: f64,
    /// The 75th percentile: the box's top.
    pub p75_ns: f64,
    /// The 99th percentile: the upper whisker.
    pub p99_ns: f64,
    /// The maximum, a dot.
    pub max_ns: f64,
}

impl BoxStats {
    /// The box of `h` (ns); `None` when it is empty.
    pub fn of_hist(label: &str, h: &Histogram<u64>) -> Option<BoxStats> {
        if h.is_empty() {
            return None;
        }
        let q = |p: f64| h.highest_equivalent(h.value_at_quantile(p)) as f64;
        Some(BoxStats {
            label: label.to_string(),
            p1_ns: q(0.01),
            p25_ns: q(0.25),
            p50_ns: q(0.50),
            p75_ns: q(0.75),
            p99_ns: q(0.99),
            max_ns: h.max() as f64,
        })
    }
}

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 360);

/// The plot of `boxes`, left to right, under the x axis description `x_desc`.
pub fn svg(boxes: &[BoxStats], x_desc: &str) -> String {
    let hi = boxes.iter().map(|b| b.max_ns).fold(0.0, f64::max);
    let lo = boxes.iter().map(|b| b.p1_ns).fold(f64::INFINITY, f64::min);
    let scale = super::LatencyScale::of(lo, hi);
    let (log, unit) = (scale.log, scale.unit);
    let y = move |ns: f64| scale.y(ns);
    let (y_lo, y_hi) = scale.range(lo, hi);
    let n = boxes.len();
    let name = if log {
        format!("latency ({}, log scale)", unit.symbol)
    } else {
        format!("latency ({})", unit.symbol)
    };
    render(SIZE, &format!("box plots: {x_desc}"), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            // An integer range is inclusive: 0..=n−1 makes n slots (two at least: a lone
            // box would not fit its slot).
            .build_cartesian_2d(
                (0..n.max(2) - 1).into_segmented(),
                ticked(
                    y_lo..y_hi,
                    scale.ticks((y_lo, y_hi), plot_px(root, 12, 44, 72).1, Y_LABEL_ROOM_PX),
                ),
            )?;
        mesh(
            &mut chart,
            &format!("{x_desc} (box p25–p75, line p50, whiskers p1–p99, dot max)"),
            &name,
            &|v| match v {
                SegmentValue::CenterOf(i) => {
                    boxes.get(*i).map_or(String::new(), |b| b.label.clone())
                }
                _ => String::new(),
            },
            &|v| scale.label(*v),
        )?;
        for (i, b) in boxes.iter().enumerate() {
            draw_box(&mut chart, i, b, &y)?;
        }
        Ok(())
    })
}

type BoxChart<'a> = ChartContext<
    'a,
    SVGBackend<'a>,
    Cartesian2d<
        plotters::coord::ranged1d::SegmentedCoord<plotters::coord::types::RangedCoordusize>,
        super::Ticked,
    >,
>;

/// One box at slot `i`: whiskers, box, median, max dot and the median's value.
fn draw_box(
    chart: &mut BoxChart<'_>,
    i: usize,
    b: &BoxStats,
    y: &dyn Fn(f64) -> f64,
) -> super::DrawResult {
    let color = super::color(i);
    let px = |x: SegmentValue<usize>, v: f64| chart.backend_coord(&(x, v));
    // Pixel columns of the slot: the box is the middle half, caps a quarter.
    let (left, _) = px(SegmentValue::Exact(i), 0.0);
    let (right, _) = px(SegmentValue::Exact(i + 1), 0.0);
    let width = right - left;
    let mid = left + width / 2;
    let half_box = (width / 4).clamp(6, 60);
    let half_cap = half_box / 2;
    let yp = |ns: f64| px(SegmentValue::Exact(i), y(ns)).1;
    let area = chart.plotting_area();
    let (ox, oy) = (area.get_base_pixel().0, area.get_base_pixel().1);
    // Drawn in pixels on the plotting area (its origin subtracted).
    let at = |x: i32, y: i32| (x - ox, y - oy);
    let root = area.strip_coord_spec();
    let line = FG.mix(0.75).stroke_width(1);
    for (from, to) in [(b.p1_ns, b.p25_ns), (b.p75_ns, b.p99_ns)] {
        root.draw(&PathElement::new(
            vec![at(mid, yp(from)), at(mid, yp(to))],
            line,
        ))?;
    }
    for v in [b.p1_ns, b.p99_ns] {
        root.draw(&PathElement::new(
            vec![at(mid - half_cap, yp(v)), at(mid + half_cap, yp(v))],
            line,
        ))?;
    }
    root.draw(&Rectangle::new(
        [
            at(mid - half_box, yp(b.p75_ns)),
            at(mid + half_box, yp(b.p25_ns)),
        ],
        color.mix(0.55).filled(),
    ))?;
    root.draw(&Rectangle::new(
        [
            at(mid - half_box, yp(b.p75_ns)),
            at(mid + half_box, yp(b.p25_ns)),
        ],
        color.stroke_width(1),
    ))?;
    root.draw(&PathElement::new(
        vec![
            at(mid - half_box, yp(b.p50_ns)),
            at(mid + half_box, yp(b.p50_ns)),
        ],
        FG.stroke_width(2),
    ))?;
    root.draw(&Circle::new(at(mid, yp(b.max_ns)), 3, FG.filled()))?;
    root.draw(&Text::new(
        format!("p50 {}", human(b.p50_ns)),
        at(mid + half_box + 4, yp(b.p50_ns) - 7),
        (super::FONT, super::LABEL_PX).into_font().color(&FG),
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::hist;
    use crate::report::plot::tests::assert_plot;

    fn level(label: &str, lo_us: u64, hi_us: u64, tail_us: u64) -> BoxStats {
        let mut h = hist::new_hist();
        for i in 0..1000 {
            hist::record(&mut h, (lo_us + (hi_us - lo_us) * i / 1000) * 1000);
        }
        hist::record(&mut h, tail_us * 1000);
        BoxStats::of_hist(label, &h).unwrap()
    }

    #[test]
    fn boxes_of_histograms() {
        let b = level("x", 100, 1100, 5000);
        // Quartiles of an even ramp from 100 to 1100 µs, to the histogram's 0.1%.
        let close = |ns: f64, us: f64| (ns / 1e3 - us).abs() <= us * 0.002;
        assert!(close(b.p25_ns, 350.0), "{b:?}");
        assert!(close(b.p50_ns, 600.0), "{b:?}");
        assert!(close(b.p75_ns, 850.0), "{b:?}");
        assert!(close(b.max_ns, 5000.0), "{b:?}");
        assert!(BoxStats::of_hist("none", &hist::new_hist()).is_none());
        // (lowest, highest, log scale)
        for (lo, hi, log) in [
            (100.0, 9_000.0, false),
            (100.0, 20_000.0, true),
            (0.0, 5.0, false),
        ] {
            assert_eq!(
                crate::report::plot::LatencyScale::of(lo, hi).log,
                log,
                "{lo}..{hi}"
            );
        }
    }

    #[test]
    fn snapshot_levels() {
        let boxes = vec![
            level("100 connections", 200, 600, 900),
            level("200 connections", 300, 900, 1500),
            level("400 connections", 600, 2500, 6000),
        ];
        let svg = svg(&boxes, "level");
        assert_plot(
            &svg,
            &[
                "100 connections",
                "400 connections",
                "latency (ms)",
                "whiskers p1–p99",
            ],
        );
        // Per box: a filled box and its outline; a max dot each.
        assert_eq!(svg.matches("<circle").count(), 3);
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn a_wide_spread_is_drawn_on_a_log_scale() {
        let boxes = vec![
            level("calm", 100, 200, 300),
            level("saturated", 20_000, 90_000, 400_000),
        ];
        let svg = svg(&boxes, "level");
        assert_plot(&svg, &["latency (ms, log scale)", "calm", "saturated"]);
    }
}
