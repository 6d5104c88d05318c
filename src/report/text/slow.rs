//! The slow requests kept whole, under `--detail`: the 5 slowest by total with every phase,
//! the request nearest each percentile of the total, and the slowest by each phase, each with
//! its trace id when the run sent trace context (the words are the record's:
//! [`SlowRequests`]).

use crate::model::Phase;
use crate::recorder::record::slow::{SlowRequest, SlowRequests};
use crate::util::units::human_ns;
use std::fmt::Write as _;

/// One request in one line: total, when it was due, status or error, connection, name and
/// trace id.
fn line(r: &SlowRequest) -> String {
    let mut s = format!("{} due at {:.3}s", human_ns(r.total_ns() as f64), r.due_s);
    match (&r.error, r.status) {
        (Some(e), _) => {
            let _ = write!(s, ", error {e}");
        }
        (None, Some(code)) => {
            let _ = write!(s, ", status {code}");
        }
        (None, None) => {}
    }
    let _ = write!(s, ", connection {}", r.connection);
    if let Some(name) = &r.request {
        let _ = write!(s, ", request {name}");
    }
    if let Some(t) = &r.trace_id {
        let _ = write!(s, ", trace {t}");
    }
    s
}

/// A request's phases, in the life-of-a-request order, and its `Server-Timing`.
fn phases(r: &SlowRequest) -> String {
    let parts: Vec<String> = Phase::LIFE
        .iter()
        .filter_map(|p| {
            let ns = *r.phases_ns.get(p.name())?;
            (ns > 0).then(|| format!("{} {}", p.name(), human_ns(ns as f64)))
        })
        .collect();
    let mut s = parts.join(", ");
    if !r.server_timing.is_empty() {
        let _ = write!(s, "; server: {}", r.server_timing);
    }
    if !r.server_ns.is_empty() {
        let probed: Vec<String> = r
            .server_ns
            .iter()
            .map(|(name, ns)| format!("{name} {}", human_ns(*ns as f64)))
            .collect();
        let _ = write!(s, "; probed: {}", probed.join(", "));
    }
    s
}

/// The section, when the record kept slow requests.
pub(super) fn slow_requests(out: &mut String, slow: Option<&SlowRequests>) {
    let Some(slow) = slow else { return };
    let _ = writeln!(out);
    let _ = writeln!(out, "  The {} slowest requests", slow.slowest.len());
    for (i, r) in slow.slowest.iter().enumerate() {
        let _ = writeln!(out, "  {:>2}. {}", i + 1, line(r));
        let _ = writeln!(out, "      {}", phases(r));
    }
    if !slow.nearest.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  A request near each percentile of the total");
        for n in &slow.nearest {
            let _ = writeln!(
                out,
                "  p{:<5} {:>9}: {}",
                n.percentile,
                human_ns(n.value_ns as f64),
                line(&n.request)
            );
        }
    }
    if !slow.by_phase.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "  The slowest request of each phase");
        let probed = slow.by_phase.keys().filter(|k| k.starts_with("server:"));
        let names = Phase::ALL
            .iter()
            .map(|p| p.name().to_string())
            .chain(probed.cloned());
        for name in names {
            let Some(r) = slow.by_phase.get(&name).and_then(|rows| rows.first()) else {
                continue;
            };
            let ns = r.phase_ns(&name).unwrap_or(0);
            let _ = writeln!(
                out,
                "  {:<13} {:>9}: {}",
                name,
                human_ns(ns as f64),
                line(r)
            );
        }
    }
}
