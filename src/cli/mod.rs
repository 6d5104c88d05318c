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
pub use run_flags::{IntervalArgs, LengthArgs, WorkloadArgs};
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
use std::path::PathBuf;
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

    /// HTTP method [default: GET].
    #[arg(help_heading = "Target", short = 'm', long = "method")]
    pub method: Option<String>,

    /// A request header, `Name: value` (repeatable).
    #[arg(
        help_heading = "Target",
        short = 'H',
        long = "header",
        value_name = "HEADER"
    )]
    pub headers: Vec<String>,

    /// HTTP/1.1 with `-H 'Expect: 100-continue'`: how long to wait for the server's `100
    /// Continue` before sending the body anyway (the wait is the `continue` phase) [default:
    /// 1s, curl's]
    #[arg(help_heading = "Target", long = "expect100-timeout", value_parser = duration_arg)]
    pub expect100_timeout: Option<Duration>,

    /// Request body.
    #[arg(help_heading = "Target", long = "body", value_name = "TEXT")]
    pub body: Option<String>,

    /// Read the request body from a file.
    #[arg(help_heading = "Target", long = "body-file", value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// How the embedded target's `/kv` store starts (a run with no URL).
    #[command(flatten)]
    pub kv: KvArgs,

    /// Connections to keep open, spread over the threads [default: 50].
    /// A list (`-c 100,200,500`) runs one level after another: a sweep.
    #[arg(help_heading = "Load", short = 'c', long = "connections", value_name = "N", value_parser = count_arg, value_delimiter = ',')]
    pub connections: Vec<u64>,

    /// Worker threads, one single-threaded runtime each [default: the number of cores].
    #[arg(help_heading = "Load", short = 't', long = "threads", value_name = "N", value_parser = count_arg)]
    pub threads: Option<u64>,

    /// Arrival process of the open loop [default: constant].
    #[arg(help_heading = "Load", long = "arrival", value_enum)]
    pub arrival: Option<ArrivalArg>,

    /// Open loop: requests due within this of each other (at most one per connection) leave in
    /// one wake-up, up to this late (schedule lag), never early: fewer wake-ups, less CPU. 0
    /// wakes once per request [default: 50us; at most 10ms].
    #[arg(help_heading = "Load", long = "pacer-slack", value_parser = duration_arg)]
    pub pacer_slack: Option<Duration>,

    /// Open loop: the share of a core each thread's pacer may spend spinning to send requests
    /// on time: it wakes early by the lateness it learns and spins the rest. The report states
    /// what it spent. 0 never spins [default: 5%; at most 100%].
    #[arg(help_heading = "Load", long = "pacer-spin", value_parser = percent_arg)]
    pub pacer_spin: Option<f64>,

    /// Seed of the random generators (poisson arrivals) [default: from the clock; the record
    /// keeps the one used].
    #[arg(help_heading = "Load", long = "seed")]
    pub seed: Option<u64>,

    /// A period at the start that is sent but not recorded [default: 0s].
    #[arg(help_heading = "Load", long = "warmup", value_name = "DURATION", value_parser = duration_arg)]
    pub warmup: Option<Duration>,

    /// At the end of the duration, how long to wait for the requests in flight (they are
    /// recorded and counted as drained; those still in flight then are counted too)
    /// [default: --timeout].
    #[arg(help_heading = "Load", long = "drain", value_parser = duration_arg)]
    pub drain: Option<Duration>,

    /// Pause between the levels of a sweep, and between repetitions.
    #[arg(help_heading = "Load", long = "pause", default_value = "1s", value_parser = duration_arg)]
    pub pause: Duration,

    /// Run this process's part of a plan split over several generators (1-based, e.g. 2/3):
    /// its share of the rate, the connections and a request count, and every n-th sequence
    /// number. `reqlife merge` adds the parts' records up exactly.
    #[arg(help_heading = "Load", long = "segment", value_parser = segment_arg)]
    pub segment: Option<crate::model::Segment>,

    /// HTTP/2: h2 by ALPN over TLS; h2c with prior knowledge on http://; on ws:// or wss://,
    /// the WebSocket over an HTTP/2 stream (RFC 8441's extended CONNECT).
    #[arg(help_heading = "Protocol", long = "http2")]
    pub http2: bool,

    /// HTTP/3 over QUIC (https:// URLs only; the connect phase is the QUIC handshake,
    /// `quic_handshake`, TLS 1.3 included).
    #[arg(help_heading = "Protocol", long = "http3")]
    pub http3: bool,

    /// HTTP/3: resume connections after the first with 0-RTT where the server allows it (their
    /// requests leave before the handshake ends; phase `quic_0rtt`). Replayable: for
    /// idempotent requests only.
    #[arg(help_heading = "Protocol", long = "zero-rtt")]
    pub zero_rtt: bool,

    /// HTTP/1.1 requests or ws:// messages per connection sent in one write, answered in order
    /// (or by --ws-match), the next batch once all are in (wrk's pipeline.lua); closed loops.
    #[arg(help_heading = "Protocol", long = "pipeline", value_parser = count_arg)]
    pub pipeline: Option<u64>,

    /// HTTP/2 and HTTP/3: concurrent streams per connection (h2load's -m).
    #[arg(help_heading = "Protocol", long = "streams", value_name = "N", value_parser = count_arg)]
    pub streams: Option<u64>,

    /// HTTP/2: initial flow-control window in bytes, for streams and the connection (e.g. 1KiB,
    /// 1MiB); the connection's is never below the protocol's 65535.
    #[arg(help_heading = "Protocol", long = "h2-window", value_parser = size_arg)]
    pub h2_window: Option<u64>,

    /// HTTP/2 in a closed loop: a freed stream's next request waits up to this long for the
    /// connection's other streams in flight, so that their requests go out in one write (less
    /// client CPU per request; the wait counts in the write phase). Off by default (e.g. 1ms).
    #[arg(help_heading = "Protocol", long = "h2-coalesce", value_parser = duration_arg)]
    pub h2_coalesce: Option<Duration>,

    /// Per-request timeout, connect included.
    #[arg(help_heading = "Protocol", long = "timeout", value_name = "DURATION", default_value = "10s", value_parser = duration_arg)]
    pub timeout: Duration,

    /// A new connection for every request (same as --connection-policy new).
    #[arg(help_heading = "Protocol", long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Keep connections open (`reuse`) or open one per request (`new`).
    #[arg(help_heading = "Protocol", long = "connection-policy", value_enum)]
    pub connection_policy: Option<PolicyArg>,

    /// Open at most this many new connections per second, over all threads (like h2load's --rate).
    #[arg(help_heading = "Protocol", long = "max-connections-per-second", value_parser = rate_arg, allow_negative_numbers = true)]
    pub max_connects_per_s: Option<f64>,

    /// Ask for compressed responses (Accept-Encoding: gzip, deflate, br; on ws://,
    /// permessage-deflate) and decode them, the cost shown as the `decode` phase. Without it,
    /// bodies are counted as received, never decoded.
    #[arg(help_heading = "Protocol", long = "compressed")]
    pub compressed: bool,

    /// Largest response body kept for decoding with --compressed, or read from a streamed
    /// response (--stream, or text/event-stream), in bytes (e.g. 64M); a larger one is a
    /// protocol error. Other bodies are counted, never kept.
    /// tcp:// with --framing u32be: the largest reply frame (counted, not kept either).
    #[arg(help_heading = "Protocol", long = "max-body", value_parser = count_arg, default_value = "64M")]
    pub max_body: u64,

    /// Largest response head: HTTP/1.1's head, HTTP/2's header block (advertised as
    /// SETTINGS_MAX_HEADER_LIST_SIZE), HTTP/3's field section; a larger one is a protocol error.
    #[arg(help_heading = "Protocol", long = "max-header-list", value_name = "SIZE", value_parser = size_arg, default_value = "64KiB")]
    pub max_header_list: u64,

    /// tcp:// targets: send the bytes of this file as each request (a pre-built binary
    /// request, e.g. a Thrift call with its frame header) and read a framed reply.
    #[arg(help_heading = "Protocol", long = "payload-file")]
    pub payload_file: Option<PathBuf>,

    /// tcp://: how a reply is delimited: `u32be` (a 4-byte big-endian length, then that many
    /// bytes, at most --max-body: Thrift's framed transport) or `none` (exactly
    /// --response-bytes) [default: u32be].
    #[arg(help_heading = "Protocol", long = "framing", value_enum)]
    pub framing: Option<FramingArg>,

    /// tcp:// with --framing none: the length of every reply, in bytes.
    #[arg(help_heading = "Protocol", long = "response-bytes", value_parser = count_arg)]
    pub response_bytes: Option<u64>,

    /// tcp://: write each request's sequence number at this byte offset of the payload, as a
    /// big-endian i32 (Thrift's seqid: 12 + the method name's length, frame header included).
    #[arg(help_heading = "Protocol", long = "seqid-offset")]
    pub seqid_offset: Option<u64>,

    /// Streamed responses: time the events of each response (`first_event`, `event_gap`,
    /// `events`): Server-Sent Events, chunks, lines, or a ws:// subscription's pushed
    /// messages. Without it, a `text/event-stream`
    /// response is timed as SSE; other bodies are counted, never parsed. A stream that never
    /// ends is bounded by --timeout (a counted timeout) and --max-body (a protocol error).
    #[arg(help_heading = "Protocol", long = "stream", value_enum)]
    pub stream: Option<StreamArg>,

    /// Do not verify the server's TLS certificate.
    #[arg(help_heading = "Protocol", long = "insecure", short = 'k')]
    pub insecure: bool,

    /// Trust the certificates in this PEM file (a CA, or the server's own self-signed
    /// certificate) in addition to the webpki roots: the fix for a certificate that is not
    /// trusted, verification kept (-k turns it off).
    #[arg(help_heading = "Protocol", long = "cacert")]
    pub cacert: Option<PathBuf>,

    /// gRPC: the method called and its message.
    #[command(flatten)]
    pub grpc: grpc::GrpcArgs,

    /// `--resolve`: the address to connect to for the URL's host.
    #[command(flatten)]
    pub resolve: resolve::ResolveArgs,

    /// How the report is shown.
    #[command(flatten)]
    pub view: ViewArgs,

    /// Write the full RunRecord (JSON) to this file (- for standard output: the report goes to
    /// stderr).
    #[arg(
        help_heading = "Output",
        short = 'o',
        long = "output",
        value_name = "FILE"
    )]
    pub output: Option<PathBuf>,

    /// Write the report as one self-contained HTML page (plots as inline SVG, readable
    /// offline, light or dark, printable) to this file (- for standard output); written also
    /// after an interruption.
    #[arg(help_heading = "Output", long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Interval of the time series kept in the record [default: 1s, or --every].
    #[arg(help_heading = "Output", long = "interval", value_parser = duration_arg)]
    pub interval: Option<Duration>,

    /// No progress bar, no header at the start, no line saying where -o wrote.
    #[arg(help_heading = "Output", short = 'q', long = "quiet")]
    pub quiet: bool,

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
