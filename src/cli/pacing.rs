//! The open-loop pacer's flags: `--pacer-slack` (requests due within it of each other leave
//! in one wake-up) and `--pacer-spin` (the share of a core it may spin to send on time).

use super::error::{err, PlanError};
use super::RunArgs;
use crate::model::{LoadKind, LoadModel};
use std::time::Duration;

/// `--pacer-slack` when not given.
pub const DEFAULT_PACER_SLACK: Duration = Duration::from_micros(50);
/// The largest `--pacer-slack` accepted.
pub const MAX_PACER_SLACK: Duration = Duration::from_millis(10);

/// The pacer's slack and spin budget (a share of a core) of a run with `load`.
pub(super) fn pacing(args: &RunArgs, load: &LoadModel) -> Result<(Duration, f64), PlanError> {
    Ok((pacer_slack(args, load)?, pacer_spin(args, load)?))
}

/// `--pacer-slack`: open loops only, 0 to 10ms.
fn pacer_slack(args: &RunArgs, load: &LoadModel) -> Result<Duration, PlanError> {
    match args.load.pacer_slack {
        None => Ok(DEFAULT_PACER_SLACK),
        Some(_) if load.kind() != LoadKind::Open => {
            err("--pacer-slack applies to an open loop: give -R/--rate too")
        }
        Some(s) if s > MAX_PACER_SLACK => {
            err("--pacer-slack must be from 0 to 10ms (e.g. 50us; 0 wakes once per request)")
        }
        Some(s) => Ok(s),
    }
}

/// `--pacer-spin`: open loops only, 0 to 100%, as a share of a core.
fn pacer_spin(args: &RunArgs, load: &LoadModel) -> Result<f64, PlanError> {
    match args.load.pacer_spin {
        None => Ok(crate::load::early::DEFAULT_SPIN),
        Some(_) if load.kind() != LoadKind::Open => {
            err("--pacer-spin applies to an open loop: give -R/--rate too")
        }
        Some(p) if !(0.0..=100.0).contains(&p) => {
            err("--pacer-spin must be from 0 to 100% of a core (e.g. 5%; 0 never spins)")
        }
        Some(p) => Ok(p / 100.0),
    }
}
