//! The life of a request with the server's `Server-Timing` (the breakdown table): the client's
//! phases to the connection ready, the server's metrics in its order, the network and the
//! client's overhead, then the read; and below it each metric's descriptions.

use super::{cell, figure, waits_and_opening};
use crate::model::Phase;
use crate::recorder::hist::Stats;
use crate::recorder::record::RunRecord;
use std::fmt::Write as _;

/// The life of a request, client and server: the client phases up to the connection ready,
/// then the server's metrics in the order it lists them, the network and client overhead
/// (write + wait − server total: the write is in it), then read; each with its percentiles and its share of the total at
/// p50. Shown when the server sent `Server-Timing`.
/// (`wide`: p99.99 too, and no name cut.)
pub(super) fn breakdown(out: &mut String, r: &RunRecord, wide: bool) {
    let s = &r.summary;
    if s.server_timing_responses == 0 {
        return;
    }
    let total_p50 = s.latency.total.p50_us.unwrap_or(0.0);
    let share = |v: Option<f64>| match v {
        Some(v) if total_p50 > 0.0 => format!("{:.1}%", 100.0 * v / total_p50),
        _ => "-".into(),
    };
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  Life of a request: client, then Server-Timing ({} of {} responses)",
        s.server_timing_responses, s.requests.ok
    );
    let (w, heads, cw) = breakdown_head(out, wide);
    // A phase that only some requests have (connect, with keep-alive) has no share of the
    // typical request. The server's metrics are parts of its total when it sends one: their
    // shares are in parentheses, not to be added again.
    let every = s.requests.ok;
    let has_total = s
        .server_timing
        .get(&s.server_timing_total)
        .is_some_and(|st| st.count > 0);
    let row = |out: &mut String, name: &str, st: &Stats, part: bool| {
        let share_cell = if st.count < every {
            format!("({} req)", st.count)
        } else if part {
            format!("({})", share(st.p50_us))
        } else {
            share(st.p50_us)
        };
        let name: String = match name.chars().count() {
            n if n > w => name.chars().take(w - 1).chain(['~']).collect(),
            _ => name.to_string(),
        };
        let _ = write!(out, "  {name:<w$}");
        for h in heads {
            let _ = write!(out, "{:>cw$}", cell(figure(st, h)));
        }
        let _ = writeln!(out, "{share_cell:>10}");
    };
    for (p, st) in waits_and_opening(r) {
        row(out, p.name(), st, false);
    }
    for name in &s.server_timing_order {
        if let Some(st) = s.server_timing.get(name) {
            if st.count > 0 {
                let total = *name == s.server_timing_total;
                let label = if total {
                    format!("server {name} (server's total)")
                } else {
                    format!("server {name}")
                };
                row(out, &label, st, has_total && !total);
            }
        }
    }
    let overhead = if wide {
        "network+client (write+wait - server)"
    } else {
        "network+client"
    };
    row(out, overhead, &s.server_timing_overhead, false);
    if let Some(st) = s.latency.phases.get(&Phase::Read) {
        row(out, "read", st, false);
    }
    if let Some(st) = s
        .latency
        .phases
        .get(&Phase::Decode)
        .filter(|st| st.count > 0)
    {
        row(out, "decode", st, false);
    }
    row(out, "total", &s.latency.total, false);
    footer(out, wide, has_total);
    server_timing_notes(out, s);
}

/// The head of the life of a request's table: its name column's width, the percentiles and
/// their columns' width. Wide: p50 to p99.99, the names whole; else p50 to p99.9 in 80
/// columns, a name cut to its column (a server's metric can be named at any length).
fn breakdown_head(out: &mut String, wide: bool) -> (usize, &'static [&'static str], usize) {
    let (w, heads): (usize, &[&str]) = if wide {
        (36, &["p50", "p90", "p99", "p99.9", "p99.99"])
    } else {
        (31, &["p50", "p90", "p99", "p99.9"])
    };
    let cw = if wide { 10 } else { 9 };
    let mut head = format!("  {:<w$}", "Phase");
    for h in heads {
        let _ = write!(head, "{h:>cw$}");
    }
    let _ = writeln!(out, "{head} p50 share");
    (w, heads, cw)
}

/// Under the table: what network+client is (`wide`: its head says it), and how to read the
/// shares (`has_total`: the server sent its total, whose parts are in parentheses).
fn footer(out: &mut String, wide: bool, has_total: bool) {
    if !wide {
        let _ = writeln!(
            out,
            "  network+client = write + wait - the server's total: the time it did not count"
        );
    }
    let _ = writeln!(
        out,
        "  p50 share: of the total's p50; those above it not in parentheses add up to about \
         100% (medians of parts need not add up to their whole's){}",
        if has_total {
            "; (in parentheses): a part of the server's total, counted in its share already"
        } else {
            ""
        }
    );
}

/// Below the life of a request: each metric's descriptions, and the malformed metrics.
fn server_timing_notes(out: &mut String, s: &crate::recorder::record::Summary) {
    for (name, descs) in &s.server_timing_labels {
        let all: u64 = descs.values().sum();
        let parts: Vec<String> = descs
            .iter()
            .map(|(d, n)| format!("{d} {:.1}%", 100.0 * *n as f64 / all.max(1) as f64))
            .collect();
        let _ = writeln!(out, "  {name}: {}", parts.join(", "));
    }
    if s.server_timing_invalid > 0 {
        let _ = writeln!(
            out,
            "  {} malformed Server-Timing metrics (read as far as a browser reads them; no name: skipped)",
            s.server_timing_invalid
        );
    }
}
