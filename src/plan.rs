//! The plan of a run: everything a run needs, validated and typed, built once from flags or a
//! scenario file (`cli::plan`) and read by every layer above it. It sits above the workload
//! (it holds the templated requests to send) and below the engine (which prepares its fixed
//! request from it).

mod protocol;

use crate::model::load_spec::{Given, Load, LoadError, LoadSpec, Names};
use crate::model::{LoadModel, Protocol, Schedule, Segment, StopRule, Target, TlsPlan};
use crate::workload::Workload;
use std::sync::Arc;
use std::time::Duration;

// The protocols' settings are the plan's own items.
pub use protocol::*;

/// The largest response head accepted when `--max-header-list` is not given (64 KiB).
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// A validated, typed plan: everything a run needs, built from flags in `cli::plan`.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Where to connect and what to put in the request line and Host header.
    pub target: Target,
    /// The HTTP method (a framed run sends no HTTP: the records name its framing, see
    /// [`RunPlan::method_label`]).
    pub method: String,
    /// Extra request headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// The request body (empty for none).
    pub body: Vec<u8>,
    /// The shape of the load.
    pub load: LoadModel,
    /// Worker threads, fitted to the load ([`RunPlan::fit_threads`]).
    pub threads: usize,
    /// The threads asked for (`-t`; `None`: one per core): a plan derived with another load
    /// ([`RunPlan::with_load`]) takes its `threads` from it.
    pub threads_asked: Option<usize>,
    /// When the run stops.
    pub stop: StopRule,
    /// A period at the start that is not recorded.
    pub warmup: Duration,
    /// Per-request timeout (connect included).
    pub timeout: Duration,
    /// How long the end of a timed run waits for the requests in flight.
    pub drain: Duration,
    /// Interval of the time series.
    pub interval: Duration,
    /// Open loop: how the pacer batches, spins, waits and sleeps (`--pacer-*`).
    pub pacing: Pacing,
    /// Whether and how certificates are checked.
    pub tls: TlsPlan,
    /// Response head size limit in bytes (`--max-header-list`): HTTP/1.1's head, HTTP/2's
    /// header block (compressed, and its decoded list), HTTP/3's field section.
    pub max_header_bytes: usize,
    /// HTTP/1.1 requests with `Expect: 100-continue` (a header of the run's): how long to wait
    /// for the server's `100 Continue` before sending the body anyway (`--expect100-timeout`);
    /// `None` without that header.
    pub expect_continue: Option<Duration>,
    /// Keep connections open across requests (`reuse`), or open one per request (`new`).
    pub keepalive: bool,
    /// At most this many new connections per second, over all threads.
    pub max_connects_per_s: Option<f64>,
    /// Seed of the random generators (poisson arrivals).
    pub seed: u64,
    /// The `Server-Timing` metric that is the server's own total (else the sum of all).
    pub server_total: String,
    /// The protocol the requests go over, with its own settings.
    pub protocol: ProtocolPlan,
    /// `--compressed`: ask for gzip, deflate or br and decode the body (the `decode` phase).
    pub compressed: bool,
    /// `--stream`: time the events of streamed responses (`text/event-stream` responses are
    /// timed as SSE without it).
    pub stream: Option<crate::model::EventMode>,
    /// Largest response body kept for decoding, in bytes (`--max-body`); a larger one is a
    /// protocol error. Bodies that are not decoded are counted, never kept.
    pub max_body_bytes: u64,
    /// This process's share of the plan (`--segment i/n`; the whole plan by default). The
    /// load model and stop rule hold the whole plan's figures; workers take their share.
    pub segment: Segment,
    /// Requests rendered per send from templates (`--scenario`, `--targets`); `None`: the
    /// one fixed request of `method`, `target`, `headers` and `body`.
    pub workload: Option<Arc<Workload>>,
    /// A scenario phase's name (reports label the phase's level with it).
    pub phase: Option<String>,
    /// `--trace-context`: a `traceparent` on every request, ids from the seed.
    pub trace: Option<crate::model::trace::TraceContext>,
    /// `--log-requests`: one row per request, streamed to a file as the run goes.
    pub log: Option<LogPlan>,
    /// `--until`: the run stops once each of these percentiles is this precise (its stop rule
    /// the cap); empty without it.
    pub until: Vec<crate::model::until::Until>,
}

/// The open-loop pacer's settings (`--pacer-slack`, `--pacer-spin`, `--pacer-timer`,
/// `--pacer-naps`); a plan of another load model carries the defaults, unused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacing {
    /// A wake-up of the pacer also releases the requests due within this after the first, so
    /// they leave late by up to this (recorded as schedule lag), never early.
    pub slack: Duration,
    /// The share of a core each thread's pacer may spin to send a request on time, after
    /// waking early by the lateness it learnt (0: never).
    pub spin: f64,
    /// What the pacer waits on.
    pub timer: PacerTimer,
    /// While nothing needs the thread awake, it sleeps through responses to the next due time
    /// instead of being woken by each (`--pacer-naps off`: a benchmark's before figure).
    pub naps: bool,
}

/// What the open-loop pacer waits on (`--pacer-timer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacerTimer {
    /// A timerfd armed to the nanosecond, woken through the thread's reactor.
    Precise,
    /// tokio's sleep, to its 1 ms tick (about as coarse as wrk2's pacing): a benchmark's
    /// before figure.
    Coarse,
}

impl PacerTimer {
    /// The name used on the command line and in the record.
    pub fn name(self) -> &'static str {
        match self {
            PacerTimer::Precise => "precise",
            PacerTimer::Coarse => "coarse",
        }
    }
}

/// The per-request log (`--log-requests FILE`, `--log-sample N`).
#[derive(Debug, Clone)]
pub struct LogPlan {
    /// Where it goes.
    pub path: std::path::PathBuf,
    /// The file, created before the run (an unwritable path is refused before the run starts).
    pub file: Arc<std::fs::File>,
    /// One row of every `every` requests per worker thread (1: every request).
    pub every: u64,
}

impl RunPlan {
    /// The protocol's name in records (`http/1.1`, `h2`, `h2c`, `h3`, `tcp`, `ws` or `wss`).
    pub fn protocol_name(&self) -> Protocol {
        self.protocol.settings().name(self.target.scheme)
    }

    /// Sessions (streams) sharing one connection: `--streams` over HTTP/2 or HTTP/3, else 1.
    pub fn streams(&self) -> usize {
        self.protocol.settings().streams()
    }

    /// The HTTP/2 settings of an HTTP/2 or gRPC run.
    pub fn http2(&self) -> Option<&Http2Plan> {
        self.protocol.http2()
    }

    /// The call of a gRPC run.
    pub fn grpc(&self) -> Option<&GrpcPlan> {
        self.protocol.grpc()
    }

    /// HTTP/1.1 requests or WebSocket messages in flight per connection (`--pipeline`): 1 for
    /// every other protocol.
    pub fn pipeline(&self) -> usize {
        self.protocol.settings().pipeline()
    }

    /// Whether streams carry the requests (HTTP/2, gRPC, HTTP/3): each stream's request is
    /// built from a templated request's rendered parts, not from HTTP/1.1 bytes.
    pub fn multiplexed(&self) -> bool {
        self.protocol.settings().multiplexed()
    }

    /// What the record and the reports name the requests by: the HTTP method, a framed
    /// run's framing (`u32be-framed`, `unframed`; "u32be-framed tcp"), or a WebSocket
    /// message's kind (`text`, `binary`).
    pub fn method_label(&self) -> &str {
        self.protocol
            .settings()
            .method_label()
            .unwrap_or(self.method.as_str())
    }

    /// This plan with the load `spec` asks for (the load model and its stop rule), checked by
    /// the one load builder: how knee's steps, calibrate's steps and a sweep's levels are
    /// derived from one plan, never by editing flags. Everything else is kept, but the
    /// threads, fitted to the new load as [`RunPlan::fit_threads`] says.
    pub fn with_load(&self, spec: &LoadSpec) -> Result<RunPlan, LoadError> {
        let Load { model, stop } = spec.build()?;
        RunPlan {
            load: model,
            stop,
            ..self.clone()
        }
        .fit_threads(&spec.names)
    }

    /// This plan as a closed loop of `connections` for `length` (a knee's probe, a
    /// calibration's closed step), derived as [`RunPlan::with_load`] says, the command
    /// line's names in its messages.
    pub fn with_closed_loop(
        &self,
        connections: u64,
        length: Duration,
    ) -> Result<RunPlan, LoadError> {
        self.with_load(&Self::spec(connections, None, length))
    }

    /// This plan as an open loop at `rate` requests per second, evenly spaced, over
    /// `connections`, for `length` (a knee's steps, a calibration's open steps), derived as
    /// [`RunPlan::with_load`] says.
    pub fn with_rate(
        &self,
        rate: f64,
        connections: u64,
        length: Duration,
    ) -> Result<RunPlan, LoadError> {
        self.with_load(&Self::spec(connections, Some(rate), length))
    }

    /// The command line's load of `connections`, at `rate` if one is given, for `length`.
    fn spec(connections: u64, rate: Option<f64>, length: Duration) -> LoadSpec {
        let mut spec = LoadSpec::new(crate::model::load_spec::FLAGS, None);
        spec.connections = Some(Given::flag(connections));
        spec.rate = rate.map(Given::flag);
        spec.duration = Some(Given::flag(length));
        spec
    }

    /// Sets the threads for the load: one for bursts (timed as one), else the threads asked
    /// for (or one per core), at most one per connection of this process. Refuses a load
    /// that leaves this process's segment no connection or no request (`names`: what the
    /// source calls the values).
    pub fn fit_threads(mut self, names: &Names) -> Result<RunPlan, LoadError> {
        let (segment, connections) = (self.segment, self.connections() as u64);
        let fail = |message| Err(LoadError { message, at: None });
        let local = self.local_connections();
        if local == 0 {
            return fail(format!(
                "segment {}/{} would have no connection: {} {connections} must be at least {} to split over {} segments",
                segment.index + 1,
                segment.count,
                names.connections,
                segment.count,
                segment.count
            ));
        }
        if let StopRule::Requests(n) = self.stop {
            if segment.share(n) == 0 {
                return fail(format!(
                    "segment {}/{} would send no request: {} {n} must be at least {}",
                    segment.index + 1,
                    segment.count,
                    names.count,
                    segment.count
                ));
            }
        }
        if let Some(c) = self.http2().and_then(|h| h.coalesce) {
            if !matches!(
                self.load,
                LoadModel::Closed { .. } | LoadModel::ClosedStages(_)
            ) {
                return fail(format!(
                    "--h2-coalesce {c:?} needs a closed loop: an open loop (-R) sends each request when it is due, a burst all at once; drop --h2-coalesce or -R/--burst"
                ));
            }
        }
        if self.pipeline() > 1
            && !matches!(
                self.load,
                LoadModel::Closed { .. } | LoadModel::ClosedStages(_)
            )
        {
            return fail(format!(
                "--pipeline {} needs a closed loop: an open loop (-R) sends each request when it is due, a burst all at once; drop --pipeline or -R/--burst",
                self.pipeline()
            ));
        }
        self.threads = match (&self.load, self.threads_asked) {
            (LoadModel::Burst { .. }, _) => 1,
            (_, Some(t)) => t.min(local),
            (_, None) => crate::util::limits::default_threads().min(local),
        };
        Ok(self)
    }

    /// Connections this process holds: its segment's share of the plan's.
    pub fn local_connections(&self) -> usize {
        self.segment.share(self.connections() as u64) as usize
    }

    /// The stop rule of this process: its segment's share of a request count.
    pub fn local_stop(&self) -> StopRule {
        match self.stop {
            StopRule::Requests(n) => StopRule::Requests(self.segment.share(n)),
            d => d,
        }
    }

    /// Number of connections of the plan (the most at any time, for stages).
    pub fn connections(&self) -> usize {
        self.load.connections()
    }

    /// The stages' durations, in order (empty when the load has no stages).
    pub fn stage_durations(&self) -> Vec<Duration> {
        match &self.load {
            LoadModel::Open {
                schedule: Schedule::Stages(st),
                ..
            } => st.iter().map(|s| s.duration).collect(),
            LoadModel::ClosedStages(st) => st.iter().map(|s| s.duration).collect(),
            _ => Vec::new(),
        }
    }

    /// Human labels of the stages (`0->20000 req/s`, `200 connections`).
    pub fn stage_labels(&self) -> Vec<String> {
        let span = |a: f64, b: f64, unit: &str| {
            if a == b {
                format!("{a} {unit}")
            } else {
                format!("{a}->{b} {unit}")
            }
        };
        match &self.load {
            LoadModel::Open {
                schedule: Schedule::Stages(st),
                ..
            } => st
                .iter()
                .map(|s| span(s.from_rps, s.to_rps, "req/s"))
                .collect(),
            LoadModel::ClosedStages(st) => st
                .iter()
                .map(|s| span(s.from as f64, s.to as f64, "connections"))
                .collect(),
            _ => Vec::new(),
        }
    }
}
