//! `--html FILE`: the report of a RunRecord as one self-contained HTML page: no script, no
//! external resource (styles inline, plots inline SVG from [`super::plot`]), readable offline,
//! light and dark (`prefers-color-scheme`), and printable (`@media print`). The page is a
//! minijinja template (`report.html.j2`) rendered with HTML auto-escaping, so every string
//! from the record (URL, headers, command line, Server-Timing names, error texts) is escaped;
//! only the SVGs, which plotters escapes itself, are inserted as they are.
//!
//! Sections, each with its id, present only when the record has their data: `summary`,
//! `latency-over-time`, `spectrum`, `breakdown`, `histograms`, `throughput`, `levels` (a
//! sweep), `bursts`, `status`, `errors`, `warnings`, `environment`.

mod figures;
mod tables;

use super::plot::human;
use crate::recorder::record::RunRecord;
use figures::*;
use serde::Serialize;
use tables::*;

const TEMPLATE: &str = include_str!("report.html.j2");

/// The page of `record`.
pub fn render(record: &RunRecord) -> Result<String, String> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // The name's `.html` turns auto-escaping on.
    env.add_template("report.html", TEMPLATE)
        .map_err(|e| format!("the HTML template is broken: {e}"))?;
    let page = Page::of(record);
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(&page)))
        .map_err(|e| format!("cannot render the HTML report: {e}"))
}

/// Writes the page of `record` to `path`.
pub fn write(record: &RunRecord, path: &std::path::Path) -> Result<(), String> {
    let page = render(record)?;
    std::fs::write(path, page).map_err(|e| unwritable(path, e))
}

/// Checks before a run that `path` can be written (then leaves it as it was): an error names
/// the file and why not.
pub fn check_writable(path: &std::path::Path) -> Result<(), String> {
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

fn unwritable(path: &std::path::Path, e: std::io::Error) -> String {
    format!(
        "cannot write the HTML report to '{}': {e}; give --html a file in a directory that exists and can be written",
        path.display()
    )
}

/// A table row: a name and its cells.
type Row = (String, Vec<String>);

/// Everything the template shows.
#[derive(Debug, Serialize)]
struct Page {
    title: String,
    tool_version: String,
    target: String,
    header_lines: Vec<String>,
    interrupted: bool,
    stop_reason: String,
    toc: Vec<Toc>,
    summary: Vec<(String, String)>,
    phase_heads: Vec<&'static str>,
    phases: Vec<PhaseRow>,
    stages: Vec<Vec<String>>,
    interval: String,
    latency_time: Option<String>,
    sample_note: Option<String>,
    spectrum: Option<String>,
    spectrum_note: String,
    breakdown: Option<Breakdown>,
    histograms: Vec<String>,
    throughput: Option<String>,
    levels: Option<Levels>,
    bursts: Option<Bursts>,
    status: Vec<(String, u64, String)>,
    errors: Vec<(String, u64, String)>,
    resets: String,
    warnings: Vec<String>,
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
    cells: Vec<String>,
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

#[derive(Debug, Serialize)]
struct Levels {
    svg: String,
    rows: Vec<Row>,
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
    r.config.load_model == "open"
}

impl Page {
    fn of(r: &RunRecord) -> Page {
        let s = &r.summary;
        let c = &r.config;
        let mut page = Page {
            title: format!("reqlife: {} {}", c.method, c.url),
            tool_version: r.tool.version.clone(),
            target: if c.embedded_target {
                format!("{} (the embedded target)", c.url)
            } else {
                c.url.clone()
            },
            header_lines: header_lines(r),
            interrupted: r.interrupted,
            stop_reason: r.stop_reason.clone(),
            toc: Vec::new(),
            summary: summary(r),
            phase_heads: vec![
                "min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max", "count",
            ],
            phases: phases(r),
            stages: stages(r),
            interval: human(c.interval_s * 1e9),
            latency_time: None,
            sample_note: None,
            spectrum: None,
            spectrum_note: String::new(),
            breakdown: breakdown(r),
            histograms: histograms(r),
            throughput: throughput(r),
            levels: levels(r),
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
            (
                "latency-over-time",
                "Latency over time",
                self.latency_time.is_some(),
            ),
            ("spectrum", "Spectrum", self.spectrum.is_some()),
            ("breakdown", "Breakdown", self.breakdown.is_some()),
            ("histograms", "Histograms", !self.histograms.is_empty()),
            ("throughput", "Throughput", self.throughput.is_some()),
            ("levels", "Levels", self.levels.is_some()),
            ("bursts", "Bursts", self.bursts.is_some()),
            ("status", "Status codes", !self.status.is_empty()),
            ("errors", "Errors", !self.errors.is_empty()),
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
