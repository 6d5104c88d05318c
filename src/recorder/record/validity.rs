//! What a record keeps for the verdict on the load itself (`analysis::validity` judges it after
//! the run): the first gaps between the run's sends ([`Arrivals`]), and the verdict
//! ([`Validity`]): each check, its figure, passed or not.

use serde::{Deserialize, Serialize};

/// The first gaps between the run's send instants (when a connection took each recorded
/// request: the per-request log's `start_ns`), over all worker threads in time order: the
/// sample the arrival test judges. An open loop at a constant rate only.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Arrivals {
    /// Gaps between consecutive sends, ns, in order (at most `recorder::sends::GAPS`).
    pub gaps_ns: Vec<u64>,
}

impl Arrivals {
    /// The sample of `sends`; `None` when fewer than two sends were kept.
    pub fn of(sends: &crate::recorder::sends::Sends) -> Option<Arrivals> {
        let gaps_ns = sends.gaps();
        (!gaps_ns.is_empty()).then_some(Arrivals { gaps_ns })
    }
}

/// The verdict on the load itself: whether the run measured the server under the load asked
/// for. Valid when no check failed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Validity {
    /// No check failed.
    pub valid: bool,
    /// The one line the report prints at its top (`Load valid …`, `Load NOT VALID: …`).
    pub line: String,
    /// Each check, in order.
    pub checks: Vec<ValidityCheck>,
}

/// One check of the load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ValidityCheck {
    /// Its name: `arrivals`, `rate`, `client`, `warmup`, `drift` or `samples`.
    pub check: String,
    /// Passed, failed, not applicable, or (`samples`) some figures marked.
    pub state: CheckState,
    /// The figure judged (its unit in `says`); absent where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figure: Option<f64>,
    /// The bound it was judged against; absent where there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<f64>,
    /// What was found, in words, with the figures.
    pub says: String,
}

/// The state of one check.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckState {
    /// The load was as asked for.
    Pass,
    /// It was not: the run is not valid.
    Fail,
    /// The check does not apply to this run (a closed loop's arrivals, too few intervals).
    NotApplicable,
    /// Some printed figures rest on too few values: marked in the report, the run still valid.
    Marked,
}

impl ValidityCheck {
    /// The check did not fail.
    pub fn held(&self) -> bool {
        self.state != CheckState::Fail
    }
}
