//! The thresholds in the record (`summary.thresholds`): each one's check and their verdict
//! as a whole, which the banner, the JSON and the exit code all come from.

use serde::{Deserialize, Serialize};

/// The state of one threshold, or of all of them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdState {
    /// The threshold held.
    Pass,
    /// The threshold failed.
    Fail,
    /// Nothing was measured to compare (an empty histogram, a share of no requests): neither
    /// pass nor fail.
    NoData,
}

/// The thresholds' verdict as a whole: `fail` when one failed (exit code 99), else `no_data`
/// when one had no data (exit code 0: nothing failed, and the banner says what was not
/// checked), else `pass` (exit code 0).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdVerdict {
    /// `fail`, `no_data` or `pass`, as above.
    pub state: ThresholdState,
    /// Thresholds that held.
    pub passed: usize,
    /// Thresholds that failed.
    pub failed: usize,
    /// Thresholds with nothing measured to compare.
    pub no_data: usize,
    /// The exit code this verdict gives: 99 when one failed, else 0.
    pub exit_code: i32,
    /// The line the text report prints under the table.
    pub banner: String,
}

impl ThresholdVerdict {
    /// The exit code of a failed threshold (k6's convention).
    pub const EXIT_FAIL: i32 = crate::util::exit::EXIT_THRESHOLD;

    /// The verdict of `checks`; `None` when there are none.
    pub fn of(checks: &[ThresholdCheck]) -> Option<ThresholdVerdict> {
        if checks.is_empty() {
            return None;
        }
        let count = |s: ThresholdState| checks.iter().filter(|c| c.state() == s).count();
        let (passed, failed, no_data) = (
            count(ThresholdState::Pass),
            count(ThresholdState::Fail),
            count(ThresholdState::NoData),
        );
        let n = checks.len();
        let unchecked = if no_data > 0 {
            format!(
                "; {no_data} had no data (neither passed nor failed: nothing was measured to compare)"
            )
        } else {
            String::new()
        };
        let (state, exit_code, banner) = if failed > 0 {
            (
                ThresholdState::Fail,
                Self::EXIT_FAIL,
                format!(
                    "{failed} of {n} thresholds failed{unchecked} (exit code {})",
                    Self::EXIT_FAIL
                ),
            )
        } else if no_data > 0 {
            (
                ThresholdState::NoData,
                0,
                format!("{passed} of {n} thresholds passed{unchecked} (exit code 0)"),
            )
        } else {
            (
                ThresholdState::Pass,
                0,
                format!("all {n} thresholds passed (exit code 0)"),
            )
        };
        Some(ThresholdVerdict {
            state,
            passed,
            failed,
            no_data,
            exit_code,
            banner,
        })
    }
}

/// One `--threshold` and how the run measured against it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdCheck {
    /// The expression, as written (`p99<5ms`).
    pub threshold: String,
    /// The figure in its natural unit (ns for latencies, percent for shares); `None` when it
    /// could not be measured.
    pub measured: Option<f64>,
    /// The figure in human units (`1.23ms`).
    pub shown: Option<String>,
    /// Held; false when it failed and when there was no data (see `no_data`).
    pub pass: bool,
    /// Nothing was measured to compare: neither pass nor fail.
    #[serde(default)]
    pub no_data: bool,
    /// Why it could not be measured.
    pub note: Option<String>,
    /// A percentile's 95% interval, in the figure's unit (ns); a bound null where the run
    /// cannot give it (absent for other figures and in records made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<[Option<f64>; 2]>,
    /// The limit lies inside the interval: the run cannot tell pass from fail, and `pass`
    /// is the measured figure's (a rerun may fall either way).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undecided: bool,
}

impl ThresholdCheck {
    /// Whether the threshold held, failed, or had no data.
    pub fn state(&self) -> ThresholdState {
        match (self.no_data, self.pass) {
            (true, _) => ThresholdState::NoData,
            (false, true) => ThresholdState::Pass,
            (false, false) => ThresholdState::Fail,
        }
    }

    /// The result column: `pass`, `FAIL` or `no data`.
    pub fn result(&self) -> &'static str {
        match self.state() {
            ThresholdState::Pass => "pass",
            ThresholdState::Fail => "FAIL",
            ThresholdState::NoData => "no data",
        }
    }
}
