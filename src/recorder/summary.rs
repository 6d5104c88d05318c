//! The one summary: every figure of a run's `summary` derived from its counts and its named
//! histograms, the same way for one run (its parts are its own counts) and for a merge of
//! several (their counts added). Rates divide by the duration given; statistics come from
//! the histograms, found by the names they have in a record's `histograms`.

use super::hist::Stats;
use super::record::{
    BurstStats, Bursts, Bytes, Connections, EndOfRun, Generator, LastAnswer, Latency,
    RequestFigures, Requests, Summary,
};
use crate::model::Phase;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Histograms by name (`total`, `server_timing.db`, `request.get.wait`, …), and by phase.
pub(crate) trait Lookup {
    /// The histogram named `name`, as in a record's `histograms`.
    fn find(&self, name: &str) -> Option<&Histogram<u64>>;

    /// The histogram of `phase`: by default the one named by its name.
    fn phase(&self, phase: Phase) -> Option<&Histogram<u64>> {
        self.find(phase.name())
    }
}

impl Lookup for BTreeMap<String, Histogram<u64>> {
    fn find(&self, name: &str) -> Option<&Histogram<u64>> {
        self.get(name)
    }
}

impl Lookup for BTreeMap<String, &Histogram<u64>> {
    fn find(&self, name: &str) -> Option<&Histogram<u64>> {
        self.get(name).copied()
    }
}

/// A stage's merged histograms, keyed by phase.
impl Lookup for BTreeMap<Phase, Histogram<u64>> {
    fn find(&self, name: &str) -> Option<&Histogram<u64>> {
        self.phase(Phase::from_name(name)?)
    }

    fn phase(&self, phase: Phase) -> Option<&Histogram<u64>> {
        self.get(&phase)
    }
}

/// The histograms a run (or one of its stages) recorded, one per phase.
impl Lookup for super::PhaseHists {
    fn find(&self, name: &str) -> Option<&Histogram<u64>> {
        self.phase(Phase::from_name(name)?)
    }

    fn phase(&self, phase: Phase) -> Option<&Histogram<u64>> {
        Some(self.get(phase))
    }
}

/// The histograms of `h` under a prefix (one request name's).
struct Prefixed<'a, L: Lookup>(&'a L, String);

impl<L: Lookup> Lookup for Prefixed<'_, L> {
    fn find(&self, name: &str) -> Option<&Histogram<u64>> {
        self.0.find(&format!("{}{name}", self.1))
    }
}

pub(crate) fn round6(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

pub(crate) fn stats(h: &impl Lookup, name: &str) -> Stats {
    h.find(name).map(Stats::of).unwrap_or_default()
}

/// The latency statistics of phase histograms: the one derivation, for a run, its stages,
/// its named requests and merges of any of them.
pub(crate) fn latency(h: &impl Lookup) -> Latency {
    // `events` holds counts ([`Stats::of_phase`]); an absent histogram is an empty one.
    let of = |p: Phase| {
        h.phase(p)
            .map_or_else(Stats::default, |hist| Stats::of_phase(p, hist))
    };
    let recorded = |p: Phase| h.phase(p).is_some_and(|hist| !hist.is_empty());
    Latency {
        total: of(Phase::Total),
        uncorrected: of(Phase::Uncorrected),
        // The stream phases and the pings' round trips only when recorded: new keys, for
        // `--stream` and `--ws-ping` runs.
        phases: Phase::CLIENT
            .iter()
            .copied()
            .filter(|p| p.shown(recorded(*p)))
            .chain(Phase::APART.into_iter().filter(|p| recorded(*p)))
            .map(|p| (p, of(p)))
            .collect(),
        schedule_lag: of(Phase::Lag),
    }
}

fn sum_maps<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for m in maps {
        for (k, v) in m {
            *out.entry(k.clone()).or_insert(0) += v;
        }
    }
    out
}

pub(crate) fn round3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

/// The summary of parts that ran side by side (segments) over `duration_s`, with the merged
/// histograms `h` (named as in a record's `histograms`).
pub(crate) fn summarize(parts: &[&Summary], h: &impl Lookup, duration_s: f64) -> Summary {
    let sum = |f: &dyn Fn(&Summary) -> u64| parts.iter().map(|s| f(s)).sum::<u64>();
    let per_s = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            0.0
        }
    };
    let first = parts[0];
    let read = sum(&|s| s.bytes.read);
    let (order, labels) = server_timing_names(parts);
    let bursts = bursts_of(parts, h);
    // The probes of one part (one run's server) are kept; parts probed apart are not added.
    let mut probed = parts.iter().filter_map(|s| s.server_probes.as_ref());
    let server_probes = match (probed.next(), probed.next()) {
        (Some(one), None) => Some(one.clone()),
        _ => None,
    };
    Summary {
        server_probes,
        requests: Requests {
            total: sum(&|s| s.requests.total),
            ok: sum(&|s| s.requests.ok),
            errors: sum(&|s| s.requests.errors),
            non_2xx_3xx: sum(&|s| s.requests.non_2xx_3xx),
        },
        duration_s,
        throughput_rps: round3(per_s(sum(&|s| s.requests.total) - sum(&|s| s.end.drained))),
        answered_rps: round3(per_s(sum(&|s| s.requests.ok) - sum(&|s| s.end.drained_ok))),
        last_answer: last_answer(parts),
        end: end_of(parts),
        until: None,
        bytes: Bytes {
            read,
            written: sum(&|s| s.bytes.written),
            read_per_s: round3(per_s(read)),
            headers: sum(&|s| s.bytes.headers),
            headers_decoded: sum(&|s| s.bytes.headers_decoded),
            body: sum(&|s| s.bytes.body),
            body_decoded: sum(&|s| s.bytes.body_decoded),
        },
        connections: Connections {
            opened: sum(&|s| s.connections.opened),
            server_closes: sum(&|s| s.connections.server_closes),
        },
        status: sum_maps(parts.iter().map(|s| &s.status)),
        errors: sum_maps(parts.iter().map(|s| &s.errors)),
        latency: latency(h),
        generator: generator(parts),
        server_timing: order
            .iter()
            .map(|m| (m.clone(), stats(h, &format!("server_timing.{m}"))))
            .collect(),
        server_timing_order: order,
        server_timing_labels: labels,
        server_timing_responses: sum(&|s| s.server_timing_responses),
        server_timing_invalid: sum(&|s| s.server_timing_invalid),
        server_timing_total: first.server_timing_total.clone(),
        server_timing_overhead: stats(h, "server_timing_overhead"),
        resets: sum_maps(parts.iter().map(|s| &s.resets)),
        ws_closes: sum_maps(parts.iter().map(|s| &s.ws_closes)),
        ws_deflate: sum_maps(parts.iter().map(|s| &s.ws_deflate)),
        ws_unmatched: parts.iter().map(|s| s.ws_unmatched).sum(),
        grpc: super::codes::GrpcStatuses::sum(parts.iter().map(|s| &s.grpc)),
        h2_max_concurrent_streams: parts
            .iter()
            .filter_map(|s| s.h2_max_concurrent_streams)
            .min(),
        bursts,
        warnings: Vec::new(),
        by_request: by_request(parts, h, duration_s),
        thresholds: Vec::new(),
        threshold_verdict: None,
    }
}

/// The generators of parts side by side: the offered rate and the sending rates added up
/// (when every part has one: they share the window), every thread's figures.
fn generator(parts: &[&Summary]) -> Generator {
    let sum = |f: &dyn Fn(&Summary) -> u64| parts.iter().map(|s| f(s)).sum::<u64>();
    let offered: Vec<f64> = parts
        .iter()
        .filter_map(|s| s.generator.offered_rps)
        .collect();
    // Parts side by side share the window: their sending rates add up.
    let sent: Vec<f64> = parts.iter().filter_map(|s| s.generator.sent_rps).collect();
    Generator {
        offered_rps: (offered.len() == parts.len()).then(|| offered.iter().sum()),
        sent_rps: (sent.len() == parts.len()).then(|| round3(sent.iter().sum())),
        thread_busy: parts
            .iter()
            .flat_map(|s| s.generator.thread_busy.iter().copied())
            .collect(),
        pacer_spin: parts
            .iter()
            .flat_map(|s| s.generator.pacer_spin.iter().copied())
            .collect(),
        interval_snapshot_bytes: sum(&|s| s.generator.interval_snapshot_bytes),
    }
}

/// Parts side by side whose server stopped answering: every part's did (one that did not
/// answered to the end), after the last answer of all, with every part's failures after.
fn last_answer(parts: &[&Summary]) -> Option<LastAnswer> {
    let each: Vec<&LastAnswer> = parts
        .iter()
        .filter_map(|s| s.last_answer.as_ref())
        .collect();
    (each.len() == parts.len()).then(|| LastAnswer {
        at_s: each.iter().map(|l| l.at_s).fold(0.0, f64::max),
        failed_after: each.iter().map(|l| l.failed_after).sum(),
    })
}

/// How the parts' runs ended: what was drained, timed out, in flight and not sent, added; the
/// longest drain.
fn end_of(parts: &[&Summary]) -> EndOfRun {
    let sum = |f: &dyn Fn(&Summary) -> u64| parts.iter().map(|s| f(s)).sum::<u64>();
    EndOfRun {
        drained: sum(&|s| s.end.drained),
        drain_timeouts: sum(&|s| s.end.drain_timeouts),
        drained_ok: sum(&|s| s.end.drained_ok),
        in_flight: sum(&|s| s.end.in_flight),
        not_sent: sum(&|s| s.end.not_sent),
        drain_s: parts.iter().map(|s| s.end.drain_s).fold(0.0, f64::max),
    }
}

/// The Server-Timing metrics of the parts, in the order first seen, and their labels added.
#[allow(clippy::type_complexity)]
fn server_timing_names(
    parts: &[&Summary],
) -> (Vec<String>, BTreeMap<String, BTreeMap<String, u64>>) {
    let mut order: Vec<String> = Vec::new();
    for s in parts {
        for name in &s.server_timing_order {
            if !order.contains(name) {
                order.push(name.clone());
            }
        }
    }
    let mut labels: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for s in parts {
        for (metric, descs) in &s.server_timing_labels {
            let into = labels.entry(metric.clone()).or_default();
            for (d, n) in descs {
                *into.entry(d.clone()).or_insert(0) += n;
            }
        }
    }
    (order, labels)
}

/// The parts' bursts: their sizes added (side by side), the most bursts of one part, and the
/// statistics of the added `burst_dispatch` and `burst_wait` histograms.
fn bursts_of(parts: &[&Summary], h: &impl Lookup) -> Option<Bursts> {
    parts[0].bursts.as_ref().map(|b| {
        let of = |name: &str| match h.find(name) {
            Some(h) if !h.is_empty() => BurstStats::of(h),
            _ => BurstStats {
                mean_us: 0.0,
                p50_us: 0.0,
                p95_us: 0.0,
                max_us: 0.0,
            },
        };
        Bursts {
            size: parts
                .iter()
                .filter_map(|s| s.bursts.as_ref())
                .map(|b| b.size)
                .sum(),
            interval_s: b.interval_s,
            count: parts
                .iter()
                .filter_map(|s| s.bursts.as_ref())
                .map(|b| b.count)
                .max()
                .unwrap_or(0),
            dispatch: of("burst_dispatch"),
            wait: of("burst_wait"),
        }
    })
}

/// The named requests' figures of the parts, from the merged `request.<name>.<phase>`
/// histograms.
fn by_request(
    parts: &[&Summary],
    h: &impl Lookup,
    duration_s: f64,
) -> BTreeMap<String, RequestFigures> {
    let mut out: BTreeMap<String, RequestFigures> = BTreeMap::new();
    for s in parts {
        for (name, f) in &s.by_request {
            let into = out.entry(name.clone()).or_insert_with(|| RequestFigures {
                requests: Requests {
                    total: 0,
                    ok: 0,
                    errors: 0,
                    non_2xx_3xx: 0,
                },
                throughput_rps: 0.0,
                status: BTreeMap::new(),
                errors: BTreeMap::new(),
                latency: Latency {
                    total: Stats::default(),
                    uncorrected: Stats::default(),
                    phases: BTreeMap::new(),
                    schedule_lag: Stats::default(),
                },
            });
            into.requests.total += f.requests.total;
            into.requests.ok += f.requests.ok;
            into.requests.errors += f.requests.errors;
            into.requests.non_2xx_3xx += f.requests.non_2xx_3xx;
            for (k, v) in &f.status {
                *into.status.entry(k.clone()).or_insert(0) += v;
            }
            for (k, v) in &f.errors {
                *into.errors.entry(k.clone()).or_insert(0) += v;
            }
        }
    }
    for (name, f) in out.iter_mut() {
        f.latency = latency(&Prefixed(h, format!("request.{name}.")));
        f.throughput_rps = round3(if duration_s > 0.0 {
            f.requests.total as f64 / duration_s
        } else {
            0.0
        });
    }
    out
}
