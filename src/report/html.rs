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

use super::plot::{self, boxes::BoxStats, breakdown::Segment, human, spectrum::Curve};
use crate::analysis::summary::Log2Hist;
use crate::recorder::hist::Stats;
use crate::recorder::record::RunRecord;
use serde::Serialize;

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

fn header_lines(r: &RunRecord) -> Vec<String> {
    let c = &r.config;
    let mut out = Vec::new();
    let what = match (c.duration_s, c.requests) {
        (Some(d), _) => format!("{} test", human(d * 1e9)),
        (None, Some(n)) => format!("{n}-request test"),
        (None, None) => "test".into(),
    };
    out.push(match &c.sweep {
        Some(sw) => format!(
            "{what}, a sweep of {} over {} levels; {} {}, {} loop",
            sw.of,
            sw.levels.len(),
            c.method,
            c.protocol,
            c.load_model
        ),
        None => format!(
            "{what}; {} threads and {} connections, {} {}, {} loop",
            c.threads, c.connections, c.method, c.protocol, c.load_model
        ),
    });
    if let (Some(rate), None) = (c.rate_rps, &c.sweep) {
        out.push(format!(
            "offered {rate} req/s, {} arrivals (seed {})",
            c.arrival.as_deref().unwrap_or("constant"),
            c.seed
        ));
    }
    out.push(format!("started {}", r.environment.start_time));
    out
}

fn summary(r: &RunRecord) -> Vec<(String, String)> {
    let s = &r.summary;
    let t = &s.latency.total;
    let kv = |k: &str, v: String| (k.to_string(), v);
    let mut out = vec![
        kv(
            "requests",
            format!(
                "{} in all: {} responses, {} errors, {} not 2xx/3xx",
                s.requests.total, s.requests.ok, s.requests.errors, s.requests.non_2xx_3xx
            ),
        ),
        kv("recorded", format!("{:.2} s", s.duration_s)),
        kv("throughput", format!("{:.1} req/s", s.throughput_rps)),
        kv(
            "latency (total)",
            format!(
                "p50 {}, p99 {}, p99.9 {}, max {}",
                cell(t.p50_us),
                cell(t.p99_us),
                cell(t.p999_us),
                cell(t.max_us)
            ),
        ),
        kv(
            "bytes",
            format!(
                "read {} ({}/s), written {}",
                crate::cli::units::human_bytes(s.bytes.read as f64),
                crate::cli::units::human_bytes(s.bytes.read_per_s),
                crate::cli::units::human_bytes(s.bytes.written as f64)
            ),
        ),
        kv(
            "connections",
            format!(
                "{} opened, {} closed by the server after a response",
                s.connections.opened, s.connections.server_closes
            ),
        ),
    ];
    if let Some(offered) = s.generator.offered_rps {
        out.push(kv("offered", format!("{offered} req/s")));
    }
    if let Some(m) = s.h2_max_concurrent_streams {
        out.push(kv(
            "HTTP/2",
            format!(
                "the server allows {m} concurrent streams per connection; {} asked",
                r.config.streams
            ),
        ));
    }
    if !s.generator.thread_busy.is_empty() {
        let busy: Vec<String> = s
            .generator
            .thread_busy
            .iter()
            .map(|b| format!("{:.0}%", b * 100.0))
            .collect();
        out.push(kv("worker threads on a CPU", busy.join(", ")));
    }
    out
}

/// The rows of the phase table, with the text report's rules: no queue in a closed loop, no
/// TLS on plain HTTP, no h2_handshake on HTTP/1.1.
fn phases(r: &RunRecord) -> Vec<PhaseRow> {
    let l = &r.summary.latency;
    let open = open_loop(r);
    let mut rows: Vec<(&str, &Stats)> = Vec::new();
    for name in [
        "queue",
        "connect",
        "tls",
        "h2_handshake",
        "write",
        "wait",
        "read",
    ] {
        let Some(st) = l.phases.get(name) else {
            continue;
        };
        let skip = (name == "queue" && !open)
            || (name == "tls" && st.count == 0 && !r.config.url.starts_with("https"))
            || (name == "h2_handshake" && r.config.protocol == "http/1.1");
        if !skip {
            rows.push((name, st));
        }
    }
    rows.push(("total", &l.total));
    if open {
        rows.push(("uncorrected", &l.uncorrected));
        rows.push(("schedule lag", &l.schedule_lag));
    }
    rows.into_iter()
        .map(|(name, s)| PhaseRow {
            name: name.to_string(),
            cells: [
                s.min_us, s.mean_us, s.p50_us, s.p90_us, s.p99_us, s.p999_us, s.p9999_us, s.max_us,
            ]
            .iter()
            .map(|v| cell(*v))
            .chain([s.count.to_string()])
            .collect(),
        })
        .collect()
}

fn stages(r: &RunRecord) -> Vec<Vec<String>> {
    r.stages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = &s.latency.total;
            vec![
                (i + 1).to_string(),
                format!("{:.1} s", s.start_s),
                s.label.clone(),
                s.requests.total.to_string(),
                format!("{:.1}", s.throughput_rps),
                cell(t.p50_us),
                cell(t.p90_us),
                cell(t.p99_us),
                cell(t.p999_us),
                s.requests.errors.to_string(),
            ]
        })
        .collect()
}

/// The latency-over-time plot and the words on its scatter, when some interval has
/// responses.
fn latency_time(r: &RunRecord) -> (Option<String>, Option<String>) {
    let bands: Vec<plot::latency_time::Band> = r
        .intervals
        .iter()
        .filter_map(|i| {
            let t = i.latency.get("total").filter(|t| t.count > 0)?;
            Some(plot::latency_time::Band {
                start_s: i.start_s,
                end_s: i.start_s + i.duration_s,
                p50_ns: t.p50_us * 1e3,
                p99_ns: t.p99_us * 1e3,
                max_ns: t.max_us * 1e3,
            })
        })
        .collect();
    let samples: Vec<(f64, f64)> = r
        .samples
        .iter()
        .flat_map(|s| {
            s.at_us
                .iter()
                .zip(&s.total_ns)
                .map(|(&t, &v)| (t as f64 / 1e6, v as f64))
        })
        .collect();
    if bands.is_empty() && samples.is_empty() {
        return (None, None);
    }
    let note = r.samples.as_ref().map(|s| {
        if s.at_us.len() as u64 == s.seen {
            format!("every one of the {} responses (dots)", s.seen)
        } else {
            format!(
                "a uniform random sample of {} of the {} responses (dots)",
                s.at_us.len(),
                s.seen
            )
        }
    });
    (Some(plot::latency_time::svg(&bands, &samples)), note)
}

/// The spectrum: one curve per level of a sweep, else the total (and the uncorrected latency
/// of an open loop).
fn spectrum(r: &RunRecord) -> (Option<String>, String) {
    let decode = |text: Option<&String>| text.and_then(|t| crate::recorder::hist::decode(t).ok());
    let (curves, note): (Vec<Curve>, &str) = if r.levels.is_empty() {
        let mut names = vec![("total", "total (from the intended send time)")];
        if open_loop(r) {
            names.push(("uncorrected", "uncorrected (from the actual send)"));
        }
        let curves = names
            .into_iter()
            .filter_map(|(key, label)| Curve::of_hist(label, &decode(r.histograms.get(key))?))
            .collect();
        (curves, "")
    } else {
        let curves = r
            .levels
            .iter()
            .filter_map(|l| Curve::of_hist(&l.label, &decode(l.histograms.get("total"))?))
            .collect();
        (curves, "One curve per level of the sweep.")
    };
    if curves.is_empty() {
        return (None, String::new());
    }
    (Some(plot::spectrum::svg(&curves)), note.to_string())
}

/// The stacked bars and the breakdown table, when responses were recorded: client phases up
/// to the request written, the server's metrics (its parts, or its total when it lists no
/// parts), the network and client overhead (wait − server total) or the wait, then read.
fn breakdown(r: &RunRecord) -> Option<Breakdown> {
    let s = &r.summary;
    let total = &s.latency.total;
    if total.count == 0 {
        return None;
    }
    let mut phases: Vec<(String, &Stats)> = Vec::new();
    let open = open_loop(r);
    for name in ["queue", "connect", "tls", "h2_handshake", "write"] {
        match s.latency.phases.get(name) {
            Some(st) if name != "queue" || open => phases.push((name.to_string(), st)),
            _ => {}
        }
    }
    let server_total = s.server_timing.get(&s.server_timing_total);
    if s.server_timing_responses > 0 {
        let parts: Vec<&String> = s
            .server_timing_order
            .iter()
            .filter(|n| **n != s.server_timing_total)
            .collect();
        let stacked = if parts.is_empty() {
            vec![&s.server_timing_total]
        } else {
            parts
        };
        for name in stacked {
            if let Some(st) = s.server_timing.get(name) {
                phases.push((format!("server {name}"), st));
            }
        }
        phases.push((
            "network+client (wait − server total)".into(),
            &s.server_timing_overhead,
        ));
    } else if let Some(st) = s.latency.phases.get("wait") {
        phases.push(("wait".into(), st));
    }
    if let Some(st) = s.latency.phases.get("read") {
        phases.push(("read".into(), st));
    }
    phases.retain(|(_, st)| st.count > 0);
    // A phase every response went through is stacked; one that only some went through
    // (connect, with keep-alive) has no value at the typical request: in the table only.
    let every = s.requests.ok;
    let ns = |st: &Stats| [st.p50_us, st.p90_us, st.p99_us].map(|v| v.unwrap_or(0.0) * 1e3);
    let (whole, partial): (Vec<_>, Vec<_>) = phases.iter().partition(|(_, st)| st.count >= every);
    let stacked: Vec<Segment> = whole
        .iter()
        .map(|(name, st)| Segment {
            name: name.clone(),
            ns: ns(st),
        })
        .collect();
    let mut rows = phases.clone();
    if let (true, Some(st)) = (s.server_timing_responses > 0, server_total) {
        // In the table beside its parts; not stacked twice.
        rows.push((format!("server {} (its total)", s.server_timing_total), st));
    }
    rows.push(("total".into(), total));
    let p50_total = total.p50_us.unwrap_or(0.0);
    let table = rows
        .into_iter()
        .map(|(name, st)| {
            let share = match st.p50_us {
                Some(v) if st.count >= every && p50_total > 0.0 => {
                    format!("{:.1}%", 100.0 * v / p50_total)
                }
                _ => "-".into(),
            };
            let cells = [st.p50_us, st.p90_us, st.p99_us, st.p999_us, st.p9999_us]
                .iter()
                .map(|v| cell(*v))
                .chain([st.count.to_string(), share])
                .collect();
            (name, cells)
        })
        .collect();
    let labels = s
        .server_timing_labels
        .iter()
        .map(|(name, descs)| {
            let all: u64 = descs.values().sum();
            let parts: Vec<String> = descs
                .iter()
                .map(|(d, n)| format!("{d} {:.1}%", 100.0 * *n as f64 / all.max(1) as f64))
                .collect();
            format!("Server-Timing {name}: {}", parts.join(", "))
        })
        .collect();
    let partial: Vec<String> = partial.iter().map(|(n, _)| n.clone()).collect();
    Some(Breakdown {
        svg: plot::breakdown::svg(&stacked, ns(total)),
        rows: table,
        partial: if partial.is_empty() {
            "none here".into()
        } else {
            partial.join(", ")
        },
        labels,
    })
}

/// One log2 histogram per phase and server metric that recorded something.
fn histograms(r: &RunRecord) -> Vec<String> {
    let open = open_loop(r);
    let mut names: Vec<(String, String)> = [
        "queue",
        "connect",
        "tls",
        "h2_handshake",
        "write",
        "wait",
        "read",
        "total",
        "uncorrected",
        "schedule_lag",
    ]
    .iter()
    .filter(|n| open || !matches!(**n, "queue" | "uncorrected" | "schedule_lag"))
    .map(|n| (n.to_string(), n.replace('_', " ")))
    .collect();
    for m in &r.summary.server_timing_order {
        names.push((format!("server_timing.{m}"), format!("server {m}")));
    }
    names
        .into_iter()
        .filter_map(|(key, title)| {
            let h = r.histogram(&key).ok().filter(|h| !h.is_empty())?;
            Some(plot::histogram::svg(&title, &Log2Hist::of_hist(&h)))
        })
        .collect()
}

fn throughput(r: &RunRecord) -> Option<String> {
    if r.intervals.is_empty() {
        return None;
    }
    let rates: Vec<plot::throughput::Rate> = r
        .intervals
        .iter()
        .map(|i| plot::throughput::Rate {
            start_s: i.start_s,
            end_s: i.start_s + i.duration_s,
            completed_per_s: i.throughput_rps,
            errors_per_s: if i.duration_s > 0.0 {
                i.errors as f64 / i.duration_s
            } else {
                0.0
            },
        })
        .collect();
    let offered = r.summary.generator.offered_rps.or(r.config.rate_rps);
    let offered = if r.levels.is_empty() { offered } else { None };
    Some(plot::throughput::svg(&rates, offered))
}

fn levels(r: &RunRecord) -> Option<Levels> {
    if r.levels.is_empty() {
        return None;
    }
    let boxes: Vec<BoxStats> = r
        .levels
        .iter()
        .filter_map(|l| {
            let h = crate::recorder::hist::decode(l.histograms.get("total")?).ok()?;
            BoxStats::of_hist(&l.label, &h)
        })
        .collect();
    let rows = r
        .levels
        .iter()
        .map(|l| {
            let t = &l.summary.latency.total;
            let offered = l.offered_rps.map_or("-".into(), |o| format!("{o:.0}"));
            let cells = vec![
                offered,
                format!("{:.1}", l.summary.throughput_rps),
                cell(t.p50_us),
                cell(t.p90_us),
                cell(t.p99_us),
                cell(t.p999_us),
                cell(t.max_us),
                l.summary.requests.errors.to_string(),
            ];
            (l.label.clone(), cells)
        })
        .collect();
    Some(Levels {
        svg: plot::boxes::svg(&boxes, "level"),
        rows,
    })
}

fn bursts(r: &RunRecord) -> Option<Bursts> {
    let b = r.summary.bursts.as_ref()?;
    let boxes: Vec<BoxStats> = [
        ("burst_dispatch", "dispatch all (connect + write)"),
        ("burst_wait", "wait for all answers"),
    ]
    .iter()
    .filter_map(|(key, label)| BoxStats::of_hist(label, &r.histogram(key).ok()?))
    .collect();
    let us = |v: f64| human(v * 1e3);
    let rows = [
        ("dispatch all (connect + write)", &b.dispatch),
        ("wait for all answers", &b.wait),
    ]
    .iter()
    .map(|(name, s)| {
        (
            name.to_string(),
            vec![us(s.mean_us), us(s.p50_us), us(s.p95_us), us(s.max_us)],
        )
    })
    .collect();
    Some(Bursts {
        note: format!(
            "{} bursts of {} requests, {} apart (one thread).",
            b.count,
            b.size,
            human(b.interval_s * 1e9)
        ),
        svg: (!boxes.is_empty()).then(|| plot::boxes::svg(&boxes, "per burst")),
        rows,
    })
}

fn status(r: &RunRecord) -> Vec<(String, u64, String)> {
    let all: u64 = r.summary.status.values().sum();
    r.summary
        .status
        .iter()
        .map(|(code, n)| {
            (
                code.clone(),
                *n,
                format!("{:.2}%", 100.0 * *n as f64 / all.max(1) as f64),
            )
        })
        .collect()
}

fn errors(r: &RunRecord) -> Vec<(String, u64, String)> {
    r.summary
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(kind, n)| {
            (
                kind.clone(),
                *n,
                r.first_errors.get(kind).cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// Where and how the run was made: enough to run it again.
fn environment(r: &RunRecord) -> Vec<(String, String, bool)> {
    let e = &r.environment;
    let c = &r.config;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut out: Vec<(String, String, bool)> = vec![
        ("command line".into(), shell_words(&c.command_line), true),
        ("reqlife".into(), e.tool_version.clone(), false),
        (
            "host".into(),
            format!("{} ({} cores, {} {})", e.hostname, e.cores, e.os, e.arch),
            false,
        ),
        ("kernel".into(), e.kernel.clone(), false),
        ("started".into(), e.start_time.clone(), false),
        ("stop".into(), r.stop_reason.clone(), false),
        ("url".into(), c.url.clone(), true),
        (
            "request".into(),
            format!("{} {}, body {} bytes", c.method, c.protocol, c.body_bytes),
            false,
        ),
    ];
    for (name, value) in &c.headers {
        out.push(("header".into(), format!("{name}: {value}"), true));
    }
    let flags = [
        ("connections", c.connections.to_string()),
        ("threads", c.threads.to_string()),
        ("streams per connection", c.streams.to_string()),
        ("duration", opt(c.duration_s.map(|d| format!("{d} s")))),
        ("requests", opt(c.requests.map(|n| n.to_string()))),
        ("warm-up", format!("{} s", c.warmup_s)),
        ("timeout", format!("{} s", c.timeout_s)),
        ("interval", format!("{} s", c.interval_s)),
        ("load model", c.load_model.clone()),
        ("rate", opt(c.rate_rps.map(|r| format!("{r} req/s")))),
        ("arrival", opt(c.arrival.clone())),
        ("seed", c.seed.to_string()),
        ("connection policy", c.connection_policy.clone()),
        (
            "max connections per second",
            opt(c.max_connections_per_second.map(|v| v.to_string())),
        ),
        ("insecure TLS", c.insecure.to_string()),
        ("CA certificates", opt(c.cacert.clone())),
        (
            "sweep",
            opt(c.sweep.as_ref().map(|s| {
                let levels: Vec<String> = s.levels.iter().map(|v| v.to_string()).collect();
                format!("{}: {}", s.of, levels.join(", "))
            })),
        ),
    ];
    out.extend(flags.into_iter().map(|(k, v)| (k.to_string(), v, false)));
    out
}

/// The command line as a shell would take it back: words with spaces or quotes quoted.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
