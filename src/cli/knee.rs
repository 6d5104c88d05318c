//! `reqlife knee`'s flags ([`KneeArgs`]), checked, and its plans made: the flags of `run` knee
//! refuses (it chooses the rates and each step's length itself), its own (`--slo`,
//! `--precision`, `--step`), and the one plan of the flags every step is derived from
//! ([`RunPlan::with_closed_loop`], [`RunPlan::with_rate`]): the [`KneeCommand`] `app` runs.

use super::command::OutputPlan;
use super::error::{err, PrepareError};
use super::plan::PlanError;
use super::{duration_arg, percent_arg, rate_arg, RunArgs, StepArgs, TargetChoice, WatchPlan};
use crate::model::load_spec::LoadError;
use crate::plan::RunPlan;
use clap::Args;
use prost_reflect::DescriptorPool;
use std::time::Duration;

/// Flags of `reqlife knee`, and the flags of `run` that shape a step ([`StepArgs`]): not
/// `run`'s others ([`super::run_flags`]: knee chooses the rates and each step's length, runs
/// no burst, scenario or target list, writes no HdrHistogram log), which clap refuses
/// ([`refused_run_flag`] says why in one line).
#[derive(Debug, Clone, Args)]
pub struct KneeArgs {
    /// A service level each step must meet (repeatable), as a --threshold: `p99<=2ms`,
    /// `mean<=1.5ms`, `errors<=0.1%`, `wait.p90<1ms`, `server.db.p99<1ms`.
    #[arg(help_heading = "Search", long = "slo", value_parser = crate::analysis::expr::Expr::arg)]
    pub slos: Vec<crate::analysis::expr::Expr>,

    /// How long each step runs.
    #[arg(help_heading = "Search", long = "step", default_value = "20s", value_parser = duration_arg)]
    pub step: Duration,

    /// Stop when the answer is known within this many percent.
    #[arg(help_heading = "Search", long = "precision", default_value = "5", value_parser = percent_arg)]
    pub precision: f64,

    /// The first rate tried [default: a quarter of what a short closed-loop probe achieves].
    #[arg(help_heading = "Search", long = "start-rate", value_parser = rate_arg, allow_negative_numbers = true)]
    pub start_rate: Option<f64>,

    /// The highest rate tried.
    #[arg(help_heading = "Search", long = "max-rate", value_parser = rate_arg, allow_negative_numbers = true)]
    pub max_rate: Option<f64>,

    /// The schedule lag above which the generator, not the server, may be the limit of a
    /// failing step (read after the step's start-up at a quantile its samples support; see
    /// above): that step runs once more, and if it fails so again the search stops there.
    #[arg(help_heading = "Search", long = "max-lag", default_value = "1ms", value_parser = duration_arg)]
    pub max_lag: Duration,

    /// A step whose verdict rests on an SLO whose 95% interval holds its limit (undecided) is
    /// run again at its rate, up to this many more times, until its measurements together
    /// decide it; still undecided then, it is judged by the measured figures. 0: never.
    #[arg(help_heading = "Search", long = "remeasure", value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub remeasure: u32,

    /// The run each step makes (its target, protocol and flags; the search sets the load).
    #[command(flatten)]
    pub run: StepArgs,
}

/// Why knee refuses it (one line naming the flag, `-R/--rate`), for the error of a flag of `run`
/// that a step does not take: clap refuses it, as a flag knee does not have; `None` for any
/// other error (a flag `run` does not have either keeps clap's own message).
pub fn refused_run_flag(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = given.split('=').next().unwrap_or(given);
    let run = <super::RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
    let arg = run
        .get_arguments()
        .find(|a| match flag.strip_prefix("--") {
            Some(long) => a.get_long() == Some(long),
            None => flag.len() == 2 && a.get_short() == flag.chars().nth(1),
        })?;
    let name = match (arg.get_short(), arg.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (None, Some(l)) => format!("--{l}"),
        _ => flag.to_string(),
    };
    let why = match arg.get_id().as_str() {
        "duration" => " (use --step)",
        "abort_on_fail" => " (the SLOs decide each step)",
        _ => "",
    };
    Some(format!(
        "{name}{why} conflicts with knee: it chooses the rate and the length of each step itself, and takes only the flags `reqlife knee --help` lists"
    ))
}

/// Checks knee's own flags, and a sweep of `-c` (one value per step): whether stdout is taken
/// by an output file (`-`), or the one line that refuses them.
pub fn check(args: &KneeArgs) -> Result<bool, PlanError> {
    let run = &args.run;
    if run.load.connections.len() > 1 {
        return err(
            "a sweep of -c conflicts with knee: it chooses the rate and the length of each step itself, and takes only the flags `reqlife knee --help` lists",
        );
    }
    let to_stderr = super::output::stdout_taken(&[
        ("-o", run.files.output.as_deref()),
        ("--html", run.files.html.as_deref()),
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
    /// The plans of `args` at `url` (checked by [`check`]), a gRPC call's message encoded
    /// through `reflected` (the descriptors the server's reflection gave, if asked).
    pub fn new(
        args: &KneeArgs,
        url: &str,
        reflected: Option<&DescriptorPool>,
    ) -> Result<KneePlans, PlanError> {
        let run = RunArgs::of_step(args.run.clone());
        let base = super::plan::build_with(&run, url, reflected)?;
        let probe = base.with_closed_loop(
            base.connections() as u64,
            args.step.min(Duration::from_secs(3)),
        )?;
        let mut steps = base;
        // Intervals of a tenth of the step (100 ms to 1 s): the generator's health is judged
        // on those after the start-up.
        if run.files.interval.is_none() {
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

/// `reqlife knee`, checked and ready to start: the plans of its search, its own settings, and
/// where its results go.
pub struct KneeCommand {
    /// The probe's plan and each step's.
    pub plans: KneePlans,
    /// The SLOs each step must meet (`--slo`).
    pub slos: Vec<crate::analysis::expr::Expr>,
    /// `--precision`, a fraction (0.05 for 5%).
    pub precision: f64,
    /// `--start-rate`: no probe then.
    pub start_rate: Option<f64>,
    /// `--max-rate`.
    pub max_rate: Option<f64>,
    /// `--max-lag`.
    pub max_lag: Duration,
    /// `--pause`: before every step.
    pub pause: Duration,
    /// `--remeasure`: the more runs an undecided step may take.
    pub remeasure: u32,
    /// The record's file, the page and the report.
    pub output: OutputPlan,
    /// `--live` and `--metrics-addr`.
    pub watch: WatchPlan,
}

/// The first step of `reqlife knee`'s command: its flags checked, and where the requests go.
pub struct KneeRequest<'a> {
    args: &'a KneeArgs,
    target: TargetChoice,
    to_stderr: bool,
}

impl<'a> KneeRequest<'a> {
    /// Checks the flags that need no URL ([`check`]) and the target.
    pub fn new(args: &'a KneeArgs) -> Result<KneeRequest<'a>, PlanError> {
        let to_stderr = check(args)?;
        let target = TargetChoice::of(args.run.url.as_deref(), &args.run.kv, false)?;
        Ok(KneeRequest {
            args,
            target,
            to_stderr,
        })
    }

    /// Where the requests go.
    pub fn target(&self) -> &TargetChoice {
        &self.target
    }

    /// What the server's gRPC reflection must be asked before the command is built at `url`
    /// (a gRPC call's `--data` without `--proto-set`), if anything.
    pub fn reflection(&self, url: &str) -> Result<Option<super::reflect::Ask>, PlanError> {
        super::reflect::ask(&RunArgs::of_step(self.args.run.clone()), url)
    }

    /// The command at `url`: every flag checked once, into the one plan every step is derived
    /// from (a gRPC call's message encoded through `reflected`, if asked).
    pub fn command(
        &self,
        url: &str,
        reflected: Option<&DescriptorPool>,
    ) -> Result<KneeCommand, PrepareError> {
        let (args, run) = (self.args, &self.args.run);
        let plans = KneePlans::new(args, url, reflected)?;
        if let Some(path) = &run.files.html {
            crate::report::html::check_writable(path)?;
        }
        let output = OutputPlan {
            output: run.files.output.clone(),
            html: run.files.html.clone(),
            hdr_log: None,
            to_stderr: self.to_stderr,
            quiet: run.files.quiet,
            every: None,
            view: run.view.clone(),
            abort: Vec::new(),
            // A knee's steps are judged by the knee (its generator rule), not by --strict.
            strict: false,
        };
        let method = run.request.method.as_deref().unwrap_or("GET");
        let title = format!("knee: {method} {url}");
        Ok(KneeCommand {
            plans,
            slos: args.slos.clone(),
            precision: args.precision / 100.0,
            start_rate: args.start_rate,
            max_rate: args.max_rate,
            max_lag: args.max_lag,
            pause: run.load.pause,
            remeasure: args.remeasure,
            output,
            watch: run.watch.plan(title, run.load.segment, run.files.quiet),
        })
    }
}
