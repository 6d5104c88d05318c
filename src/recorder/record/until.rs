//! `--until`'s outcome in a summary: whether the run became as precise as asked before its cap,
//! when, and how precise each percentile named got.

use serde::{Deserialize, Serialize};

/// How precise a run went on until (`--until`), and whether it got there.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Until {
    /// Every target was met and that ended the run, before its cap (the record's
    /// `stop_reason` is `precise (--until)`).
    pub converged: bool,
    /// When it converged: the window's length then, seconds (absent when it did not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_s: Option<f64>,
    /// Each target, as the record's intervals have it at the end.
    pub targets: Vec<UntilTarget>,
}

/// One `--until` target at the end of the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct UntilTarget {
    /// As given: `p99:5%`, `wait.p99:10%`.
    pub target: String,
    /// The interval's half-width, a percentage of the percentile; absent when the run could not
    /// bound it (too few values beyond it, or no such phase measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width_pct: Option<f64>,
    /// Its half-width is within the share asked.
    pub met: bool,
}
