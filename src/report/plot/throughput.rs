//! Throughput and errors over time: per interval, the requests completed per second
//! (responses and errors) and the errors per second, as steps; with the offered rate of an
//! open loop as a line, so that a generator or a server that fell behind shows at once.

use super::{legend_row, mesh, render, tick, upper, with_legend_room, Mark, FG, RED};
use plotters::prelude::*;

/// One interval's rates.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// The interval's start, seconds from the start of recording.
    pub start_s: f64,
    /// The interval's end, seconds from the start of recording.
    pub end_s: f64,
    /// Requests completed per second (responses and errors).
    pub completed_per_s: f64,
    /// Failed requests per second.
    pub errors_per_s: f64,
}

/// One of an interval's rates.
type RateOf = fn(&Rate) -> f64;

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 320);

/// The plot of `rates` (in time order), with `offered_rps` drawn when given.
pub fn svg(rates: &[Rate], offered_rps: Option<f64>) -> String {
    let x_max = rates.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let y_max = rates
        .iter()
        .map(|r| r.completed_per_s.max(r.errors_per_s))
        .chain(offered_rps)
        .fold(0.0, f64::max);
    let steps = |v: RateOf| -> Vec<(f64, f64)> {
        rates
            .iter()
            .flat_map(|r| [(r.start_s, v(r)), (r.end_s, v(r))])
            .collect()
    };
    let offered_style = FG.mix(0.6);
    let lines: [(&str, RateOf, RGBColor); 2] = [
        ("completed (req/s)", |r| r.completed_per_s, super::color(0)),
        ("errors (per s)", |r| r.errors_per_s, RED),
    ];
    let mut entries: Vec<(String, Mark)> = lines
        .iter()
        .map(|(name, _, c)| (name.to_string(), Mark::Line(c.to_rgba(), 2)))
        .collect();
    if let Some(rate) = offered_rps {
        entries.push((
            format!("offered ({rate} req/s)"),
            Mark::Line(offered_style, 1),
        ));
    }
    render(SIZE, "throughput and errors over time", |root| {
        let (top, bottom) = with_legend_room(root, &entries);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..super::time_end(x_max), 0.0..upper(y_max))?;
        mesh(
            &mut chart,
            "time since the start of recording (s)",
            "requests per second",
            &|v| tick(*v, 2),
            &|v| tick(*v, 0),
        )?;
        if let Some(rate) = offered_rps {
            chart.draw_series(LineSeries::new(
                [(0.0, rate), (x_max, rate)],
                offered_style.stroke_width(1),
            ))?;
        }
        for (_, v, color) in lines {
            chart.draw_series(LineSeries::new(steps(v), color.stroke_width(2)))?;
        }
        legend_row(&bottom, &entries)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::assert_plot;

    #[test]
    fn snapshot() {
        // (start, completed/s, errors/s): a ramp, a dip with errors, recovery.
        let rates: Vec<Rate> = [
            (0.0, 9000.0, 0.0),
            (1.0, 10000.0, 0.0),
            (2.0, 6000.0, 800.0),
            (3.0, 9800.0, 10.0),
        ]
        .iter()
        .map(|&(start_s, completed_per_s, errors_per_s)| Rate {
            start_s,
            end_s: start_s + 1.0,
            completed_per_s,
            errors_per_s,
        })
        .collect();
        let svg = svg(&rates, Some(10000.0));
        assert_plot(
            &svg,
            &[
                "requests per second",
                "time since the start of recording (s)",
                "completed (req/s)",
                "errors (per s)",
                "offered (10000 req/s)",
            ],
        );
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn a_closed_loop_has_no_offered_line() {
        let rates = [Rate {
            start_s: 0.0,
            end_s: 0.5,
            completed_per_s: 100.0,
            errors_per_s: 0.0,
        }];
        let svg = svg(&rates, None);
        assert!(!svg.contains("offered"));
        assert_plot(&svg, &["completed (req/s)"]);
    }
}
