//! `reqlife knee`'s flags checked, and its plans made: the flags of `run` knee refuses (it
//! chooses the rates and each step's length itself), its own (`--slo`, `--precision`,
//! `--step`), and the one plan of the flags every step is derived from
//! ([`RunPlan::with_closed_loop`], [`RunPlan::with_rate`]).

use super::error::{err, PrepareError};
use super::plan::PlanError;
use super::KneeArgs;
use crate::model::load_spec::LoadError;
use crate::plan::RunPlan;
use std::time::Duration;

/// Checks the flags of `run` knee refuses, and its own: whether stdout is taken by an output
/// file (`-`), or the one line that refuses them.
pub fn check(args: &KneeArgs) -> Result<bool, PlanError> {
    let run = &args.run;
    let given: Vec<&str> = super::error::flags_given(&[
        (!run.rate.is_empty(), "-R/--rate"),
        (run.duration.is_some(), "-d/--duration (use --step)"),
        (run.requests.is_some(), "-n/--requests"),
        (run.stages.is_some(), "--stages"),
        (run.burst.is_some(), "--burst"),
        (run.repeat > 1, "--repeat"),
        (run.connections.len() > 1, "a sweep of -c"),
        (run.scenario.is_some(), "--scenario"),
        (run.targets.is_some(), "--targets"),
        // Hidden from `knee --help` too (cli::KneeArgs), as are the ones above.
        (run.bursts.is_some(), "--bursts"),
        (
            run.burst_interval != Duration::from_millis(10),
            "--burst-interval",
        ),
        (run.start_at.is_some(), "--start-at"),
        (
            run.abort_on_fail,
            "--abort-on-fail (the SLOs decide each step)",
        ),
        (run.hdr_log.is_some(), "--hdr-log"),
        (run.every.is_some(), "--every"),
    ]);
    if !given.is_empty() {
        return err(format!(
            "{} conflict{} with knee: it chooses the rate and the length of each step itself, and takes only the flags `reqlife knee --help` lists",
            given.join(", "),
            if given.len() == 1 { "s" } else { "" }
        ));
    }
    let to_stderr = super::output::stdout_taken(&[
        ("-o", run.output.as_deref()),
        ("--html", run.html.as_deref()),
    ])?;
    if args.slos.is_empty() {
        return err("knee needs at least one --slo (e.g. --slo 'p99<=2ms')");
    }
    if !(args.precision > 0.0 && args.precision < 50.0) {
        return err("--precision must be a percentage above 0 and below 50 (e.g. 5)");
    }
    if args.step < Duration::from_millis(200) {
        return err("--step must be at least 200ms (e.g. 20s)");
    }
    Ok(to_stderr)
}

/// The plans of a search, all derived from the one plan of the flags: the closed-loop probe,
/// and each step's (an open loop at its rate, for `--step`).
pub struct KneePlans {
    /// The closed-loop probe that sets the start rate (at most 3 s long).
    pub probe: RunPlan,
    /// The plan the steps are derived from.
    steps: RunPlan,
    /// `--step`.
    step: Duration,
}

impl KneePlans {
    /// The plans of `args` at `url` (checked by [`check`]): the server's gRPC reflection is
    /// asked here when the flags need it.
    pub fn new(args: &KneeArgs, url: &str) -> Result<KneePlans, PrepareError> {
        let run = super::reflect::resolve(&args.run, url)?;
        let base = super::plan::build(&run, url)?;
        let probe = base.with_closed_loop(
            base.connections() as u64,
            args.step.min(Duration::from_secs(3)),
        )?;
        let mut steps = base;
        // Intervals of a tenth of the step (100 ms to 1 s): the generator's health is judged
        // on those after the start-up.
        if run.interval.is_none() && run.every.is_none() {
            steps.interval =
                (args.step / 10).clamp(Duration::from_millis(100), Duration::from_secs(1));
        }
        Ok(KneePlans {
            probe,
            steps,
            step: args.step,
        })
    }

    /// The plan of the step at `rate`.
    pub fn at(&self, rate: f64) -> Result<RunPlan, LoadError> {
        self.steps
            .with_rate(rate, self.steps.connections() as u64, self.step)
    }
}
