//! The flags of one step of load ([`super::StepArgs`]), in groups by meaning, each flattened
//! into the step under the heading `--help` shows it in: the request ([`RequestArgs`]), the
//! load ([`LoadArgs`]), the protocol's ([`HttpArgs`], [`ConnectionArgs`], [`ResponseArgs`],
//! [`FramedArgs`], [`TlsArgs`]) and the files written ([`OutputArgs`]). A group's flags keep
//! their whole help text: a new flag goes to its group's file, never trimmed to fit one.

use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// The request sent: its method, headers and body.
#[derive(Debug, Clone, Args)]
pub struct RequestArgs {
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
    #[arg(help_heading = "Target", long = "expect100-timeout", value_parser = super::duration_arg)]
    pub expect100_timeout: Option<Duration>,

    /// Request body.
    #[arg(help_heading = "Target", long = "body", value_name = "TEXT")]
    pub body: Option<String>,

    /// Read the request body from a file.
    #[arg(help_heading = "Target", long = "body-file", value_name = "FILE")]
    pub body_file: Option<PathBuf>,
}

/// The load of a step: its connections and threads, the open loop's arrivals and pacer, and the periods around the measured one.
#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Connections to keep open, spread over the threads [default: 50].
    /// A list (`-c 100,200,500`) runs one level after another: a sweep.
    #[arg(help_heading = "Load", short = 'c', long = "connections", value_name = "N", value_parser = super::count_arg, value_delimiter = ',')]
    pub connections: Vec<u64>,

    /// Worker threads, one single-threaded runtime each [default: the number of cores].
    #[arg(help_heading = "Load", short = 't', long = "threads", value_name = "N", value_parser = super::count_arg)]
    pub threads: Option<u64>,

    /// Arrival process of the open loop [default: constant].
    #[arg(help_heading = "Load", long = "arrival", value_enum)]
    pub arrival: Option<super::ArrivalArg>,

    /// Open loop: requests due within this of each other (at most one per connection) leave in
    /// one wake-up, up to this late (schedule lag), never early: fewer wake-ups, less CPU. 0
    /// wakes once per request [default: 50us; at most 10ms].
    #[arg(help_heading = "Load", long = "pacer-slack", value_parser = super::duration_arg)]
    pub pacer_slack: Option<Duration>,

    /// Open loop: the share of a core each thread's pacer may spend spinning to send requests
    /// on time: it wakes early by the lateness it learns and spins the rest. The report states
    /// what it spent. 0 never spins [default: 5%; at most 100%].
    #[arg(help_heading = "Load", long = "pacer-spin", value_parser = super::percent_arg)]
    pub pacer_spin: Option<f64>,

    /// Open loop, for a benchmark's before figure: what the pacer waits on. The record keeps
    /// `coarse` [default: precise].
    #[arg(help_heading = "Load", long = "pacer-timer", value_enum)]
    pub pacer_timer: Option<super::PacerTimerArg>,

    /// Open loop, for a benchmark's before figure: whether the thread sleeps through responses
    /// while nothing needs it awake. The record keeps `off` [default: on].
    #[arg(help_heading = "Load", long = "pacer-naps", value_enum)]
    pub pacer_naps: Option<super::NapsArg>,

    /// Seed of the random generators (poisson arrivals) [default: from the clock; the record
    /// keeps the one used].
    #[arg(help_heading = "Load", long = "seed")]
    pub seed: Option<u64>,

    /// A period at the start that is sent but not recorded [default: 0s].
    #[arg(help_heading = "Load", long = "warmup", value_name = "DURATION", value_parser = super::duration_arg)]
    pub warmup: Option<Duration>,

    /// At the end of the duration, how long to wait for the requests in flight (they are
    /// recorded and counted as drained; those still in flight then are counted too)
    /// [default: --timeout].
    #[arg(help_heading = "Load", long = "drain", value_parser = super::duration_arg)]
    pub drain: Option<Duration>,

    /// Pause between the levels of a sweep, and between repetitions.
    #[arg(help_heading = "Load", long = "pause", default_value = "1s", value_parser = super::duration_arg)]
    pub pause: Duration,

    /// Run this process's part of a plan split over several generators (1-based, e.g. 2/3):
    /// its share of the rate, the connections and a request count, and every n-th sequence
    /// number. `reqlife merge` adds the parts' records up exactly.
    #[arg(help_heading = "Load", long = "segment", value_parser = super::segment_arg)]
    pub segment: Option<crate::model::Segment>,

    /// Run until precise: until the 95% interval of each percentile named is within this
    /// share of it (`p99:5%`; a phase's: `wait.p99:10%`; several: `p50:2%,p99:5%`), with -d or
    /// -n as the cap (a knee step's length in `knee`). The record says whether it got there and
    /// when.
    #[arg(help_heading = "Load", long = "until", value_name = "PERCENTILE:SHARE", value_parser = super::until_arg, value_delimiter = ',')]
    pub until: Vec<crate::model::until::Until>,
}

/// HTTP/2, HTTP/3 and HTTP/1.1's pipelining: the protocol spoken and what it puts in flight.
#[derive(Debug, Clone, Args)]
pub struct HttpArgs {
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
    #[arg(help_heading = "Protocol", long = "pipeline", value_parser = super::count_arg)]
    pub pipeline: Option<u64>,

    /// HTTP/2 and HTTP/3: concurrent streams per connection (h2load's -m).
    #[arg(help_heading = "Protocol", long = "streams", value_name = "N", value_parser = super::count_arg)]
    pub streams: Option<u64>,

    /// HTTP/2: initial flow-control window in bytes, for streams and the connection (e.g. 1KiB,
    /// 1MiB); the connection's is never below the protocol's 65535.
    #[arg(help_heading = "Protocol", long = "h2-window", value_parser = super::size_arg)]
    pub h2_window: Option<u64>,

    /// HTTP/2 in a closed loop: a freed stream's next request waits up to this long for the
    /// connection's other streams in flight, so that their requests go out in one write (less
    /// client CPU per request; the wait counts in the write phase). Off by default (e.g. 1ms).
    #[arg(help_heading = "Protocol", long = "h2-coalesce", value_parser = super::duration_arg)]
    pub h2_coalesce: Option<Duration>,

    /// HTTP/2, for a benchmark's before figure: when new requests are written; not with
    /// --h2-coalesce. The record keeps `at-once` [default: gather].
    #[arg(help_heading = "Protocol", long = "h2-writes", value_enum)]
    pub h2_writes: Option<super::H2WritesArg>,
}

/// The connections: the timeout of a request, whether connections are kept, how fast new ones open.
#[derive(Debug, Clone, Args)]
pub struct ConnectionArgs {
    /// Per-request timeout, connect included.
    #[arg(help_heading = "Protocol", long = "timeout", value_name = "DURATION", default_value = "10s", value_parser = super::duration_arg)]
    pub timeout: Duration,

    /// A new connection for every request (same as --connection-policy new).
    #[arg(help_heading = "Protocol", long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Keep connections open (`reuse`) or open one per request (`new`).
    #[arg(help_heading = "Protocol", long = "connection-policy", value_enum)]
    pub connection_policy: Option<super::PolicyArg>,

    /// Open at most this many new connections per second, over all threads (like h2load's --rate).
    #[arg(help_heading = "Protocol", long = "max-connections-per-second", value_parser = super::rate_arg, allow_negative_numbers = true)]
    pub max_connects_per_s: Option<f64>,
}

/// The responses: compressed or not, how large, and how a streamed one is timed.
#[derive(Debug, Clone, Args)]
pub struct ResponseArgs {
    /// Ask for compressed responses (Accept-Encoding: gzip, deflate, br; on ws://,
    /// permessage-deflate) and decode them, the cost shown as the `decode` phase. Without it,
    /// bodies are counted as received, never decoded.
    #[arg(help_heading = "Protocol", long = "compressed")]
    pub compressed: bool,

    /// Largest response body kept for decoding with --compressed, or read from a streamed
    /// response (--stream, or text/event-stream), in bytes (e.g. 64M); a larger one is a
    /// protocol error. Other bodies are counted, never kept.
    /// tcp:// with --framing u32be: the largest reply frame (counted, not kept either).
    #[arg(help_heading = "Protocol", long = "max-body", value_parser = super::count_arg, default_value = "64M")]
    pub max_body: u64,

    /// Largest response head: HTTP/1.1's head, HTTP/2's header block (advertised as
    /// SETTINGS_MAX_HEADER_LIST_SIZE), HTTP/3's field section; a larger one is a protocol error.
    #[arg(help_heading = "Protocol", long = "max-header-list", value_name = "SIZE", value_parser = super::size_arg, default_value = "64KiB")]
    pub max_header_list: u64,

    /// Streamed responses: time the events of each response (`first_event`, `event_gap`,
    /// `events`): Server-Sent Events, chunks, lines, or a ws:// subscription's pushed
    /// messages. Without it, a `text/event-stream`
    /// response is timed as SSE; other bodies are counted, never parsed. A stream that never
    /// ends is bounded by --timeout (a counted timeout) and --max-body (a protocol error).
    #[arg(help_heading = "Protocol", long = "stream", value_enum)]
    pub stream: Option<super::StreamArg>,
}

/// Framed binary requests on tcp:// targets.
#[derive(Debug, Clone, Args)]
pub struct FramedArgs {
    /// tcp:// targets: send the bytes of this file as each request (a pre-built binary
    /// request, e.g. a Thrift call with its frame header) and read a framed reply.
    #[arg(help_heading = "Protocol", long = "payload-file")]
    pub payload_file: Option<PathBuf>,

    /// tcp://: how a reply is delimited: `u32be` (a 4-byte big-endian length, then that many
    /// bytes, at most --max-body: Thrift's framed transport) or `none` (exactly
    /// --response-bytes) [default: u32be].
    #[arg(help_heading = "Protocol", long = "framing", value_enum)]
    pub framing: Option<super::FramingArg>,

    /// tcp:// with --framing none: the length of every reply, in bytes.
    #[arg(help_heading = "Protocol", long = "response-bytes", value_parser = super::count_arg)]
    pub response_bytes: Option<u64>,

    /// tcp://: write each request's sequence number at this byte offset of the payload, as a
    /// big-endian i32 (Thrift's seqid: 12 + the method name's length, frame header included).
    #[arg(help_heading = "Protocol", long = "seqid-offset")]
    pub seqid_offset: Option<u64>,
}

/// TLS: whether the server's certificate is verified, and against what.
#[derive(Debug, Clone, Args)]
pub struct TlsArgs {
    /// Do not verify the server's TLS certificate.
    #[arg(help_heading = "Protocol", long = "insecure", short = 'k')]
    pub insecure: bool,

    /// Trust the certificates in this PEM file (a CA, or the server's own self-signed
    /// certificate) in addition to the webpki roots: the fix for a certificate that is not
    /// trusted, verification kept (-k turns it off).
    #[arg(help_heading = "Protocol", long = "cacert")]
    pub cacert: Option<PathBuf>,
}

/// The files a run writes, and what it says as it goes.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
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
    #[arg(help_heading = "Output", long = "interval", value_parser = super::duration_arg)]
    pub interval: Option<Duration>,

    /// No progress bar, no header at the start, no line saying where -o wrote.
    #[arg(help_heading = "Output", short = 'q', long = "quiet")]
    pub quiet: bool,
}
