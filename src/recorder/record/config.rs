//! What a record says was asked for (the [`Config`], derived from the plan) and where it ran
//! (the [`Environment`]).

use super::Ending;
use crate::model::{LoadKind, LoadModel, Protocol, Schedule, Scheme, StopRule};
use crate::plan::{PacerTimer, RunPlan};
use serde::{Deserialize, Serialize};

/// A name the resolver looked up before the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Resolved {
    /// The address the resolver gave (the first, without the port).
    pub addr: String,
    /// Seconds the lookup took.
    pub took_s: f64,
}

/// What was asked for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Config {
    /// The URL as given.
    pub url: String,
    /// The URL's host was a name: the address the resolver gave, and how long it took (once,
    /// before the run; absent for an address, `--resolve` and older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<Resolved>,
    /// The target was reqlife's embedded server, started in-process.
    pub embedded_target: bool,
    /// The request method (a framed run: `u32be-framed` or `unframed`).
    pub method: String,
    /// Extra request headers, in the order given.
    pub headers: Vec<(String, String)>,
    /// The fixed request's body length, bytes.
    pub body_bytes: u64,
    /// Connections (a closed loop's, or an open loop's pool).
    pub connections: u64,
    /// Worker threads.
    pub threads: u64,
    /// The run's length in seconds; `None` when it stopped after a count of requests.
    pub duration_s: Option<f64>,
    /// The count of requests that stopped the run; `None` when it ran for a duration.
    pub requests: Option<u64>,
    /// The warm-up before recording, seconds.
    pub warmup_s: f64,
    /// The per-request timeout, seconds.
    pub timeout_s: f64,
    /// The length of one interval of the series, seconds.
    pub interval_s: f64,
    /// Certificates were not verified (`--insecure`).
    pub insecure: bool,
    /// The CA certificate file trusted (`--cacert`), if given.
    pub cacert: Option<String>,
    /// Written by its name: `http/1.1`, `h2`, `h2c`, `h3` or `tcp`.
    pub protocol: Protocol,
    /// Concurrent streams per connection (1 for HTTP/1.1).
    pub streams: u64,
    /// HTTP/1.1 requests or WebSocket messages pipelined per connection (`--pipeline`; 1:
    /// none, then not written).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub pipeline: u64,
    /// HTTP/2: `--h2-coalesce`, seconds (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_coalesce_s: Option<f64>,
    /// HTTP/2: `--h2-writes` when not its default (`gather`): `at-once`, each new request
    /// written as soon as it is queued (a benchmark's before figure); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2_writes: Option<String>,
    /// `closed`, `open` or `burst`.
    pub load_model: LoadKind,
    /// Open loop: the offered rate (req/s) of a constant schedule.
    pub rate_rps: Option<f64>,
    /// Open loop: `constant` or `poisson`.
    pub arrival: Option<String>,
    /// Open loop: `--pacer-slack`, seconds (absent from records that predate it).
    #[serde(default)]
    pub pacer_slack_s: Option<f64>,
    /// Open loop: `--pacer-spin`, the share of a core each thread's pacer may spin to send on
    /// time (absent in other load models and older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer_spin: Option<f64>,
    /// Open loop: `--pacer-timer` when not its default (`precise`): `coarse`, tokio's 1 ms
    /// sleep (a benchmark's before figure); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer_timer: Option<String>,
    /// Open loop: `--pacer-naps` when not its default (`on`): `off`, the thread woken by each
    /// response (a benchmark's before figure); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacer_naps: Option<String>,
    /// The seed of the random generators (`--seed`, or the one drawn from the clock).
    pub seed: u64,
    /// `reuse` (keep-alive) or `new` (a connection per request).
    pub connection_policy: String,
    /// `--stream`: `sse`, `chunks` or `lines`; absent without it (SSE by its content type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The whole run's limit of new connections per second (`--max-connections-per-second`), if
    /// any.
    pub max_connections_per_second: Option<f64>,
    /// The command line as typed.
    pub command_line: Vec<String>,
    /// A sweep's levels (`of`: `connections` or `rate`).
    pub sweep: Option<Sweep>,
    /// `--repeat N`: how many times the plan ran (1: once).
    #[serde(default = "one")]
    pub repeat: u64,
    /// `--segment i/n`: this record is part i of n of the plan (whose figures the config
    /// holds: the whole rate, connections and count); `None` for the whole plan.
    #[serde(default)]
    pub segment: Option<String>,
    /// What was sent when not one fixed request: `scenario FILE` or `targets FILE`.
    #[serde(default)]
    pub workload: Option<String>,
    /// `--grpc`: the method called (`package.Service/Method`); absent from other runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<String>,
    /// `--ws-match`: the JSON field (a name or a dotted path) that matched WebSocket replies
    /// to their messages; absent when replies answered in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ws_match: Option<String>,
    /// `--trace-context`: the share sent sampled, the `tracestate` sent and the link to a
    /// trace (`--trace-link`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_context: Option<TraceConfig>,
    /// `--until`: the percentiles the run went on until precise, as given (`p99:5%`); absent
    /// without it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub until: Vec<String>,
}

/// The trace context a run sent with its requests.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceConfig {
    /// The share of requests sent with the sampled flag (`--trace-sample`).
    pub sample: f64,
    /// The `tracestate` sent with every request (`--tracestate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracestate: Option<String>,
    /// A URL with `{trace_id}` (`--trace-link`): where a kept request's trace is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl Config {
    /// The scheme of the URL, as the one URL parser reads it; `None` for a URL that is not
    /// `http://` or `https://` (a framed run's `tcp://`).
    pub fn scheme(&self) -> Option<Scheme> {
        // A WebSocket's: TLS on wss://, as on https://.
        match self.url.get(..6).map(str::to_ascii_lowercase).as_deref() {
            Some("wss://") => return Some(Scheme::Https),
            Some(s) if s.starts_with("ws://") => return Some(Scheme::Http),
            _ => {}
        }
        crate::model::split_url(&self.url)
            .ok()
            .map(|(scheme, ..)| scheme)
    }
}

fn is_one(n: &u64) -> bool {
    *n == 1
}

fn one() -> u64 {
    1
}

/// A sweep's levels: what varied and its values, in order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sweep {
    /// What the sweep varies: `connections` or `rate`.
    pub of: String,
    /// Each level's value: connections, or requests per second.
    pub levels: Vec<f64>,
}

/// Where it ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    /// The reqlife version that ran.
    pub tool_version: String,
    /// The cores the process could use (the default thread count).
    pub cores: u64,
    /// The operating system (`linux`).
    pub os: String,
    /// The CPU architecture (`x86_64`, `aarch64`).
    pub arch: String,
    /// The kernel's release (`/proc/sys/kernel/osrelease`; empty where unknown).
    pub kernel: String,
    /// The host's name (empty where unknown).
    pub hostname: String,
    /// RFC 3339 wall-clock time at which recording started.
    pub start_time: String,
    /// `run --coordinator`: each segment's start against the one they were all given, and
    /// its clock against the coordinator's (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generators: Vec<GeneratorStart>,
}

/// One segment of a plan run `--coordinator`, as its start went.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorStart {
    /// `k/n`.
    pub segment: String,
    /// Its host's name.
    pub hostname: String,
    /// Its clock's offset: the coordinator's clock minus its own, µs (0 for segment 1), from
    /// the least delayed of its clock exchanges.
    pub clock_offset_us: f64,
    /// That exchange's round trip less the coordinator's own time, µs: the offset is within
    /// half of it.
    pub exchange_delay_us: f64,
    /// How long after the start given its recording started, on the coordinator's clock, ms
    /// (its connections' opening and any warm-up included); `None` where its record has no
    /// start time.
    pub start_late_ms: Option<f64>,
}

impl Environment {
    /// The environment of this process, recording from `start_time`.
    pub fn current(start_time: String) -> Self {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_default()
        };
        Environment {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            cores: crate::util::limits::default_threads() as u64,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
            start_time,
            generators: Vec::new(),
        }
    }
}

/// The config of `plan`, run as `end` says.
pub(super) fn config_of(plan: &RunPlan, end: &Ending) -> Config {
    let open = matches!(plan.load, LoadModel::Open { .. });
    let (duration_s, requests) = match plan.stop {
        StopRule::Duration(d) => (Some(d.as_secs_f64()), None),
        StopRule::Requests(n) => (None, Some(n)),
    };
    Config {
        url: plan.target.url.clone(),
        resolved: plan.target.resolved_in.map(|d| Resolved {
            addr: plan.target.addr.ip().to_string(),
            took_s: d.as_secs_f64(),
        }),
        embedded_target: end.embedded_target,
        method: plan.method_label().to_string(),
        headers: plan.headers.clone(),
        body_bytes: plan.body.len() as u64,
        connections: plan.connections() as u64,
        threads: plan.threads as u64,
        duration_s,
        requests,
        warmup_s: plan.warmup.as_secs_f64(),
        timeout_s: plan.timeout.as_secs_f64(),
        interval_s: plan.interval.as_secs_f64(),
        insecure: plan.tls.insecure,
        cacert: plan.tls.cacert.as_ref().map(|p| p.display().to_string()),
        protocol: plan.protocol_name(),
        streams: plan.streams() as u64,
        pipeline: plan.pipeline() as u64,
        h2_coalesce_s: plan
            .http2()
            .and_then(|h| h.coalesce)
            .map(|d| d.as_secs_f64()),
        h2_writes: plan
            .http2()
            .is_some_and(|h| !h.gather)
            .then(|| "at-once".into()),
        load_model: plan.load.kind(),
        rate_rps: match &plan.load {
            LoadModel::Open {
                schedule: Schedule::Constant { rate },
                ..
            } => Some(*rate),
            _ => None,
        },
        arrival: match &plan.load {
            LoadModel::Open { arrival, .. } => Some(arrival.name().into()),
            _ => None,
        },
        pacer_slack_s: open.then_some(plan.pacing.slack.as_secs_f64()),
        pacer_spin: open.then_some(plan.pacing.spin),
        pacer_timer: (open && plan.pacing.timer != PacerTimer::Precise)
            .then(|| plan.pacing.timer.name().into()),
        pacer_naps: (open && !plan.pacing.naps).then(|| "off".into()),
        seed: plan.seed,
        connection_policy: if plan.keepalive { "reuse" } else { "new" }.into(),
        stream: plan.stream.map(|m| m.name().into()),
        max_connections_per_second: plan.max_connects_per_s,
        sweep: None,
        repeat: 1,
        segment: (plan.segment.count > 1)
            .then(|| format!("{}/{}", plan.segment.index + 1, plan.segment.count)),
        workload: None,
        grpc: plan.grpc().map(|g| g.method.clone()),
        ws_match: plan
            .protocol
            .websocket()
            .and_then(|ws| ws.match_path.as_ref())
            .map(|p| p.join(".")),
        trace_context: plan.trace.as_ref().map(|t| TraceConfig {
            sample: t.sample,
            tracestate: t.tracestate.clone(),
            link: t.link.clone(),
        }),
        command_line: end.command_line.clone(),
        until: plan.until.iter().map(|u| u.to_string()).collect(),
    }
}
