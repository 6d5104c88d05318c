//! The slow requests kept whole (`slow-requests`): the slowest by total and the one nearest each
//! percentile, each with every phase, its status, connection, name, `Server-Timing` and trace id,
//! linked to its trace when the run gave `--trace-link`.

use super::human;
use crate::model::Phase;
use crate::recorder::record::slow::SlowRequest;
use crate::recorder::record::RunRecord;
use serde::Serialize;

/// One kept request, as a row.
#[derive(Debug, Serialize)]
pub(super) struct SlowRow {
    /// `#1`…, or the percentile it is near (`p99`).
    label: String,
    total: String,
    due: String,
    /// The status code, or the error kind.
    outcome: String,
    connection: u32,
    request: String,
    trace_id: String,
    /// The trace's URL (`--trace-link` with the id in it), when there is one.
    link: Option<String>,
    /// Every phase the request went through, in the life-of-a-request order.
    phases: String,
    server_timing: String,
    /// Its server phases probed (`--server-probes`), in words.
    probed: String,
    /// Its client and server phases on one time axis, when its server phases were joined.
    timeline: Option<String>,
}

/// The section's data.
#[derive(Debug, Serialize)]
pub(super) struct Slow {
    slowest: Vec<SlowRow>,
    nearest: Vec<SlowRow>,
    /// What the trace ids are, in words.
    note: String,
    /// Some request has a name (else the column is left out).
    named: bool,
    /// Some request has server phases probed (else their column is left out).
    probed: bool,
}

fn row(label: String, r: &SlowRequest, link: Option<&str>) -> SlowRow {
    let phases: Vec<String> = Phase::LIFE
        .iter()
        .filter_map(|p| {
            let ns = *r.phases_ns.get(p.name())?;
            (ns > 0).then(|| format!("{} {}", p.name(), human(ns as f64)))
        })
        .collect();
    let trace_id = r.trace_id.clone().unwrap_or_default();
    SlowRow {
        label,
        total: human(r.total_ns() as f64),
        due: format!("{:.3}s", r.due_s),
        outcome: match (&r.error, r.status) {
            (Some(e), _) => e.clone(),
            (None, Some(code)) => code.to_string(),
            (None, None) => "-".into(),
        },
        connection: r.connection,
        request: r.request.clone().unwrap_or_default(),
        link: link
            .filter(|_| !trace_id.is_empty())
            .map(|t| t.replace("{trace_id}", &trace_id)),
        trace_id,
        phases: phases.join(", "),
        server_timing: r.server_timing.clone(),
        probed: r
            .server_ns
            .iter()
            .map(|(name, ns)| format!("{name} {}", human(*ns as f64)))
            .collect::<Vec<_>>()
            .join(", "),
        timeline: super::timeline::timeline(r),
    }
}

/// The section, when the record kept slow requests.
pub(super) fn slow(r: &RunRecord) -> Option<Slow> {
    let s = r.slow_requests.as_ref()?;
    let trace = r.config.trace_context.as_ref();
    let link = trace.and_then(|t| t.link.as_deref());
    let note = match trace {
        Some(t) => format!(
            "Each request carried a W3C traceparent (sampled flag on {:.0}% of them): its trace id is the one the server saw{}.",
            t.sample * 100.0,
            if link.is_some() { ", linked to its trace" } else { "" }
        ),
        None => "Run with --trace-context to give each request a trace id the server sees.".into(),
    };
    Some(Slow {
        slowest: (s.slowest.iter().enumerate())
            .map(|(i, r)| row(format!("#{}", i + 1), r, link))
            .collect(),
        nearest: (s.nearest.iter())
            .map(|n| row(format!("p{}", n.percentile), &n.request, link))
            .collect(),
        named: s.slowest.iter().any(|r| r.request.is_some()),
        probed: s.slowest.iter().any(|r| !r.server_ns.is_empty()),
        note,
    })
}
