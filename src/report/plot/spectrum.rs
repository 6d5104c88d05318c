//! The percentile spectrum, drawn as HdrHistogram's plotter draws `.hgrm` files: x is the
//! percentile on a log scale of 1/(1 − p), so that 90%, 99%, 99.9%… are evenly spaced
//! (x = log₁₀(1/(1 − p)): 0% at 0, 90% at 1, 99% at 2), y the latency at that percentile.
//! One curve per series: the total (and the uncorrected latency of an open loop), each level
//! of a sweep, or each run of a comparison (the classic overlay of 25k, 27.5k and 30k req/s).

use super::{
    latency_unit, legend_row, render, tick, upper, with_legend_room, Mark, DESC_PX, FG, FONT,
};
use hdrhistogram::Histogram;
use plotters::prelude::*;

/// One curve: (percentile as a fraction in 0..=1, latency ns) in rising order.
#[derive(Debug, Clone, PartialEq)]
pub struct Curve {
    /// The curve's label in the legend.
    pub label: String,
    /// (percentile as a fraction, latency ns), in rising order.
    pub points: Vec<(f64, f64)>,
}

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 400);
/// Points per decade of 1/(1 − p).
const STEPS_PER_DECADE: u32 = 20;
/// The highest decade drawn: 99.9999%.
const MAX_DECADES: u32 = 6;

impl Curve {
    /// The spectrum of `h` (ns): the value at p = 1 − 10^(−x) for x in steps of 1/20 up to
    /// the decade the histogram's count supports (99% for 100 values, 99.9% for 1000…), and
    /// its maximum at 100%. `None` when it is empty.
    pub fn of_hist(label: &str, h: &Histogram<u64>) -> Option<Curve> {
        if h.is_empty() {
            return None;
        }
        let decades = (h.len() as f64)
            .log10()
            .ceil()
            .clamp(2.0, MAX_DECADES as f64) as u32;
        let mut points: Vec<(f64, f64)> = (0..decades * STEPS_PER_DECADE)
            .map(|i| {
                let p = 1.0 - 10f64.powf(-(i as f64) / STEPS_PER_DECADE as f64);
                (p, h.highest_equivalent(h.value_at_quantile(p)) as f64)
            })
            .collect();
        points.push((1.0, h.max() as f64));
        Some(Curve {
            label: label.to_string(),
            points,
        })
    }
}

/// x of percentile `p`: log₁₀(1/(1 − p)), 100% placed at `x_max`.
fn x_of(p: f64, x_max: f64) -> f64 {
    if p >= 1.0 {
        x_max
    } else {
        (-(1.0 - p).log10()).min(x_max)
    }
}

/// The tick label of x: the percentile it stands for (`0%`, `90%`, `99.9%`).
fn percentile_label(x: f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let decimals = (x.ceil() as i32 - 2).clamp(0, 6) as usize;
    format!(
        "{}%",
        tick(p, decimals.max(if x.fract().abs() > 1e-9 { 1 } else { 0 }))
    )
}

/// The width of a tick label in px, as the browser sets it: 0.6 em a character.
fn label_px(text: &str) -> f64 {
    text.chars().count() as f64 * super::LABEL_PX as f64 / 1.24 * 0.6
}

/// The plot of `curves`.
pub fn svg(curves: &[Curve]) -> String {
    // Whole decades up to the deepest finite percentile of any curve.
    let deepest = curves
        .iter()
        .flat_map(|c| c.points.iter())
        .filter(|(p, _)| *p < 1.0)
        .map(|(p, _)| -(1.0 - p).log10())
        .fold(2.0, f64::max);
    let x_max = deepest.ceil().min(MAX_DECADES as f64);
    let y_max = curves
        .iter()
        .flat_map(|c| c.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let unit = latency_unit(y_max);
    // The last tick's label is centred on the right edge of the plot: the margin holds its
    // right half (99.9999% is 62 px wide at the tick size; half of it is beyond 24 px).
    let half_px = label_px(&percentile_label(x_max)) / 2.0;
    let right = (half_px.ceil() as u32 + 4).max(24);
    let entries: Vec<(String, Mark)> = curves
        .iter()
        .enumerate()
        .map(|(i, c)| (c.label.clone(), Mark::Line(super::color(i).to_rgba(), 2)))
        .collect();
    render(SIZE, "percentile spectrum", |root| {
        let (top, bottom) = with_legend_room(root, &entries);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .margin_right(right)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, 0.0..upper(y_max / unit.ns))?;
        chart
            .configure_mesh()
            .x_labels(x_max as usize + 1)
            .x_desc("percentile (log scale of 1/(1 − p): each step is one more nine)")
            .y_desc(format!("latency ({})", unit.symbol))
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|v| tick(*v, 3))
            .label_style((FONT, super::LABEL_PX).into_font().color(&FG))
            .axis_desc_style((FONT, DESC_PX).into_font().color(&FG))
            .axis_style(FG.mix(0.55))
            .bold_line_style(FG.mix(0.12))
            .light_line_style(FG.mix(0.0))
            .draw()?;
        for (i, c) in curves.iter().enumerate() {
            let style = super::color(i).stroke_width(2);
            chart.draw_series(LineSeries::new(
                c.points
                    .iter()
                    .map(|&(p, ns)| (x_of(p, x_max), ns / unit.ns)),
                style,
            ))?;
        }
        legend_row(&bottom, &entries)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::hist;
    use crate::report::plot::tests::assert_plot;

    /// A histogram of `n` values rising evenly from `lo_us` to `hi_us`, in ns.
    fn ramp(n: u64, lo_us: u64, hi_us: u64) -> Histogram<u64> {
        let mut h = hist::new_hist();
        for i in 0..n {
            hist::record(&mut h, (lo_us + (hi_us - lo_us) * i / n) * 1000);
        }
        h
    }

    #[test]
    fn percentile_ticks() {
        // (x, label)
        for (x, label) in [
            (0.0, "0%"),
            (1.0, "90%"),
            (2.0, "99%"),
            (3.0, "99.9%"),
            (4.0, "99.99%"),
            (0.5, "68.4%"),
        ] {
            assert_eq!(percentile_label(x), label, "x={x}");
        }
        // p → x, and 100% at the right edge.
        assert!((x_of(0.99, 5.0) - 2.0).abs() < 1e-9);
        assert_eq!(x_of(1.0, 5.0), 5.0);
    }

    #[test]
    fn the_last_percentile_label_fits_in_the_plot() {
        // A million values reach the sixth decade: its label, 99.9999%, is centred on the
        // right edge of the plot. Before, the margin was 24 px and the label's right half
        // 31 px: its last characters were cut off by the SVG's edge.
        let h = ramp(1_000_000, 100, 1100);
        let svg = svg(&[Curve::of_hist("total", &h).unwrap()]);
        let labels = crate::report::plot::tests::x_tick_labels(&svg);
        let last = labels
            .iter()
            .find(|t| t.text == "99.9999%")
            .expect("the 6th decade");
        // Its right end as the browser sets it: 0.6 em a character, from its centre.
        let right = last.x + last.text.chars().count() as f64 * last.size * 0.6 / 2.0;
        assert!(
            right <= SIZE.0 as f64,
            "99.9999% ends at {right} px, past the plot's width of {} px",
            SIZE.0
        );
        // The box the label must fit in is the SVG's own.
        assert!(
            svg.contains(&format!("width=\"{}\"", SIZE.0)),
            "{}",
            &svg[..200]
        );
    }

    #[test]
    fn curves_of_histograms() {
        let h = ramp(10_000, 100, 1100);
        let c = Curve::of_hist("total", &h).unwrap();
        // 10,000 values support 4 decades (99.99%); the last point is the max at 100%.
        assert_eq!(c.points.len(), 4 * 20 + 1);
        assert_eq!(*c.points.last().unwrap(), (1.0, h.max() as f64));
        assert!(c
            .points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        // Point 20 is x = 1, the 90th percentile: 1000 µs for an even ramp from 100 to
        // 1100 µs (to the histogram's 0.1%).
        assert!((c.points[20].0 - 0.9).abs() < 1e-12);
        let at90 = c.points[20].1;
        assert!((at90 / 1e3 - 1000.0).abs() < 2.0, "{at90}");
        assert!(Curve::of_hist("empty", &hist::new_hist()).is_none());
    }

    #[test]
    fn snapshot_one_curve_per_rate() {
        // The classic overlay: three rates, the tail rising with the load.
        let curves: Vec<Curve> = [
            ("25000 req/s", 1_000, 400),
            ("27500 req/s", 1_000, 900),
            ("30000 req/s", 1_000, 4_000),
        ]
        .iter()
        .map(|&(label, n, tail_us)| {
            let mut h = ramp(n, 200, 600);
            for i in 0..10 {
                hist::record(&mut h, (600 + tail_us * (i + 1) / 10) * 1000);
            }
            Curve::of_hist(label, &h).unwrap()
        })
        .collect();
        let svg = svg(&curves);
        assert_plot(
            &svg,
            &[
                "latency (ms)",
                "25000 req/s",
                "27500 req/s",
                "30000 req/s",
                "90%",
                "99%",
                "99.9%",
            ],
        );
        insta::assert_snapshot!(svg);
    }
}
