//! A log2 histogram of one phase, as bpftrace draws `hist()`: one bar per power-of-two
//! bucket [2ᵏ, 2ᵏ⁺¹) ns, every bucket between the first and the last shown (empty ones too,
//! and one more either side),
//! labelled with bpftrace's bounds (1K = 2¹⁰ ns ≈ 1 µs, 1M = 2²⁰ ns ≈ 1 ms).

use super::{mesh_with_ticks, render, upper, DESC_PX, FG, FONT};
use crate::analysis::describe::Log2Hist;
use plotters::prelude::*;

/// Width and height, px (small multiples, two per row).
pub const SIZE: (u32, u32) = (470, 250);

/// 2ᵏ as bpftrace writes bounds: 1, 2 … 512, 1K … 512K, 1M …
fn bound(k: i32) -> String {
    if k < 0 {
        return super::tick(2f64.powi(k), 3);
    }
    let v = 1u64 << k.min(62);
    match k {
        0..=9 => v.to_string(),
        10..=19 => format!("{}K", v >> 10),
        20..=29 => format!("{}M", v >> 20),
        30..=39 => format!("{}G", v >> 30),
        _ => format!("{}T", v >> 40),
    }
}

/// A count on the axis, short: `900`, `16k`, `2.5M`.
fn count_label(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", super::tick(v / 1e6, 1))
    } else if v >= 1e4 {
        format!("{}k", super::tick(v / 1e3, 1))
    } else {
        super::tick(v, 0)
    }
}

/// The plot of `hist` (values in ns), titled `title`. Values of 0 (a Server-Timing `dur=0`,
/// a phase under the clock's resolution) have a bar of their own, labelled `0`, left of the
/// log2 buckets. An empty histogram gives an empty plot with its title.
pub fn svg(title: &str, hist: &Log2Hist) -> String {
    // One empty bucket either side, for context (and never a lone bar).
    let (first, last) = match (hist.buckets.first(), hist.buckets.last()) {
        (Some(f), Some(l)) => (f.0 - 1, l.0 + 1),
        _ => (0, 2),
    };
    // The slots left to right: the zero bucket (when some value was 0), then 2^first..2^last.
    let zero = hist.nonpositive > 0;
    let counts: Vec<u64> = zero
        .then_some(hist.nonpositive)
        .into_iter()
        .chain((first..=last).map(|k| {
            hist.buckets
                .iter()
                .find(|(b, _)| *b == k)
                .map_or(0, |(_, n)| *n)
        }))
        .collect();
    let offset = zero as usize;
    let y_max = counts.iter().cloned().max().unwrap_or(0);
    // Counts are whole: below 10, one tick per request.
    let (y_hi, y_ticks) = if y_max < 10 {
        (y_max as f64 + 1.0, y_max as usize + 2)
    } else {
        (upper(y_max as f64), 10)
    };
    let n = counts.len();
    render(SIZE, &format!("log2 histogram of {title}"), |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(8)
            .caption(title, (FONT, DESC_PX + 1).into_font().color(&FG))
            .x_label_area_size(40)
            .y_label_area_size(60)
            // An integer range is inclusive: 0..=n−1 makes n slots.
            .build_cartesian_2d((0..n.max(1) - 1).into_segmented(), 0.0..y_hi)?;
        // At most about eight bucket labels: every other one (or fewer) when there are many;
        // the zero bucket's always.
        let every = (n - offset).div_ceil(8).max(1);
        mesh_with_ticks(
            &mut chart,
            "ns, log2 buckets (1K = 2¹⁰ ns ≈ 1 µs, 1M ≈ 1 ms)",
            "requests",
            &|v| match v {
                SegmentValue::CenterOf(0) if zero => "0".to_string(),
                SegmentValue::CenterOf(i) if i % every == 0 && *i < n => {
                    bound(first + (i - offset) as i32)
                }
                _ => String::new(),
            },
            &|v| count_label(*v),
            y_ticks,
        )?;
        let color = super::color(0);
        // A bucket with a few requests beside one with thousands stays visible: at least
        // 1% of the axis high.
        let least = y_hi * 0.01;
        chart.draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, c)| **c > 0)
                .map(|(i, &c)| {
                    let mut r = Rectangle::new(
                        [
                            (SegmentValue::Exact(i), 0.0),
                            (SegmentValue::Exact(i + 1), (c as f64).max(least)),
                        ],
                        color.filled(),
                    );
                    r.set_margin(0, 0, 2, 2);
                    r
                }),
        )?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::plot::tests::assert_plot;

    #[test]
    fn bounds_like_bpftrace() {
        // (k, label)
        for (k, s) in [
            (0, "1"),
            (9, "512"),
            (10, "1K"),
            (15, "32K"),
            (20, "1M"),
            (30, "1G"),
            (-1, "0.5"),
        ] {
            assert_eq!(bound(k), s);
        }
    }

    #[test]
    fn counts_are_short() {
        // (count, label)
        for (v, s) in [
            (0.0, "0"),
            (900.0, "900"),
            (9999.0, "9999"),
            (16000.0, "16k"),
            (12500.0, "12.5k"),
            (2.5e6, "2.5M"),
        ] {
            assert_eq!(count_label(v), s);
        }
    }

    #[test]
    fn snapshot() {
        // Buckets 2¹⁶..2²⁰ ns (65 µs .. 1 ms) with an empty one, and a tail at 2²⁴ (16 ms).
        let h = Log2Hist {
            nonpositive: 0,
            buckets: vec![(16, 120), (17, 900), (18, 400), (20, 30), (24, 2)],
            infinite: 0,
        };
        let svg = svg("wait", &h);
        assert_plot(&svg, &["wait", "requests", "32K", "512K", "8M"]);
        // One bar per non-empty bucket.
        assert_eq!(svg.matches("<rect").count(), 5, "{svg}");
        insta::assert_snapshot!(svg);
    }

    #[test]
    fn few_requests_get_whole_ticks() {
        // Four connects in one bucket: the y ticks are 0, 1 … 5, each once.
        let h = Log2Hist {
            nonpositive: 0,
            buckets: vec![(15, 4)],
            infinite: 0,
        };
        let svg = svg("connect", &h);
        let ticks: Vec<&str> = svg
            .split("</text>")
            .filter_map(|t| t.rsplit('>').next())
            .map(str::trim)
            .filter(|t| t.parse::<f64>().is_ok())
            .collect();
        assert_eq!(ticks, ["0", "1", "2", "3", "4", "5"]);
    }

    #[test]
    fn values_of_zero_have_a_bar_of_their_own() {
        // A Server-Timing metric the server reports as `dur=0` for most responses.
        let h = Log2Hist {
            nonpositive: 5045,
            infinite: 0,
            buckets: vec![(6, 1728), (7, 297), (8, 123)],
        };
        let svg = svg("server parse", &h);
        assert_plot(&svg, &["server parse", "requests"]);
        // Four bars: the zero bucket and three log2 buckets…
        assert_eq!(svg.matches("<rect").count(), 4, "{svg}");
        // …the zero one labelled 0, first, the highest (5045 sets the axis: 5.4k).
        let x = crate::report::plot::tests::x_tick_labels(&svg);
        assert_eq!(x.first().map(|t| t.text.as_str()), Some("0"), "{x:?}");
        // …and the log2 buckets keep their labels beside it.
        assert!(x.len() >= 3, "{x:?}");
        assert!(x.iter().any(|t| t.text == "64" || t.text == "128"), "{x:?}");
        assert!(
            svg.contains(">\n5000\n</text>") || svg.contains(">\n5k\n</text>"),
            "{svg}"
        );
        // Without zeros, no zero bucket.
        let none = svg_without_zero();
        assert!(!crate::report::plot::tests::x_tick_labels(&none)
            .iter()
            .any(|t| t.text == "0"));
    }

    fn svg_without_zero() -> String {
        svg(
            "server parse",
            &Log2Hist {
                nonpositive: 0,
                infinite: 0,
                buckets: vec![(6, 1728), (7, 297)],
            },
        )
    }

    #[test]
    fn an_empty_histogram_draws_its_frame_only() {
        let svg = svg("tls", &Log2Hist::default());
        assert_plot(&svg, &["tls", "requests"]);
        assert_eq!(svg.matches("<rect").count(), 0);
    }
}
