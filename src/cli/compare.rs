//! `reqlife compare --run URL_A URL_B -- RUN FLAGS`'s input checked, and both sides' plans
//! made: the `run` flags after `--`, parsed once (with those an interleaved run refuses), and
//! each side's plan of them at its URL (its gRPC reflection, asked by `app` of its own server,
//! handed in: [`SidesRequest`]). The command then runs the plans as they are ([`Sides`]).

use super::error::err;
use super::plan::PlanError;
use super::{count_arg, percent_arg, Cli, Command, RunArgs};
use crate::plan::RunPlan;
use clap::{Args, Parser};
use std::path::PathBuf;
use std::time::Duration;

/// The two sides of an interleaved comparison, ready to run.
pub struct Sides {
    /// A's URL and B's, as given.
    pub urls: [String; 2],
    /// A's plan and B's, each run once per round.
    pub plans: [RunPlan; 2],
    /// `--pause` of the run flags: the pause between runs.
    pub pause: Duration,
}

/// The run flags of an interleaved comparison, checked, before each side's plan is built:
/// [`SidesRequest::plan`] builds them one at a time, after `app` asked each side's server
/// for its gRPC reflection when the flags need it ([`SidesRequest::reflection`]).
pub struct SidesRequest {
    /// A's URL and B's, as given.
    pub urls: [String; 2],
    run: RunArgs,
}

/// Checks `--rounds` and the run flags after `--`.
pub fn sides(args: &CompareArgs) -> Result<SidesRequest, PlanError> {
    if args.rounds < 2 {
        return err("--rounds must be at least 2 (4 or more can show a change)");
    }
    let urls = [
        args.a.to_string_lossy().into_owned(),
        args.b.to_string_lossy().into_owned(),
    ];
    let run = run_args(args, &urls[0])?;
    Ok(SidesRequest { urls, run })
}

impl SidesRequest {
    /// The run flags of `side` (0: A, 1: B), at its URL.
    fn side(&self, side: usize) -> RunArgs {
        let mut run = self.run.clone();
        run.url = Some(self.urls[side].clone());
        run
    }

    /// What `side`'s server must be asked by gRPC reflection before its plan is built (gRPC
    /// --data without --proto-set: each side's server, once), if anything.
    pub fn reflection(&self, side: usize) -> Result<Option<super::reflect::Ask>, PlanError> {
        super::reflect::ask(&self.side(side), &self.urls[side])
    }

    /// `side`'s plan, built once (every round runs it again), its gRPC message encoded
    /// through `reflected` when the reflection was asked.
    pub fn plan(
        &self,
        side: usize,
        reflected: Option<&prost_reflect::DescriptorPool>,
    ) -> Result<RunPlan, PlanError> {
        super::plan::build_with(&self.side(side), &self.urls[side], reflected)
    }

    /// The sides ready to run, with their `plans`.
    pub fn ready(self, plans: [RunPlan; 2]) -> Sides {
        Sides {
            urls: self.urls,
            plans,
            pause: self.run.load.pause,
        }
    }
}

/// The `run` flags after `--`, for `url`.
fn run_args(args: &CompareArgs, url: &str) -> Result<RunArgs, PlanError> {
    let line = ["reqlife", "run"]
        .into_iter()
        .map(String::from)
        .chain(args.run_args.iter().cloned())
        .chain(["--quiet".to_string(), url.to_string()]);
    let run = match Cli::try_parse_from(line) {
        Ok(Cli {
            command: Command::Run(r),
        }) => *r,
        Ok(_) => unreachable!("parsed as run"),
        Err(e) => {
            return err(format!(
                "the run flags after `--` are not valid `run` flags: {}",
                e.to_string().lines().next().unwrap_or_default()
            ))
        }
    };
    let refused: Vec<&str> = super::error::flags_given(&[
        (
            run.length.repeat.unwrap_or(1) > 1,
            "--repeat (use --rounds)",
        ),
        (run.load.connections.len() > 1, "a sweep of -c"),
        (run.length.rate.len() > 1, "a sweep of -R"),
        (run.files.output.is_some(), "-o"),
        (run.files.html.is_some(), "--html (give it to compare)"),
        (run.view.json, "--json (give it to compare)"),
        (!run.view.thresholds.is_empty(), "--threshold"),
    ]);
    if !refused.is_empty() {
        return err(format!(
            "{} cannot be a flag of each run of compare --run",
            refused.join(", ")
        ));
    }
    super::plan::until_cap(&run)?;
    Ok(run)
}

/// Flags of `reqlife compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The baseline RunRecord (- for standard input; with --run: the baseline URL).
    pub a: PathBuf,
    /// The RunRecord compared with it (- for standard input; with --run: the URL compared
    /// with it).
    pub b: PathBuf,

    /// Run A and B here instead of reading records: A and B are URLs, run in turn for
    /// --rounds rounds (AB, BA, AB, ...), each run with the `run` flags given after `--`.
    #[arg(long = "run")]
    pub run: bool,

    /// Rounds of --run (each runs A once and B once); 4 or more can show a change.
    #[arg(long = "rounds", default_value = "6", value_parser = count_arg, requires = "run")]
    pub rounds: u64,

    /// The `run` flags of every run of --run, after `--` (e.g. `-- -d 2s -c 8`).
    #[arg(last = true, requires = "run")]
    pub run_args: Vec<String>,

    /// Exit 99 (a CI regression gate) when B is significantly slower than A by more than this
    /// (throughput, or p50/p90/p99 of the total), e.g. 5%.
    #[arg(long = "fail-if-slower", value_parser = percent_arg)]
    pub fail_if_slower: Option<f64>,

    /// Changes smaller than this are noise, significant or not.
    #[arg(long = "noise", default_value = "2", value_parser = percent_arg)]
    pub noise: f64,

    /// Seed of the bootstrap's resampling.
    #[arg(long = "seed", default_value = "1")]
    pub seed: u64,

    /// Print the comparison as JSON.
    #[arg(long = "json")]
    pub json: bool,

    /// Under each row without a verdict, say why it has none.
    #[arg(long = "detail")]
    pub detail: bool,

    /// Also write the comparison as one self-contained HTML page: the table, the two runs'
    /// spectra overlaid, the runs side by side (- for standard output).
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,
}
