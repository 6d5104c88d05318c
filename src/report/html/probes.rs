//! The HTML report's section of the server's side as probes measured it
//! (`--server-probes`): the table, how much of the client's write + wait it accounts for, and
//! what the probes cost, in the record's words as the text report has them; and the
//! comparison page's section of how the tail's shares moved between two runs.

use super::{cell, Row};
use crate::recorder::record::RunRecord;
use serde::Serialize;

/// The section's content.
#[derive(Debug, Serialize)]
pub(super) struct Probed {
    title: String,
    rows: Vec<Row>,
    /// The function phases' rows, after the explained share.
    functions: Vec<Row>,
    explained: String,
    cost: Vec<String>,
    /// Why the tail is slow: the groups' labels, then a row per part of their shares (and the
    /// requests and mean total of each group).
    tail_head: Vec<String>,
    tail: Vec<Row>,
}

/// The section, when the run probed its server.
pub(super) fn probed(r: &RunRecord) -> Option<Probed> {
    let p = r.summary.server_probes.as_ref()?;
    let (kernel, functions) = p.rows(&r.summary.latency.phases);
    let rows = |rows: Vec<(String, &crate::recorder::hist::Stats)>| -> Vec<Row> {
        rows.into_iter()
            .map(|(name, st)| {
                let cells = [st.p50_us, st.p90_us, st.p99_us, st.p999_us, st.mean_us]
                    .iter()
                    .map(|v| cell(*v))
                    .chain([st.count.to_string()])
                    .collect();
                (name, cells)
            })
            .collect()
    };
    let tail_head = p.tail.iter().map(|t| head(&t.which)).collect();
    let mut tail: Vec<Row> = crate::recorder::join::tail::part_names()
        .into_iter()
        .filter_map(|part| {
            let shares: Vec<f64> = p
                .tail
                .iter()
                .map(|t| t.shares.get(&part).copied().unwrap_or(0.0))
                .collect();
            (!shares.iter().all(|s| s.abs() < 0.0005)).then(|| {
                let cells = shares
                    .iter()
                    .map(|s| format!("{:.1}%", s * 100.0))
                    .collect();
                (part, cells)
            })
        })
        .collect();
    if !p.tail.is_empty() {
        tail.push((
            "requests".into(),
            p.tail.iter().map(|t| t.requests.to_string()).collect(),
        ));
        tail.push((
            "mean total".into(),
            p.tail.iter().map(|t| cell(Some(t.mean_us))).collect(),
        ));
    }
    Some(Probed {
        title: p.title(),
        rows: rows(kernel),
        functions: rows(functions),
        explained: p.explained_line(),
        cost: p.cost_lines(),
        tail_head,
        tail,
    })
}

/// A group's head in the tail's tables: `p45-p55`, `slowest ≥ p99`.
fn head(which: &str) -> String {
    let label = crate::recorder::join::tail::label(which);
    if which == "p50" {
        label
    } else {
        format!("slowest {label}")
    }
}

/// How the tail's shares moved between two runs (the comparison's page).
#[derive(Debug, Serialize)]
pub(super) struct TailMovesSection {
    /// How to read it: descriptive, no interval.
    note: String,
    /// Which record lacks the table, and why (then nothing else).
    missing: Option<String>,
    /// The groups' labels.
    head: Vec<String>,
    /// A row per part (then the requests and mean totals): per group, A, B and the move.
    rows: Vec<Row>,
}

/// The section of `t`.
pub(super) fn tail_moves(t: &crate::analysis::compare::tail::TailMoves) -> TailMovesSection {
    let head = t.groups.iter().map(|g| head(&g.which)).collect();
    let names: Vec<String> = t.groups.first().map_or(Vec::new(), |g| {
        g.parts.iter().map(|p| p.part.clone()).collect()
    });
    let pct = |v: f64| format!("{:.1}%", v * 100.0);
    let mut rows: Vec<Row> = names
        .into_iter()
        .filter_map(|name| {
            let moves: Vec<_> = t
                .groups
                .iter()
                .filter_map(|g| g.parts.iter().find(|p| p.part == name))
                .collect();
            let shown = moves
                .iter()
                .any(|m| m.a.abs() >= 0.0005 || m.b.abs() >= 0.0005);
            let cells = moves
                .iter()
                .flat_map(|m| [pct(m.a), pct(m.b), format!("{:+.1} pt", m.points)])
                .collect();
            shown.then_some((name, cells))
        })
        .collect();
    if !t.groups.is_empty() {
        let each = |f: &dyn Fn(&crate::analysis::compare::tail::GroupMove) -> [String; 3]| {
            t.groups.iter().flat_map(f).collect()
        };
        rows.push((
            "requests".into(),
            each(&|g| {
                [
                    g.a_requests.to_string(),
                    g.b_requests.to_string(),
                    String::new(),
                ]
            }),
        ));
        rows.push((
            "mean total".into(),
            each(&|g| {
                let change = (g.a_mean_us > 0.0)
                    .then(|| format!("{:+.1}%", (g.b_mean_us / g.a_mean_us - 1.0) * 100.0));
                [
                    cell(Some(g.a_mean_us)),
                    cell(Some(g.b_mean_us)),
                    change.unwrap_or_default(),
                ]
            }),
        ));
    }
    TailMovesSection {
        note: t.note.clone(),
        missing: t.missing.clone(),
        head,
        rows,
    }
}
