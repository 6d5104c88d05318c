//! How the tail's shares moved between A and B: when both records hold the table of why the
//! tail is slow (`summary.server_probes.tail`, runs with `--server-probes`), each group's
//! (the requests around the median, the slowest 1%, the slowest 0.1%) parts side by side:
//! their share of the group's time in A, in B, and the move in percentage points, with the
//! groups' requests and mean totals.
//!
//! These are descriptive: a share is one run's sum over the few requests of its group (30
//! requests are the slowest 1% of 3,000), and nothing here resamples them, so a move has no
//! interval and no verdict. When only one record has the table, the comparison says which
//! lacks it and why (run without `--server-probes`, probed by an agent, nothing joined).

use crate::recorder::join::tail::{part_names, TailShares};
use crate::recorder::record::RunRecord;
use serde::Serialize;

/// What the comparison says of its tail's shares, in words.
pub const DESCRIPTIVE: &str = "Descriptive: each share is one run's, over the few requests of \
     its group, not resampled: a move has no interval and no verdict";

/// One part's share of a group's time in A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartMove {
    /// The part (`server: socket`, `wait`…), as the record names it.
    pub part: String,
    /// Its share of the group's time in A (0..1; `wait left` may be a little below 0).
    pub a: f64,
    /// Its share in B.
    pub b: f64,
    /// B − A in percentage points.
    pub points: f64,
}

/// One group of requests in A and B.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupMove {
    /// `p50` (ranked p45 to p55 by their total), `p99` (the slowest 1%), `p99.9` (the
    /// slowest 0.1%).
    pub which: String,
    /// The group's requests in A.
    pub a_requests: u64,
    /// The group's requests in B.
    pub b_requests: u64,
    /// Their mean total in A, µs.
    pub a_mean_us: f64,
    /// Their mean total in B, µs.
    pub b_mean_us: f64,
    /// Each part, in the record's order of parts.
    pub parts: Vec<PartMove>,
}

/// The tail's shares of A and B, or why only one has them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TailMoves {
    /// How to read it ([`DESCRIPTIVE`]).
    pub note: String,
    /// The groups both records have, in the record's order; empty when one lacks the table.
    pub groups: Vec<GroupMove>,
    /// When only one record has the table: which lacks it and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// Why `r` has no table of the tail's shares.
fn why_none(r: &RunRecord) -> &'static str {
    let Some(p) = &r.summary.server_probes else {
        return "it was run without --server-probes";
    };
    match &p.joining {
        None => {
            "its server's side was not joined to each request (probed by `reqlife probe` on \
             the server's host, or recorded before the join)"
        }
        Some(j) if j.joined == 0 => {
            "none of its requests was joined to the server's side (its report's warnings say why)"
        }
        Some(_) => "none of its joined requests had a total",
    }
}

/// The tail's shares of `a` and `b` side by side; `None` when neither has them.
pub fn moves(a: &RunRecord, b: &RunRecord) -> Option<TailMoves> {
    let table = |r: &RunRecord| -> Vec<TailShares> {
        r.summary
            .server_probes
            .as_ref()
            .map_or(Vec::new(), |p| p.tail.clone())
    };
    let (ta, tb) = (table(a), table(b));
    let missing = match (ta.is_empty(), tb.is_empty()) {
        (true, true) => return None,
        (true, false) => Some(format!("A has no tail table: {}", why_none(a))),
        (false, true) => Some(format!("B has no tail table: {}", why_none(b))),
        (false, false) => None,
    };
    let groups = ta
        .iter()
        .filter_map(|ga| {
            let gb = tb.iter().find(|g| g.which == ga.which)?;
            Some(group(ga, gb))
        })
        .collect();
    Some(TailMoves {
        note: DESCRIPTIVE.into(),
        groups,
        missing,
    })
}

/// One group's parts in A and B (a part one record lacks counts 0 there).
fn group(a: &TailShares, b: &TailShares) -> GroupMove {
    let mut names = part_names();
    // A part of a record's not among today's names (a later version's) still shows.
    for extra in a.shares.keys().chain(b.shares.keys()) {
        if !names.contains(extra) {
            names.push(extra.clone());
        }
    }
    let parts = names
        .into_iter()
        .filter(|n| a.shares.contains_key(n) || b.shares.contains_key(n))
        .map(|part| {
            let (sa, sb) = (
                a.shares.get(&part).copied().unwrap_or(0.0),
                b.shares.get(&part).copied().unwrap_or(0.0),
            );
            PartMove {
                points: ((sb - sa) * 10_000.0).round() / 100.0,
                part,
                a: sa,
                b: sb,
            }
        })
        .collect();
    GroupMove {
        which: a.which.clone(),
        a_requests: a.requests,
        b_requests: b.requests,
        a_mean_us: a.mean_us,
        b_mean_us: b.mean_us,
        parts,
    }
}
