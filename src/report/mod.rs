//! Rendering RunRecords: the text report ([`text`]) and the summary JSON. Every report works
//! from a [`RunRecord`] alone, so a saved run can be re-rendered later (`reqlife report`).

pub mod text;

use crate::recorder::record::RunRecord;

/// The summary JSON printed by `--json`: the `summary` object of the record.
pub fn summary_json(record: &RunRecord) -> String {
    serde_json::to_string_pretty(&record.summary).expect("the summary serializes")
}

/// The whole record as JSON (`-o FILE`).
pub fn record_json(record: &RunRecord) -> String {
    serde_json::to_string_pretty(record).expect("the record serializes")
}
