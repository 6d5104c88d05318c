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
        "network+client (wait − server total)",
        "server total (its total)",
    ] {
        assert!(html.contains(&format!("<td>{row}</td>")), "{row}");
    }
    // Connect happened on 4 requests only: in the table, not in the stack.
    assert!(
        html.contains("(connect) are in the table only") || html.contains("through (connect)"),
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
    r.stop_reason = evil.into();
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
