//! The sections of a record's figures: the summary and its parts (requests, bytes, connections,
//! latency, bursts, the generator's own figures), the threshold verdicts, and the per-level,
//! per-stage and per-interval figures.

use super::thresholds::{ThresholdCheck, ThresholdVerdict};
use crate::model::{Phase, StopReason};
use crate::recorder::hist::{IntervalStats, Stats};
use crate::recorder::summary::round3;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The figures of a run (or of one level of a sweep, or of a merge): counts, bytes, latencies, and
/// what the generator and the server said.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Requests by outcome.
    pub requests: Requests,
    /// Recorded time in seconds (warm-up excluded): the window.
    pub duration_s: f64,
    /// Requests that ended (responses and errors) within the window, per second of it. Those
    /// that ended in the drain after it are in `requests` and `end.drained`, not here.
    pub throughput_rps: f64,
    /// Of those, the complete responses (any status), per second of the window: the rate
    /// the server answered at, apart from the attempts that failed (absent when 0, and from
    /// records made before).
    #[serde(default, skip_serializing_if = "is_zero_f64")]
    pub answered_rps: f64,
    /// Requests failed after the last response: when it ended, and how many (absent when
    /// none failed after it, or nothing was answered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_answer: Option<super::LastAnswer>,
    /// What became of the requests that did not end within the window.
    #[serde(default)]
    pub end: super::EndOfRun,
    /// `--until`: how precise it got and whether that ended the run (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<super::Until>,
    /// Bytes read and written, headers and bodies.
    pub bytes: Bytes,
    /// Connections opened and closed by the server.
    pub connections: Connections,
    /// Status code → responses.
    pub status: BTreeMap<String, u64>,
    /// Error kind → count (every kind listed).
    pub errors: BTreeMap<String, u64>,
    /// The latency of each phase, the total and the schedule lag.
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
    /// Per response, write + wait − server total: the network and the client's own time.
    pub server_timing_overhead: Stats,
    /// The server's side measured by probes (`--server-probes`), when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_probes: Option<super::probes::ServerProbes>,
    /// HTTP/2: streams reset by the server (RST_STREAM), by error code name.
    pub resets: BTreeMap<String, u64>,
    /// WebSocket: how connections ended, by kind (the server's close code, `no_code`,
    /// `abnormal`, `client`, `client_unanswered`); absent from runs where none did.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ws_closes: BTreeMap<String, u64>,
    /// WebSocket with `--compressed`: the connections upgraded, by whether their `101` agreed
    /// permessage-deflate (`agreed`, `not_agreed`: its messages went uncompressed); absent
    /// from runs without it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ws_deflate: BTreeMap<String, u64>,
    /// WebSocket with `--ws-match`: replies that matched no message in flight (answering
    /// none); absent when none.
    #[serde(default, skip_serializing_if = "crate::recorder::hist::is_zero")]
    pub ws_unmatched: u64,
    /// gRPC calls by status code, and each code's first message (flattened into the summary).
    #[serde(flatten)]
    pub grpc: crate::recorder::codes::GrpcStatuses,
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

impl Summary {
    /// The thresholds' verdict: the one kept with them, or (a record made before it was
    /// kept) the one they give.
    pub fn thresholds_verdict(&self) -> Option<ThresholdVerdict> {
        self.threshold_verdict
            .clone()
            .or_else(|| ThresholdVerdict::of(&self.thresholds))
    }
}

/// One request name's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestFigures {
    /// The requests of this name, by outcome.
    pub requests: Requests,
    /// Requests completed per second of the run.
    pub throughput_rps: f64,
    /// Status code → responses.
    pub status: BTreeMap<String, u64>,
    /// Error kind → count (kinds with none left out).
    pub errors: BTreeMap<String, u64>,
    /// The latency of this name's requests.
    pub latency: Latency,
}

/// The per-burst figures of a burst run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bursts {
    /// Requests per burst.
    pub size: u64,
    /// The pause between bursts, seconds.
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
    /// The mean, µs.
    pub mean_us: f64,
    /// The median, µs.
    pub p50_us: f64,
    /// The 95th percentile, µs.
    pub p95_us: f64,
    /// The largest, µs.
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

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
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
    /// Open loop, per worker thread: the share of the run its pacer spun to send requests on
    /// time (`--pacer-spin`: its budget), the cost of the schedule lag's precision. Absent
    /// when the pacer may not spin.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pacer_spin: Vec<f64>,
    /// Bytes of interval snapshots (compressed histograms and their containers) kept in memory
    /// during the run.
    pub interval_snapshot_bytes: u64,
}

/// Requests by outcome.
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
    /// Bytes read from the connections (above TLS).
    pub read: u64,
    /// Bytes written to the connections (above TLS).
    pub written: u64,
    /// Bytes read per second of the recorded window.
    pub read_per_s: f64,
    /// Response header bytes as received.
    pub headers: u64,
    /// Response header bytes as decoded.
    pub headers_decoded: u64,
    /// Response body bytes as received, without chunk framing.
    pub body: u64,
    /// Response body bytes after `--compressed` decoding (else the same as `body`).
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

/// Connections opened, and closed by the server.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Connections {
    /// Connections opened (TCP, or QUIC with `--http3`).
    pub opened: u64,
    /// Responses after which the server closed the connection (a reconnect followed).
    pub server_closes: u64,
}

/// The latency figures of a run, in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Intended send → last byte (corrected).
    pub total: Stats,
    /// Actual send → last byte.
    pub uncorrected: Stats,
    /// Client phases: queue, connect, tls, write, wait, read (and those of streamed
    /// responses), written by their names.
    #[serde(with = "crate::model::phase_map")]
    pub phases: BTreeMap<Phase, Stats>,
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
            .chain(self.phases.iter().map(|(p, st)| (p.name(), st)))
        {
            out.extend(st.violations().into_iter().map(|v| format!("{name}: {v}")));
        }
        if tiled && self.total.count > 0 {
            let sum = |st: &Stats| st.mean_us.unwrap_or(0.0) * st.count as f64;
            let parts: f64 = self
                .phases
                .iter()
                .filter(|(p, _)| **p != Phase::H2Handshake)
                .map(|(_, st)| sum(st))
                .sum();
            let total = sum(&self.total);
            let slack =
                0.002 * total + 0.001 * (self.phases.len() + 1) as f64 * self.total.count as f64;
            if (parts - total).abs() > slack {
                out.push(format!(
                    "the client phases add up to {parts:.3}us, the totals to {total:.3}us (within {slack:.3}us)"
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
    /// Connections at this level (an open loop's pool).
    pub connections: u64,
    /// Open loop: the level's offered rate.
    pub offered_rps: Option<f64>,
    /// How the level's run ended.
    pub stop_reason: StopReason,
    /// The level's figures.
    pub summary: Summary,
    /// The level's interval series.
    pub intervals: Vec<Interval>,
    /// Phase name → base64 HdrHistogram V2+DEFLATE of the level, in nanoseconds.
    pub histograms: BTreeMap<String, String>,
    /// The verdict on the level's own load (`analysis::validity`), as a run's: absent in
    /// records made before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<super::validity::Validity>,
}

/// One stage of a run with `--stages` (requests belong to the stage they were intended in).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stage {
    /// What the stage asked for: `0->20000 req/s`, `200 connections`.
    pub label: String,
    /// Its start, seconds from the start of recording.
    pub start_s: f64,
    /// Its length, seconds.
    pub duration_s: f64,
    /// The stage's requests, by outcome.
    pub requests: Requests,
    /// Requests completed per second of the stage.
    pub throughput_rps: f64,
    /// Open loop: the stage's mean offered rate.
    pub offered_rps: Option<f64>,
    /// The latency of the stage's requests.
    pub latency: Latency,
    /// Phase → base64 V2+DEFLATE histogram of the stage (empty phases left out), for exact
    /// merges; written by the phases' names.
    #[serde(with = "crate::model::phase_map")]
    pub histograms: BTreeMap<Phase, String>,
}

/// One interval of the time series (all threads merged).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Interval {
    /// Start, seconds from the start of recording.
    pub start_s: f64,
    /// Its length, seconds (the last one may be shorter).
    pub duration_s: f64,
    /// Requests that ended in the interval.
    pub requests: u64,
    /// Complete responses, whatever their status.
    pub ok: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Requests that ended per second of the interval.
    pub throughput_rps: f64,
    /// Response bytes read in the interval.
    pub bytes_read: u64,
    /// Phase (client phases, `total`, `uncorrected`) → p50/p99/max; written by the phases'
    /// names.
    #[serde(with = "crate::model::phase_map")]
    pub latency: BTreeMap<Phase, IntervalStats>,
    /// `Server-Timing` metric → p50/p99/max in the interval.
    pub server_timing: BTreeMap<String, IntervalStats>,
    /// Probed server phase (`--server-probes`) → p50/p99/max in the interval (the phases of
    /// a tick of the probes land in the interval of its middle).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_probes: BTreeMap<String, IntervalStats>,
    /// Phase name (and `server_timing.<metric>`) → base64 V2+DEFLATE histogram of the
    /// interval, as in the record's `histograms`: for exact merges by time and for resampling
    /// the run by blocks of intervals (`compare`). Empty phases are left out.
    pub histograms: BTreeMap<String, String>,
    /// The load generator's own health in the interval (absent in records made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<IntervalGenerator>,
    /// The interval's slowest requests by total, kept whole (slowest first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowest: Vec<super::slow::SlowRequest>,
}

impl Interval {
    /// This interval with the figures of its histograms `h`, named as in a record's
    /// `histograms` (its phases and `server_timing.METRIC`): each one's p50/p99/max and
    /// encoded form, and the generator's health from the schedule lag and `busy_max`. The one
    /// derivation for a run's intervals and for merged ones.
    pub(crate) fn with_hists(
        mut self,
        h: &BTreeMap<String, hdrhistogram::Histogram<u64>>,
        busy_max: Option<f64>,
    ) -> Interval {
        for (name, hist) in h {
            if let Some(metric) = name.strip_prefix("server_timing.") {
                self.server_timing
                    .insert(metric.to_string(), IntervalStats::of(hist));
            } else if let Some(phase) = name.strip_prefix("server_probe.") {
                self.server_probes
                    .insert(phase.to_string(), IntervalStats::of(hist));
            } else if let Some(phase) = Phase::from_name(name) {
                self.latency.insert(phase, IntervalStats::of(hist));
            }
            self.histograms
                .insert(name.clone(), crate::recorder::hist::encode(hist));
        }
        self.generator = IntervalGenerator::of(h.get(Phase::Lag.name()), busy_max);
        self
    }
}

/// The generator's health in one interval: how late it sent, how busy its workers were.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct IntervalGenerator {
    /// Schedule lag (open loop: intended → released) p99 and max in the interval, µs.
    pub lag_p99_us: Option<f64>,
    /// The largest schedule lag in the interval, µs.
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
