//! The RunRecord: the saved artefact of a run (`-o run.json`). It holds the config, the
//! environment, the summary (the keys documented in `schema/runrecord.schema.json`), the
//! interval series and every histogram (HdrHistogram V2 + DEFLATE, base64), so that reports
//! and later tools work from it alone.

use super::hist::{self, IntervalStats, Stats};
use super::summary::{round3, round6, summarize};
use super::{Counters, Measured};
use crate::model::StopReason;
use crate::model::{ErrorKind, LoadModel, Phase, Schedule, StopRule};
use crate::plan::RunPlan;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Version of the RunRecord layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema_version: u32,
    /// A random id drawn when the run started (32 hex digits), so that `reqlife merge` can
    /// refuse a record given twice; absent from records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A merged record: the run ids of its parts (and of theirs), so that merging it again
    /// with one of them is refused too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_run_ids: Vec<String>,
    pub tool: Tool,
    pub config: Config,
    pub environment: Environment,
    /// How the run ended (written as `duration`, `requests`, `interrupted (SIGINT)`, …).
    pub stop_reason: StopReason,
    pub interrupted: bool,
    pub summary: Summary,
    pub intervals: Vec<Interval>,
    /// With `--stages`: each stage's figures, apart.
    pub stages: Vec<Stage>,
    /// A sweep (`-c 100,200` or `-R 5000,10000`): each level's whole record, in order. The
    /// top-level summary then merges all levels (histograms added exactly).
    pub levels: Vec<Level>,
    /// `--repeat N`: each run's whole record, in order (the same plan each time); the
    /// top-level summary merges them. Empty for a single run.
    #[serde(default)]
    pub repetitions: Vec<Level>,
    /// Phase name → base64 HdrHistogram V2+DEFLATE of the whole run, in nanoseconds.
    pub histograms: BTreeMap<String, String>,
    /// Error kind → the first error of that kind, in words.
    pub first_errors: BTreeMap<String, String>,
    /// A bounded uniform sample of the responses, for the latency scatter (absent in
    /// records written before it existed, and when no response was recorded).
    #[serde(default)]
    pub samples: Option<Samples>,
    /// `reqlife knee`: the search, step by step, and its answer (the steps' figures are the
    /// levels).
    #[serde(default)]
    pub knee: Option<super::knee::KneeResult>,
}

/// A new run id: 128 random bits (from the OS) as 32 hex digits.
pub fn new_run_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let from_os = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if from_os.is_err() {
        // std's hasher keys are random per process: mixed with the time and the pid.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(now);
            h.write_u32(std::process::id());
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A uniform sample of at most `capacity` responses of the run (reservoir sampling per thread,
/// merged by weight: see `recorder::reservoir`), sorted by time. `at_us[i]` and `total_ns[i]`
/// are one response.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Samples {
    pub capacity: u64,
    /// Responses the sample was drawn from.
    pub seen: u64,
    /// When each response ended, µs from the start of recording.
    pub at_us: Vec<u64>,
    /// Its total latency (intended send → last byte), ns.
    pub total_ns: Vec<u64>,
}

impl Samples {
    /// The sample of a reservoir, sorted by time; `None` when it saw nothing.
    pub fn of(r: &super::reservoir::Reservoir) -> Option<Samples> {
        Samples::from_items(r.capacity() as u64, r.seen(), r.items().to_vec())
    }

    fn from_items(capacity: u64, seen: u64, mut items: Vec<(u64, u64)>) -> Option<Samples> {
        if seen == 0 || items.is_empty() {
            return None;
        }
        items.sort_unstable();
        Some(Samples {
            capacity,
            seen,
            at_us: items.iter().map(|i| i.0).collect(),
            total_ns: items.iter().map(|i| i.1).collect(),
        })
    }

    /// The samples of runs one after another (a sweep's levels): each part's times shifted by
    /// its offset (µs), merged into one uniform sample of all their responses.
    pub fn concat(parts: &[(&Samples, u64)], seed: u64) -> Option<Samples> {
        let capacity = parts.iter().map(|(s, _)| s.capacity).max()?;
        let seen = parts.iter().map(|(s, _)| s.seen).sum();
        let mut rng = super::reservoir::SplitMix64(seed);
        let items = super::reservoir::merge_uniform(
            parts
                .iter()
                .map(|(s, offset)| {
                    let items = s
                        .at_us
                        .iter()
                        .zip(&s.total_ns)
                        .map(|(&t, &v)| (t + offset, v))
                        .collect();
                    (s.seen, items)
                })
                .collect(),
            capacity as usize,
            &mut rng,
        );
        Samples::from_items(capacity, seen, items)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// What was asked for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Config {
    pub url: String,
    /// The target was reqlife's embedded server, started in-process.
    pub embedded_target: bool,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body_bytes: u64,
    pub connections: u64,
    pub threads: u64,
    pub duration_s: Option<f64>,
    pub requests: Option<u64>,
    pub warmup_s: f64,
    pub timeout_s: f64,
    pub interval_s: f64,
    pub insecure: bool,
    pub cacert: Option<String>,
    pub protocol: String,
    /// Concurrent streams per connection (1 for HTTP/1.1).
    pub streams: u64,
    /// `closed` or `open`.
    pub load_model: String,
    /// Open loop: the offered rate (req/s) of a constant schedule.
    pub rate_rps: Option<f64>,
    /// Open loop: `constant` or `poisson`.
    pub arrival: Option<String>,
    /// Open loop: `--pacer-slack`, seconds (absent from records that predate it).
    #[serde(default)]
    pub pacer_slack_s: Option<f64>,
    pub seed: u64,
    /// `reuse` (keep-alive) or `new` (a connection per request).
    pub connection_policy: String,
    /// `--stream`: `sse`, `chunks` or `lines`; absent without it (SSE by its content type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
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
}

fn one() -> u64 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Sweep {
    pub of: String,
    pub levels: Vec<f64>,
}

/// Where it ran.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Environment {
    pub tool_version: String,
    pub cores: u64,
    pub os: String,
    pub arch: String,
    pub kernel: String,
    pub hostname: String,
    /// RFC 3339 wall-clock time at which recording started.
    pub start_time: String,
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
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub requests: Requests,
    /// Recorded time in seconds (warm-up excluded): the window.
    pub duration_s: f64,
    /// Requests that ended (responses and errors) within the window, per second of it. Those
    /// that ended in the drain after it are in `requests` and `end.drained`, not here.
    pub throughput_rps: f64,
    /// What became of the requests that did not end within the window.
    #[serde(default)]
    pub end: EndOfRun,
    pub bytes: Bytes,
    pub connections: Connections,
    /// Status code → responses.
    pub status: BTreeMap<String, u64>,
    /// Error kind → count (every kind listed).
    pub errors: BTreeMap<String, u64>,
    pub latency: Latency,
    /// How the generator itself fared.
    pub generator: Generator,
    /// `Server-Timing` metric name → statistics of its `dur` (same keys as the phases).
    pub server_timing: BTreeMap<String, Stats>,
    /// The metric names in the order the server lists them.
    pub server_timing_order: Vec<String>,
    /// Metric name → desc → responses (metrics used as labels, `level;desc="L1"`).
    pub server_timing_labels: BTreeMap<String, BTreeMap<String, u64>>,
    /// Responses that carried `Server-Timing`.
    pub server_timing_responses: u64,
    /// Malformed `Server-Timing` metrics: read in part (a bad `dur` is no duration, a negative
    /// one is kept out of the histograms) or, without a name, skipped.
    pub server_timing_invalid: u64,
    /// The metric taken as the server's total (`--server-total`).
    pub server_timing_total: String,
    /// Per response, wait − server total: the network and the client's own time.
    pub server_timing_overhead: Stats,
    /// HTTP/2: streams reset by the server (RST_STREAM), by error code name.
    pub resets: BTreeMap<String, u64>,
    #[serde(flatten)]
    pub grpc: super::codes::GrpcStatuses,
    /// HTTP/2: the concurrent streams per connection the server allows (its
    /// SETTINGS_MAX_CONCURRENT_STREAMS; the smallest seen), which reqlife respects.
    pub h2_max_concurrent_streams: Option<u64>,
    /// Bursts (`--burst N`): per burst, the time to dispatch all N and the time then blocked
    /// waiting for the answers.
    pub bursts: Option<Bursts>,
    /// Plain-words warnings: the generator fell behind, the server did not keep up, ports
    /// ran out. Empty when all went as planned.
    pub warnings: Vec<String>,
    /// Named requests (`--scenario`, `--targets`): each name's own figures. Their histograms
    /// are in the record's `histograms` as `request.<name>.<phase>`.
    #[serde(default)]
    pub by_request: BTreeMap<String, RequestFigures>,
    /// `--threshold`s checked against this record (k6's convention: any failure exits 99).
    #[serde(default)]
    pub thresholds: Vec<ThresholdCheck>,
    /// The verdict of the thresholds as a whole: the banner, the JSON and the exit code all
    /// come from it. Absent when no threshold was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold_verdict: Option<ThresholdVerdict>,
}

/// The state of one threshold, or of all of them.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdState {
    Pass,
    Fail,
    /// Nothing was measured to compare (an empty histogram, a share of no requests): neither
    /// pass nor fail.
    NoData,
}

/// The thresholds' verdict as a whole: `fail` when one failed (exit code 99), else `no_data`
/// when one had no data (exit code 0: nothing failed, and the banner says what was not
/// checked), else `pass` (exit code 0).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdVerdict {
    pub state: ThresholdState,
    pub passed: usize,
    pub failed: usize,
    pub no_data: usize,
    /// The exit code this verdict gives: 99 when one failed, else 0.
    pub exit_code: i32,
    /// The line the text report prints under the table.
    pub banner: String,
}

impl ThresholdVerdict {
    /// The exit code of a failed threshold (k6's convention).
    pub const EXIT_FAIL: i32 = 99;

    /// The verdict of `checks`; `None` when there are none.
    pub fn of(checks: &[ThresholdCheck]) -> Option<ThresholdVerdict> {
        if checks.is_empty() {
            return None;
        }
        let count = |s: ThresholdState| checks.iter().filter(|c| c.state() == s).count();
        let (passed, failed, no_data) = (
            count(ThresholdState::Pass),
            count(ThresholdState::Fail),
            count(ThresholdState::NoData),
        );
        let n = checks.len();
        let unchecked = if no_data > 0 {
            format!(
                "; {no_data} had no data (neither passed nor failed: nothing was measured to compare)"
            )
        } else {
            String::new()
        };
        let (state, exit_code, banner) = if failed > 0 {
            (
                ThresholdState::Fail,
                Self::EXIT_FAIL,
                format!(
                    "{failed} of {n} thresholds failed{unchecked} (exit code {})",
                    Self::EXIT_FAIL
                ),
            )
        } else if no_data > 0 {
            (
                ThresholdState::NoData,
                0,
                format!("{passed} of {n} thresholds passed{unchecked} (exit code 0)"),
            )
        } else {
            (
                ThresholdState::Pass,
                0,
                format!("all {n} thresholds passed (exit code 0)"),
            )
        };
        Some(ThresholdVerdict {
            state,
            passed,
            failed,
            no_data,
            exit_code,
            banner,
        })
    }
}

/// One `--threshold` and how the run measured against it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThresholdCheck {
    /// The expression, as written (`p99<5ms`).
    pub threshold: String,
    /// The figure in its natural unit (ns for latencies, percent for shares); `None` when it
    /// could not be measured.
    pub measured: Option<f64>,
    /// The figure in human units (`1.23ms`).
    pub shown: Option<String>,
    /// Held; false when it failed and when there was no data (see `no_data`).
    pub pass: bool,
    /// Nothing was measured to compare: neither pass nor fail.
    #[serde(default)]
    pub no_data: bool,
    /// Why it could not be measured.
    pub note: Option<String>,
}

impl Summary {
    /// The thresholds' verdict: the one kept with them, or (a record made before it was
    /// kept) the one they give.
    pub fn thresholds_verdict(&self) -> Option<ThresholdVerdict> {
        self.threshold_verdict
            .clone()
            .or_else(|| ThresholdVerdict::of(&self.thresholds))
    }
}

impl ThresholdCheck {
    pub fn state(&self) -> ThresholdState {
        match (self.no_data, self.pass) {
            (true, _) => ThresholdState::NoData,
            (false, true) => ThresholdState::Pass,
            (false, false) => ThresholdState::Fail,
        }
    }

    /// The result column: `pass`, `FAIL` or `no data`.
    pub fn result(&self) -> &'static str {
        match self.state() {
            ThresholdState::Pass => "pass",
            ThresholdState::Fail => "FAIL",
            ThresholdState::NoData => "no data",
        }
    }
}

/// One request name's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestFigures {
    pub requests: Requests,
    /// Requests completed per second of the run.
    pub throughput_rps: f64,
    /// Status code → responses.
    pub status: BTreeMap<String, u64>,
    /// Error kind → count (kinds with none left out).
    pub errors: BTreeMap<String, u64>,
    pub latency: Latency,
}

/// The per-burst figures of a burst run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bursts {
    /// Requests per burst.
    pub size: u64,
    pub interval_s: f64,
    /// Bursts completed.
    pub count: u64,
    /// Burst start → the last request written (connection creation included).
    pub dispatch: BurstStats,
    /// The last request written → the last answer.
    pub wait: BurstStats,
}

/// Statistics over bursts, in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BurstStats {
    pub mean_us: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    pub max_us: f64,
}

impl BurstStats {
    pub(crate) fn of(h: &hdrhistogram::Histogram<u64>) -> Self {
        let us = |ns: u64| ns as f64 / 1000.0;
        BurstStats {
            mean_us: round3(h.mean() / 1000.0),
            p50_us: us(h.value_at_quantile(0.5)),
            p95_us: us(h.value_at_quantile(0.95)),
            max_us: us(h.max()),
        }
    }
}

/// The end of a run. Every request sent is counted once: in `requests` (it ended within the
/// window, or in the drain after it) or here as still in flight when the run ended; requests
/// due but never sent are counted apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EndOfRun {
    /// Requests that ended after the window, while the run waited for those in flight
    /// (`--drain`); they are in `requests` and in the latency figures.
    pub drained: u64,
    /// Of the drained requests, those that timed out.
    pub drain_timeouts: u64,
    /// Requests sent and still in flight when the run ended (the drain ran out, or a signal
    /// stopped the run): not in `requests`.
    pub in_flight: u64,
    /// Open loop: requests due within the window that were never sent (every connection was
    /// busy until its end): not in `requests`.
    pub not_sent: u64,
    /// How long after the window the drain ended, seconds.
    pub drain_s: f64,
}

impl EndOfRun {
    fn of(c: &super::Counters, drain: Duration) -> Self {
        EndOfRun {
            drained: c.drained,
            drain_timeouts: c.drain_timeouts,
            in_flight: c.in_flight_at_end,
            not_sent: c.not_sent,
            // The wait for requests that never came back, or the last one that did.
            drain_s: round6(drain.as_secs_f64().max(c.drain_ns as f64 / 1e9)),
        }
    }

    /// Whether anything is left to say.
    pub fn is_empty(&self) -> bool {
        self.drained + self.in_flight + self.not_sent == 0
    }
}

/// The load generator's own figures, so that its limit is not mistaken for the server's.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Generator {
    /// Open loop: the rate asked for, req/s.
    pub offered_rps: Option<f64>,
    /// Open loop: the rate the generator sent at, req/s of the window (requests recorded and
    /// those still in flight at the end); below `offered_rps` when it could not keep up.
    #[serde(default)]
    pub sent_rps: Option<f64>,
    /// Per worker thread, the share of the run it was on a CPU (0..1).
    pub thread_busy: Vec<f64>,
    /// Bytes of interval snapshots (compressed histograms and their containers) kept in memory
    /// during the run.
    pub interval_snapshot_bytes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Requests {
    /// Requests that ended: `ok + errors`.
    pub total: u64,
    /// Complete responses, whatever their status.
    pub ok: u64,
    /// Requests that failed (see `errors` by kind).
    pub errors: u64,
    /// Complete responses whose status was not 2xx or 3xx (wrk's figure).
    pub non_2xx_3xx: u64,
}

/// Bytes of the run (h2load's traffic line). `read` is everything read from the connections
/// (above TLS); `headers` the response header bytes as received (HTTP/2: HPACK-compressed
/// HEADERS and CONTINUATION payloads; HTTP/1.1: the heads) and `headers_decoded` as decoded
/// (HTTP/2: names and values, h2load's measure; HTTP/1.1: the same as received); `body` the
/// response content as received (without chunk framing) and `body_decoded` after
/// `--compressed` decoding (else the same).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Bytes {
    pub read: u64,
    pub written: u64,
    pub read_per_s: f64,
    pub headers: u64,
    pub headers_decoded: u64,
    pub body: u64,
    pub body_decoded: u64,
}

impl Bytes {
    /// The share of header bytes HPACK saved: 1 − received / decoded (h2load's "space
    /// savings"); 0 when nothing was decoded.
    pub fn header_saving(&self) -> f64 {
        if self.headers_decoded == 0 {
            return 0.0;
        }
        1.0 - self.headers as f64 / self.headers_decoded as f64
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Connections {
    /// Connections opened (TCP, or QUIC with `--http3`).
    pub opened: u64,
    /// Responses after which the server closed the connection (a reconnect followed).
    pub server_closes: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Intended send → last byte (corrected).
    pub total: Stats,
    /// Actual send → last byte.
    pub uncorrected: Stats,
    /// Client phases: queue, connect, tls, write, wait, read.
    pub phases: BTreeMap<String, Stats>,
    /// How late the scheduler released each request after its due time (open loop; zero in
    /// a closed loop), waiting for a free connection excluded.
    pub schedule_lag: Stats,
}

impl Latency {
    /// What breaks the invariants of these figures: each summary's ([`Stats::violations`]),
    /// and, with `tiled` (every request ended, no error, and every connection opened by a
    /// request: a closed loop; an open loop opens its connections ahead of the load, their
    /// connect time in the connect figures and in no request's total), the client phases
    /// adding up to the total: Σ mean × count of the phases (the HTTP/2 handshake, which
    /// overlaps them, left out) equals the total's within rounding (the means' 3 decimals,
    /// HdrHistogram's 0.1%).
    pub fn violations(&self, tiled: bool) -> Vec<String> {
        let mut out = Vec::new();
        let named = [
            ("total", &self.total),
            ("uncorrected", &self.uncorrected),
            ("schedule_lag", &self.schedule_lag),
        ];
        for (name, st) in named
            .into_iter()
            .chain(self.phases.iter().map(|(n, st)| (n.as_str(), st)))
        {
            out.extend(st.violations().into_iter().map(|v| format!("{name}: {v}")));
        }
        if tiled && self.total.count > 0 {
            let sum = |st: &Stats| st.mean_us.unwrap_or(0.0) * st.count as f64;
            let parts: f64 = self
                .phases
                .iter()
                .filter(|(n, _)| n.as_str() != Phase::H2Handshake.name())
                .map(|(_, st)| sum(st))
                .sum();
            let total = sum(&self.total);
            let slack =
                0.002 * total + 0.001 * (self.phases.len() + 1) as f64 * self.total.count as f64;
            if (parts - total).abs() > slack {
                out.push(format!(
                    "the client phases add up to {parts:.3} us, the totals to {total:.3} us (within {slack:.3})"
                ));
            }
        }
        out
    }
}

/// One level of a sweep.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Level {
    /// `100 connections` or `5000 req/s`.
    pub label: String,
    pub connections: u64,
    /// Open loop: the level's offered rate.
    pub offered_rps: Option<f64>,
    pub stop_reason: StopReason,
    pub summary: Summary,
    pub intervals: Vec<Interval>,
    pub histograms: BTreeMap<String, String>,
}

/// One stage of a run with `--stages` (requests belong to the stage they were intended in).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stage {
    /// What the stage asked for: `0->20000 req/s`, `200 connections`.
    pub label: String,
    pub start_s: f64,
    pub duration_s: f64,
    pub requests: Requests,
    /// Requests completed per second of the stage.
    pub throughput_rps: f64,
    /// Open loop: the stage's mean offered rate.
    pub offered_rps: Option<f64>,
    pub latency: Latency,
    /// Phase name → base64 V2+DEFLATE histogram of the stage (empty phases left out), for
    /// exact merges.
    pub histograms: BTreeMap<String, String>,
}

/// One interval of the time series (all threads merged).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    /// Start, seconds from the start of recording.
    pub start_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub throughput_rps: f64,
    pub bytes_read: u64,
    /// Phase name (client phases, `total`, `uncorrected`) → p50/p99/max.
    pub latency: BTreeMap<String, IntervalStats>,
    /// `Server-Timing` metric → p50/p99/max in the interval.
    pub server_timing: BTreeMap<String, IntervalStats>,
    /// Phase name (and `server_timing.<metric>`) → base64 V2+DEFLATE histogram of the
    /// interval, as in the record's `histograms`: for exact merges by time and for resampling
    /// the run by blocks of intervals (`compare`). Empty phases are left out.
    pub histograms: BTreeMap<String, String>,
    /// The load generator's own health in the interval (absent in records made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<IntervalGenerator>,
}

/// The generator's health in one interval: how late it sent, how busy its workers were.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalGenerator {
    /// Schedule lag (open loop: intended → released) p99 and max in the interval, µs.
    pub lag_p99_us: Option<f64>,
    pub lag_max_us: Option<f64>,
    /// The busiest worker thread's share of the interval on a CPU (0..1).
    pub busy_max: Option<f64>,
}

impl IntervalGenerator {
    /// From the interval's schedule-lag histogram and busiest share; none if neither is known.
    pub fn of(lag: Option<&hdrhistogram::Histogram<u64>>, busy_max: Option<f64>) -> Option<Self> {
        let lag = lag.filter(|h| !h.is_empty());
        if lag.is_none() && busy_max.is_none() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(IntervalGenerator {
            lag_p99_us: lag.map(|h| us(h.value_at_quantile(0.99))),
            lag_max_us: lag.map(|h| us(h.max())),
            busy_max: busy_max.map(round3),
        })
    }
}

/// How the run ended and how long it recorded.
#[derive(Debug, Clone)]
pub struct Ending {
    pub recorded: Duration,
    /// How long the end waited for the requests in flight.
    pub drained: Duration,
    pub stop_reason: StopReason,
    pub interrupted: bool,
    pub start_time: String,
    pub command_line: Vec<String>,
    pub embedded_target: bool,
}

impl RunRecord {
    /// Builds the record of `plan` from what was measured.
    pub fn build(plan: &RunPlan, measured: &Measured, end: Ending) -> RunRecord {
        let secs = end.recorded.as_secs_f64();
        let named = named_hists(plan, measured);
        let counts = counts_of(plan, measured, &end);
        let first_errors = ErrorKind::ALL
            .iter()
            .filter_map(|k| {
                measured.first_errors[k.index()]
                    .as_ref()
                    .map(|e| (k.name().to_string(), e.clone()))
            })
            .collect();
        RunRecord {
            schema_version: SCHEMA_VERSION,
            run_id: None,
            merged_run_ids: Vec::new(),
            tool: Tool {
                name: "reqlife".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            config: config_of(plan, &end),
            environment: Environment::current(end.start_time.clone()),
            stop_reason: end.stop_reason.clone(),
            interrupted: end.interrupted,
            summary: summarize(&[&counts], &named, round6(secs)),
            intervals: intervals_of(measured, plan.interval, end.recorded),
            stages: stages_of(plan, measured),
            levels: Vec::new(),
            repetitions: Vec::new(),
            histograms: named
                .iter()
                .map(|(name, h)| (name.clone(), hist::encode(h)))
                .collect(),
            first_errors,
            samples: Samples::of(&measured.samples),
            knee: None,
        }
        .with_warnings()
    }

    /// The record of a sweep: the levels' records (label, plan, record) in order, and a
    /// top-level summary merging every level (`plan` is the first level's; `end.recorded`
    /// the sum of the levels' recorded time). The time series runs level after level.
    pub fn sweep(
        plan: &RunPlan,
        measured: &[Measured],
        end: Ending,
        parts: Vec<(String, &RunPlan, RunRecord)>,
    ) -> RunRecord {
        let without_series: Vec<Measured> = measured
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.series = super::Series::default();
                m.segments.clear();
                // Each level's samples are timed from its own start: joined below.
                m.samples = super::reservoir::Reservoir::new(0, 0);
                m
            })
            .collect();
        let merged = Measured::merge(without_series);
        let mut top = RunRecord::build(plan, &merged, end);
        top.summary.generator.offered_rps = None;
        // The series is the levels' own, one after another (the merge above has none: its
        // intervals would only be empty ones over the whole time).
        top.intervals.clear();
        let mut offset: f64 = 0.0;
        let mut samples: Vec<(Samples, u64)> = Vec::new();
        for (label, level_plan, record) in parts {
            if let Some(s) = &record.samples {
                samples.push((s.clone(), (offset * 1e6).round() as u64));
            }
            for mut i in record.intervals.iter().cloned() {
                i.start_s = round6(i.start_s + offset);
                top.intervals.push(i);
            }
            offset += record.summary.duration_s;
            top.levels.push(Level {
                label,
                connections: level_plan.connections() as u64,
                offered_rps: offered_rps(level_plan),
                stop_reason: record.stop_reason,
                summary: record.summary,
                intervals: record.intervals,
                histograms: record.histograms,
            });
        }
        let parts: Vec<(&Samples, u64)> = samples.iter().map(|(s, o)| (s, *o)).collect();
        top.samples = Samples::concat(&parts, top.config.seed);
        top.config.sweep = Some(Sweep {
            of: if top.levels.iter().any(|l| l.offered_rps.is_some()) {
                "rate".into()
            } else {
                "connections".into()
            },
            levels: top
                .levels
                .iter()
                .map(|l| l.offered_rps.unwrap_or(l.connections as f64))
                .collect(),
        });
        top.summary.warnings = top
            .levels
            .iter()
            .flat_map(|l| {
                l.summary
                    .warnings
                    .iter()
                    .map(move |w| format!("{}: {w}", l.label))
            })
            .collect();
        top
    }

    /// The config of a run about to start on `plans` (one, or the levels of a sweep), for the
    /// header printed as it starts.
    pub fn planned_config(plans: &[RunPlan], embedded_target: bool) -> Option<Config> {
        let end = Ending {
            recorded: Duration::ZERO,
            drained: Duration::ZERO,
            stop_reason: StopReason::Duration,
            interrupted: false,
            start_time: String::new(),
            command_line: Vec::new(),
            embedded_target,
        };
        let mut c = config_of(plans.first()?, &end);
        if plans.len() > 1 {
            let rates: Vec<Option<f64>> = plans.iter().map(offered_rps).collect();
            c.sweep = Some(Sweep {
                of: if rates.iter().any(Option::is_some) {
                    "rate".into()
                } else {
                    "connections".into()
                },
                levels: plans
                    .iter()
                    .zip(&rates)
                    .map(|(p, r)| r.unwrap_or(p.connections() as f64))
                    .collect(),
            });
        }
        Some(c)
    }

    /// The record of `--repeat N`: the runs' records (label, plan, record) in order, and a
    /// top-level summary merging them, as for a sweep, with the runs kept in `repetitions`.
    pub fn repeated(
        plan: &RunPlan,
        measured: &[Measured],
        end: Ending,
        parts: Vec<(String, &RunPlan, RunRecord)>,
    ) -> RunRecord {
        let mut top = Self::sweep(plan, measured, end, parts);
        top.repetitions = std::mem::take(&mut top.levels);
        top.config.sweep = None;
        top.config.repeat = top.repetitions.len() as u64;
        top.summary.generator.offered_rps = offered_rps(plan);
        top
    }

    /// Adds the warnings that the figures call for (see [`warnings_of`]).
    fn with_warnings(mut self) -> Self {
        self.summary.warnings = warnings_of(&self);
        self
    }

    /// The histogram of `phase` from the record.
    pub fn histogram(&self, phase: &str) -> Result<hdrhistogram::Histogram<u64>, String> {
        let text = self
            .histograms
            .get(phase)
            .ok_or_else(|| format!("the record has no histogram for '{phase}'"))?;
        hist::decode(text)
    }
}

/// A run's histograms by their names in the record: every phase, each Server-Timing metric
/// (`server_timing.NAME`), the parse overhead and the bursts' when there are some, and each
/// named request's phases that saw a value (`request.NAME.PHASE`).
fn named_hists<'a>(
    plan: &RunPlan,
    measured: &'a Measured,
) -> BTreeMap<String, &'a hdrhistogram::Histogram<u64>> {
    let mut named: BTreeMap<String, &hdrhistogram::Histogram<u64>> = Phase::ALL
        .iter()
        .map(|&p| (p.name().to_string(), measured.hists.get(p)))
        .collect();
    for m in &measured.server.metrics {
        named.insert(format!("server_timing.{}", m.name), &m.hist);
    }
    if !measured.server.overhead.is_empty() {
        named.insert("server_timing_overhead".into(), &measured.server.overhead);
    }
    if let Some(b) = &measured.bursts {
        named.insert("burst_dispatch".into(), &b.dispatch);
        named.insert("burst_wait".into(), &b.wait);
    }
    let names = plan.workload.as_ref().map_or(&[][..], |w| &w.names[..]);
    for (name, acc) in names.iter().zip(&measured.by_request) {
        for p in Phase::ALL {
            let h = acc.hists.get(p);
            if !h.is_empty() {
                named.insert(format!("request.{name}.{}", p.name()), h);
            }
        }
    }
    named
}

/// Status counts by code (those seen), and how many were not 2xx or 3xx.
fn status_of(status: impl Iterator<Item = (usize, u64)>) -> (BTreeMap<String, u64>, u64) {
    let mut map = BTreeMap::new();
    let mut non_2xx_3xx = 0;
    for (code, n) in status.filter(|(_, n)| *n > 0) {
        map.insert(code.to_string(), n);
        if !(200..400).contains(&code) {
            non_2xx_3xx += n;
        }
    }
    (map, non_2xx_3xx)
}

/// Each named request's counts (its derived figures are left for [`summarize`]).
fn request_counts_of(plan: &RunPlan, measured: &Measured) -> BTreeMap<String, RequestFigures> {
    let names = plan.workload.as_ref().map_or(&[][..], |w| &w.names[..]);
    names
        .iter()
        .zip(&measured.by_request)
        .map(|(name, acc)| {
            let c = &acc.counters;
            let (status, non_2xx_3xx) =
                status_of(acc.status.iter().map(|(code, n)| (*code as usize, *n)));
            let figures = RequestFigures {
                requests: Requests {
                    total: c.requests,
                    ok: c.ok,
                    errors: c.error_total(),
                    non_2xx_3xx,
                },
                throughput_rps: 0.0,
                status,
                errors: ErrorKind::ALL
                    .iter()
                    .filter(|k| c.errors[k.index()] > 0)
                    .map(|k| (k.name().to_string(), c.errors[k.index()]))
                    .collect(),
                latency: Latency::default(),
            };
            (name.clone(), figures)
        })
        .collect()
}

/// The counts of a run, as a summary whose derived figures (rates, statistics) are left for
/// [`summarize`]: the one part of its own summary.
fn counts_of(plan: &RunPlan, measured: &Measured, end: &Ending) -> Summary {
    let c = &measured.counters;
    let secs = end.recorded.as_secs_f64();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let (status, non_2xx_3xx) = status_of(measured.status.iter().enumerate().map(|(c, n)| (c, *n)));
    let by_request = request_counts_of(plan, measured);
    let st = &measured.server;
    let mut labels: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (i, desc, n) in &st.labels {
        *labels
            .entry(st.metrics[*i].name.clone())
            .or_default()
            .entry(String::from_utf8_lossy(desc).into_owned())
            .or_default() += n;
    }
    Summary {
        requests: Requests {
            total: c.requests,
            ok: c.ok,
            errors: c.error_total(),
            non_2xx_3xx,
        },
        duration_s: round6(secs),
        end: EndOfRun::of(c, end.drained),
        bytes: Bytes {
            read: c.bytes_read,
            written: c.bytes_written,
            headers: c.traffic.header,
            headers_decoded: c.traffic.header_decoded,
            body: c.traffic.body,
            body_decoded: c.traffic.body_decoded,
            ..Bytes::default()
        },
        connections: Connections {
            opened: c.connections_opened,
            server_closes: c.server_closes,
        },
        status,
        errors: ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), c.errors[k.index()]))
            .collect(),
        generator: Generator {
            offered_rps: offered_rps(plan),
            sent_rps: offered_rps(plan).map(|_| round3(per_s(c.requests + c.in_flight_at_end))),
            thread_busy: measured.thread_busy.iter().map(|b| round3(*b)).collect(),
            interval_snapshot_bytes: measured.snapshot_bytes,
        },
        server_timing_order: st
            .order()
            .into_iter()
            .map(|i| st.metrics[i].name.clone())
            .collect(),
        server_timing_labels: labels,
        server_timing_responses: st.responses,
        server_timing_invalid: st.invalid,
        server_timing_total: plan.server_total.clone(),
        resets: measured.reset_codes.by_name(super::codes::h2_code_name),
        grpc: super::codes::GrpcStatuses::of(&measured.grpc_codes),
        h2_max_concurrent_streams: measured.h2_max_streams,
        bursts: bursts_of(plan, measured),
        by_request,
        ..Summary::default()
    }
}

/// The per-burst figures, for a burst run.
fn bursts_of(plan: &RunPlan, measured: &Measured) -> Option<Bursts> {
    let LoadModel::Burst { size, interval, .. } = &plan.load else {
        return None;
    };
    let b = measured.bursts.as_ref()?;
    Some(Bursts {
        size: *size as u64,
        interval_s: interval.as_secs_f64(),
        count: b.dispatch.len(),
        dispatch: BurstStats::of(&b.dispatch),
        wait: BurstStats::of(&b.wait),
    })
}

/// The figures of each stage.
fn stages_of(plan: &RunPlan, measured: &Measured) -> Vec<Stage> {
    let labels = plan.stage_labels();
    let durations = plan.stage_durations();
    let rates: Vec<Option<f64>> = match &plan.load {
        LoadModel::Open {
            schedule: Schedule::Stages(st),
            ..
        } => st
            .iter()
            .map(|s| Some((s.from_rps + s.to_rps) / 2.0))
            .collect(),
        _ => vec![None; durations.len()],
    };
    let mut start = 0.0;
    labels
        .into_iter()
        .zip(durations)
        .zip(rates)
        .enumerate()
        .map(|(i, ((label, d), offered_rps))| {
            let secs = d.as_secs_f64();
            let empty = (
                Counters::default(),
                super::PhaseHists::new(hist::new_interval_hist),
            );
            let (c, h) = measured.segments.get(i).unwrap_or(&empty);
            let stage = Stage {
                label,
                start_s: round6(start),
                duration_s: round6(secs),
                requests: Requests {
                    total: c.requests,
                    ok: c.ok,
                    errors: c.error_total(),
                    non_2xx_3xx: 0,
                },
                throughput_rps: round3(c.requests as f64 / secs),
                offered_rps,
                latency: latency_of(h),
                histograms: Phase::ALL
                    .iter()
                    .filter(|&&p| !h.get(p).is_empty())
                    .map(|&p| (p.name().to_string(), hist::encode(h.get(p))))
                    .collect(),
            };
            start += secs;
            stage
        })
        .collect()
}

/// The latency statistics of a set of phase histograms.
fn latency_of(h: &super::PhaseHists) -> Latency {
    Latency {
        total: Stats::of(h.get(Phase::Total)),
        uncorrected: Stats::of(h.get(Phase::Uncorrected)),
        // The stream phases only when recorded: new keys, for `--stream` runs.
        phases: Phase::CLIENT
            .iter()
            .filter(|p| p.shown(!h.get(**p).is_empty()))
            .chain(Phase::STREAM.iter().filter(|&&p| !h.get(p).is_empty()))
            .map(|&p| (p.name().to_string(), Stats::of_phase(p, h.get(p))))
            .collect(),
        schedule_lag: Stats::of(h.get(Phase::Lag)),
    }
}

/// The rate this process offered in an open loop with a constant schedule: its segment's
/// share of the plan's.
fn offered_rps(plan: &RunPlan) -> Option<f64> {
    match &plan.load {
        LoadModel::Open {
            schedule: Schedule::Constant { rate },
            ..
        } => Some(*rate / plan.segment.count as f64),
        _ => None,
    }
}

/// Schedule lag (p99) above which the generator is said to have fallen behind.
pub const LAG_WARN_US: f64 = 1000.0;
/// Thread CPU share above which a worker is said to be saturated.
pub const BUSY_WARN: f64 = 0.95;
/// Thread CPU share above which the generator is said to be near its limit.
pub const BUSY_NEAR: f64 = 0.85;
/// Schedule lag (p99) above which the generator is said to be near its limit.
pub const LAG_NEAR_US: f64 = 500.0;

/// Warnings in plain words, so that nobody mistakes the client's limit for the server's.
pub fn warnings_of(r: &RunRecord) -> Vec<String> {
    let s = &r.summary;
    let mut out = Vec::new();
    if matches!(r.stop_reason, StopReason::FailFast(_)) {
        // Stopped within moments, every connection failing: the figures describe nothing
        // (the busy share of a few milliseconds, connects cut short); the error says why.
        return out;
    }
    if s.latency.total.clamped > 0 {
        out.push(format!(
            "{} requests took an hour or more, beyond the histograms' range: they are counted at \
             one hour, so the highest percentiles and the max are at least that",
            s.latency.total.clamped
        ));
    }
    if r.config.load_model == "open" {
        out.extend(open_loop_warning(r));
    }
    let busiest = s.generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    let busy = FlaggedIntervals::busy(r, BUSY_WARN);
    if busiest > BUSY_WARN {
        out.push(format!(
            "a worker thread was on a CPU {:.0}% of the run: the client may be the bottleneck; \
             figures near this limit describe the generator as much as the server",
            busiest * 100.0
        ));
    } else if busy.count > 0 {
        out.push(format!(
            "a worker thread was on a CPU over {:.0}% of the time{}: the figures of those \
             intervals describe the generator as much as the server; add threads (-t)",
            BUSY_WARN * 100.0,
            busy.named()
        ));
    } else if busiest > BUSY_NEAR {
        out.push(format!(
            "a worker thread was on a CPU {:.0}% of the run: the generator is near its limit; \
             `reqlife calibrate` shows what this machine can generate, or add threads (-t)",
            busiest * 100.0
        ));
    }
    let e = &s.end;
    if e.in_flight > 0 {
        let when = if r.interrupted {
            "when the run was interrupted".to_string()
        } else {
            format!("when the drain ended ({:.2}s after the window)", e.drain_s)
        };
        out.push(format!(
            "{} requests were still in flight {when}: their latency is missing from the figures, \
             and they are likely the slowest; give them longer with --drain (or --timeout)",
            e.in_flight
        ));
    }
    out.extend(http_errors_warning(r));
    let ports = s.errors.get("addr_not_avail").copied().unwrap_or(0);
    if ports > 0 {
        out.push(format!(
            "{ports} connections failed with 'Cannot assign requested address': the local ports ran out. \
             Reuse connections (drop --no-keepalive), open fewer per second (--max-connections-per-second), \
             or widen net.ipv4.ip_local_port_range"
        ));
    }
    out
}

/// When responses came back but every one had an HTTP error status (not 2xx or 3xx): the
/// statuses, named, and where to look (`every response was 404 Not Found: check the URL's
/// path`).
pub fn http_errors_warning(r: &RunRecord) -> Option<String> {
    let s = &r.summary;
    if s.requests.ok == 0 || s.requests.non_2xx_3xx < s.requests.ok {
        return None;
    }
    let named = |code: &str| {
        let reason = code
            .parse::<u16>()
            .ok()
            .and_then(|c| http::StatusCode::from_u16(c).ok())
            .and_then(|c| c.canonical_reason());
        match reason {
            Some(reason) => format!("{code} {reason}"),
            None => code.to_string(),
        }
    };
    let codes: Vec<(&String, &u64)> = s.status.iter().filter(|(_, n)| **n > 0).collect();
    if let [(code, _)] = codes[..] {
        let hint = match code.as_str() {
            "404" | "410" => "check the URL's path",
            "400" => "check the request: method, headers and body (-m, -H, --body)",
            "401" | "403" => "the server wants credentials: add them with -H 'Authorization: ...'",
            "405" => "check the method (-m)",
            "415" | "422" => "check the body and its Content-Type (--body, -H)",
            "429" => "the server limits the rate: lower -c or -R",
            c if c.starts_with('5') => "the server failed every request: check its logs",
            _ => "check the URL and the request",
        };
        return Some(format!("every response was {}: {hint}", named(code)));
    }
    let list: Vec<String> = codes
        .iter()
        .map(|(code, n)| format!("{} ({n})", named(code)))
        .collect();
    Some(format!(
        "every response was an HTTP error: {}; check the URL and the request",
        list.join(", ")
    ))
}

/// The one warning an open loop's schedule calls for, if any. Requests can be late for two
/// reasons: the generator released them late (schedule lag: the client's fault), or every
/// connection was busy so they waited in the queue (the server's). When both show, the larger
/// delay decides which it was, and the warning says so once (never "the client limited this
/// run" beside "the server did not keep up").
fn open_loop_warning(r: &RunRecord) -> Option<String> {
    let s = &r.summary;
    let lag = &s.latency.schedule_lag;
    let (lag_p99, lag_max) = (lag.p99_us.unwrap_or(0.0), lag.max_us.unwrap_or(0.0));
    let queue_p99 = s
        .latency
        .phases
        .get("queue")
        .and_then(|q| q.p99_us)
        .unwrap_or(0.0);
    let offered = s.generator.offered_rps;
    let sent = s.generator.sent_rps.unwrap_or(s.throughput_rps);
    let shortfall = offered
        .filter(|o| r.stop_reason == StopReason::Duration && sent < 0.99 * o)
        .map(|o| {
            let mut f = format!(
                "achieved {sent:.0} req/s of the {o:.0} offered ({:.1}%)",
                100.0 * sent / o
            );
            if s.end.not_sent > 0 {
                f += &format!(", {} requests due were never sent", s.end.not_sent);
            }
            f
        });
    // The pacer's slack is lateness by design: only the lag beyond it is falling behind.
    let slack_us = r.config.pacer_slack_s.unwrap_or(0.0) * 1e6;
    let lagging = FlaggedIntervals::lagging(r, LAG_WARN_US + slack_us);
    if queue_p99 > 1000.0 && queue_p99 > 10.0 * lag_p99.max(1.0) {
        let mut w = format!(
            "requests waited for a free connection (queue p99 {:.2} ms) while the generator kept \
             its schedule (lag p99 {lag_p99:.0} us): the server did not keep up with {:.0} req/s on \
             {} connections; the corrected latency includes that wait",
            queue_p99 / 1000.0,
            offered.unwrap_or(0.0),
            r.config.connections
        );
        if let Some(f) = shortfall {
            w += &format!("; {f}");
        }
        return Some(w);
    }
    if lag_p99 - slack_us > LAG_WARN_US {
        let mut w = format!(
            "the generator fell behind its schedule: schedule lag p99 {lag_p99:.0} us (max \
             {lag_max:.0} us){}; the client, not the server, limited this run",
            lagging.named()
        );
        if let Some(f) = shortfall {
            w += &format!(" ({f})");
        }
        w += ": use more threads (-t), a lower rate, or more generators";
        return Some(w);
    }
    if lagging.count > 0 {
        return Some(format!(
            "the generator fell behind{}: schedule lag up to {:.0} us there; the corrected tail \
             (p99.9, max) includes it",
            lagging.named(),
            lagging.max
        ));
    }
    if lag_p99 - slack_us > LAG_NEAR_US {
        return Some(format!(
            "the generator is near its limit: schedule lag p99 {lag_p99:.0} us (the bound is \
             {LAG_WARN_US:.0} us beyond the pacer's slack of {slack_us:.0} us); `reqlife \
             calibrate` shows what this machine can generate"
        ));
    }
    shortfall
}

/// The intervals whose figure (schedule lag p99, a worker's CPU share) passed a bound.
struct FlaggedIntervals {
    count: usize,
    of: usize,
    /// Their time ranges (adjacent ones joined), seconds from the start.
    ranges: Vec<(f64, f64)>,
    /// The largest second figure (the lag max) among them.
    max: f64,
}

impl FlaggedIntervals {
    /// The intervals where `figure` gives (value, max) with the value over `bound`.
    fn of(r: &RunRecord, bound: f64, figure: impl Fn(&Interval) -> Option<(f64, f64)>) -> Self {
        let mut out = FlaggedIntervals {
            count: 0,
            of: r.intervals.len(),
            ranges: Vec::new(),
            max: 0.0,
        };
        for i in &r.intervals {
            let Some((_, max)) = figure(i).filter(|(v, _)| *v > bound) else {
                continue;
            };
            out.count += 1;
            out.max = out.max.max(max);
            let end = i.start_s + i.duration_s;
            match out.ranges.last_mut() {
                Some(last) if (last.1 - i.start_s).abs() < 1e-9 => last.1 = end,
                _ => out.ranges.push((i.start_s, end)),
            }
        }
        out
    }

    /// The intervals whose schedule lag p99 passed `bound_us`.
    fn lagging(r: &RunRecord, bound_us: f64) -> Self {
        FlaggedIntervals::of(r, bound_us, |i| {
            let lag = i.latency.get("schedule_lag")?;
            Some((lag.p99_us, lag.max_us))
        })
    }

    /// The intervals in which a worker thread was on a CPU more than `share` of the time.
    fn busy(r: &RunRecord, share: f64) -> Self {
        FlaggedIntervals::of(r, share, |i| {
            let busy = i.generator.as_ref()?.busy_max?;
            Some((busy, busy))
        })
    }

    /// " in 2 of 10 intervals (1.0-2.0s, 5.0-6.0s)", or nothing when none lagged.
    fn named(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        const SHOWN: usize = 4;
        let mut ranges: Vec<String> = self
            .ranges
            .iter()
            .take(SHOWN)
            .map(|(a, b)| format!("{a:.1}-{b:.1}s"))
            .collect();
        if self.ranges.len() > SHOWN {
            ranges.push("...".into());
        }
        format!(
            " in {} of {} intervals ({})",
            self.count,
            self.of,
            ranges.join(", ")
        )
    }
}

fn config_of(plan: &RunPlan, end: &Ending) -> Config {
    let (duration_s, requests) = match plan.stop {
        StopRule::Duration(d) => (Some(d.as_secs_f64()), None),
        StopRule::Requests(n) => (None, Some(n)),
    };
    Config {
        url: plan.target.url.clone(),
        embedded_target: end.embedded_target,
        method: plan.method.clone(),
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
        protocol: plan.protocol().into(),
        streams: plan.streams() as u64,
        load_model: plan.load.name().into(),
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
        pacer_slack_s: matches!(plan.load, LoadModel::Open { .. })
            .then(|| plan.pacer_slack.as_secs_f64()),
        seed: plan.seed,
        connection_policy: if plan.keepalive { "reuse" } else { "new" }.into(),
        stream: plan.stream.map(|m| m.name().into()),
        max_connections_per_second: plan.max_connects_per_s,
        sweep: None,
        repeat: 1,
        segment: (plan.segment.count > 1)
            .then(|| format!("{}/{}", plan.segment.index + 1, plan.segment.count)),
        workload: None,
        grpc: plan.grpc.as_ref().map(|g| g.method.clone()),
        command_line: end.command_line.clone(),
    }
}

/// The merged interval series, with empty intervals filled in so that time is continuous.
/// Each entry spans `span` base intervals (wider once a long run reached the cap); the last
/// one ends with the recording.
fn intervals_of(measured: &Measured, interval: Duration, recorded: Duration) -> Vec<Interval> {
    let base_count = (recorded.as_secs_f64() / interval.as_secs_f64()).ceil() as u64;
    let series = measured.series.fitting(base_count);
    let step = interval.as_secs_f64() * series.span as f64;
    let count = base_count
        .div_ceil(series.span)
        .max(series.entries.last().map_or(0, |s| s.index + 1));
    let mut snaps = series.entries.iter().peekable();
    (0..count)
        .map(|i| {
            let start_s = i as f64 * step;
            let duration_s = (recorded.as_secs_f64() - start_s).clamp(0.0, step);
            let duration_s = if duration_s > 0.0 { duration_s } else { step };
            let snap = snaps.next_if(|s| s.index == i).map(|s| series.load(s));
            interval_of(snap.as_ref(), start_s, duration_s)
        })
        .collect()
}

/// One record interval from a snapshot (none: nothing ended in it).
fn interval_of(snap: Option<&super::IntervalSnapshot>, start_s: f64, duration_s: f64) -> Interval {
    let mut latency = BTreeMap::new();
    let mut server_timing = BTreeMap::new();
    let mut histograms = BTreeMap::new();
    let mut lag = None;
    if let Some(s) = snap {
        for (phase, bytes) in &s.hists {
            if let Ok(h) = hist::decode_bytes(bytes) {
                latency.insert(phase.name().to_string(), IntervalStats::of(&h));
                histograms.insert(phase.name().to_string(), hist::encode(&h));
                if *phase == Phase::Lag {
                    lag = Some(h);
                }
            }
        }
        for (name, bytes) in &s.server {
            if let Ok(h) = hist::decode_bytes(bytes) {
                server_timing.insert(name.clone(), IntervalStats::of(&h));
                histograms.insert(format!("server_timing.{name}"), hist::encode(&h));
            }
        }
    }
    let c = snap.map(|s| s.counters.clone()).unwrap_or_default();
    Interval {
        start_s: round6(start_s),
        duration_s: round6(duration_s),
        requests: c.requests,
        ok: c.ok,
        errors: c.error_total(),
        throughput_rps: round3(c.requests as f64 / duration_s),
        bytes_read: c.bytes_read,
        latency,
        server_timing,
        histograms,
        generator: IntervalGenerator::of(lag.as_ref(), snap.and_then(|s| s.busy_max)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{plan::build, Cli, Command};
    use crate::recorder::Recorder;
    use clap::Parser;
    use std::time::Instant;

    fn record(flags: &[&str], tweak: impl FnOnce(&mut Measured)) -> RunRecord {
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let plan = build(&args, "http://127.0.0.1:9/").unwrap();
        let mut m = Recorder::new(Instant::now(), Duration::from_secs(1)).finish();
        tweak(&mut m);
        RunRecord::build(
            &plan,
            &m,
            Ending {
                recorded: Duration::from_secs(10),
                drained: Duration::from_millis(250),
                stop_reason: StopReason::Duration,
                interrupted: false,
                start_time: String::new(),
                command_line: vec![],
                embedded_target: false,
            },
        )
    }

    /// One request of the property test: its phase durations in µs (queue, connect or none,
    /// write, wait, read) from `start_us`, and whether it failed after writing.
    type Life = (u64, u64, Option<u64>, u64, u64, u64, bool);

    fn life() -> impl proptest::strategy::Strategy<Value = Life> {
        use proptest::prelude::*;
        (
            0u64..2_000_000,
            prop_oneof![0u64..50, 0u64..50_000],
            proptest::option::of(1u64..5_000),
            0u64..500,
            0u64..200_000,
            0u64..5_000,
            proptest::bool::weighted(0.1),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever the requests, every summary of a run keeps its invariants (each
        /// summary's percentiles in order within [min, max]), and when every request ended
        /// their client phases add up to their totals.
        #[test]
        fn every_summary_keeps_its_invariants(lives in proptest::collection::vec(life(), 1..200)) {
            use crate::model::{Timestamps, Traffic};
            let base = Instant::now();
            let all_ended = lives.iter().all(|l| !l.6);
            // What the recorder does with each sample: its phases into the histograms.
            let mut hists = crate::recorder::PhaseHists::new(hist::new_hist);
            {
                for &(start, queue, connect, write, wait, read, fails) in &lives {
                    let us = |n: u64| Duration::from_micros(n);
                    let intended = base + us(start);
                    let dispatched = intended + us(queue);
                    let mut st = Timestamps::new(intended, dispatched);
                    let mut t = dispatched;
                    if let Some(c) = connect {
                        st.connect_start = Some(t);
                        t += us(c);
                        st.connect_end = Some(t);
                    }
                    t += us(write);
                    st.written = Some(t);
                    if !fails {
                        t += us(wait);
                        st.first_byte = Some(t);
                        t += us(read);
                        st.done = Some(t);
                        proptest::prop_assert_eq!(st.unaccounted_ns(), Some(0));
                    }
                    hists.record(&crate::recorder::durations(&crate::model::Sample {
                        stamps: st,
                        status: (!fails).then_some(200),
                        error: fails.then_some(ErrorKind::Timeout),
                        bytes_read: 100,
                        bytes_written: 40,
                        traffic: Traffic::default(),
                        server_closed: false,
                        request: 0,
                    }));
                }
            }
            let latency = latency_of(&hists);
            let v = latency.violations(all_ended);
            proptest::prop_assert!(v.is_empty(), "{:?}", v);
            proptest::prop_assert_eq!(
                latency.total.count,
                lives.iter().filter(|l| !l.6).count() as u64
            );
        }
    }

    #[test]
    fn port_exhaustion_is_one_warning_with_what_to_do() {
        let r = record(&[], |m| {
            m.counters.errors[ErrorKind::AddrNotAvail.index()] = 5000;
            m.counters.requests = 5000;
        });
        let w: Vec<_> = r
            .summary
            .warnings
            .iter()
            .filter(|w| w.contains("ports ran out"))
            .collect();
        assert_eq!(w.len(), 1, "{:?}", r.summary.warnings);
        for advice in [
            "--no-keepalive",
            "--max-connections-per-second",
            "ip_local_port_range",
        ] {
            assert!(w[0].contains(advice), "{}", w[0]);
        }
        assert!(w[0].starts_with("5000 connections failed"));
    }

    #[test]
    fn generator_warnings() {
        // A saturated worker thread.
        let r = record(&[], |m| m.thread_busy = vec![0.99, 0.4]);
        assert!(r
            .summary
            .warnings
            .iter()
            .any(|w| w.contains("on a CPU 99%")));
        // A worker near its limit: a warning of its own, not the saturation one.
        let r = record(&[], |m| m.thread_busy = vec![0.9, 0.4]);
        let near: Vec<_> = r
            .summary
            .warnings
            .iter()
            .filter(|w| w.contains("on a CPU 90%"))
            .collect();
        assert_eq!(near.len(), 1, "{:?}", r.summary.warnings);
        assert!(near[0].contains("near its limit"));
        // An open loop that achieved 50% of its rate.
        let r = record(&["-R", "1000"], |m| m.counters.requests = 5000);
        assert!(r
            .summary
            .warnings
            .iter()
            .any(|w| w.contains("achieved 500 req/s of the 1000 offered")));
        // A quiet run has none.
        let r = record(&["-R", "1000"], |m| {
            m.counters.requests = 10_000;
            m.thread_busy = vec![0.2];
        });
        assert!(r.summary.warnings.is_empty(), "{:?}", r.summary.warnings);
    }

    #[test]
    fn a_lagging_schedule_is_the_generator_s_fault() {
        let r = record(&["-R", "1000"], |m| {
            m.counters.requests = 10_000;
            for _ in 0..100 {
                hist::record(&mut m.hists.0[Phase::Lag.index()], 5_000_000); // 5 ms late
            }
        });
        assert!(
            r.summary
                .warnings
                .iter()
                .any(|w| w.contains("the generator fell behind")),
            "{:?}",
            r.summary.warnings
        );
        // 700 us late: near the limit, not over it.
        let r = record(&["-R", "1000"], |m| {
            m.counters.requests = 10_000;
            for _ in 0..100 {
                hist::record(&mut m.hists.0[Phase::Lag.index()], 700_000);
            }
        });
        let w = &r.summary.warnings;
        assert!(
            w.iter()
                .any(|w| w.contains("near its limit: schedule lag p99 700 us")),
            "{w:?}"
        );
        assert!(!w.iter().any(|w| w.contains("fell behind")), "{w:?}");
        // 5 ms late with a 5 ms pacer slack: lateness by design, no warning.
        let r = record(&["-R", "1000", "--pacer-slack", "5ms"], |m| {
            m.counters.requests = 10_000;
            for _ in 0..100 {
                hist::record(&mut m.hists.0[Phase::Lag.index()], 5_000_000);
            }
        });
        let w = &r.summary.warnings;
        assert!(!w.iter().any(|w| w.contains("schedule lag")), "{w:?}");
    }

    /// Sets the schedule lag (p99, max) of interval `i`, in µs.
    fn lag_in(r: &mut RunRecord, i: usize, p99_us: f64, max_us: f64) {
        r.intervals[i].latency.insert(
            "schedule_lag".into(),
            IntervalStats {
                count: 100,
                p50_us: 10.0,
                p99_us,
                max_us,
            },
        );
    }

    #[test]
    fn lagging_intervals_are_named_when_the_run_as_a_whole_kept_up() {
        let mut r = record(&["-R", "1000"], |m| m.counters.requests = 10_000);
        assert_eq!(r.intervals.len(), 10);
        // (interval, lag p99 µs, max µs): two adjacent intervals over the bound, one apart,
        // one under it.
        for (i, p99, max) in [
            (0, 4000.0, 9000.0),
            (1, 2000.0, 3000.0),
            (5, 1500.0, 2500.0),
        ] {
            lag_in(&mut r, i, p99, max);
        }
        lag_in(&mut r, 7, 900.0, 950.0);
        let w = warnings_of(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("the generator fell behind in 3 of 10 intervals (0.0-2.0s, 5.0-6.0s)"),
            "{w:?}"
        );
        assert!(w[0].contains("up to 9000 us"), "{w:?}");
    }

    #[test]
    fn a_run_that_lagged_throughout_names_its_intervals_and_blames_the_client() {
        let mut r = record(&["-R", "1000"], |m| {
            m.counters.requests = 9_000;
            for _ in 0..200 {
                hist::record(&mut m.hists.0[Phase::Lag.index()], 3_000_000);
            }
        });
        lag_in(&mut r, 3, 3000.0, 3100.0);
        let w = warnings_of(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("schedule lag p99 3000 us"), "{w:?}");
        assert!(w[0].contains("in 1 of 10 intervals (3.0-4.0s)"), "{w:?}");
        assert!(w[0].contains("the client, not the server, limited this run"));
        assert!(
            w[0].contains("achieved 900 req/s of the 1000 offered"),
            "{w:?}"
        );
    }

    #[test]
    fn a_full_queue_with_some_lag_is_the_server_s_doing_said_once() {
        // The generator was 2 ms late at p99, but requests waited 50 ms for a free
        // connection: the server did not keep up, and only that is said.
        let r = record(&["-R", "1000", "-c", "10"], |m| {
            m.counters.requests = 8_000;
            m.counters.not_sent = 2_000;
            for _ in 0..200 {
                hist::record(&mut m.hists.0[Phase::Lag.index()], 2_000_000);
                hist::record(&mut m.hists.0[Phase::Queue.index()], 50_000_000);
            }
        });
        let w = warnings_of(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("the server did not keep up"), "{w:?}");
        assert!(w[0].contains("2000 requests due were never sent"), "{w:?}");
        assert!(!w[0].contains("the client, not the server"), "{w:?}");
    }

    #[test]
    fn requests_left_in_flight_are_named_with_the_fix() {
        let r = record(&["-R", "1000"], |m| {
            m.counters.requests = 10_000;
            m.counters.in_flight_at_end = 7;
            m.counters.drained = 40;
        });
        let e = &r.summary.end;
        assert_eq!((e.in_flight, e.drained, e.drain_s), (7, 40, 0.25));
        // The throughput divides what ended within the window by the window.
        assert_eq!(r.summary.throughput_rps, 996.0);
        assert_eq!(r.summary.generator.sent_rps, Some(1000.7));
        let w = &r.summary.warnings;
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("7 requests were still in flight when the drain ended (0.25s"));
        assert!(w[0].contains("--drain"), "{w:?}");
    }

    #[test]
    fn intervals_with_a_saturated_worker_are_named() {
        let mut r = record(&["-R", "1000"], |m| {
            m.counters.requests = 10_000;
            m.thread_busy = vec![0.5];
        });
        // (interval, busiest worker's CPU share): two saturated, one near but under.
        for (i, busy) in [(2, 0.99), (3, 0.97), (8, 0.9)] {
            r.intervals[i].generator = Some(IntervalGenerator {
                lag_p99_us: None,
                lag_max_us: None,
                busy_max: Some(busy),
            });
        }
        let w = warnings_of(&r);
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with(
                "a worker thread was on a CPU over 95% of the time in 2 of 10 intervals (2.0-4.0s)"
            ),
            "{w:?}"
        );
    }
}
