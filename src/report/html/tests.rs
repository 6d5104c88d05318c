//! Structure of the HTML page: every section present when its data is and absent otherwise,
//! nothing loaded from outside, every string from the record escaped.

use super::*;
use crate::report::fixture::{self, Shape};

/// The ids of the page's sections, in order.
fn sections(html: &str) -> Vec<String> {
    html.split("<section id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

fn page(r: &RunRecord) -> String {
    render(r).expect("the page renders")
}

#[test]
fn a_plain_run_has_every_section_but_levels_and_bursts() {
    let mut r = fixture::plain();
    r.summary.warnings = vec!["the generator fell behind".into()];
    let html = page(&r);
    assert_eq!(
        sections(&html),
        [
            "summary",
            "latency-over-time",
            "slow-requests",
            "spectrum",
            "breakdown",
            "histograms",
            "throughput",
            "status",
            "errors",
            "warnings",
            "environment"
        ]
    );
    // Each plot is inline SVG: latency, spectrum, breakdown, throughput and one histogram
    // per phase with values (connect, write, wait, read, total) and server metric (parse,
    // handler, total).
    assert_eq!(
        html.matches("<svg class=\"plot\"").count(),
        4 + 5 + 3,
        "{html}"
    );
    for figure in [
        "aria-label=\"latency over time\"",
        "aria-label=\"percentile spectrum\"",
        "aria-label=\"the life of a request at p50, p90 and p99\"",
        "aria-label=\"throughput and errors over time\"",
        "aria-label=\"log2 histogram of server handler\"",
    ] {
        assert!(html.contains(figure), "{figure}");
    }
    // The scatter of the sample, and the words saying what it is.
    assert!(html.contains("class=\"scatter\""));
    let s = r.samples.as_ref().unwrap();
    assert_eq!(s.at_us.len() as u64, s.seen, "a small run is kept whole");
    assert!(html.contains(&format!("every one of the {} responses (dots)", s.seen)));
    // A sample smaller than the run says so.
    let mut sampled = r.clone();
    if let Some(s) = sampled.samples.as_mut() {
        s.seen *= 10;
    }
    assert!(page(&sampled).contains(&format!(
        "a uniform random sample of {} of the {} responses (dots)",
        s.at_us.len(),
        s.seen * 10
    )));
    // The navigation links every section present, and only those.
    for id in sections(&html) {
        assert!(html.contains(&format!("<a href=\"#{id}\">")), "{id}");
    }
    assert!(!html.contains("href=\"#levels\""));
}

#[test]
fn tables_hold_the_record_s_figures() {
    let r = fixture::plain();
    let html = page(&r);
    let s = &r.summary;
    // Status codes with their counts, errors with the first error of their kind.
    for (code, n) in &s.status {
        assert!(
            html.contains(&format!("<td>{code}</td><td class=\"n\">{n}</td>")),
            "{code}"
        );
    }
    assert!(html.contains(&format!(
        "<td>timeout</td><td class=\"n\">{}</td>",
        s.errors["timeout"]
    )));
    // The breakdown lists the server's metrics and the network and client overhead.
    for row in [
        "server handler",
        "server parse",
        "network+client (write + wait − server total)",
        "server total (its total)",
    ] {
        assert!(html.contains(&format!("<td>{row}</td>")), "{row}");
    }
    // Connect happened on 4 requests only: in the table, not in the stack.
    assert!(
        html.contains("(connect) are in the table only") || html.contains("through (connect)"),
        "{html}"
    );
    // Each percentile with its interval: ±half-width beside it, the bounds on hover; one
    // that cannot be bounded says so.
    let mut r = r.clone();
    let t = &mut r.summary.latency.total;
    (t.p99_us, t.p99_ci_us) = (Some(1000.0), Some([Some(900.0), Some(1100.0)]));
    (t.p999_us, t.p999_ci_us) = (Some(2000.0), Some([Some(1500.0), None]));
    let html = page(&r);
    assert!(
        html.contains(r#"title="95% interval 900µs to 1.1ms">1ms <span class="pm">±10%</span>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"title="95% interval 1.5ms to unbounded">2ms <span class="pm">±?</span>"#),
        "{html}"
    );
    // The environment says how to run it again.
    assert!(html.contains(&r.environment.kernel));
    assert!(html.contains(&format!("<td>{}</td>", r.config.seed)));
}

#[test]
fn a_sweep_has_levels_and_a_curve_per_level() {
    let r = fixture::sweep();
    let html = page(&r);
    let ids = sections(&html);
    assert!(ids.contains(&"levels".to_string()), "{ids:?}");
    assert!(!ids.contains(&"bursts".to_string()));
    assert!(html.contains("aria-label=\"box plots: level\""));
    for l in &r.levels {
        assert!(
            html.contains(&format!("<td>{}</td>", l.label)),
            "{}",
            l.label
        );
        // Its curve in the spectrum's legend and its box's label.
        assert!(
            html.matches(&format!(">\n{}\n</text>", l.label)).count() >= 2,
            "{}",
            l.label
        );
    }
    // The time series runs level after level: the scatter covers both.
    let s = r.samples.as_ref().unwrap();
    assert!(*s.at_us.last().unwrap() > 3_000_000, "{:?}", s.at_us.last());
    assert!(*s.at_us.first().unwrap() < 3_000_000);
}

#[test]
fn a_burst_run_has_bursts() {
    let r = fixture::bursts();
    let html = page(&r);
    let ids = sections(&html);
    assert!(ids.contains(&"bursts".to_string()), "{ids:?}");
    assert!(!ids.contains(&"levels".to_string()));
    assert!(html.contains("5 bursts of 10 requests"));
    assert!(html.contains("aria-label=\"box plots: per burst\""));
}

#[test]
fn sections_without_data_are_left_out() {
    // Every request failed: no latency to plot, no status code.
    let r = fixture::record(
        &["-d", "1s", "--interval", "1s"],
        Shape {
            requests: 20,
            seconds: 1,
            error_every: 1,
            status_503_every: 0,
            server_timing: false,
            events: false,
        },
    );
    assert_eq!(r.summary.requests.ok, 0);
    let html = page(&r);
    assert_eq!(
        sections(&html),
        [
            "summary",
            "histograms",
            "throughput",
            "errors",
            "environment"
        ],
        "connect times remain (the four connections), and the rate of errors"
    );
    // A quiet run: no errors, no warnings, no server timing.
    let r = fixture::record(
        &["-d", "1s", "--interval", "1s"],
        Shape {
            requests: 100,
            seconds: 1,
            error_every: 0,
            status_503_every: 0,
            server_timing: false,
            events: false,
        },
    );
    let ids = sections(&page(&r));
    for absent in ["errors", "warnings", "levels", "bursts"] {
        assert!(!ids.contains(&absent.to_string()), "{absent}: {ids:?}");
    }
    assert!(ids.contains(&"breakdown".to_string()));
}

#[test]
fn nothing_is_loaded_from_outside() {
    let r = fixture::sweep();
    let html = page(&r);
    for banned in [
        "<script", "<link", "<iframe", "<img", "@import", "src=", "url(", "<object", "<embed",
    ] {
        assert!(!html.contains(banned), "{banned}");
    }
    // Links are anchors within the page only.
    for href in html.split("href=\"").skip(1) {
        assert!(href.starts_with('#'), "{}", &href[..40.min(href.len())]);
    }
    // The only addresses are the target's URL (as text) and the SVG namespace (a name, not
    // a resource).
    let rest = html
        .replace(&r.config.url, "")
        .replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !rest.contains("http://") && !rest.contains("https://"),
        "an address left"
    );
}

#[test]
fn every_string_from_the_record_is_escaped() {
    let evil = "<script>alert(1)</script>";
    let mut r = fixture::sweep();
    r.config.url = format!("http://x/{evil}");
    r.config.method = "GET\"><b>".into();
    r.config.headers = vec![("X-A".into(), format!("v'{evil}"))];
    r.config.command_line = vec!["reqlife".into(), evil.into()];
    r.environment.hostname = evil.into();
    r.environment.kernel = "6.1 & <i>".into();
    r.stop_reason = crate::model::StopReason::Other(evil.into());
    r.interrupted = true;
    r.summary.warnings = vec![evil.into()];
    r.first_errors.insert("timeout".into(), evil.into());
    r.summary.status.insert(evil.into(), 1);
    r.levels[0].label = evil.into();
    // A Server-Timing metric with markup in its name, in the summary and the histograms.
    let st = r.summary.server_timing.remove("handler").unwrap();
    r.summary.server_timing.insert(evil.into(), st);
    for n in r.summary.server_timing_order.iter_mut() {
        if n == "handler" {
            *n = evil.into();
        }
    }
    let h = r.histograms.remove("server_timing.handler").unwrap();
    r.histograms.insert(format!("server_timing.{evil}"), h);
    r.summary.server_timing_labels.insert(
        evil.into(),
        [(evil.to_string(), 3u64)].into_iter().collect(),
    );
    let html = page(&r);
    assert!(!html.contains("<script"), "unescaped script");
    assert!(!html.contains("<b>") && !html.contains("<i>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("6.1 &amp; &lt;i&gt;"));
    // In the plots too (plotters escapes its text): the level's box label and curve, the
    // metric's histogram title and breakdown segment.
    assert!(
        html.matches("&lt;script&gt;").count() >= 12,
        "{}",
        html.matches("&lt;script&gt;").count()
    );
}

/// The texts of the `<svg>` whose accessible name is `label`.
fn plot_of<'a>(html: &'a str, label: &str) -> &'a str {
    let at = html
        .find(&format!("aria-label=\"{label}\""))
        .unwrap_or_else(|| panic!("no plot {label}"));
    &html[at..at + html[at..].find("</svg>").unwrap()]
}

#[test]
fn a_server_metric_of_zero_keeps_its_zero_bucket() {
    // One parse in four took `dur=0`: the histogram's first bar is the zero bucket, labelled 0.
    let r = fixture::plain();
    let html = page(&r);
    let parse = plot_of(&html, "log2 histogram of server parse");
    let x_labels = |svg: &str| -> Vec<String> {
        crate::report::plot::tests::x_tick_labels(svg)
            .into_iter()
            .map(|t| t.text)
            .collect()
    };
    assert_eq!(
        x_labels(parse).first().map(String::as_str),
        Some("0"),
        "{parse}"
    );
    let h = r.histogram("server_timing.parse").unwrap();
    let zeros = h.count_between(0, 0);
    assert!(zeros > 0 && zeros < h.len(), "{zeros} of {}", h.len());
    // Two bars: zero and the 10 µs bucket.
    assert_eq!(parse.matches("<rect").count(), 2, "{parse}");
    // A metric with no zero has no zero bucket.
    let handler = plot_of(&html, "log2 histogram of server handler");
    assert!(!x_labels(handler).contains(&"0".to_string()), "{handler}");
}

/// A knee search's record: the steps of a sweep, three that passed, two that failed (one for
/// two reasons) and one the generator limited.
fn knee_record() -> RunRecord {
    use crate::analysis::knee::{KneeResult, KneeStep, Verdict};
    let step = |offered: f64, achieved: f64, p99_ms: f64, verdict, reasons: &[&str]| KneeStep {
        offered_rps: offered,
        achieved_rps: achieved,
        p50_us: Some(p99_ms * 300.0),
        p90_us: Some(p99_ms * 700.0),
        p99_us: Some(p99_ms * 1e3),
        mean_us: Some(p99_ms * 400.0),
        errors: 0,
        verdict,
        reasons: reasons.iter().map(|r| r.to_string()).collect(),
        confirmation: false,
        lag_us: None,
        lag_quantile: None,
        lag_samples: 0,
        measurements: 1,
        undecided: Vec::new(),
    };
    let mut r = fixture::sweep();
    let mut steps = vec![
        step(250.0, 250.0, 3.0, Verdict::Pass, &[]),
        step(500.0, 497.0, 9.0, Verdict::Pass, &[]),
        step(
            1000.0,
            498.0,
            495.0,
            Verdict::Fail,
            &["achieved 498 of 1000 req/s", "p99<=20ms (measured 495ms)"],
        ),
        step(
            750.0,
            740.0,
            30.0,
            Verdict::Fail,
            &["p99<=20ms (measured 30ms)"],
        ),
        step(
            600.0,
            590.0,
            12.0,
            Verdict::Client,
            &["the generator fell behind (schedule lag p99 4235 us)"],
        ),
        step(500.0, 499.0, 8.0, Verdict::Pass, &[]),
    ];
    steps[5].confirmation = true;
    r.knee = Some(KneeResult {
        slos: vec!["p99<=20ms".into()],
        precision: 0.05,
        answer_rps: Some(500.0),
        confirmed: true,
        limited_by: "server".into(),
        steps,
        summary: "the highest rate that meets p99<=20ms is 500 req/s".into(),
    });
    r
}

#[test]
fn a_knee_page_shows_the_steps_that_passed_apart_from_those_that_failed() {
    let r = knee_record();
    let html = page(&r);
    let ids = sections(&html);
    assert_eq!(ids[..2], ["summary", "knee"], "{ids:?}");
    // The summary says which steps passed and which failed (and what failed), apart.
    assert!(
        html.contains(
            "<tr><th>steps passed</th><td>steps 1, 2, 6 (250 to 500 req&#x2f;s)</td></tr>"
        ),
        "{html}"
    );
    assert!(html.contains(
        "<tr><th>steps failed</th><td>steps 3, 4 (750 to 1000 req&#x2f;s): the offered rate not achieved; p99&lt;=20ms"
    ), "{html}");
    assert!(html.contains("<tr><th>steps the generator limited</th><td>step 5 (600 req&#x2f;s)"));
    assert!(html.contains("latency (total, all steps)"));
    assert!(html.contains("add up every step of the search"));
    // The knee section: a table of the steps that passed, one of those that failed with
    // their reasons, one per line.
    let knee = &html[html.find("<section id=\"knee\"").unwrap()..];
    let knee = &knee[..knee.find("</section>").unwrap()];
    let passed = &knee[knee.find("<h3>Steps that passed</h3>").unwrap()
        ..knee.find("<h3>Steps that failed").unwrap()];
    let failed = &knee[knee.find("<h3>Steps that failed, and why</h3>").unwrap()..];
    for n in ["1", "2", "6"] {
        assert!(
            passed.contains(&format!("<tr><td>{n}</td>")),
            "{n}: {passed}"
        );
        assert!(!failed.contains(&format!("<tr><td>{n}</td>")), "{n}");
    }
    for n in ["3", "4", "5"] {
        assert!(
            failed.contains(&format!("<tr><td>{n}</td>")),
            "{n}: {failed}"
        );
        assert!(!passed.contains(&format!("<tr><td>{n}</td>")), "{n}");
    }
    assert!(passed.contains(">confirmation</td>"));
    assert!(failed.contains(
        "<td class=\"why\"><div>achieved 498 of 1000 req&#x2f;s</div><div>p99&lt;=20ms (measured 495ms)</div></td>"
    ), "{failed}");
    assert!(failed.contains(">client limit</td>"));
    // The reasons' column keeps room for a reason on a line.
    assert!(html.contains("td.why { min-width: 22em; }"));
    // The plot's latency axis reads 1-2-5, its rate axes too.
    let plot = plot_of(&html, "latency and achieved rate against the offered rate");
    for l in crate::report::plot::tests::y_tick_labels(plot) {
        assert!(
            crate::report::plot::tests::is_one_two_five(&l.text)
                || l.text.parse::<f64>().is_ok_and(|v| v % 50.0 == 0.0),
            "{l:?}"
        );
    }
    crate::report::plot::tests::assert_x_labels_apart(plot);
    // A search where every step failed says so.
    let mut none = r.clone();
    if let Some(k) = none.knee.as_mut() {
        k.steps
            .retain(|s| s.verdict != crate::analysis::knee::Verdict::Pass);
        k.answer_rps = None;
    }
    let html = page(&none);
    assert!(html.contains("<tr><th>steps passed</th><td>none</td></tr>"));
    assert!(html.contains("None: no step met every SLO."));
}

#[test]
fn the_navigation_wraps_within_the_page() {
    // Every section of a knee page in the navigation: its links wrap (a flex row that wraps,
    // with space between the links) rather than run off the page's right edge.
    let html = page(&knee_record());
    let nav = &html[html.find("<nav>").unwrap()..html.find("</nav>").unwrap()];
    assert!(nav.matches("<a href").count() >= 8, "{nav}");
    assert!(nav.contains("</a>\n<a href"), "{nav}");
    assert!(html.contains("display: flex; flex-wrap: wrap;"));
}

#[test]
fn a_streamed_run_shows_its_gaps_as_a_histogram_and_over_time() {
    let r = fixture::streamed();
    let html = page(&r);
    let ids = sections(&html);
    let at = |id: &str| ids.iter().position(|s| s == id).unwrap();
    assert!(at("histograms") < at("streams") && at("streams") < at("throughput"));
    assert!(html.contains("<a href=\"#streams\">"));
    let start = html.find("<section id=\"streams\"").unwrap();
    let section = &html[start..start + html[start..].find("</section>").unwrap()];
    for part in [
        "aria-label=\"log2 histogram of event gap\"",
        "aria-label=\"event gap over time\"",
        "gap between events (ms)",
        "p99 per interval",
        // 3000 requests, one in fifty failed: 2940 streams of 5 events, 4 gaps each.
        "11760 gaps between events of 2940 streamed responses (--stream sse)",
        "events per response: p50 5, max 5",
    ] {
        assert!(section.contains(part), "no {part:?} in {section}");
    }
    // The gap histogram is in this section, not among the phases'.
    assert_eq!(html.matches("log2 histogram of event gap").count(), 1);
    // Over time: one band per interval of 1 s, and a fourth for the streams that ended
    // after 3 s; gaps of 1.0 to 1.6 ms, 10 ms in one response of fifty (2% of the gaps:
    // the p99).
    let bands = page_plots::bands(&r, crate::model::Phase::EventGap);
    assert_eq!(bands.len(), 4);
    for b in &bands[..3] {
        assert!((1.0e6..=1.61e6).contains(&b.p50_ns), "{b:?}");
        assert!((b.p99_ns - 10e6).abs() < 0.01 * 10e6, "{b:?}");
    }
    // A run without streams has no such section, nor the plot.
    let plain = page(&fixture::plain());
    assert!(!sections(&plain).contains(&"streams".to_string()));
    assert!(!plain.contains("event gap"));
}
