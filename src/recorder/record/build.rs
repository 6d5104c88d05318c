//! The figures of a run derived from what was measured: the named histograms, the counts
//! (left for `summarize` to derive rates and statistics from), the stages, the bursts and the
//! interval series.

use super::{
    BurstStats, Bursts, Bytes, Connections, EndOfRun, Ending, Generator, Interval, Latency,
    RequestFigures, Requests, Stage, Summary,
};
use crate::engine::extras::Tally;
use crate::model::{ErrorKind, LoadModel, Phase, Schedule};
use crate::plan::RunPlan;
use crate::recorder::hist;
use crate::recorder::probes::PREFIX as PROBE_PREFIX;
use crate::recorder::record::slow::SlowRequest;
use crate::recorder::summary::{latency, round3, round6};
use crate::recorder::{Counters, Measured};
use std::collections::BTreeMap;
use std::time::Duration;

/// A run's histograms by their names in the record: every phase, each Server-Timing metric
/// (`server_timing.NAME`), the parse overhead and the bursts' when there are some, and each
/// named request's phases that saw a value (`request.NAME.PHASE`).
pub(super) fn named_hists<'a>(
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
    for p in measured.probes.iter().flat_map(|a| &a.phases) {
        named.insert(format!("server_probe.{}", p.name), &p.hist);
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
pub(super) fn counts_of(plan: &RunPlan, measured: &Measured, end: &Ending) -> Summary {
    let (c, t) = (&measured.counts.counters, &measured.counts.tallies);
    let secs = end.recorded.as_secs_f64();
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let (status, non_2xx_3xx) = status_of(
        measured
            .counts
            .status
            .iter()
            .enumerate()
            .map(|(c, n)| (c, *n)),
    );
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
        last_answer: super::LastAnswer::of(c, secs),
        end: EndOfRun::of(c, end.drained),
        until: None,
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
            pacer_spin: measured.pacer_spin.iter().map(|b| round6(*b)).collect(),
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
        resets: t.by_name(Tally::Reset),
        grpc: crate::recorder::codes::GrpcStatuses::of(t),
        ws_closes: t.by_name(Tally::WsClose),
        ws_deflate: t.by_name(Tally::WsDeflate),
        ws_unmatched: t.amount(Tally::WsUnmatched).unwrap_or(0),
        h2_max_concurrent_streams: t.amount(Tally::MaxStreams),
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
pub(super) fn stages_of(plan: &RunPlan, measured: &Measured) -> Vec<Stage> {
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
                crate::recorder::PhaseHists::new(hist::new_interval_hist),
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
                latency: latency(h),
                histograms: Phase::ALL
                    .iter()
                    .filter(|&&p| !h.get(p).is_empty())
                    .map(|&p| (p, hist::encode(h.get(p))))
                    .collect(),
            };
            start += secs;
            stage
        })
        .collect()
}

/// The rate this process offered in an open loop with a constant schedule: its segment's
/// share of the plan's.
pub(super) fn offered_rps(plan: &RunPlan) -> Option<f64> {
    match &plan.load {
        LoadModel::Open {
            schedule: Schedule::Constant { rate },
            ..
        } => Some(*rate / plan.segment.count as f64),
        _ => None,
    }
}

/// The merged interval series, with empty intervals filled in so that time is continuous.
/// Each entry spans `span` base intervals (wider once a long run reached the cap); the last
/// one ends with the recording.
pub(super) fn intervals_of(
    measured: &Measured,
    interval: Duration,
    recorded: Duration,
    names: &[String],
) -> Vec<Interval> {
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
            let mut iv = interval_of(snap.as_ref(), start_s, duration_s);
            if let Some(s) = &snap {
                iv.slowest = (s.exemplars.iter())
                    .map(|e| SlowRequest::of(e, names, &[]))
                    .collect();
            }
            iv
        })
        .collect()
}

/// One record interval from a snapshot (none: nothing ended in it).
fn interval_of(
    snap: Option<&crate::recorder::IntervalSnapshot>,
    start_s: f64,
    duration_s: f64,
) -> Interval {
    let mut named = BTreeMap::new();
    if let Some(s) = snap {
        let phases = s
            .hists
            .iter()
            .map(|(p, bytes)| (p.name().to_string(), bytes));
        let metrics = (s.server.iter()).map(|(m, bytes)| match m.strip_prefix(PROBE_PREFIX) {
            Some(p) => (format!("server_probe.{p}"), bytes),
            None => (format!("server_timing.{m}"), bytes),
        });
        for (name, bytes) in phases.chain(metrics) {
            if let Ok(h) = hist::decode_bytes(bytes) {
                named.insert(name, h);
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
        latency: BTreeMap::new(),
        server_timing: BTreeMap::new(),
        server_probes: BTreeMap::new(),
        histograms: BTreeMap::new(),
        generator: None,
        slowest: Vec::new(),
    }
    .with_hists(&named, snap.and_then(|s| s.busy_max))
}
