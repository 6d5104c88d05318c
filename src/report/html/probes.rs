//! The HTML report's section of the server's side as probes measured it
//! (`--server-probes`): the table, how much of the client's write + wait it accounts for, and
//! what the probes cost, in the record's words as the text report has them.

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
    Some(Probed {
        title: p.title(),
        rows: rows(kernel),
        functions: rows(functions),
        explained: p.explained_line(),
        cost: p.cost_lines(),
    })
}
