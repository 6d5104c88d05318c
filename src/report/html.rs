//! `--html FILE`: the report of a RunRecord as one self-contained HTML page: no script, no
//! external resource (styles inline, plots inline SVG from [`super::plot`]), readable offline,
//! light and dark (`prefers-color-scheme`), and printable (`@media print`). The page is a
//! minijinja template (`report.html.j2`) rendered with HTML auto-escaping, so every string
//! from the record (URL, headers, command line, Server-Timing names, error texts) is escaped;
//! only the SVGs, which plotters escapes itself, are inserted as they are.
//!
//! Sections, each with its id, present only when the record has their data: `summary`,
//! `latency-over-time`, `slow-requests`, `spectrum`, `breakdown`, `histograms`, `throughput`, `knee` (a knee
//! search), `repetitions` (`--repeat N`), `levels` (a sweep, or a knee search's steps),
//! `bursts`, `status`, `errors`, `thresholds`, `warnings`, `environment`.

mod page_knee;
mod page_plots;
mod probes;
mod slow;
mod tables;
mod timeline;

use super::plot::human;
use super::ReportError;
use crate::model::LoadKind;
use crate::recorder::record::RunRecord;
use page_knee::knee;
use page_plots::*;
use serde::Serialize;
use tables::*;

const TEMPLATE: &str = include_str!("report.html.j2");
const COMPARE_TEMPLATE: &str = include_str!("compare.html.j2");
/// The style both pages share (inserted as it is: it is ours, not the record's).
const STYLE: &str = include_str!("style.html.j2");

/// The templates, auto-escaping (their names end in `.html`).
fn templates() -> Result<minijinja::Environment<'static>, ReportError> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    for (name, text) in [
        ("report.html", TEMPLATE),
        ("compare.html", COMPARE_TEMPLATE),
    ] {
        env.add_template(name, text)
            .map_err(|e| ReportError::Render(format!("the HTML template {name} is broken: {e}")))?;
    }
    Ok(env)
}

/// The page of `record`.
pub fn render(record: &RunRecord) -> Result<String, ReportError> {
    let env = templates()?;
    let page = Page::of(record);
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(&page)))
        .map_err(|e| ReportError::Render(format!("cannot render the HTML report: {e}")))
}

/// The page of a comparison (`reqlife compare --html`): the table of changes, the two runs'
/// spectra overlaid, and the runs side by side.
pub fn render_compare(
    c: &crate::analysis::compare::Comparison,
    a: (&str, &RunRecord),
    b: (&str, &RunRecord),
) -> Result<String, ReportError> {
    let env = templates()?;
    let page = ComparePage::of(c, a, b);
    env.get_template("compare.html")
        .and_then(|t| t.render(minijinja::value::Serde(&page)))
        .map_err(|e| ReportError::Render(format!("cannot render the HTML comparison: {e}")))
}

/// Everything the comparison page shows.
#[derive(Debug, Serialize)]
struct ComparePage {
    style: &'static str,
    title: String,
    tool_version: String,
    how: String,
    a: String,
    b: String,
    /// figure, A, B, change, interval, p, verdict, verdict class
    rows: Vec<Vec<String>>,
    spectrum: Option<String>,
    /// name, A, B
    side: Vec<(String, String, String)>,
    /// How the tail's shares moved (runs with `--server-probes`).
    tail: Option<probes::TailMovesSection>,
}

impl ComparePage {
    fn of(
        c: &crate::analysis::compare::Comparison,
        (an, a): (&str, &RunRecord),
        (bn, b): (&str, &RunRecord),
    ) -> ComparePage {
        use crate::analysis::significance::Verdict;
        let pct = |v: f64| format!("{:+.1}%", v * 100.0);
        let rows = c
            .rows
            .iter()
            .map(|r| {
                let show = |v: f64| {
                    if r.figure == "throughput" {
                        format!("{v:.1}/s")
                    } else {
                        human(v * 1e3)
                    }
                };
                let class = match r.verdict {
                    Verdict::Faster => "faster",
                    Verdict::Slower => "slower",
                    Verdict::NoSignificantChange | Verdict::TooFewRuns => "same",
                };
                vec![
                    r.figure.clone(),
                    show(r.a),
                    show(r.b),
                    pct(r.change.point),
                    format!("[{}, {}]", pct(r.change.lo), pct(r.change.hi)),
                    r.p_adjusted
                        .or(r.p_value)
                        .map_or("-".into(), |p| format!("{p:.3}")),
                    r.verdict.words().to_string(),
                    class.to_string(),
                ]
            })
            .collect();
        let curves: Vec<super::plot::spectrum::Curve> = [("A", a), ("B", b)]
            .iter()
            .filter_map(|(name, r)| {
                super::plot::spectrum::Curve::of_hist(
                    &format!("{name}: total"),
                    &r.histogram("total").ok()?,
                )
            })
            .collect();
        let side = side_by_side(a, b);
        let how = match c.method.as_str() {
            "runs" | "interleaved" => format!(
                "Across runs ({} and {}): 95% intervals by a bootstrap of the ratio of the medians; p by an exact rank test.",
                c.n_a, c.n_b
            ),
            _ => format!(
                "Single runs, resampled by blocks of their intervals ({} and {}): 95% intervals of ln(B/A) by Student's t; p that the change lies beyond the noise band.",
                c.n_a, c.n_b
            ),
        };
        ComparePage {
            style: STYLE,
            title: "reqlife: compare".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            how: format!(
                "{how} Changes within ±{:.0}% count as noise. The p of every row is adjusted for the {} rows (Benjamini-Hochberg); quantiles are interpolated between tied values (mid-quantiles). {}.",
                c.noise * 100.0,
                c.rows.len(),
                c.rule
            ),
            a: an.to_string(),
            b: bn.to_string(),
            rows,
            spectrum: (!curves.is_empty()).then(|| super::plot::spectrum::svg(&curves)),
            side,
            tail: c.tail.as_ref().map(probes::tail_moves),
        }
    }
}

/// The two runs side by side: (what, A's, B's).
fn side_by_side(a: &RunRecord, b: &RunRecord) -> Vec<(String, String, String)> {
    let side_row = |name: &str, f: &dyn Fn(&RunRecord) -> String| (name.to_string(), f(a), f(b));
    vec![
        side_row("target", &|r| r.config.url.clone()),
        side_row("started", &|r| r.environment.start_time.clone()),
        side_row("load", &|r| {
            format!(
                "{} loop, {}, {}{}",
                r.config.load_model,
                crate::util::units::counted(r.config.connections, "connection"),
                crate::util::units::counted(r.config.threads, "thread"),
                r.config
                    .rate_rps
                    .map_or(String::new(), |x| format!(", {x} req/s offered"))
            )
        }),
        side_row("runs", &|r| r.config.repeat.to_string()),
        side_row("requests", &|r| r.summary.requests.total.to_string()),
        side_row("errors", &|r| r.summary.requests.errors.to_string()),
        side_row("throughput", &|r| {
            format!("{:.1} req/s", r.summary.throughput_rps)
        }),
        side_row("p50", &|r| cell(r.summary.latency.total.p50_us)),
        side_row("p99", &|r| cell(r.summary.latency.total.p99_us)),
        side_row("command", &|r| r.config.command_line.join(" ")),
    ]
}

/// Writes the page of `record` to `path`.
pub fn write(record: &RunRecord, path: &std::path::Path) -> Result<(), ReportError> {
    let page = render(record)?;
    std::fs::write(path, page).map_err(|e| unwritable(path, e))
}

/// Checks before a run that `path` can be written (then leaves it as it was): an error names
/// the file and why not. `-` (standard output) can.
pub fn check_writable(path: &std::path::Path) -> Result<(), ReportError> {
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| unwritable(path, e))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

fn unwritable(path: &std::path::Path, e: std::io::Error) -> ReportError {
    ReportError::Unwritable(format!(
        "cannot write the HTML report to '{}': {e}; give --html a file in a directory that exists and can be written",
        path.display()
    ))
}

/// A table row: a name and its cells.
type Row = (String, Vec<String>);

/// Everything the template shows.
#[derive(Debug, Serialize)]
struct Page {
    style: &'static str,
    title: String,
    tool_version: String,
    target: String,
    header_lines: Vec<String>,
    interrupted: bool,
    stop_reason: String,
    toc: Vec<Toc>,
    summary: Vec<(String, String)>,
    /// What the summary's figures cover, when that needs saying (a knee search's add up every
    /// step, passing and failing).
    summary_note: Option<String>,
    phase_heads: Vec<&'static str>,
    phases: Vec<PhaseRow>,
    stages: Vec<Vec<String>>,
    interval: String,
    latency_time: Option<String>,
    sample_note: Option<String>,
    slow: Option<slow::Slow>,
    spectrum: Option<String>,
    spectrum_note: String,
    breakdown: Option<Breakdown>,
    probed: Option<probes::Probed>,
    histograms: Vec<String>,
    /// The `streams` section (its id and heading as the page has always named them).
    streams: Option<EventGaps>,
    throughput: Option<String>,
    levels: Option<Levels>,
    knee: Option<Knee>,
    repetitions: Option<Repetitions>,
    bursts: Option<Bursts>,
    status: Vec<(String, u64, String)>,
    errors: Vec<(String, u64, String)>,
    resets: String,
    warnings: Vec<String>,
    /// (threshold, measured, pass|FAIL, note)
    thresholds: Vec<(String, String, &'static str, String)>,
    /// (name, value, monospaced)
    environment: Vec<(String, String, bool)>,
}

#[derive(Debug, Serialize)]
struct Toc {
    id: &'static str,
    title: &'static str,
}

#[derive(Debug, Serialize)]
struct PhaseRow {
    name: String,
    cells: Vec<PhaseCell>,
}

/// A figure of the phase table, with a percentile's 95% interval: its half-width as a share
/// of the figure (`±4%`, empty when the run cannot bound it) and, on hover, its bounds.
#[derive(Debug, Serialize)]
struct PhaseCell {
    text: String,
    pm: String,
    title: String,
}

#[derive(Debug, Serialize)]
struct Breakdown {
    svg: String,
    rows: Vec<Row>,
    /// The phases left out of the stack (not every request went through them).
    partial: String,
    /// Server-Timing labels (`level;desc="L1"`), in words.
    labels: Vec<String>,
}

/// Streamed responses: the gaps between events.
#[derive(Debug, Serialize)]
struct EventGaps {
    histogram: String,
    /// Per interval: p50, p99 and max of the gaps.
    over_time: Option<String>,
    /// Counts, the `--stream` mode and the first event, in words.
    note: String,
}

#[derive(Debug, Serialize)]
struct Levels {
    svg: String,
    rows: Vec<Row>,
}

#[derive(Debug, Serialize)]
struct Knee {
    svg: String,
    /// The steps that passed: step, and offered, achieved, p50, p90, p99, mean, errors, note.
    passed: Vec<Row>,
    /// The steps that did not: their figures, and why.
    failed: Vec<FailedStep>,
    answer: String,
    /// Which SLOs are drawn as lines (the latency ones of the total).
    drawn: String,
}

/// A step of a knee search that did not pass.
#[derive(Debug, Serialize)]
struct FailedStep {
    step: String,
    /// offered, achieved, p50, p99, errors
    cells: Vec<String>,
    /// `fail`, or `client limit` (the generator could not keep up).
    result: String,
    /// One reason per line.
    reasons: Vec<String>,
}

#[derive(Debug, Serialize)]
struct Repetitions {
    boxes: String,
    spectrum: String,
    rows: Vec<Row>,
    spread: Vec<Row>,
}

#[derive(Debug, Serialize)]
struct Bursts {
    note: String,
    svg: Option<String>,
    rows: Vec<Row>,
}

/// A statistic in µs, in its own unit, or `-`.
fn cell(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), |v| human(v * 1e3))
}

fn open_loop(r: &RunRecord) -> bool {
    r.config.load_model == LoadKind::Open
}

impl Page {
    fn of(r: &RunRecord) -> Page {
        let s = &r.summary;
        let c = &r.config;
        let mut page = Page {
            style: STYLE,
            title: format!("reqlife: {} {}", c.method, c.url),
            tool_version: r.tool.version.clone(),
            target: if c.embedded_target {
                format!("{} (the embedded target)", c.url)
            } else {
                c.url.clone()
            },
            header_lines: header_lines(r),
            interrupted: r.interrupted,
            stop_reason: r.stop_reason.text(),
            toc: Vec::new(),
            summary: summary(r),
            summary_note: r.knee.as_ref().map(|_| {
                "The figures of this page add up every step of the search, the ones that passed \
                 and the ones that failed; the Knee section shows each step apart."
                    .to_string()
            }),
            phase_heads: vec![
                "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max", "count",
            ],
            phases: phases(r),
            stages: stages(r),
            interval: human(c.interval_s * 1e9),
            latency_time: None,
            sample_note: None,
            slow: slow::slow(r),
            spectrum: None,
            spectrum_note: String::new(),
            breakdown: breakdown(r),
            probed: probes::probed(r),
            histograms: histograms(r),
            streams: event_gaps(r),
            throughput: throughput(r),
            levels: levels(r),
            knee: knee(r),
            repetitions: repetitions(r),
            bursts: bursts(r),
            status: status(r),
            errors: errors(r),
            resets: s
                .resets
                .iter()
                .map(|(code, n)| format!("{code}: {n}"))
                .collect::<Vec<_>>()
                .join(", "),
            warnings: s.warnings.clone(),
            thresholds: s
                .thresholds
                .iter()
                .map(|t| {
                    (
                        t.threshold.clone(),
                        t.shown.clone().unwrap_or_else(|| "-".into()),
                        t.result(),
                        t.note.clone().unwrap_or_default(),
                    )
                })
                .collect(),
            environment: environment(r),
        };
        (page.latency_time, page.sample_note) = latency_time(r);
        (page.spectrum, page.spectrum_note) = spectrum(r);
        page.toc = page.toc();
        page
    }

    /// The sections present, in page order.
    fn toc(&self) -> Vec<Toc> {
        let all = [
            ("summary", "Summary", true),
            ("knee", "Knee", self.knee.is_some()),
            ("repetitions", "Repetitions", self.repetitions.is_some()),
            (
                "latency-over-time",
                "Latency over time",
                self.latency_time.is_some(),
            ),
            ("slow-requests", "Slowest requests", self.slow.is_some()),
            ("spectrum", "Spectrum", self.spectrum.is_some()),
            ("breakdown", "Breakdown", self.breakdown.is_some()),
            ("server-probes", "Server, probed", self.probed.is_some()),
            ("histograms", "Histograms", !self.histograms.is_empty()),
            ("streams", "Streams", self.streams.is_some()),
            ("throughput", "Throughput", self.throughput.is_some()),
            ("levels", "Levels", self.levels.is_some()),
            ("bursts", "Bursts", self.bursts.is_some()),
            ("status", "Status codes", !self.status.is_empty()),
            ("errors", "Errors", !self.errors.is_empty()),
            ("thresholds", "Thresholds", !self.thresholds.is_empty()),
            ("warnings", "Warnings", !self.warnings.is_empty()),
            ("environment", "Environment", true),
        ];
        all.into_iter()
            .filter(|(_, _, present)| *present)
            .map(|(id, title, _)| Toc { id, title })
            .collect()
    }
}

#[cfg(test)]
mod tests;
