//! Rendering finished RunRecords: the text report ([`text`]), the HTML page ([`html`], its
//! plots in [`plot`]), the exports (the interval series as [`csv`], a phase's distribution as
//! [`hgrm`]), the summary JSON and the whole record as JSON. Every report works from a
//! [`RunRecord`] alone, so a saved run can be re-rendered later (`reqlife report`). The views
//! of a run while it goes (`--every`, `--live`, `--metrics-addr`) are [`crate::watch`]'s.

pub mod codes;
pub mod csv;
mod error;
#[cfg(test)]
pub(crate) mod fixture;
pub mod hgrm;
pub mod html;
pub mod plot;
pub mod text;

pub use error::ReportError;

use crate::model::{LoadKind, Phase, Protocol, Scheme};
use crate::recorder::record::{RunRecord, Summary};

/// A figure of one run's summary, as `--repeat`'s tables show it.
pub(crate) type RepetitionFigure = fn(&Summary) -> Option<f64>;

/// The figures `--repeat` compares across its runs (text and HTML): name, and how to read it.
pub(crate) const REPETITION_FIGURES: [(&str, RepetitionFigure); 6] = [
    ("req/s", |s| Some(s.throughput_rps)),
    ("p50", |s| s.latency.total.p50_us),
    ("p90", |s| s.latency.total.p90_us),
    ("p99", |s| s.latency.total.p99_us),
    ("p99.9", |s| s.latency.total.p999_us),
    ("mean", |s| s.latency.total.mean_us),
];

/// The rows of `r`'s phase table for the client phases of [`Phase::LIFE`]: each phase the run
/// has ([`phase_row`]) with its figures (the schedule lag's are `latency.schedule_lag`).
pub(crate) fn phase_rows(r: &RunRecord) -> Vec<(Phase, &crate::recorder::hist::Stats)> {
    let l = &r.summary.latency;
    Phase::LIFE
        .into_iter()
        .filter_map(|p| {
            let stats = match p {
                Phase::Lag => &l.schedule_lag,
                _ => l.phases.get(&p)?,
            };
            phase_row(r, p, stats).then_some((p, stats))
        })
        .collect()
}

/// Whether the phase table of `r` (text and HTML) has a row for client phase `phase`: rows
/// that can only be empty are left out.
pub(crate) fn phase_row(r: &RunRecord, phase: Phase, stats: &crate::recorder::hist::Stats) -> bool {
    let empty = stats.count == 0;
    let h3 = r.config.protocol == Protocol::H3;
    let skip = match phase {
        // A closed loop has no queue and no lag (a request is intended when its connection is
        // free).
        Phase::Queue | Phase::Lag => r.config.load_model != LoadKind::Open,
        // Only requests that waited for an HTTP/2 stream, or sent Expect: 100-continue, have
        // one.
        Phase::StreamWait | Phase::Continue | Phase::WsUpgrade => empty,
        // Plain HTTP has no TLS; HTTP/3 has no TCP connect and no TLS apart from the QUIC
        // handshake.
        Phase::Tls => empty && (r.config.scheme() != Some(Scheme::Https) || h3),
        Phase::Connect => empty && h3,
        Phase::H2Handshake => !r.config.protocol.over_h2(),
        // Bodies are decoded only with --compressed.
        Phase::Decode => empty,
        _ => false,
    };
    !skip
}

/// The summary JSON printed by `--json`: the `summary` object of the record; for a sweep,
/// with a `levels` array of each level's label, connections, offered rate and summary.
pub fn summary_json(record: &RunRecord) -> String {
    let mut value = serde_json::to_value(&record.summary).expect("the summary serializes");
    if !record.levels.is_empty() {
        let levels: Vec<serde_json::Value> = record
            .levels
            .iter()
            .map(|l| {
                serde_json::json!({
                    "label": l.label,
                    "connections": l.connections,
                    "offered_rps": l.offered_rps,
                    "summary": l.summary,
                })
            })
            .collect();
        value["levels"] = serde_json::Value::Array(levels);
    }
    serde_json::to_string_pretty(&value).expect("the summary serializes")
}

/// The report to print: the summary JSON with `json`, else the text report.
pub fn render(record: &RunRecord, json: bool, opts: text::TextOptions) -> String {
    if json {
        summary_json(record) + "\n"
    } else {
        text::render(record, opts)
    }
}

/// The whole record as JSON (`-o FILE`).
pub fn record_json(record: &RunRecord) -> String {
    serde_json::to_string_pretty(record).expect("the record serializes")
}
