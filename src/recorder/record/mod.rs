//! The RunRecord: the saved artefact of a run (`-o run.json`). It holds the config, the
//! environment, the summary (the keys documented in `schema/runrecord.schema.json`), the
//! interval series and every histogram (HdrHistogram V2 + DEFLATE, base64), so that reports
//! and later tools work from it alone.
//!
//! By concern: this file holds the record itself and how it is built from a run, a sweep or
//! repetitions; [`config`] what was asked for and where it ran; [`sections`] the summary's
//! types and the threshold verdicts; `build` derives those figures from what was measured;
//! [`warnings`] the plain-words warnings the figures call for.

mod build;
pub mod config;
mod counts;
mod end;
mod joining;
pub mod probes;
pub mod sections;
pub mod slow;
#[cfg(test)]
mod tests;
pub mod thresholds;
mod until;
pub mod validity;
pub mod warnings;

pub use config::{Config, Environment, GeneratorStart, Sweep};
pub use end::{EndOfRun, LastAnswer};
pub use sections::*;
pub use thresholds::*;
pub use until::{Until, UntilTarget};
pub use warnings::{
    connections_carry, http_errors_warning, step_warnings, stopped_answering, warnings_of,
    BUSY_NEAR, BUSY_WARN, LAG_NEAR_US, LAG_WARN_US, SILENT_WARN,
};

use crate::model::{ErrorKind, StopReason};
use crate::plan::RunPlan;
use crate::recorder::hist;
use crate::recorder::summary::{round6, summarize};
use crate::recorder::{Measured, RecordError};
use build::{counts_of, intervals_of, named_hists, offered_rps, stages_of};
use config::config_of;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Version of the RunRecord layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// The saved record of one run (or of a sweep, repetitions, a knee search or a merge): what was
/// asked for, where it ran, what was measured, and every histogram.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunRecord {
    /// The layout's version ([`SCHEMA_VERSION`] when written).
    pub schema_version: u32,
    /// A random id drawn when the run started (32 hex digits), so that `reqlife merge` can
    /// refuse a record given twice; absent from records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A merged record: the run ids of its parts (and of theirs), so that merging it again
    /// with one of them is refused too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_run_ids: Vec<String>,
    /// The tool that wrote the record.
    pub tool: Tool,
    /// What was asked for.
    pub config: Config,
    /// Where it ran.
    pub environment: Environment,
    /// How the run ended (written as `duration`, `requests`, `interrupted (SIGINT)`, …).
    pub stop_reason: StopReason,
    /// The run was interrupted: by SIGINT or SIGTERM, or `q` in the live view.
    pub interrupted: bool,
    /// The figures of the whole run.
    pub summary: Summary,
    /// The interval series' figures, in order.
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
    pub knee: Option<crate::recorder::knee::KneeResult>,
    /// The slow requests kept whole: the slowest by total and by each phase, and the one
    /// nearest each printed percentile (absent in records written before they were kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_requests: Option<slow::SlowRequests>,
    /// `--log-requests`: the per-request log, where it is and what it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_log: Option<slow::RequestLogInfo>,
    /// An open loop at a constant rate: the first gaps between its sends, for the arrival
    /// test (absent otherwise, and in records made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<validity::Arrivals>,
    /// The verdict on the load itself (`analysis::validity`): each check, passed or not
    /// (absent in records made before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<validity::Validity>,
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
    /// The most responses the sample keeps.
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
    pub fn of(r: &crate::recorder::reservoir::Reservoir) -> Option<Samples> {
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
        let mut rng = crate::recorder::reservoir::SplitMix64(seed);
        let items = crate::recorder::reservoir::merge_uniform(
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

/// The tool that wrote a record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tool {
    /// Its name (`reqlife`).
    pub name: String,
    /// Its version (the crate's).
    pub version: String,
}

/// How a run ended, as the record keeps it: what its load measured does not say it.
#[derive(Debug, Clone)]
pub struct Ending {
    /// How long the run was recorded (after the warm-up).
    pub recorded: Duration,
    /// How long the end waited for the requests in flight.
    pub drained: Duration,
    /// Why the run stopped.
    pub stop_reason: StopReason,
    /// The run was interrupted: by SIGINT or SIGTERM, or `q` in the live view.
    pub interrupted: bool,
    /// RFC 3339 wall-clock time at which recording started.
    pub start_time: String,
    /// The command line as typed.
    pub command_line: Vec<String>,
    /// The target was reqlife's embedded server.
    pub embedded_target: bool,
}

impl RunRecord {
    /// Builds the record of `plan` from what was measured.
    pub fn build(plan: &RunPlan, measured: &Measured, end: Ending) -> RunRecord {
        let secs = end.recorded.as_secs_f64();
        let named = named_hists(plan, measured);
        let names = plan.workload.as_ref().map_or(&[][..], |w| &w.names[..]);
        let counts = counts_of(plan, measured, &end);
        let first_errors = ErrorKind::ALL
            .iter()
            .filter_map(|k| {
                measured.counts.first_errors[k.index()]
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
            intervals: intervals_of(measured, plan.interval, end.recorded, names),
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
            slow_requests: named.get("total").and_then(|t| {
                let probed: Vec<String> = measured
                    .probes
                    .as_ref()
                    .filter(|p| p.joined.is_some())
                    .map_or(Vec::new(), |p| match p.joined.as_ref().map(|j| &j.phases) {
                        // On another host the joined phases stay apart from the agent's.
                        Some(joined) if !joined.is_empty() => {
                            joined.iter().map(|(n, _, _)| n.clone()).collect()
                        }
                        _ => p.phases.iter().map(|ph| ph.name.clone()).collect(),
                    });
                slow::SlowRequests::of(&measured.exemplars, names, t, &probed)
            }),
            request_log: slow::RequestLogInfo::of(plan, measured.request_log.as_ref()),
            arrivals: match &plan.load {
                crate::model::LoadModel::Open {
                    schedule: crate::model::Schedule::Constant { .. },
                    ..
                } => validity::Arrivals::of(&measured.sends),
                _ => None,
            },
            validity: None,
        }
        .with_probes(measured)
        .with_warnings()
    }

    /// This record with the figures of the server's probes (`--server-probes`), beside its
    /// client phases.
    fn with_probes(mut self, measured: &Measured) -> Self {
        self.summary.server_probes = measured
            .probes
            .as_ref()
            .map(|acc| probes::ServerProbes::of(acc, &self.summary.latency.phases));
        self
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
                m.series = crate::recorder::Series::default();
                m.segments.clear();
                // Each level's samples are timed from its own start: joined below.
                m.samples = crate::recorder::reservoir::Reservoir::new(0, 0);
                m.sends = Default::default();
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
        let mut slow: Vec<(slow::SlowRequests, f64)> = Vec::new();
        for (label, level_plan, record) in parts {
            if let Some(s) = &record.samples {
                samples.push((s.clone(), (offset * 1e6).round() as u64));
            }
            slow.extend(record.slow_requests.clone().map(|s| (s, offset)));
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
                validity: None,
            });
        }
        let parts: Vec<(&Samples, u64)> = samples.iter().map(|(s, o)| (s, *o)).collect();
        top.samples = Samples::concat(&parts, top.config.seed);
        // The levels' slow requests on the sweep's clock (the merge above has each level's
        // timed from its own start).
        let slow: Vec<_> = slow.iter().map(|(s, o)| (s, *o)).collect();
        top.slow_requests = slow::SlowRequests::merge(&slow, top.histogram("total").ok().as_ref());
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

    /// The histogram named `name` (a phase's name, `server_timing.METRIC`, …) from the
    /// record.
    pub fn histogram(&self, name: &str) -> Result<hdrhistogram::Histogram<u64>, RecordError> {
        let text = self
            .histograms
            .get(name)
            .ok_or_else(|| RecordError::NoHistogram(name.to_string()))?;
        hist::decode(text)
    }

    /// Reads a record from its JSON `text` (named `name` in messages): JSON with a
    /// `schema_version` this version reads, in the record's layout.
    pub fn from_json(text: &str, name: &str) -> Result<RunRecord, RecordError> {
        let name = name.to_string();
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| RecordError::NotJson {
                name: name.clone(),
                reason: e.to_string(),
            })?;
        match value.get("schema_version").and_then(|v| v.as_u64()) {
            None => return Err(RecordError::NoSchemaVersion { name }),
            Some(version) if version > SCHEMA_VERSION as u64 => {
                return Err(RecordError::NewerSchema { name, version })
            }
            Some(_) => {}
        }
        serde_json::from_value(value).map_err(|e| RecordError::Invalid {
            name,
            reason: e.to_string(),
        })
    }
}
