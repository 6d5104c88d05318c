//! The server's side as probes measured it (`--server-probes`), after the client's phases:
//! the client's write + wait, the kernel's phases that follow a request through the server
//! (in its socket, its read to its write, its write back to the client), how much of the
//! client's time they account for, the phases between the server's functions, and what the
//! probes cost.

use super::cell;
use crate::model::Phase;
use crate::recorder::hist::Stats;
use crate::recorder::record::probes::{ServerProbes, KERNEL_PHASES};
use crate::recorder::record::RunRecord;
use std::fmt::Write as _;

/// One row: a name (in a column `w` wide), p50 … p99.9, mean and count.
fn row(out: &mut String, w: usize, name: &str, st: &Stats) {
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

/// The server's side, probed: shown when the run probed its server.
pub(super) fn server_probes(out: &mut String, r: &RunRecord) {
    let Some(p) = &r.summary.server_probes else {
        return;
    };
    let pids: Vec<String> = p.pids.iter().map(u32::to_string).collect();
    let sampled = match p.sample {
        1 => "every request".to_string(),
        n => format!("one request in {n}"),
    };
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  The server's side, probed: {} (pid {}), {sampled}",
        p.process,
        pids.join(", ")
    );
    let client = &r.summary.latency.phases;
    let mut kernel: Vec<(String, &Stats)> = Vec::new();
    for (phase, name) in [(Phase::Write, "client write"), (Phase::Wait, "client wait")] {
        if let Some(st) = client.get(&phase) {
            kernel.push((name.to_string(), st));
        }
    }
    let mut functions: Vec<(String, &Stats)> = Vec::new();
    for name in &p.order {
        if let (Some(st), Some(what)) = (p.phases.get(name), p.what.get(name)) {
            match KERNEL_PHASES.contains(&name.as_str()) {
                true => kernel.push((format!("server: {what}"), st)),
                false => functions.push((format!("server fn: {what}"), st)),
            }
        }
    }
    let w = kernel
        .iter()
        .chain(&functions)
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(0)
        .max(12);
    let _ = writeln!(
        out,
        "  {:<w$} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "Phase", "p50", "p90", "p99", "p99.9", "mean", "count"
    );
    for (name, st) in &kernel {
        row(out, w, name, st);
    }
    explained(out, p);
    for (name, st) in &functions {
        row(out, w, name, st);
    }
    cost(out, p);
}

fn explained(out: &mut String, p: &ServerProbes) {
    match &p.explained {
        Some(e) => {
            let _ = writeln!(
                out,
                "  the server's side accounts for {:.1}% of the client's write+wait (means: {} of {}); \
                 left {}: the client's own send, the scheduler, the unknown",
                e.share * 100.0,
                cell(Some(e.server_mean_us)),
                cell(Some(e.client_mean_us)),
                cell(Some(e.left_us))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "  the server's side accounts for no share of the client's write+wait: one of them saw no request"
            );
        }
    }
}

fn cost(out: &mut String, p: &ServerProbes) {
    let hits: u64 = p
        .hits
        .iter()
        .filter(|(n, _)| !n.starts_with("calibration"))
        .map(|(_, n)| n)
        .sum();
    let c = &p.cost;
    let each = match (c.uprobe_hit_ns, c.uprobe_stepped_hit_ns, c.tracepoint_hit_ns) {
        (Some(u), Some(s), Some(t)) => format!(
            " (measured here: a uprobe hit {u:.0} ns, {s:.0} ns where the kernel single-steps; a tracepoint hit {t:.0} ns)"
        ),
        _ => String::new(),
    };
    let share = match (c.probe_cpu_s, c.server_cpu_s, c.share_of_server_cpu) {
        (Some(pc), Some(sc), Some(sh)) => format!(
            ": {:.3} s of CPU, {:.1}% of the server's {:.2} s",
            pc,
            sh * 100.0,
            sc
        ),
        _ => String::new(),
    };
    let _ = writeln!(out, "  probes: {hits} hits{each}{share}");
    if p.order.iter().any(|n| !KERNEL_PHASES.contains(&n.as_str())) {
        let _ = writeln!(
            out,
            "  (a function phase holds about one uprobe hit of its own: the trap's cost lands between the two stamps)"
        );
    }
}
