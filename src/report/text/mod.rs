//! The text report, like wrk's but complete: a header, requests, throughput and bytes, one
//! row per phase (min, mean, p50, p90, p99, p99.9, p99.99, max in human units), status codes,
//! errors by kind with the first error of each kind in words, and with `--latency` the
//! percentile spectrum of HdrHistogram / wrk2.

use crate::analysis::describe::{Description, Log2Hist};
use crate::model::{LoadKind, Phase, Protocol};
use crate::recorder::hist::Stats;
use crate::recorder::record::RunRecord;
use crate::util::units::{human_bytes, human_ns};
use breakdown::breakdown;
use header::header;
pub use header::start_header;
use std::fmt::Write as _;
use steps::{bursts, by_request, knee, levels, repetitions, stages, thresholds};

mod breakdown;
pub mod compare;
mod header;
mod precision;
mod probes;
mod slow;
mod steps;
#[cfg(test)]
mod tests;
mod validity;
pub mod wrap;

/// What to include.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextOptions {
    /// Add the full percentile spectrum of the total latency.
    pub latency: bool,
    /// Add every phase's summary, quantiles and log2 histogram, and show the wide tables
    /// (every percentile, min and mean) unwrapped; without it the report fits 80 columns.
    pub detail: bool,
    /// The run's header is already on the terminal the report goes to (printed as the run
    /// started): the report leaves it out, as wrk's does.
    pub header_shown: bool,
}

/// Renders the text report of `record`.
pub fn render(record: &RunRecord, opts: TextOptions) -> String {
    let mut out = String::new();
    let wide = opts.detail;
    header(&mut out, record, opts.header_shown);
    validity::line(&mut out, record);
    // A server that stopped answering is said first: every figure below depends on it.
    let top = crate::recorder::record::stopped_answering(record);
    if let Some(w) = &top {
        let _ = writeln!(out, "\n  WARNING: {w}");
    }
    totals(&mut out, record);
    if record.levels.is_empty() {
        repetitions(&mut out, record, wide);
        phases(&mut out, record, wide);
        precision::precision(&mut out, record);
        precision::until(&mut out, "", &record.summary);
        breakdown(&mut out, record, wide);
        probes::server_probes(&mut out, record, wide);
        by_request(&mut out, "", &record.summary, wide);
    } else if let Some(k) = &record.knee {
        knee(&mut out, k, wide);
    } else {
        levels(&mut out, record, wide);
        precision::levels_until(&mut out, record);
        for l in &record.levels {
            by_request(&mut out, &format!("{}: ", l.label), &l.summary, wide);
        }
    }
    stages(&mut out, record, wide);
    bursts(&mut out, record);
    statuses_and_errors(&mut out, record);
    warnings(&mut out, record, top.as_deref());
    thresholds(&mut out, record);
    if opts.detail {
        detail(&mut out, record);
        slow::slow_requests(&mut out, record.slow_requests.as_ref());
    }
    if opts.latency {
        match record.histogram("total") {
            Ok(h) => spectrum(&mut out, &h),
            Err(e) => {
                let _ = writeln!(out, "\n  (no percentile spectrum: {e})");
            }
        }
    }
    if wide {
        out
    } else {
        wrap::fit(&out, wrap::WIDTH)
    }
}

fn totals(out: &mut String, r: &RunRecord) {
    let s = &r.summary;
    let _ = writeln!(out);
    // A knee search's steps, a sweep's levels: the lines below add them up, as one run would
    // not (each at its own rate or connections); their own figures are in the table after.
    if !r.levels.is_empty() {
        let (what, table) = match r.knee {
            Some(_) => ("step", "the knee search's table"),
            None => ("level", "the levels' table"),
        };
        let _ = writeln!(
            out,
            "  All {} together (each one's own rate, connections and latency: {table} below)",
            crate::util::units::counted(r.levels.len() as u64, what)
        );
    }
    let _ = writeln!(
        out,
        "  Requests     {} total, {} ok, {}, {} non-2xx/3xx in {:.2}s",
        s.requests.total,
        s.requests.ok,
        crate::util::units::counted(s.requests.errors, "error"),
        s.requests.non_2xx_3xx,
        s.duration_s
    );
    // What the throughput divides: the requests that ended within the window (all of them
    // failures when none was answered: said, so that the rate is not taken for the server's).
    let ended = s.requests.total.saturating_sub(s.end.drained);
    let basis = match s.end.drained {
        _ if s.requests.ok == 0 && ended > 0 => format!(
            " (the {ended} that ended within the {:.2}s, all failed: none answered)",
            s.duration_s
        ),
        0 => String::new(),
        _ => format!(" (the {ended} that ended within the {:.2}s)", s.duration_s),
    };
    // Some failed and some were answered: the answered rate first, the attempts' apart (a
    // server refusing connections fails them fast, and would pass for a fast server).
    let rate = if s.requests.errors == 0 || s.requests.ok == 0 {
        format!("{:.2} req/s{basis}", s.throughput_rps)
    } else {
        format!(
            "{:.2} req/s answered, {:.2} req/s attempted (the {ended} that ended within the \
             {:.2}s; {} failed)",
            s.answered_rps, s.throughput_rps, s.duration_s, s.requests.errors
        )
    };
    let _ = writeln!(
        out,
        "  Throughput   {rate}; read {} ({}/s), written {}",
        human_bytes(s.bytes.read as f64),
        human_bytes(s.bytes.read_per_s),
        human_bytes(s.bytes.written as f64)
    );
    if !s.end.is_empty() {
        let e = &s.end;
        // No connection opened and nothing written: those in flight were still connecting.
        let connecting = s.connections.opened == 0 && s.bytes.written == 0 && e.in_flight > 0;
        let waiting = if connecting {
            " (connecting: no connection opened, nothing sent)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "  End          {} ended in the drain ({} after the window, {} timed out), {} still in flight{}, {} due but never sent",
            e.drained,
            human_ns(e.drain_s * 1e9),
            e.drain_timeouts,
            e.in_flight,
            waiting,
            e.not_sent
        );
    }
    traffic(out, s, r.config.protocol);
    let _ = writeln!(
        out,
        "  Connections  {} opened, {} closed by the server after a response",
        s.connections.opened, s.connections.server_closes
    );
    super::codes::websocket(out, s);
    super::codes::ws_deflate(out, s);
    pacer(out, r);
    if let Some(m) = s.h2_max_concurrent_streams {
        let _ = writeln!(
            out,
            "  HTTP/2       the server allows {m} concurrent streams per connection; {} asked",
            r.config.streams
        );
    }
}

/// h2load's traffic line: all bytes read, the header bytes as received and (HTTP/2) what HPACK
/// saved, the body bytes; with `--compressed`, what the bodies decoded to. HTTP/1.1 headers are
/// not compressed: no savings to show. Headers and data are counted as responses complete:
/// when some did not (`/fault/drip`'s, cut by the timeout), the bytes read of them are said
/// apart, not left to read as "0B headers".
fn traffic(out: &mut String, s: &crate::recorder::record::Summary, protocol: Protocol) {
    let b = &s.bytes;
    let both = |n: u64| format!("{} ({n})", human_bytes(n as f64));
    let _ = write!(
        out,
        "  Traffic      {} total, {} headers",
        both(b.read),
        both(b.headers)
    );
    if protocol.is_h2() {
        let _ = write!(out, " (space savings {:.2}%)", b.header_saving() * 100.0);
    }
    let _ = write!(out, ", {} data", both(b.body));
    if b.body_decoded != b.body {
        let _ = write!(out, ", decoded to {}", both(b.body_decoded));
    }
    let rest = b.read.saturating_sub(b.headers + b.body);
    if s.requests.errors > 0 && rest > 0 {
        let _ = write!(
            out,
            ", {} more in responses that did not complete (and framing)",
            both(rest)
        );
    }
    out.push('\n');
}

/// The figure of `st` a column is headed with (`min`, `mean`, `p50` … `p99.99`, `max`).
fn figure(st: &Stats, head: &str) -> Option<f64> {
    match head {
        "min" => st.min_us,
        "mean" => st.mean_us,
        "p50" => st.p50_us,
        "p90" => st.p90_us,
        "p99" => st.p99_us,
        "p99.9" => st.p999_us,
        "p99.99" => st.p9999_us,
        _ => st.max_us,
    }
}

/// The value of an optional microsecond statistic in human units.
fn cell(v: Option<f64>) -> String {
    v.map(|us| human_ns(us * 1000.0))
        .unwrap_or_else(|| "-".into())
}

/// The client's phases, a row each (`wide`: every figure).
fn phases(out: &mut String, r: &RunRecord, wide: bool) {
    let l = &r.summary.latency;
    let _ = writeln!(out);
    let open_loop = r.config.load_model == LoadKind::Open;
    let mut rows: Vec<(&str, &Stats)> = super::phase_rows(r)
        .into_iter()
        .map(|(p, stats)| (p.name(), stats))
        .collect();
    rows.push(("total", &l.total));
    if open_loop {
        rows.push(("uncorrected", &l.uncorrected));
    }
    // Streamed responses (`--stream`), pings (`--ws-ping`): after total, as they are not
    // parts of it.
    for p in Phase::APART {
        if let Some(stats) = l.phases.get(&p) {
            rows.push((p.name(), stats));
        }
    }
    // The name column fits the longest name (`quic_handshake`), 12 at least. Wide: every
    // figure; else those that fit 80 columns (the mean, p50 to p99.9, the max).
    let w = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(0).max(12);
    let heads: &[&str] = if wide {
        &["min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"]
    } else {
        &["mean", "p50", "p90", "p99", "p99.9", "max"]
    };
    let cw = if wide { 10 } else { 9 };
    let counts: Vec<u64> = rows.iter().map(|(_, s)| s.count).collect();
    let mut head = format!("  {:<w$}", "Phase");
    for h in heads {
        let _ = write!(head, "{h:>cw$}");
    }
    let _ = writeln!(out, "{head}{:>n$}", "count", n = cw + 1);
    for (name, s) in rows {
        // `events` is a count per response, held as microseconds: shown as numbers.
        let cell = |v: Option<f64>| match v {
            Some(n) if name == "events" => format!("{n}"),
            v => cell(v),
        };
        let _ = write!(out, "  {name:<w$}");
        for h in heads {
            let _ = write!(
                out,
                "{:>cw$}",
                validity::mark(cell(figure(s, h)), s.count, h, cw)
            );
        }
        let _ = writeln!(out, "{:>n$}", s.count, n = cw + 1);
    }
    validity::footnote(out, &counts, heads);
}

/// The rows of the life of a request before the server's metrics: each wait apart, whose it
/// is (the generator's lag, the queue for a free connection, the waits for an HTTP/2 stream
/// and a 100 Continue: the server's), with the connection's opening; those the run recorded.
fn waits_and_opening(r: &RunRecord) -> Vec<(Phase, &Stats)> {
    let l = &r.summary.latency;
    let open_loop = r.config.load_model == LoadKind::Open;
    Phase::LIFE
        .into_iter()
        .take_while(|p| *p != Phase::Write)
        .filter(|p| *p != Phase::H2Handshake)
        .filter_map(|p| {
            let st = match p {
                Phase::Lag => &l.schedule_lag,
                _ => l.phases.get(&p)?,
            };
            let shown = st.count > 0 && (!matches!(p, Phase::Queue | Phase::Lag) || open_loop);
            shown.then_some((p, st))
        })
        .collect()
}

/// An open loop's pacer: how late it let requests go (its precision) and what that cost (the
/// share of a core it spun to be on time, against its budget).
fn pacer(out: &mut String, r: &RunRecord) {
    let Some(budget) = r.config.pacer_spin else {
        return;
    };
    let lag = &r.summary.latency.schedule_lag;
    let spun = r
        .summary
        .generator
        .pacer_spin
        .iter()
        .cloned()
        .fold(0.0, f64::max);
    let _ = writeln!(
        out,
        "  Pacer        lag p50 {}, p99 {}; spun {:.1}% of a core ({:.0}% allowed)",
        cell(lag.p50_us),
        cell(lag.p99_us),
        100.0 * spun,
        100.0 * budget
    );
}

fn statuses_and_errors(out: &mut String, r: &RunRecord) {
    let s = &r.summary;
    let _ = writeln!(out);
    let codes: Vec<String> = s.status.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    let codes = if codes.is_empty() {
        "none".to_string()
    } else {
        codes.join(", ")
    };
    let _ = writeln!(out, "  Status codes {codes}");
    super::codes::grpc(out, s);
    let errors: Vec<(&String, &u64)> = s.errors.iter().filter(|(_, n)| **n > 0).collect();
    if errors.is_empty() {
        let _ = writeln!(out, "  Errors       none");
        return;
    }
    let _ = writeln!(out, "  Errors       {} in all", s.requests.errors);
    super::codes::resets(out, s);
    for (kind, n) in errors {
        match r.first_errors.get(kind) {
            Some(first) => {
                let _ = writeln!(out, "    {kind:<14} {n:>10}   first: {first}");
            }
            None => {
                let _ = writeln!(out, "    {kind:<14} {n:>10}");
            }
        }
    }
}

/// The record's warnings, but `shown` (said at the top already).
fn warnings(out: &mut String, r: &RunRecord, shown: Option<&str>) {
    let rest: Vec<&String> = (r.summary.warnings.iter())
        .filter(|w| Some(w.as_str()) != shown)
        .collect();
    if rest.is_empty() {
        return;
    }
    let _ = writeln!(out);
    for w in rest {
        let _ = writeln!(out, "  WARNING: {w}");
    }
}

/// For each client phase, the total and each server metric: R's summary(), the quantiles
/// and a log2 histogram of nanoseconds, from the record's histograms.
fn detail(out: &mut String, r: &RunRecord) {
    let mut names: Vec<(String, String)> = Phase::CLIENT
        .iter()
        .chain([&Phase::Total])
        .map(|p| (p.name().to_string(), p.name().to_string()))
        .collect();
    for m in &r.summary.server_timing_order {
        names.push((format!("server_timing.{m}"), format!("server {m}")));
    }
    for (key, title) in names {
        let Ok(h) = r.histogram(&key) else { continue };
        let Some(s) = Description::of_hist(&h, 1e-3) else {
            continue;
        };
        let _ = writeln!(out);
        let _ = writeln!(out, "  {title} (microseconds; histogram in nanoseconds)");
        s.render(out, " us");
        Log2Hist::of_hist(&h).render(out);
    }
}

/// The percentile spectrum in the layout of HdrHistogram's `outputPercentileDistribution`
/// (as wrk2 prints it), values in milliseconds.
pub fn spectrum(out: &mut String, h: &hdrhistogram::Histogram<u64>) {
    let ms = |ns: u64| ns as f64 / 1e6;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  Latency Distribution (HdrHistogram - Recorded Latency)"
    );
    for q in [0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 0.99999, 1.0] {
        let _ = writeln!(
            out,
            " {:>7.3}%  {:>10}",
            q * 100.0,
            if h.is_empty() {
                "-".to_string()
            } else {
                human_ns(h.value_at_quantile(q) as f64)
            }
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "  Detailed Percentile spectrum:");
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut cumulative = 0u64;
    for v in h.iter_quantiles(5) {
        cumulative += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let inv = if q < 1.0 {
            format!("{:>14.2}", 1.0 / (1.0 - q))
        } else {
            format!("{:>14}", "inf")
        };
        let _ = writeln!(
            out,
            "{:>12.3} {:>14.12} {:>10} {}",
            ms(v.value_iterated_to()),
            q,
            cumulative,
            inv
        );
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / 1e6,
        h.stdev() / 1e6
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        ms(h.max()),
        h.len()
    );
}
