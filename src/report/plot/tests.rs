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

/// A `<text>` of a plot: where, how anchored, whether turned, and what it says.
#[derive(Debug, Clone)]
pub struct SvgText {
    pub x: f64,
    pub y: f64,
    pub anchor: String,
    pub size: f64,
    pub rotated: bool,
    pub text: String,
}

/// Every `<text>` plotters wrote in `svg`.
pub fn texts(svg: &str) -> Vec<SvgText> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[at..at + tag[at..].find('"')?].to_string())
    };
    svg.split("<text ")
        .skip(1)
        .map(|t| {
            let tag = &format!(" {}", &t[..t.find('>').unwrap()]);
            let body = &t[t.find('>').unwrap() + 1..t.find("</text>").unwrap()];
            let num = |n: &str| attr(tag, n).and_then(|v| v.parse().ok()).unwrap_or(0.0);
            SvgText {
                x: num("x"),
                y: num("y"),
                anchor: attr(tag, "text-anchor").unwrap_or_default(),
                size: num("font-size"),
                rotated: tag.contains("transform="),
                text: body.trim().to_string(),
            }
        })
        .collect()
}

/// The x axes' tick labels: centred, level, at tick size, under the plots.
pub fn x_tick_labels(svg: &str) -> Vec<SvgText> {
    let tick_size = LABEL_PX as f64 / 1.24;
    texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "middle" && !t.rotated && (t.size - tick_size).abs() < 0.01)
        .filter(|t| !t.text.is_empty())
        .collect()
}

/// The y axes' tick labels (right-aligned left of the axes).
pub fn y_tick_labels(svg: &str) -> Vec<SvgText> {
    texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "end" && !t.rotated && !t.text.is_empty())
        .collect()
}

/// No two x tick labels on one row overlap: between the centres of neighbours, at least
/// half of each one's width (0.6 em per character) and a gap.
pub fn assert_x_labels_apart(svg: &str) {
    let mut labels = x_tick_labels(svg);
    assert!(labels.len() >= 2, "{labels:?}");
    labels.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
    for pair in labels.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.y != b.y {
            continue;
        }
        let half = |t: &SvgText| t.text.chars().count() as f64 * t.size * 0.6 / 2.0;
        assert!(
            b.x - a.x >= half(a) + half(b) + 6.0,
            "{:?} at {} and {:?} at {} overlap",
            a.text,
            a.x,
            b.text,
            b.x
        );
    }
}

/// A label of the 1-2-5 series: 1, 2 or 5 times a power of ten (`0.5`, `20`, `1k`).
pub fn is_one_two_five(label: &str) -> bool {
    let (num, mult) = match label.strip_suffix('k') {
        Some(n) => (n, 1e3),
        None => match label.strip_suffix('M') {
            Some(n) => (n, 1e6),
            None => (label, 1.0),
        },
    };
    let Ok(v) = num.parse::<f64>() else {
        return false;
    };
    let v = v * mult;
    if v == 0.0 {
        return true;
    }
    let mantissa = v / 10f64.powf(v.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .any(|m| (mantissa - m).abs() < 1e-6)
}

#[test]
fn ticks_are_one_two_five_and_fit() {
    for (v, s) in [
        (0.3, 0.5),
        (1.0, 1.0),
        (1.2, 2.0),
        (2.5, 5.0),
        (7.0, 10.0),
        (0.07, 0.1),
    ] {
        assert!((nice_step(v) - s).abs() < 1e-12, "{v}: {}", nice_step(v));
    }
    // (lo, hi, px): linear ticks are multiples of a 1-2-5 step, at least the room apart.
    for (lo, hi, px) in [
        (0.0, 540.0, 250.0),
        (0.0, 540.0, 520.0),
        (0.0, 133_333.0, 250.0),
        (0.0, 1.08, 300.0),
        (0.0, 7.3, 60.0),
    ] {
        let room = |v: f64| label_room(&short(v));
        let ticks = linear_ticks(lo, hi, px, &room);
        assert!(ticks.len() >= 2, "{ticks:?}");
        let step = ticks[1] - ticks[0];
        assert!(is_one_two_five(&short(step)), "{lo}..{hi}: step {step}");
        let widest = ticks.iter().map(|v| room(*v)).fold(0.0, f64::max);
        assert!(
            px * step / (hi - lo) >= widest,
            "{lo}..{hi} on {px} px: {ticks:?}"
        );
        for t in &ticks {
            assert!(((t / step).round() * step - t).abs() < 1e-9 * step.max(1.0));
            assert!(*t >= lo && *t <= hi + 1e-9);
        }
    }
    // Log ticks: 1, 2, 5 in each decade with room, powers of ten without; never 3.162.
    let labels = |lo: f64, hi: f64, px: f64| -> Vec<String> {
        let s = LatencyScale {
            unit: latency_unit(1e6),
            log: true,
        };
        s.ticks((lo, hi), px, Y_LABEL_ROOM_PX)
            .iter()
            .map(|v| s.label(*v))
            .collect()
    };
    assert_eq!(
        labels(0.0, 3.0, 400.0),
        ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1k"]
    );
    assert_eq!(labels(-1.0, 3.0, 150.0), ["0.1", "1", "10", "100", "1k"]);
    assert_eq!(labels(0.0, 6.0, 90.0), ["1", "1k", "1M"]);
    for l in labels(-2.0, 4.0, 250.0) {
        assert!(is_one_two_five(&l), "{l}");
    }
    assert!(!is_one_two_five("3.162") && !is_one_two_five("31.623") && is_one_two_five("0.05"));
    // Short labels.
    for (v, s) in [
        (2500.0, "2.5k"),
        (1000.0, "1k"),
        (20.0, "20"),
        (0.5, "0.5"),
        (3e6, "3M"),
    ] {
        assert_eq!(short(v), s);
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
