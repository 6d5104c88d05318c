//! Latency over time: per interval, the p50, p99 and max of the total latency as stepped
//! bands (p50–p99 and p99–max shaded, each percentile a line), over a scatter of a uniform
//! sample of the raw responses (the record's `samples`), so that a stall or a bimodal
//! latency shows as it happened.
//!
//! The scatter is one SVG `<path>` of dots (`M x y h0` with round caps), one dot per pixel
//! that holds a sample: 20,000 samples weigh a few tens of kilobytes, not one element each.

use super::{
    latency_unit, legend_row, mesh, render, tick, upper, with_legend_room, DrawResult, Mark,
    XyChart, FG,
};
use plotters::prelude::*;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One interval's figures, in ns.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    /// The interval's start, seconds from the start of recording.
    pub start_s: f64,
    /// The interval's end, seconds from the start of recording.
    pub end_s: f64,
    /// The median.
    pub p50_ns: f64,
    /// The 99th percentile.
    pub p99_ns: f64,
    /// The largest value.
    pub max_ns: f64,
}

/// One of a band's figures (ns).
type Figure = fn(&Band) -> f64;

/// Width and height, px.
pub const SIZE: (u32, u32) = (960, 380);
/// Stands for the scatter while plotters draws; replaced by its path afterwards.
const SCATTER_MARK: &str = "@@reqlife-scatter@@";

/// The plot of `bands` (intervals with responses, in time order) over `samples` (seconds
/// since the start of recording, latency ns).
pub fn svg(bands: &[Band], samples: &[(f64, f64)]) -> String {
    svg_of("latency over time", "total latency", bands, samples)
}

/// [`svg`] of another figure than the total latency (the gaps between the events of streamed
/// responses): `title` names the plot, `y_label` its axis.
pub fn svg_of(title: &str, y_label: &str, bands: &[Band], samples: &[(f64, f64)]) -> String {
    let x_max = bands
        .iter()
        .map(|b| b.end_s)
        .chain(samples.iter().map(|s| s.0))
        .fold(0.0, f64::max);
    let y_max = bands
        .iter()
        .map(|b| b.max_ns)
        .chain(samples.iter().map(|s| s.1))
        .fold(0.0, f64::max);
    let unit = latency_unit(y_max);
    let mut dots = String::new();
    let mut entries = vec![
        (
            "max per interval".to_string(),
            Mark::Line(super::RED.to_rgba(), 1),
        ),
        (
            "p99 per interval".to_string(),
            Mark::Line(super::color(1).to_rgba(), 2),
        ),
        (
            "p50 per interval".to_string(),
            Mark::Line(super::color(0).to_rgba(), 2),
        ),
    ];
    if !samples.is_empty() {
        entries.push((
            format!("a sample of {} responses", samples.len()),
            Mark::Dot(SCATTER.mix(0.8)),
        ));
    }
    let svg = render(SIZE, title, |root| {
        let (top, bottom) = with_legend_room(root, &entries);
        let mut chart = ChartBuilder::on(&top)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..super::time_end(x_max), 0.0..upper(y_max / unit.ns))?;
        mesh(
            &mut chart,
            "time since the start of recording (s)",
            &format!("{y_label} ({})", unit.symbol),
            &|v| tick(*v, 2),
            &|v| tick(*v, 3),
        )?;
        // The scatter goes under the bands: a placeholder now, the dots below.
        if !samples.is_empty() {
            chart.plotting_area().draw(&Text::new(
                SCATTER_MARK,
                (0.0, 0.0),
                (super::FONT, 1).into_font().color(&FG),
            ))?;
            let mut seen = BTreeSet::new();
            for &(t, ns) in samples {
                let (x, y) = chart.backend_coord(&(t, ns / unit.ns));
                if seen.insert((x, y)) {
                    let _ = write!(dots, "M{x} {y}h0");
                }
            }
        }
        bands_and_lines(&mut chart, bands, unit.ns)?;
        legend_row(&bottom, &entries)
    });
    match (svg.find(SCATTER_MARK), dots.is_empty()) {
        (Some(at), false) => {
            let start = svg[..at].rfind("<text").unwrap_or(at);
            let end = svg[at..]
                .find("</text>")
                .map_or(at, |e| at + e + "</text>".len());
            let path = format!(
                "<path class=\"scatter\" d=\"{dots}\" stroke=\"#{:02X}{:02X}{:02X}\" stroke-opacity=\"0.45\" stroke-width=\"2.2\" stroke-linecap=\"round\" fill=\"none\"/>",
                SCATTER.0, SCATTER.1, SCATTER.2
            );
            format!("{}{}{}", &svg[..start], path, &svg[end..])
        }
        _ => svg,
    }
}

/// Grey dots: they read on light and dark pages and stay behind the coloured bands.
const SCATTER: RGBColor = RGBColor(0x8C, 0x8C, 0x8C);

/// The shaded bands and the percentile lines, one stretch per run of contiguous intervals.
fn bands_and_lines(chart: &mut XyChart<'_>, bands: &[Band], unit_ns: f64) -> DrawResult {
    let blue = super::color(0);
    let orange = super::color(1);
    let red = super::RED;
    let stretches = stretches(bands);
    let steps = |b: &[Band], v: Figure| -> Vec<(f64, f64)> {
        b.iter()
            .flat_map(|i| [(i.start_s, v(i) / unit_ns), (i.end_s, v(i) / unit_ns)])
            .collect()
    };
    let area = |b: &[Band], lo: Figure, hi: Figure| -> Vec<(f64, f64)> {
        let mut pts = steps(b, hi);
        pts.extend(steps(b, lo).into_iter().rev());
        pts
    };
    let shaded: [(Figure, Figure, RGBColor, f64); 2] = [
        (|b| b.p99_ns, |b| b.max_ns, red, 0.18),
        (|b| b.p50_ns, |b| b.p99_ns, orange, 0.25),
    ];
    for (lo, hi, color, alpha) in shaded {
        chart.draw_series(
            stretches
                .iter()
                .map(|s| Polygon::new(area(s, lo, hi), color.mix(alpha).filled())),
        )?;
    }
    let lines: [(Figure, RGBColor, u32); 3] = [
        (|b| b.max_ns, red, 1),
        (|b| b.p99_ns, orange, 2),
        (|b| b.p50_ns, blue, 2),
    ];
    for (v, color, width) in lines {
        let style = color.stroke_width(width);
        for s in &stretches {
            chart.draw_series(LineSeries::new(steps(s, v), style))?;
        }
    }
    Ok(())
}

/// Splits the bands where an interval is missing (no response in it), so that lines and
/// shading do not bridge the gap.
fn stretches(bands: &[Band]) -> Vec<&[Band]> {
    let mut out = Vec::new();
    let mut from = 0;
    for i in 1..=bands.len() {
        if i == bands.len() || (bands[i].start_s - bands[i - 1].end_s).abs() > 1e-9 {
            if i > from {
                out.push(&bands[from..i]);
            }
            from = i;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::assert_plot;

    fn bands() -> Vec<Band> {
        // Five 1 s intervals, a stall in the fourth; the third is missing (no response).
        [
            (0.0, 180e3, 420e3, 900e3),
            (1.0, 190e3, 450e3, 1.1e6),
            (3.0, 2.0e6, 8.5e6, 12e6),
            (4.0, 200e3, 480e3, 1.0e6),
        ]
        .iter()
        .map(|&(start_s, p50_ns, p99_ns, max_ns)| Band {
            start_s,
            end_s: start_s + 1.0,
            p50_ns,
            p99_ns,
            max_ns,
        })
        .collect()
    }

    fn samples() -> Vec<(f64, f64)> {
        // A deterministic spread: 400 responses, every 12.5 ms, latency on a sawtooth.
        (0..400)
            .map(|i| (i as f64 * 0.0125, 150e3 + ((i * 7919) % 300) as f64 * 1e3))
            .collect()
    }

    #[test]
    fn snapshot() {
        let svg = svg(&bands(), &samples());
        assert_plot(
            &svg,
            &[
                "time since the start of recording (s)",
                "total latency (ms)",
                "p50 per interval",
                "p99 per interval",
                "max per interval",
                "a sample of 400 responses",
            ],
        );
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn the_scatter_is_one_path_of_distinct_dots_under_the_bands() {
        let svg = svg(&bands(), &samples());
        assert!(!svg.contains(SCATTER_MARK));
        assert_eq!(svg.matches("class=\"scatter\"").count(), 1);
        let path = svg.find("class=\"scatter\"").unwrap();
        let first_band = svg.find("<polygon").unwrap();
        assert!(path < first_band, "the dots are drawn first");
        let d = &svg[path..];
        let d = &d[d.find(" d=\"").unwrap() + 4..];
        let d = &d[..d.find('"').unwrap()];
        let dots: Vec<&str> = d.split('M').filter(|s| !s.is_empty()).collect();
        let distinct: BTreeSet<&str> = dots.iter().copied().collect();
        assert_eq!(dots.len(), distinct.len());
        assert!(dots.len() > 100 && dots.len() <= 400, "{}", dots.len());
    }

    #[test]
    fn a_missing_interval_breaks_the_lines() {
        let b = bands();
        let s = stretches(&b);
        assert_eq!(s.iter().map(|s| s.len()).collect::<Vec<_>>(), vec![2, 2]);
        // Without samples there is no scatter and no legend entry for it.
        let svg = svg(&b, &[]);
        assert!(!svg.contains("scatter") && !svg.contains("a sample of"));
        assert_plot(&svg, &["p50 per interval"]);
    }
}
