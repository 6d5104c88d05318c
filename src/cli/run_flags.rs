//! The flags of `reqlife run` that a step of `reqlife knee` does not take, in groups by meaning:
//! what is sent instead of one request ([`WorkloadArgs`]), how much load for how long
//! ([`LengthArgs`]: knee chooses the rate and each step's length itself), what a run does at
//! each interval ([`IntervalArgs`]: knee's SLOs judge each step), and whether a load that was
//! not valid fails the run ([`VerdictArgs`]: a knee's steps are judged by the knee). `run`
//! flattens them beside the flags of a step ([`super::StepArgs`]); knee flattens only those, so
//! clap refuses these.

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// A workload instead of one fixed request: a scenario or a target list.
#[derive(Debug, Clone, Default, Args)]
pub struct WorkloadArgs {
    /// Send the named requests of a scenario file (TOML: requests with templates and
    /// weights, and optional phases each with its own load); see examples/kv.toml. Without a
    /// URL, against the embedded target.
    #[arg(help_heading = "Target", long = "scenario", value_name = "FILE")]
    pub scenario: Option<PathBuf>,

    /// Send the requests of a target list, one per entry in turn (vegeta's format: `METHOD
    /// URL`, optional `Header: value` lines and `@bodyfile`, entries apart by blank lines; - reads
    /// the list from standard input). The URLs name the server: give no URL argument.
    #[arg(
        help_heading = "Target",
        long = "targets",
        value_name = "FILE",
        conflicts_with = "scenario"
    )]
    pub targets: Option<PathBuf>,
}

/// How much load, for how long, and how many times: the rate (or stages, or bursts), the
/// length (`-d`, `-n`), the repetitions and the start.
#[derive(Debug, Clone, Default, Args)]
pub struct LengthArgs {
    /// How long to send for (e.g. 10s, 2m, 1m30s) [default: 10s unless -n is given].
    #[arg(help_heading = "Load", short = 'd', long = "duration", value_name = "DURATION", value_parser = super::duration_arg)]
    pub duration: Option<Duration>,

    /// How many requests to send in all (e.g. 100000, 10k); conflicts with -d.
    #[arg(help_heading = "Load", short = 'n', long = "requests", value_name = "N", value_parser = super::count_arg)]
    pub requests: Option<u64>,

    /// Open loop: send at this total rate (req/s over all connections and threads, e.g.
    /// 20000, 20k, 250/s, or so many per a duration: 50/1s, 100/10s), whether or not earlier requests were answered; latency is measured
    /// from each request's intended send time.
    /// A list (`-R 5000,10000,20000`) runs one level after another: a sweep.
    #[arg(help_heading = "Load", short = 'R', long = "rate", value_parser = super::rate_arg, value_delimiter = ',', allow_negative_numbers = true)]
    pub rate: Vec<f64>,

    /// Stages of load, one after another: rates ('10s:0->20000, 60s:20000, 10s:20000->0', an
    /// open loop) or connections ('10s:1->200c, 30s:200c', a closed loop). Each stage's figures
    /// are kept apart; the stages set the run's length.
    #[arg(help_heading = "Load", long = "stages", value_parser = super::stages_arg)]
    pub stages: Option<crate::util::units::StagesSpec>,

    /// Bursts: fire this many requests at once (one connection each), wait for all the
    /// answers, pause --burst-interval, repeat --bursts times (or for -d). Runs on one thread.
    #[arg(help_heading = "Load", long = "burst", value_parser = super::count_arg)]
    pub burst: Option<u64>,

    /// Pause between bursts [default: 10ms].
    #[arg(help_heading = "Load", long = "burst-interval", value_parser = super::duration_arg)]
    pub burst_interval: Option<Duration>,

    /// Number of bursts [default: 10, or as many as -d allows].
    #[arg(help_heading = "Load", long = "bursts", value_parser = super::count_arg)]
    pub bursts: Option<u64>,

    /// Run the same test this many times (with --pause between): the record keeps each run,
    /// and the report gives the median and spread of each figure across runs (for
    /// `reqlife compare` with statistics across runs) [default: 1].
    #[arg(help_heading = "Load", long = "repeat", value_parser = super::count_arg)]
    pub repeat: Option<u64>,

    /// Start at this time (RFC 3339, e.g. 2026-11-23T10:00:00Z) or after this long (+30s), so
    /// that generators started apart begin together and their interval series align.
    #[arg(help_heading = "Load", long = "start-at", value_parser = super::start_at_arg)]
    pub start_at: Option<crate::util::units::StartAt>,

    /// With --segment: start with the plan's other segments and merge here. Segment 1 listens
    /// on this port (on this address if it is an IP) and the others connect to it; all start
    /// at one instant once every one is ready, then send their records to segment 1, which
    /// merges them, checks the thresholds and writes -o; each exits with the merged verdict.
    #[arg(
        help_heading = "Load",
        long = "coordinator",
        value_name = "HOST:PORT",
        requires = "segment",
        conflicts_with = "start_at"
    )]
    pub coordinator: Option<String>,

    /// How long --coordinator waits for every segment at the start, and for their records
    /// after this one's end [default: 60s].
    #[arg(help_heading = "Load", long = "coordinator-timeout", value_parser = super::duration_arg, requires = "coordinator")]
    pub coordinator_timeout: Option<Duration>,
}

/// What a run does as each interval closes: print a line (`--every`), log its histograms
/// (`--hdr-log`), stop on a failed threshold (`--abort-on-fail`).
#[derive(Debug, Clone, Default, Args)]
pub struct IntervalArgs {
    /// Write the HdrHistogram interval log (one histogram per interval and phase, tagged) to
    /// this file (- for standard output), for HistogramLogProcessor and friends.
    #[arg(help_heading = "Output", long = "hdr-log")]
    pub hdr_log: Option<PathBuf>,

    /// Print one line per interval of this length while running (throughput, errors, p50/p99/max
    /// of the total, wait and the server's total): the drift of a long run, as it happens.
    #[arg(help_heading = "Output", long = "every", value_name = "DURATION", value_parser = super::duration_arg, conflicts_with = "live")]
    pub every: Option<Duration>,

    /// Stop the run as soon as a --threshold fails on what was measured so far (checked as
    /// each interval closes).
    #[arg(help_heading = "Analysis", long = "abort-on-fail")]
    pub abort_on_fail: bool,
}

/// The verdict on the load itself (`validity` in the record): whether a failed check fails the
/// run.
#[derive(Debug, Clone, Default, Args)]
pub struct VerdictArgs {
    /// Exit 6 when the load was not valid: the record's validity check failed (the client fell
    /// behind or sent under the rate offered, the sends were not the process asked for, a
    /// warm-up or a drift in the figures); the report's top line names which.
    #[arg(help_heading = "Analysis", long = "strict")]
    pub strict: bool,
}
