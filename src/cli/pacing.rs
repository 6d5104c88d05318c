//! The open-loop pacer's flags: `--pacer-slack` (requests due within it of each other leave
//! in one wake-up), `--pacer-spin` (the share of a core it may spin to send on time), and the
//! benchmarks' before switches `--pacer-timer` (what it waits on) and `--pacer-naps` (whether
//! its thread sleeps through responses).

use super::error::{err, PlanError};
use super::{NapsArg, PacerTimerArg, RunArgs};
use crate::model::{LoadKind, LoadModel};
use crate::plan::{PacerTimer, Pacing};
use std::time::Duration;

/// `--pacer-slack` when not given.
pub const DEFAULT_PACER_SLACK: Duration = Duration::from_micros(50);
/// The largest `--pacer-slack` accepted.
pub const MAX_PACER_SLACK: Duration = Duration::from_millis(10);

/// The pacer of a run with `load`: each flag of it is refused unless `load` is an open loop
/// (given with its default value too); a plan of another load carries the defaults, unused.
pub(super) fn pacing(args: &RunArgs, load: &LoadModel) -> Result<Pacing, PlanError> {
    let flags = &args.load;
    let given = [
        (flags.pacer_slack.is_some(), "--pacer-slack"),
        (flags.pacer_spin.is_some(), "--pacer-spin"),
        (flags.pacer_timer.is_some(), "--pacer-timer"),
        (flags.pacer_naps.is_some(), "--pacer-naps"),
    ];
    if load.kind() != LoadKind::Open {
        if let Some((_, flag)) = given.iter().find(|(given, _)| *given) {
            return err(format!(
                "{flag} applies to an open loop: give -R/--rate too"
            ));
        }
    }
    Ok(Pacing {
        slack: pacer_slack(flags.pacer_slack)?,
        spin: pacer_spin(flags.pacer_spin)?,
        timer: match flags.pacer_timer {
            Some(PacerTimerArg::Coarse) => PacerTimer::Coarse,
            Some(PacerTimerArg::Precise) | None => PacerTimer::Precise,
        },
        naps: flags.pacer_naps != Some(NapsArg::Off),
    })
}

/// `--pacer-slack`: 0 to 10ms.
fn pacer_slack(given: Option<Duration>) -> Result<Duration, PlanError> {
    match given {
        None => Ok(DEFAULT_PACER_SLACK),
        Some(s) if s > MAX_PACER_SLACK => {
            err("--pacer-slack must be from 0 to 10ms (e.g. 50us; 0 wakes once per request)")
        }
        Some(s) => Ok(s),
    }
}

/// `--pacer-spin`: 0 to 100%, as a share of a core.
fn pacer_spin(given: Option<f64>) -> Result<f64, PlanError> {
    match given {
        None => Ok(crate::load::early::DEFAULT_SPIN),
        Some(p) if !(0.0..=100.0).contains(&p) => {
            err("--pacer-spin must be from 0 to 100% of a core (e.g. 5%; 0 never spins)")
        }
        Some(p) => Ok(p / 100.0),
    }
}
