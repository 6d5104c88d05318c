//! `reqlife calibrate`'s flags ([`CalibrateArgs`]), checked, and its plans made: one plan of
//! `run`'s flags (a closed loop of `-c` connections for `--step`, with `-t`, `--http2` and `-k`
//! as given), from which every step is derived ([`RunPlan::with_closed_loop`],
//! [`RunPlan::with_rate`]): the [`CalibrateCommand`] `app` runs.

use super::error::err;
use super::plan::PlanError;
use super::{count_arg, duration_arg, RunArgs, TargetChoice, WatchArgs, WatchPlan};
use crate::model::load_spec::LoadError;
use crate::plan::RunPlan;
use clap::{Args, FromArgMatches};
use std::time::Duration;

/// Flags of `reqlife calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Measure against this URL instead of the embedded target started in-process.
    #[arg(long = "external")]
    pub external: Option<String>,

    /// Length of each measuring step.
    #[arg(long = "step", default_value = "3s", value_parser = duration_arg)]
    pub step: Duration,

    /// Connections of the closed and open loops.
    #[arg(short = 'c', long = "connections", default_value = "50", value_parser = count_arg)]
    pub connections: u64,

    /// Worker threads [default: the number of cores].
    #[arg(short = 't', long = "threads", value_parser = count_arg)]
    pub threads: Option<u64>,

    /// Calibrate HTTP/2 (h2c on the embedded target) instead of HTTP/1.1.
    #[arg(long = "http2")]
    pub http2: bool,

    /// Do not verify the --external server's TLS certificate.
    #[arg(long = "insecure", short = 'k')]
    pub insecure: bool,

    /// Print the figures as JSON.
    #[arg(long = "json")]
    pub json: bool,

    /// No progress lines on stderr.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,

    /// How the runs are watched while they go.
    #[command(flatten)]
    pub watch: WatchArgs,
}

/// Checks calibrate's own flags.
pub fn check(args: &CalibrateArgs) -> Result<(), PlanError> {
    if args.step.is_zero() {
        return err("--step must be longer than 0 (e.g. 3s)");
    }
    if args.connections == 0 {
        return err("-c/--connections must be at least 1");
    }
    Ok(())
}

/// The plans of a calibration: each step's, from the one plan of its flags.
pub struct CalibratePlans {
    base: RunPlan,
    /// Each step's length: `--step`, in whole milliseconds.
    step: Duration,
}

impl CalibratePlans {
    /// The plans of `args` (checked by [`check`]) against `url`.
    pub fn new(args: &CalibrateArgs, url: &str) -> Result<CalibratePlans, PlanError> {
        let run = run_args(args);
        Ok(CalibratePlans {
            base: super::plan::build(&run, url)?,
            step: run.length.duration.unwrap_or(args.step),
        })
    }

    /// Each step's length.
    pub fn step(&self) -> Duration {
        self.step
    }

    /// The plan of a step of `connections`, closed or at `rate`.
    pub fn at(&self, connections: u64, rate: Option<f64>) -> Result<RunPlan, LoadError> {
        match rate {
            Some(r) => self.base.with_rate(r, connections, self.step),
            None => self.base.with_closed_loop(connections, self.step),
        }
    }
}

/// The `run` flags of a calibration: `run`'s defaults, as its flags' definitions give them
/// (none copied here), with calibrate's values set: `-d` the step (in whole milliseconds),
/// `-c`, `-t`, `--http2`, `-k`, and `--quiet`.
fn run_args(args: &CalibrateArgs) -> RunArgs {
    let defaults = RunArgs::augment_args(clap::Command::new("run")).get_matches_from(["run"]);
    let mut run = RunArgs::from_arg_matches(&defaults).expect("run's defaults are valid flags");
    run.files.quiet = true;
    run.length.duration = Some(Duration::from_millis(args.step.as_millis() as u64));
    run.load.connections = vec![args.connections];
    run.load.threads = args.threads;
    run.http.http2 = args.http2;
    run.tls.insecure = args.insecure;
    run
}

/// `reqlife calibrate`, checked and ready to start.
pub struct CalibrateCommand {
    /// Each step's plan.
    pub plans: CalibratePlans,
    /// `-c/--connections`.
    pub connections: u64,
    /// `-t/--threads`.
    pub threads: Option<u64>,
    /// `--http2`.
    pub http2: bool,
    /// `--json`.
    pub json: bool,
    /// `-q/--quiet`.
    pub quiet: bool,
    /// `--live` and `--metrics-addr`.
    pub watch: WatchPlan,
}

/// The first step of `reqlife calibrate`'s command: its flags checked, and where the
/// requests go (`--external`, or the embedded target without a store).
pub struct CalibrateRequest<'a> {
    args: &'a CalibrateArgs,
    target: TargetChoice,
}

impl<'a> CalibrateRequest<'a> {
    /// Checks calibrate's own flags ([`check`]).
    pub fn new(args: &'a CalibrateArgs) -> Result<CalibrateRequest<'a>, PlanError> {
        check(args)?;
        let no_store = super::KvArgs {
            kv_preload: None,
            value_size: 0,
        };
        let target = TargetChoice::of(args.external.as_deref(), &no_store, false)?;
        Ok(CalibrateRequest { args, target })
    }

    /// Where the requests go.
    pub fn target(&self) -> &TargetChoice {
        &self.target
    }

    /// The command at `url`: the one plan every step is derived from.
    pub fn command(&self, url: &str) -> Result<CalibrateCommand, PlanError> {
        let args = self.args;
        let title = format!("calibrate: GET {url}");
        Ok(CalibrateCommand {
            plans: CalibratePlans::new(args, url)?,
            connections: args.connections,
            threads: args.threads,
            http2: args.http2,
            json: args.json,
            quiet: args.quiet,
            watch: args.watch.plan(title, None, args.quiet),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    /// The flags of a calibration are those of `reqlife run --quiet -d STEP -c C ...`.
    #[test]
    fn a_calibration_runs_with_the_flags_of_run() {
        let line = |extra: &[&str]| {
            let mut argv = vec!["reqlife", "calibrate"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).unwrap().command {
                Command::Calibrate(a) => a,
                _ => unreachable!(),
            }
        };
        let rows: &[(&[&str], &[&str])] = &[
            (&[], &["-d", "3000ms", "-c", "50"]),
            (
                &["--step", "1.5s", "-c", "8", "-t", "2", "--http2", "-k"],
                &[
                    "-d",
                    "1500ms",
                    "-c",
                    "8",
                    "-t",
                    "2",
                    "--http2",
                    "--insecure",
                ],
            ),
        ];
        for (calibrate, run) in rows {
            let mut argv = vec!["reqlife", "run", "--quiet"];
            argv.extend_from_slice(run);
            let Command::Run(want) = Cli::try_parse_from(argv).unwrap().command else {
                unreachable!()
            };
            let got = run_args(&line(calibrate));
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "{calibrate:?}");
        }
    }

    #[test]
    fn each_step_is_the_base_with_its_load() {
        let Command::Calibrate(a) = Cli::try_parse_from(["reqlife", "calibrate", "-c", "8"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let plans = CalibratePlans::new(&a, "http://127.0.0.1:9/").unwrap();
        let closed = plans.at(8, None).unwrap();
        assert_eq!(
            closed.load,
            crate::model::LoadModel::Closed { connections: 8 }
        );
        let open = plans.at(4, Some(500.0)).unwrap();
        assert_eq!(open.connections(), 4);
        assert_eq!(
            open.stop,
            crate::model::StopRule::Duration(Duration::from_secs(3))
        );
    }
}
