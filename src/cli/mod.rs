//! The command line: clap definitions of every subcommand and flag (wrk/oha habits), unit
//! parsing ([`units`]) and the one place where raw flags become a validated plan ([`plan`]),
//! and that plan with everything around it a command `app` runs ([`command::RunCommand`],
//! [`knee::KneeCommand`], [`calibrate::CalibrateCommand`], [`ServeCommand`]).

pub mod calibrate;
pub mod command;
pub use calibrate::CalibrateArgs;
pub mod compare;
pub use compare::CompareArgs;
mod error;
pub use error::PrepareError;
pub mod framed;
pub mod grpc;
pub mod help;
pub mod knee;
pub use knee::KneeArgs;
pub mod output;
mod pacing;
pub mod plan;
pub mod probes;
pub mod protocol;
mod records;
pub mod reflect;
pub use records::{MergeArgs, ReportArgs, ReportFormat, StatsArgs, StatsColumn, ViewArgs};
mod serve;
pub use serve::{KvArgs, ServeArgs, ServeCommand, TargetChoice};
pub mod resolve;
pub mod run;
pub mod run_flags;
mod step_flags;
pub use run_flags::{IntervalArgs, LengthArgs, VerdictArgs, WorkloadArgs};
pub use step_flags::{
    ConnectionArgs, FramedArgs, HttpArgs, LoadArgs, OutputArgs, RequestArgs, ResponseArgs, TlsArgs,
};
mod short_help;
pub mod trace;
mod watch;
pub mod websocket;
use crate::util::units;
pub use watch::{WatchArgs, WatchPlan};
pub mod workload;

use clap::{Args, Parser, Subcommand};
use help::{COMPARE_ABOUT, KNEE_ABOUT, RUN_EXIT_CODES};
use std::net::SocketAddr;
use std::time::Duration;

/// reqlife: where the time of a request goes, under load.
#[derive(Debug, Parser)]
#[command(name = "reqlife", version = help::VERSION, long_version = help::LONG_VERSION, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// reqlife's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load-test a URL (or, with no URL, the embedded target started in-process) and report.
    #[command(
        after_help = short_help::RUN_SHORT_END,
        after_long_help = RUN_EXIT_CODES,
        mut_args(short_help::newcomer)
    )]
    Run(Box<RunArgs>),
    /// Run the embedded target on its own.
    #[command(after_help = help::serve_routes())]
    Serve(ServeArgs),
    /// On the server's host, as root: attach eBPF probes to the server and serve what they
    /// measure to `run --server-probes-from` on the generator's host.
    Probe(probes::ProbeAgentArgs),
    /// Re-render the report of a saved RunRecord (`run -o FILE`).
    Report(ReportArgs),
    /// Summary statistics of a file of numbers (one per line, or a column): R's summary()
    /// and type-7 quantiles, exactly, and a log2 histogram.
    Stats(StatsArgs),
    /// How much load this machine can generate: the cost of a timestamp and of a recorded
    /// sample, the closed- and open-loop limits against the embedded target (or --external),
    /// the client CPU per request and the latency the client adds, and a verdict.
    Calibrate(CalibrateArgs),
    /// Merge the records of one plan's segments (`run --segment i/n -o part.json` on several
    /// generators), or of its repeated runs, exactly: histograms added, counters summed,
    /// interval series merged by time. Prints the merged report.
    Merge(MergeArgs),
    /// The highest open-loop rate that meets every SLO: an exponential search, then
    /// bisection, one step per rate (`--step` long); a step passes when the SLOs hold and the
    /// offered rate was achieved.
    #[command(long_about = KNEE_ABOUT)]
    Knee(Box<KneeArgs>),
    /// Is B faster than A, or is it noise? Throughput and p50/p90/p99/p99.9 of the total, of
    /// each phase and server metric: A, B, the change, its 95% interval, the p of a rank test,
    /// the minimum detectable effect and a verdict (across repeated runs with `run --repeat N`,
    /// across interleaved rounds with `--run URL_A URL_B`; else by resampling the runs'
    /// intervals).
    #[command(long_about = COMPARE_ABOUT)]
    Compare(CompareArgs),
}

fn percent_arg(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .map_err(|_| format!("invalid percentage '{s}': expected a number such as 5 or 5%"))
}

fn duration_arg(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| e.0)
}

fn segment_arg(s: &str) -> Result<crate::model::Segment, String> {
    crate::model::Segment::parse(s).map_err(|e| e.to_string())
}

fn until_arg(s: &str) -> Result<crate::model::until::Until, String> {
    crate::model::until::Until::parse(s)
}

fn start_at_arg(s: &str) -> Result<units::StartAt, String> {
    units::parse_start_at(s).map_err(|e| e.0)
}

fn count_arg(s: &str) -> Result<u64, String> {
    units::parse_count(s).map_err(|e| e.0)
}

fn size_arg(s: &str) -> Result<u64, String> {
    units::parse_size(s).map_err(|e| e.0)
}

fn stages_arg(s: &str) -> Result<units::StagesSpec, String> {
    units::parse_stages(s).map_err(|e| e.0)
}

/// `--addr`: `HOST:PORT`, `[::1]:PORT`, or a bare port meaning 127.0.0.1:PORT.
pub fn addr_arg(s: &str) -> Result<SocketAddr, String> {
    let s = s.trim();
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse().map_err(|_| {
        format!(
            "invalid address '{s}': expected HOST:PORT (127.0.0.1:8080, [::1]:8080) or a port (8080)"
        )
    })
}

fn rate_arg(s: &str) -> Result<f64, String> {
    units::parse_rate(s).map_err(|e| e.0)
}

/// `--arrival`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced requests.
    Constant,
    /// Exponential gaps with the same mean rate.
    Poisson,
}

/// `--pacer-timer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PacerTimerArg {
    /// A timerfd armed to the nanosecond.
    Precise,
    /// tokio's sleep, to its 1 ms tick (about as coarse as wrk2's pacing).
    Coarse,
}

/// `--pacer-naps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NapsArg {
    /// Sleep through responses to the next due time (timed by the kernel's arrival stamps).
    On,
    /// Be woken by each response.
    Off,
}

/// `--h2-writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum H2WritesArg {
    /// After one turn of the runtime, joined by the next requests of the answers read meanwhile.
    Gather,
    /// Each as soon as it is queued.
    AtOnce,
}

/// `--framing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FramingArg {
    /// A 4-byte big-endian length, then that many bytes.
    U32be,
    /// No framing: replies of --response-bytes bytes.
    None,
}

/// `--stream`: what counts as an event of a streamed response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StreamArg {
    /// Server-Sent Events (text/event-stream): an event ends with an empty line.
    Sse,
    /// HTTP/1.1 chunks, HTTP/2 DATA frames.
    Chunks,
    /// Lines ending with LF (NDJSON).
    Lines,
    /// ws://: the messages the server pushes after the request's (a subscription).
    Messages,
}

/// `--connection-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PolicyArg {
    /// Keep connections open across requests (keep-alive).
    Reuse,
    /// A new connection for every request.
    New,
}

/// Flags of `reqlife run`: those of one step of load ([`StepArgs`], which `knee` takes too),
/// and the groups of `run` alone ([`run_flags`]). Every check reads a step's flags through
/// `run`'s (`Deref`), and the others by their group (`args.length.rate`).
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// The flags of a step: the target, its protocol, the connections, the outputs.
    #[command(flatten)]
    pub step: StepArgs,

    /// A workload instead of one request.
    #[command(flatten)]
    pub workload: WorkloadArgs,

    /// How much load for how long, and how many times.
    #[command(flatten)]
    pub length: LengthArgs,

    /// What a run does as each interval closes.
    #[command(flatten)]
    pub intervals: IntervalArgs,

    /// `--strict`: a load that was not valid fails the run.
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

impl RunArgs {
    /// The flags of `run` made of a step's alone (`knee`'s): no workload, no length, nothing
    /// per interval.
    pub fn of_step(step: StepArgs) -> RunArgs {
        RunArgs {
            step,
            workload: WorkloadArgs::default(),
            length: LengthArgs::default(),
            intervals: IntervalArgs::default(),
            verdict: VerdictArgs::default(),
        }
    }
}

impl std::ops::Deref for RunArgs {
    type Target = StepArgs;
    fn deref(&self) -> &StepArgs {
        &self.step
    }
}

impl std::ops::DerefMut for RunArgs {
    fn deref_mut(&mut self) -> &mut StepArgs {
        &mut self.step
    }
}

/// The flags of one step of load (`reqlife run`'s, and each step of `reqlife knee`), in the
/// order `--help` lists them, under headings in the order people look for them: Target (what
/// is sent where), Embedded target, Load, Protocol, Output, Analysis (clap orders headings by
/// their first flag, so keep each group together).
#[derive(Debug, Clone, Args)]
pub struct StepArgs {
    /// The URL to load (http://, https://, tcp://, ws:// or wss://). Without one, the embedded
    /// target is started in-process on a free loopback port and tested.
    pub url: Option<String>,

    /// The request sent: its method, headers and body.
    #[command(flatten)]
    pub request: RequestArgs,

    /// How the embedded target's `/kv` store starts (a run with no URL).
    #[command(flatten)]
    pub kv: KvArgs,

    /// The load of a step: its connections and threads, the open loop's arrivals and pacer, and the periods around the measured one.
    #[command(flatten)]
    pub load: LoadArgs,

    /// HTTP/2, HTTP/3 and HTTP/1.1's pipelining: the protocol spoken and what it puts in flight.
    #[command(flatten)]
    pub http: HttpArgs,

    /// The connections: the timeout of a request, whether connections are kept, how fast new ones open.
    #[command(flatten)]
    pub connection: ConnectionArgs,

    /// The responses: compressed or not, how large, and how a streamed one is timed.
    #[command(flatten)]
    pub response: ResponseArgs,

    /// Framed binary requests on tcp:// targets.
    #[command(flatten)]
    pub framed: FramedArgs,

    /// TLS: whether the server's certificate is verified, and against what.
    #[command(flatten)]
    pub tls: TlsArgs,

    /// gRPC: the method called and its message.
    #[command(flatten)]
    pub grpc: grpc::GrpcArgs,

    /// `--resolve`: the address to connect to for the URL's host.
    #[command(flatten)]
    pub resolve: resolve::ResolveArgs,

    /// How the report is shown.
    #[command(flatten)]
    pub view: ViewArgs,

    /// The files a run writes, and what it says as it goes.
    #[command(flatten)]
    pub files: OutputArgs,

    /// The Server-Timing metric that is the server's own total; responses without it count
    /// the sum of their metrics. The breakdown shows write + wait − server total as network and client.
    #[arg(
        help_heading = "Analysis",
        long = "server-total",
        default_value = "total"
    )]
    pub server_total: String,

    /// How the run is watched while it goes.
    #[command(flatten)]
    pub watch: WatchArgs,

    /// The server-side probes.
    #[command(flatten)]
    pub probes: probes::ProbeArgs,

    /// The trace context sent with each request.
    #[command(flatten)]
    pub trace: trace::TraceArgs,

    /// WebSocket: subscriptions and pings.
    #[command(flatten)]
    pub ws: websocket::WsArgs,
}

#[cfg(test)]
mod tests;
