//! `reqlife compare --run URL_A URL_B --rounds N -- RUN FLAGS`: A and B run in turn, one run
//! of each per round, in the order AB, BA, AB, BA, ... (a drift of the machine or of the
//! target in time then falls on both sides alike: with an even number of rounds the runs of A
//! and of B have the same mean time). Each side's runs become a record of repeated runs
//! ([`RunRecord::repeated`]), compared across runs.

use super::control::{run_plan, Control};
use super::failure::Failure;
use super::{EXIT_SIGINT, EXIT_SIGTERM};
use crate::cli::compare::Sides;
use crate::cli::CompareArgs;
use crate::model::StopReason;
use crate::recorder::record::{Ending, RunRecord};
use std::time::Duration;

/// The order of round `r` (0-based): A first in even rounds, B first in odd ones.
pub fn order(r: u64) -> [usize; 2] {
    if r % 2 == 0 {
        [0, 1]
    } else {
        [1, 0]
    }
}

/// Runs the rounds; the records of A and B as repeated runs, or the exit code and its
/// message.
pub(crate) fn run_rounds(
    args: &CompareArgs,
    command_line: &[String],
) -> Result<(RunRecord, RunRecord), i32> {
    // Every flag checked once, into each side's plan.
    let Sides { urls, plans, pause } = sides(args).map_err(|e| e.report())?;
    let control = Control::new().map_err(|e| e.report())?;
    let quiet = args.json;
    let mut sides: [Vec<(RunRecord, crate::recorder::Measured, crate::plan::RunPlan)>; 2] =
        [Vec::new(), Vec::new()];
    'rounds: for round in 0..args.rounds {
        for side in order(round) {
            if (round > 0 || side != order(round)[0]) && !control.pause(pause) {
                break 'rounds;
            }
            if !quiet {
                eprintln!(
                    "reqlife compare: round {}/{}: {} ({})",
                    round + 1,
                    args.rounds,
                    ["A", "B"][side],
                    urls[side]
                );
            }
            let (record, measured) =
                run_plan(&control, &plans[side], command_line, false).map_err(|e| e.report())?;
            if control.signal() != 0 {
                break 'rounds;
            }
            sides[side].push((record, measured, plans[side].clone()));
        }
    }
    match control.signal() {
        libc::SIGINT => return Err(EXIT_SIGINT),
        libc::SIGTERM => return Err(EXIT_SIGTERM),
        _ => {}
    }
    let [a, b] = sides.map(|runs| repeated(runs, command_line));
    Ok((a, b))
}

/// Each side's plan, its server asked by gRPC reflection first when the flags need it.
fn sides(args: &CompareArgs) -> Result<Sides, Failure> {
    let request = crate::cli::compare::sides(args)?;
    let plan = |side: usize| -> Result<crate::plan::RunPlan, Failure> {
        let reflected = super::reflect::asked(request.reflection(side)?)?;
        Ok(request.plan(side, reflected.as_ref())?)
    };
    let plans = [plan(0)?, plan(1)?];
    Ok(request.ready(plans))
}

/// One side's runs as the record of repeated runs.
fn repeated(
    runs: Vec<(RunRecord, crate::recorder::Measured, crate::plan::RunPlan)>,
    command_line: &[String],
) -> RunRecord {
    let first = &runs[0].0;
    let end = Ending {
        recorded: Duration::from_secs_f64(runs.iter().map(|r| r.0.summary.duration_s).sum()),
        drained: Duration::ZERO,
        stop_reason: StopReason::Interleaved,
        interrupted: false,
        start_time: first.environment.start_time.clone(),
        command_line: command_line.to_vec(),
        embedded_target: false,
    };
    let plan = runs[0].2.clone();
    let measured: Vec<crate::recorder::Measured> = runs.iter().map(|r| r.1.clone()).collect();
    let parts: Vec<(String, &crate::plan::RunPlan, RunRecord)> = runs
        .iter()
        .enumerate()
        .map(|(i, (r, _, p))| (format!("round {}", i + 1), p, r.clone()))
        .collect();
    let mut record = RunRecord::repeated(&plan, &measured, end, parts);
    crate::analysis::precision::annotate(&mut record);
    crate::analysis::validity::annotate(&mut record);
    record
}

#[cfg(test)]
mod tests {
    #[test]
    fn rounds_alternate_which_side_goes_first() {
        let seq: Vec<usize> = (0..4).flat_map(super::order).collect();
        assert_eq!(seq, [0, 1, 1, 0, 0, 1, 1, 0]);
    }
}
