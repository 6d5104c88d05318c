//! The server's side as probes measured it (`--server-probes`), after the client's phases:
//! the client's write + wait, the kernel's phases that follow a request through the server
//! (in its socket, its read to its write, its write back to the client), how much of the
//! client's time they account for, the phases between the server's functions, and what the
//! probes cost (the words are the record's: [`ServerProbes`], as the HTML report's).

use super::cell;
use crate::recorder::hist::Stats;
use crate::recorder::record::probes::ServerProbes;
use crate::recorder::record::RunRecord;
use std::fmt::Write as _;

/// The widest name column of the default report (80 columns); a longer name (a function
/// phase, `ngx_http_process_request → ngx_http_finalize_request`) is on a line of its own,
/// its figures on the next.
const NAME_COLUMN: usize = 18;

/// One row: a name (in a column `w` wide), p50 … p99.9, mean and count.
fn row(out: &mut String, w: usize, name: &str, st: &Stats) {
    let name = if name.chars().count() > w {
        let _ = writeln!(out, "  {name}");
        ""
    } else {
        name
    };
    let _ = writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        name,
        cell(st.p50_us),
        cell(st.p90_us),
        cell(st.p99_us),
        cell(st.p999_us),
        cell(st.mean_us),
        st.count
    );
}

/// The server's side, probed: shown when the run probed its server (`wide`: every name in
/// its row).
pub(super) fn server_probes(out: &mut String, r: &RunRecord, wide: bool) {
    let Some(p): Option<&ServerProbes> = r.summary.server_probes.as_ref() else {
        return;
    };
    let (kernel, functions) = p.rows(&r.summary.latency.phases);
    let w = kernel
        .iter()
        .chain(&functions)
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(12);
    let w = if wide { w } else { w.min(NAME_COLUMN) };
    let _ = writeln!(out);
    let _ = writeln!(out, "  {}", p.title());
    let _ = writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "Phase", "p50", "p90", "p99", "p99.9", "mean", "count"
    );
    for (name, st) in &kernel {
        row(out, w, name, st);
    }
    let _ = writeln!(out, "  {}", p.explained_line());
    for (name, st) in &functions {
        row(out, w, name, st);
    }
    for line in p.cost_lines() {
        let _ = writeln!(out, "  {line}");
    }
    tail(out, p);
}

/// Why the tail is slow: each part's share of the joined requests' time around the median,
/// above p99 and above p99.9 (parts under 0.05% everywhere left out).
fn tail(out: &mut String, p: &ServerProbes) {
    if p.tail.is_empty() {
        return;
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  Why the tail is slow: each part's share of the joined requests' time"
    );
    let mut head = format!("  {:<16}", "Part");
    for t in &p.tail {
        let label = crate::recorder::join::tail::label(&t.which);
        let _ = write!(head, " {label:>10}");
    }
    let _ = writeln!(out, "{head}");
    for part in crate::recorder::join::tail::part_names() {
        let shares: Vec<f64> = p
            .tail
            .iter()
            .map(|t| t.shares.get(&part).copied().unwrap_or(0.0))
            .collect();
        if shares.iter().all(|s| s.abs() < 0.0005) {
            continue;
        }
        let mut line = format!("  {part:<16}");
        for s in shares {
            let _ = write!(line, " {:>9.1}%", s * 100.0);
        }
        let _ = writeln!(out, "{line}");
    }
    let mut n = format!("  {:<16}", "requests");
    let mut m = format!("  {:<16}", "mean total");
    for t in &p.tail {
        let _ = write!(n, " {:>10}", t.requests);
        let _ = write!(m, " {:>10}", cell(Some(t.mean_us)));
    }
    let _ = writeln!(out, "{n}");
    let _ = writeln!(out, "{m}");
}
