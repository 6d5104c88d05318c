//! `reqlife knee`: latency and achieved rate against the offered rate. Left, the p50 and p99
//! of each step against its offered rate (steps that failed marked with a cross), the latency
//! SLOs as horizontal lines and the answer as a vertical one; y is logarithmic when the
//! latencies span more than two decades (as past a knee they do). Right, the achieved rate
//! against the offered one, with the line where they are equal.

use super::{
    label_room, legend_row, linear_ticks, mesh, plot_px, render, short, ticked, upper,
    with_legend_room, Area, DrawResult, Mark, FG, RED, Y_LABEL_ROOM_PX,
};
use plotters::prelude::*;

/// One step of the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The rate asked for, req/s.
    pub offered_rps: f64,
    /// The rate answered, req/s.
    pub achieved_rps: f64,
    /// The median total latency, ns.
    pub p50_ns: f64,
    /// The 99th percentile total latency, ns.
    pub p99_ns: f64,
    /// The 95% intervals of the median and of p99 (ns, low and high), as the step's record
    /// gives them: drawn as error bars where both bounds are known.
    pub p50_ci_ns: Option<(f64, f64)>,
    /// The same of p99.
    pub p99_ci_ns: Option<(f64, f64)>,
    /// The step met every SLO.
    pub pass: bool,
}

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 400);

/// The plot of `steps`, the latency bounds `slos` (label, ns) and the `answer` (req/s).
pub fn svg(steps: &[Step], slos: &[(String, f64)], answer: Option<f64>) -> String {
    let mut sorted: Vec<&Step> = steps.iter().collect();
    sorted.sort_by(|a, b| a.offered_rps.total_cmp(&b.offered_rps));
    let x_max = upper(
        sorted
            .iter()
            .map(|s| s.offered_rps.max(s.achieved_rps))
            .fold(0.0, f64::max),
    );
    let entries = legend(slos, answer);
    render(
        SIZE,
        "latency and achieved rate against the offered rate",
        |root| {
            let (top, bottom) = with_legend_room(root, &entries);
            let (left, right) = top.split_horizontally(620);
            latency_chart(&left, &sorted, slos, answer, x_max)?;
            rate_chart(&right, &sorted, x_max)?;
            legend_row(&bottom, &entries)
        },
    )
}

/// The legend's entries: p50, p99, failed steps, each SLO and the answer.
fn legend(slos: &[(String, f64)], answer: Option<f64>) -> Vec<(String, Mark)> {
    let mut entries = vec![
        ("p50".to_string(), Mark::Line(super::color(0).to_rgba(), 2)),
        ("p99".to_string(), Mark::Line(super::color(1).to_rgba(), 2)),
        ("failed step".to_string(), Mark::Dot(RED.to_rgba())),
    ];
    for (i, (label, _)) in slos.iter().enumerate() {
        entries.push((
            format!("SLO {label}"),
            Mark::Line(super::color(3 + i).to_rgba(), 1),
        ));
    }
    if let Some(a) = answer {
        entries.push((format!("answer {a:.0} req/s"), Mark::Tick));
    }
    entries
}

/// Left: the p50 and p99 of each step (`sorted` by offered rate) against its offered rate,
/// up to `x_max`, with the SLOs and the answer.
fn latency_chart(
    area: &Area<'_>,
    sorted: &[&Step],
    slos: &[(String, f64)],
    answer: Option<f64>,
    x_max: f64,
) -> DrawResult {
    let values = sorted
        .iter()
        .flat_map(|s| {
            let bars = [s.p50_ci_ns, s.p99_ci_ns].into_iter().flatten();
            [s.p50_ns, s.p99_ns]
                .into_iter()
                .chain(bars.flat_map(|(lo, hi)| [lo, hi]))
        })
        .chain(slos.iter().map(|s| s.1))
        .filter(|v| *v > 0.0);
    let (lo, hi) = values.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = if hi > 0.0 { (lo, hi) } else { (1.0, 1.0) };
    let scale = super::LatencyScale::of(lo, hi);
    let (log, unit) = (scale.log, scale.unit);
    let y = move |ns: f64| scale.y(ns);
    let (y_lo, y_hi) = scale.range(lo, hi);
    // Ticks of the 1-2-5 series (and powers of ten on a log axis), as many as fit:
    // labels never overlap, whatever the rates.
    let x_room = |v: f64| label_room(&short(v));
    let (w, h) = plot_px(area, 12, 44, 72);
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(
            ticked(0.0..x_max, linear_ticks(0.0, x_max, w, &x_room)),
            ticked(y_lo..y_hi, scale.ticks((y_lo, y_hi), h, Y_LABEL_ROOM_PX)),
        )?;
    let y_desc = format!(
        "latency ({}{})",
        unit.symbol,
        if log { ", log" } else { "" }
    );
    mesh(
        &mut chart,
        "offered rate (req/s)",
        &y_desc,
        &|v| short(*v),
        &|v| scale.label(*v),
    )?;
    for (i, (_, ns)) in slos.iter().enumerate() {
        chart.draw_series(LineSeries::new(
            [(0.0, y(*ns)), (x_max, y(*ns))],
            super::color(3 + i).stroke_width(1),
        ))?;
    }
    if let Some(a) = answer {
        chart.draw_series(LineSeries::new([(a, y_lo), (a, y_hi)], FG.stroke_width(2)))?;
    }
    for (i, pick) in [|s: &Step| s.p50_ns, |s: &Step| s.p99_ns]
        .iter()
        .enumerate()
    {
        let color = super::color(i);
        error_bars(&mut chart, sorted, i, (x_max, w), &y)?;
        let points: Vec<(f64, f64)> = sorted
            .iter()
            .filter(|s| pick(s) > 0.0)
            .map(|s| (s.offered_rps, y(pick(s))))
            .collect();
        chart.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
        chart.draw_series(sorted.iter().filter(|s| pick(s) > 0.0).map(|s| {
            let c = if s.pass { color } else { RED };
            Circle::new((s.offered_rps, y(pick(s))), 4, c.filled())
        }))?;
    }
    Ok(())
}

/// Each step's 95% interval of p50 (`which` 0) or p99 (1), an error bar with caps 8 px wide
/// (`x_max` over `w` px), within the axis.
fn error_bars(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<super::Ticked, super::Ticked>>,
    sorted: &[&Step],
    which: usize,
    (x_max, w): (f64, f64),
    y: &dyn Fn(f64) -> f64,
) -> DrawResult {
    let color = super::color(which);
    let cap = x_max * 4.0 / w.max(1.0);
    for s in sorted {
        let (v, bar) = match which {
            0 => (s.p50_ns, s.p50_ci_ns),
            _ => (s.p99_ns, s.p99_ci_ns),
        };
        let Some((lo, hi)) = bar.filter(|(lo, hi)| v > 0.0 && *lo > 0.0 && hi >= lo) else {
            continue;
        };
        let (x, ylo, yhi) = (s.offered_rps, y(lo), y(hi));
        // Caps within the axis: plotters leaves out a line that leaves it.
        let (l, r) = ((x - cap).max(0.0), (x + cap).min(x_max));
        for line in [
            [(x, ylo), (x, yhi)],
            [(l, ylo), (r, ylo)],
            [(l, yhi), (r, yhi)],
        ] {
            chart.draw_series(LineSeries::new(line, color.mix(0.6).stroke_width(1)))?;
        }
    }
    Ok(())
}

/// Right: the achieved rate of each step against the offered one, with the line where they
/// are equal.
fn rate_chart(area: &Area<'_>, sorted: &[&Step], x_max: f64) -> DrawResult {
    let x_room = |v: f64| label_room(&short(v));
    let (w, h) = plot_px(area, 12, 44, 64);
    let mut rate = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(
            ticked(0.0..x_max, linear_ticks(0.0, x_max, w, &x_room)),
            ticked(
                0.0..x_max,
                linear_ticks(0.0, x_max, h, &|_| Y_LABEL_ROOM_PX),
            ),
        )?;
    mesh(
        &mut rate,
        "offered (req/s)",
        "achieved (req/s)",
        &|v| short(*v),
        &|v| short(*v),
    )?;
    rate.draw_series(LineSeries::new([(0.0, 0.0), (x_max, x_max)], FG.mix(0.4)))?;
    rate.draw_series(sorted.iter().map(|s| {
        let c = if s.pass { super::color(2) } else { RED };
        Circle::new((s.offered_rps, s.achieved_rps), 4, c.filled())
    }))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::{
        assert_plot, assert_x_labels_apart, is_one_two_five, x_tick_labels, y_tick_labels,
    };

    fn step(offered: f64, achieved: f64, p50_ms: f64, p99_ms: f64, pass: bool) -> Step {
        Step {
            offered_rps: offered,
            achieved_rps: achieved,
            p50_ns: p50_ms * 1e6,
            p99_ns: p99_ms * 1e6,
            p50_ci_ns: None,
            p99_ci_ns: None,
            pass,
        }
    }

    #[test]
    fn snapshot() {
        // A server of 500 req/s: flat below, the queue growing above.
        let steps = [
            step(125.0, 125.0, 2.1, 2.9, true),
            step(250.0, 249.0, 2.2, 3.4, true),
            step(500.0, 495.0, 3.0, 9.5, true),
            step(1000.0, 497.0, 250.0, 495.0, false),
            step(750.0, 497.0, 170.0, 330.0, false),
            step(625.0, 497.0, 100.0, 197.0, false),
        ];
        let svg = svg(&steps, &[("p99<=20ms".into(), 20e6)], Some(500.0));
        assert_plot(
            &svg,
            &[
                "offered rate (req/s)",
                "latency (ms, log)",
                "achieved (req/s)",
                "SLO p99<=20ms",
                "answer 500 req/s",
                "failed step",
            ],
        );
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn each_steps_interval_is_an_error_bar() {
        let plain = [
            step(100.0, 100.0, 2.0, 3.0, true),
            step(200.0, 199.0, 2.5, 6.0, true),
        ];
        let mut barred = plain.clone();
        barred[0].p99_ci_ns = Some((2.6e6, 3.5e6));
        barred[1].p99_ci_ns = Some((4.0e6, 9.0e6));
        // An unbounded interval draws nothing.
        barred[1].p50_ci_ns = Some((2.0e6, f64::NAN));
        // The bars' lines: the only ones drawn at 60% opacity.
        let lines = |svg: &str| svg.matches("opacity=\"0.6\"").count();
        let (a, b) = (svg(&plain, &[], None), svg(&barred, &[], None));
        assert_eq!(
            (lines(&a), lines(&b)),
            (0, 6),
            "two bars of three lines each"
        );
        // The axis reaches the top of the highest bar (9 ms), beyond the highest p99 (6 ms).
        let top = |svg: &str| {
            // The latency chart's (left), not the rate chart's.
            y_tick_labels(svg)
                .iter()
                .filter(|t| t.x < 300.0)
                .filter_map(|t| t.text.parse::<f64>().ok())
                .fold(0.0, f64::max)
        };
        assert!(top(&a) < 8.0 && top(&b) >= 8.0, "{} {}", top(&a), top(&b));
    }

    #[test]
    fn log_ticks_read_one_two_five_and_x_labels_never_overlap() {
        // Past the knee latencies span three decades: a log axis, labelled 1, 2, 5, 10 …
        // (never 3.162 or 31.623).
        let steps = [
            step(61.0, 61.0, 0.4, 0.9, true),
            step(122.0, 122.0, 0.5, 1.1, true),
            step(244.0, 243.0, 0.6, 1.5, true),
            step(488.0, 249.0, 268.0, 525.0, false),
            step(366.0, 249.0, 177.0, 346.0, false),
            step(305.0, 249.0, 103.0, 198.0, false),
            step(275.0, 249.0, 57.0, 104.0, false),
            step(260.0, 248.0, 29.0, 49.0, false),
            step(252.0, 248.0, 10.0, 16.7, false),
        ];
        let page = svg(&steps, &[("p99<=1ms".into(), 1e6)], Some(244.0));
        assert!(page.contains("latency (ms, log)"));
        // The latency axis's labels (the left plot's; the right one's are rates).
        let y: Vec<String> = y_tick_labels(&page)
            .into_iter()
            .filter(|t| t.x < 300.0)
            .map(|t| t.text)
            .collect();
        assert!(y.len() >= 4, "{y:?}");
        for l in &y {
            assert!(is_one_two_five(l), "y label {l:?} in {y:?}");
        }
        assert!(
            y.contains(&"1".to_string()) && y.contains(&"100".to_string()),
            "{y:?}"
        );
        // Rates of every size: short 1-2-5 labels, as many as fit without touching, on the
        // wide left plot and the narrow right one.
        for scale in [1.0, 10.0, 97.0, 1000.0, 4321.0] {
            let steps: Vec<Step> = steps
                .iter()
                .map(|s| Step {
                    offered_rps: s.offered_rps * scale,
                    achieved_rps: s.achieved_rps * scale,
                    ..s.clone()
                })
                .collect();
            let page = svg(&steps, &[], None);
            assert_x_labels_apart(&page);
            let x = x_tick_labels(&page);
            assert!(x.len() >= 6, "{scale}: {x:?}");
            for t in &x {
                assert!(
                    is_one_two_five(&t.text) || {
                        // a multiple of the 1-2-5 step: 150 beside 50, 100, 200
                        t.text.trim_end_matches(['k', 'M']).parse::<f64>().is_ok()
                    },
                    "{scale}: {:?}",
                    t.text
                );
            }
        }
    }

    #[test]
    fn narrow_latencies_keep_a_linear_axis_and_no_answer_draws_no_line() {
        let steps = [step(100.0, 100.0, 1.0, 2.0, false)];
        let svg = svg(&steps, &[], None);
        assert!(svg.contains("latency (ms)"));
        assert!(!svg.contains("answer"));
    }
}
