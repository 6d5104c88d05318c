//! The RunRecord: the saved artefact of a run (`-o run.json`). It holds the config, the
//! environment, the summary (the keys documented in `schema/runrecord.schema.json`), the
//! interval series and every histogram (HdrHistogram V2 + DEFLATE, base64), so that reports
//! and later tools work from it alone.

use super::hist::{self, IntervalStats, Stats};
use super::Measured;
use crate::model::{ErrorKind, Phase, RunPlan, StopRule};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Version of the RunRecord layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    pub schema_version: u32,
    pub tool: Tool,
    pub config: Config,
    pub environment: Environment,
    /// How the run ended: `duration`, `requests`, `interrupted` (SIGINT/SIGTERM).
    pub stop_reason: String,
    pub interrupted: bool,
    pub summary: Summary,
    pub intervals: Vec<Interval>,
    /// Phase name → base64 HdrHistogram V2+DEFLATE of the whole run, in nanoseconds.
    pub histograms: BTreeMap<String, String>,
    /// Error kind → the first error of that kind, in words.
    pub first_errors: BTreeMap<String, String>,
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
    pub load_model: String,
    /// The command line as typed.
    pub command_line: Vec<String>,
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
            cores: crate::cli::plan::default_threads() as u64,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            kernel: read("/proc/sys/kernel/osrelease"),
            hostname: read("/proc/sys/kernel/hostname"),
            start_time,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub requests: Requests,
    /// Recorded time in seconds (warm-up excluded).
    pub duration_s: f64,
    /// Completed requests (responses and errors) per second.
    pub throughput_rps: f64,
    pub bytes: Bytes,
    pub connections: Connections,
    /// Status code → responses.
    pub status: BTreeMap<String, u64>,
    /// Error kind → count (every kind listed).
    pub errors: BTreeMap<String, u64>,
    pub latency: Latency,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Bytes {
    pub read: u64,
    pub written: u64,
    pub read_per_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Connections {
    /// TCP connections opened.
    pub opened: u64,
    /// Responses after which the server closed the connection (a reconnect followed).
    pub server_closes: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latency {
    /// Intended send → last byte (corrected).
    pub total: Stats,
    /// Actual send → last byte.
    pub uncorrected: Stats,
    /// Client phases: queue, connect, tls, write, wait, read.
    pub phases: BTreeMap<String, Stats>,
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
    /// base64 V2+DEFLATE histogram of the interval's total latency (for exact merges).
    pub total_histogram: Option<String>,
}

/// How the run ended and how long it recorded.
#[derive(Debug, Clone)]
pub struct Ending {
    pub recorded: Duration,
    pub stop_reason: String,
    pub interrupted: bool,
    pub start_time: String,
    pub command_line: Vec<String>,
    pub embedded_target: bool,
}

impl RunRecord {
    /// Builds the record of `plan` from what was measured.
    pub fn build(plan: &RunPlan, measured: &Measured, end: Ending) -> RunRecord {
        let c = &measured.counters;
        let secs = end.recorded.as_secs_f64();
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let status: BTreeMap<String, u64> = measured
            .status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(code, n)| (code.to_string(), *n))
            .collect();
        let non_2xx_3xx = measured
            .status
            .iter()
            .enumerate()
            .filter(|(code, _)| !(200..400).contains(code))
            .map(|(_, n)| n)
            .sum();
        let errors = ErrorKind::ALL
            .iter()
            .map(|k| (k.name().to_string(), c.errors[k.index()]))
            .collect();
        let phases = Phase::CLIENT
            .iter()
            .map(|&p| (p.name().to_string(), Stats::of(measured.hists.get(p))))
            .collect();
        let histograms = Phase::ALL
            .iter()
            .map(|&p| (p.name().to_string(), hist::encode(measured.hists.get(p))))
            .collect();
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
            tool: Tool {
                name: "reqlife".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            config: config_of(plan, &end),
            environment: Environment::current(end.start_time.clone()),
            stop_reason: end.stop_reason.clone(),
            interrupted: end.interrupted,
            summary: Summary {
                requests: Requests {
                    total: c.requests,
                    ok: c.ok,
                    errors: c.error_total(),
                    non_2xx_3xx,
                },
                duration_s: round6(secs),
                throughput_rps: round3(per_s(c.requests)),
                bytes: Bytes {
                    read: c.bytes_read,
                    written: c.bytes_written,
                    read_per_s: round3(per_s(c.bytes_read)),
                },
                connections: Connections {
                    opened: c.connections_opened,
                    server_closes: c.server_closes,
                },
                status,
                errors,
                latency: Latency {
                    total: Stats::of(measured.hists.get(Phase::Total)),
                    uncorrected: Stats::of(measured.hists.get(Phase::Uncorrected)),
                    phases,
                },
            },
            intervals: intervals_of(measured, plan.interval, end.recorded),
            histograms,
            first_errors,
        }
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

fn round3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
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
        protocol: "http/1.1".into(),
        load_model: "closed".into(),
        command_line: end.command_line.clone(),
    }
}

/// The merged interval series, with empty intervals filled in so that time is continuous.
fn intervals_of(measured: &Measured, interval: Duration, recorded: Duration) -> Vec<Interval> {
    let step = interval.as_secs_f64();
    let count = ((recorded.as_secs_f64() / step).ceil() as u64)
        .max(measured.intervals.last().map_or(0, |s| s.index + 1));
    let mut snaps = measured.intervals.iter().peekable();
    (0..count)
        .map(|i| {
            let start_s = i as f64 * step;
            let duration_s = (recorded.as_secs_f64() - start_s).clamp(0.0, step);
            let duration_s = if duration_s > 0.0 { duration_s } else { step };
            let snap = snaps.next_if(|s| s.index == i);
            let mut latency = BTreeMap::new();
            let mut total_histogram = None;
            let (requests, ok, errors, bytes_read) = match snap {
                None => (0, 0, 0, 0),
                Some(s) => {
                    for (phase, bytes) in &s.hists {
                        if let Ok(h) = hist::decode_bytes(bytes) {
                            latency.insert(phase.name().to_string(), IntervalStats::of(&h));
                            if *phase == Phase::Total {
                                total_histogram = Some(hist::encode(&h));
                            }
                        }
                    }
                    let c = &s.counters;
                    (c.requests, c.ok, c.error_total(), c.bytes_read)
                }
            };
            Interval {
                start_s: round6(start_s),
                duration_s: round6(duration_s),
                requests,
                ok,
                errors,
                throughput_rps: round3(requests as f64 / duration_s),
                bytes_read,
                latency,
                total_histogram,
            }
        })
        .collect()
}
