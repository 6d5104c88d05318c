//! The slow requests of a record, kept whole (`recorder::exemplar`): the slowest by total and by
//! each phase, and the kept request nearest each printed percentile of the total, each with its
//! phases, status, connection, name, `Server-Timing` and trace id; each interval's slowest.

use crate::model::Phase;
use crate::recorder::exemplar::{Exemplar, Exemplars};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The percentiles of the total a kept request is found near (the report's).
pub const NEAR: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

/// One request kept whole.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SlowRequest {
    /// When it was due, seconds from the start of recording.
    pub due_s: f64,
    /// Its phases (by name), ns.
    pub phases_ns: BTreeMap<String, u64>,
    /// The status of its complete response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Why it failed (an error kind's name), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its request name, when the run sent named requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// The connection slot that carried it.
    pub connection: u32,
    /// Its W3C trace id (32 hex digits), with `--trace-context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// Its span id (16 hex digits: the parent of the server's span), with `--trace-context`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span_id: Option<String>,
    /// Whether its traceparent asked for it to be sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<bool>,
    /// Its response's `Server-Timing` values (the first 120 bytes).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_timing: String,
    /// Its server phases, probed and joined to it by its bytes (`--server-probes`), ns by
    /// name (`send`, `socket`, `handle`, `return`, `last_return`, `fn:A->B`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_ns: BTreeMap<String, u64>,
}

impl SlowRequest {
    /// Its total, ns.
    pub fn total_ns(&self) -> u64 {
        self.phases_ns.get("total").copied().unwrap_or(0)
    }

    /// Its phase `name`, ns: a client phase, or `server:NAME` a probed one.
    pub fn phase_ns(&self, name: &str) -> Option<u64> {
        match name.strip_prefix("server:") {
            Some(server) => self.server_ns.get(server).copied(),
            None => self.phases_ns.get(name).copied(),
        }
    }

    /// Kept request `e`, its name from `names` (the workload's, by slot), its probed server
    /// phases named by `probed`.
    pub fn of(e: &Exemplar, names: &[String], probed: &[String]) -> SlowRequest {
        SlowRequest {
            due_s: e.due_ns as f64 / 1e9,
            phases_ns: Phase::ALL
                .iter()
                .filter_map(|p| e.phases[p.index()].map(|ns| (p.name().to_string(), ns)))
                .collect(),
            status: e.status,
            error: e.error.map(|k| k.name().to_string()),
            request: names.get(e.request as usize).cloned(),
            connection: e.connection,
            trace_id: e.trace.map(|t| t.trace_hex()),
            span_id: e.trace.map(|t| t.span_hex()),
            sampled: e.trace.map(|t| t.sampled),
            server_timing: e.server_timing(),
            server_ns: probed
                .iter()
                .enumerate()
                .filter_map(|(i, name)| Some((name.clone(), e.probed(i)?)))
                .collect(),
        }
    }
}

/// The kept request nearest one percentile of the total.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NearRequest {
    /// The percentile (50, 90, 99, 99.9, 100).
    pub percentile: f64,
    /// The percentile's value, ns.
    pub value_ns: u64,
    /// The kept request whose total is nearest it.
    pub request: SlowRequest,
}

/// The run's slow requests kept whole.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SlowRequests {
    /// The slowest by total, slowest first.
    pub slowest: Vec<SlowRequest>,
    /// Phase name → the slowest by that phase, slowest first.
    pub by_phase: BTreeMap<String, Vec<SlowRequest>>,
    /// For each of [`NEAR`]'s percentiles of the total: the kept request nearest it (one per
    /// latency bucket of a quarter octave is kept, so it is within about 10% of it).
    pub nearest: Vec<NearRequest>,
}

impl SlowRequests {
    /// The record's part of what the run kept (`None` when it kept nothing); `total` is the
    /// run's total histogram (for the percentiles); `probed`: the server's probed phases'
    /// names (the slowest by each is kept as `server:NAME`).
    pub fn of(
        kept: &Exemplars,
        names: &[String],
        total: &hdrhistogram::Histogram<u64>,
        probed: &[String],
    ) -> Option<SlowRequests> {
        if kept.slowest.is_empty() {
            return None;
        }
        let row = |e: &Exemplar| SlowRequest::of(e, names, probed);
        let mut by_phase: BTreeMap<String, Vec<SlowRequest>> = Phase::ALL
            .iter()
            .filter(|p| !matches!(p, Phase::Total))
            .filter_map(|p| {
                let list = &kept.by_phase[p.index()];
                (!list.is_empty()).then(|| {
                    let rows = list.iter().map(row).collect();
                    (p.name().to_string(), rows)
                })
            })
            .collect();
        for (name, list) in probed.iter().zip(&kept.by_probed) {
            if !list.is_empty() {
                by_phase.insert(format!("server:{name}"), list.iter().map(row).collect());
            }
        }
        let nearest = NEAR
            .iter()
            .filter_map(|&q| {
                let value_ns = total.value_at_quantile(q / 100.0);
                kept.nearest(value_ns).map(|e| NearRequest {
                    percentile: q,
                    value_ns,
                    request: row(e),
                })
            })
            .collect();
        Some(SlowRequests {
            slowest: kept.slowest.iter().map(row).collect(),
            by_phase,
            nearest,
        })
    }
}

/// The `n` largest of `rows` by `key`, largest first.
fn top(
    mut rows: Vec<SlowRequest>,
    key: impl Fn(&SlowRequest) -> u64,
    n: usize,
) -> Vec<SlowRequest> {
    rows.sort_by_key(|r| std::cmp::Reverse(key(r)));
    rows.truncate(n);
    rows
}

impl SlowRequests {
    /// The slow requests of several generators' records (each with its offset on the merged
    /// clock, s): the slowest of all theirs, and the nearest to the merged percentiles of the
    /// merged `total`, among every request they kept.
    pub fn merge(
        parts: &[(&SlowRequests, f64)],
        total: Option<&hdrhistogram::Histogram<u64>>,
    ) -> Option<SlowRequests> {
        if parts.is_empty() {
            return None;
        }
        let shifted = |r: &SlowRequest, offset: f64| SlowRequest {
            due_s: r.due_s + offset,
            ..r.clone()
        };
        let keep = crate::recorder::exemplar::KEEP;
        let slowest: Vec<SlowRequest> = parts
            .iter()
            .flat_map(|(p, o)| p.slowest.iter().map(move |r| shifted(r, *o)))
            .collect();
        let mut by_phase: BTreeMap<String, Vec<SlowRequest>> = BTreeMap::new();
        for (p, o) in parts {
            for (phase, rows) in &p.by_phase {
                let into = by_phase.entry(phase.clone()).or_default();
                into.extend(rows.iter().map(|r| shifted(r, *o)));
            }
        }
        let by_phase = by_phase
            .into_iter()
            .map(|(phase, rows)| {
                let rows = top(rows, |r| r.phase_ns(&phase).unwrap_or(0), keep);
                (phase, rows)
            })
            .collect();
        let candidates: Vec<SlowRequest> = parts
            .iter()
            .flat_map(|(p, o)| p.nearest.iter().map(move |n| shifted(&n.request, *o)))
            .chain(slowest.iter().cloned())
            .collect();
        let nearest = match total {
            Some(total) => NEAR
                .iter()
                .filter_map(|&q| {
                    let value_ns = total.value_at_quantile(q / 100.0);
                    let near = candidates
                        .iter()
                        .min_by_key(|r| r.total_ns().abs_diff(value_ns))?;
                    Some(NearRequest {
                        percentile: q,
                        value_ns,
                        request: near.clone(),
                    })
                })
                .collect(),
            None => Vec::new(),
        };
        Some(SlowRequests {
            slowest: top(slowest, SlowRequest::total_ns, keep),
            by_phase,
            nearest,
        })
    }
}

/// The per-request log of a run (`--log-requests`): where it is and what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestLogInfo {
    /// The file, as given.
    pub path: String,
    /// One row of every `every` requests per worker thread.
    pub every: u64,
    /// Rows written.
    pub rows: u64,
    /// Rows dropped (the disk slower than the run, or after a cut).
    pub dropped: u64,
    /// Why and where the file was cut, when a write failed (the run went on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

impl RequestLogInfo {
    /// The log of `plan` as it became (`outcome`).
    pub fn of(
        plan: &crate::plan::RunPlan,
        outcome: Option<&crate::recorder::request_log::LogOutcome>,
    ) -> Option<RequestLogInfo> {
        let (log, o) = (plan.log.as_ref()?, outcome?);
        Some(RequestLogInfo {
            path: log.path.display().to_string(),
            every: log.every,
            rows: o.rows,
            dropped: o.dropped,
            cut: o.cut.clone(),
        })
    }
}
