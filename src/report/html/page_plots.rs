//! The page's plots from the record: each gathers its data (intervals, samples, histograms,
//! levels, bursts) and calls the plot of [`crate::report::plot`]; the breakdown's table goes
//! with its bars.

use super::{cell, open_loop, Breakdown, Bursts, EventGaps, Levels, Repetitions};
use crate::analysis::describe::Log2Hist;
use crate::model::Phase;
use crate::recorder::hist::Stats;
use crate::recorder::record::RunRecord;
use crate::report::plot::{self, boxes::BoxStats, breakdown::Segment, human, spectrum::Curve};

/// The latency-over-time plot and the words on its scatter, when some interval has
/// responses.
pub(super) fn latency_time(r: &RunRecord) -> (Option<String>, Option<String>) {
    let bands = bands(r, Phase::Total);
    let samples: Vec<(f64, f64)> = r
        .samples
        .iter()
        .flat_map(|s| {
            s.at_us
                .iter()
                .zip(&s.total_ns)
                .map(|(&t, &v)| (t as f64 / 1e6, v as f64))
        })
        .collect();
    if bands.is_empty() && samples.is_empty() {
        return (None, None);
    }
    let note = r.samples.as_ref().map(|s| {
        if s.at_us.len() as u64 == s.seen {
            format!("every one of the {} responses (dots)", s.seen)
        } else {
            format!(
                "a uniform random sample of {} of the {} responses (dots)",
                s.at_us.len(),
                s.seen
            )
        }
    });
    (Some(plot::latency_time::svg(&bands, &samples)), note)
}

/// The p50, p99 and max of `phase` in each interval that recorded it.
pub(super) fn bands(r: &RunRecord, phase: Phase) -> Vec<plot::latency_time::Band> {
    r.intervals
        .iter()
        .filter_map(|i| {
            let t = i.latency.get(&phase).filter(|t| t.count > 0)?;
            Some(plot::latency_time::Band {
                start_s: i.start_s,
                end_s: i.start_s + i.duration_s,
                p50_ns: t.p50_us * 1e3,
                p99_ns: t.p99_us * 1e3,
                max_ns: t.max_us * 1e3,
            })
        })
        .collect()
}

/// Streamed responses: the gaps between events as a histogram and over time (per interval),
/// when the run has any.
pub(super) fn event_gaps(r: &RunRecord) -> Option<EventGaps> {
    let h = r.histogram("event_gap").ok().filter(|h| !h.is_empty())?;
    let bands = bands(r, Phase::EventGap);
    let over_time = (!bands.is_empty()).then(|| {
        plot::latency_time::svg_of("event gap over time", "gap between events", &bands, &[])
    });
    let phases = &r.summary.latency.phases;
    let events = phases.get(&Phase::Events);
    let count = |v: Option<f64>| v.map_or("-".into(), |n| format!("{n:.0}"));
    let mode = match &r.config.stream {
        Some(m) => format!("--stream {m}"),
        None => "Server-Sent Events, by their content type".into(),
    };
    Some(EventGaps {
        histogram: plot::histogram::svg("event gap", &Log2Hist::of_hist(&h)),
        over_time,
        note: format!(
            "{} gaps between events of {} streamed responses ({mode}); events per response: \
             p50 {}, max {}; first event p50 {}.",
            h.len(),
            events.map_or(0, |e| e.count),
            count(events.and_then(|e| e.p50_us)),
            count(events.and_then(|e| e.max_us)),
            cell(phases.get(&Phase::FirstEvent).and_then(|f| f.p50_us)),
        ),
    })
}

/// The spectrum: one curve per level of a sweep, else the total (and the uncorrected latency
/// of an open loop).
pub(super) fn spectrum(r: &RunRecord) -> (Option<String>, String) {
    let decode = |text: Option<&String>| text.and_then(|t| crate::recorder::hist::decode(t).ok());
    let (curves, note): (Vec<Curve>, &str) = if r.levels.is_empty() {
        let mut names = vec![("total", "total (from the intended send time)")];
        if open_loop(r) {
            names.push(("uncorrected", "uncorrected (from the actual send)"));
        }
        let curves = names
            .into_iter()
            .filter_map(|(key, label)| Curve::of_hist(label, &decode(r.histograms.get(key))?))
            .collect();
        (curves, "")
    } else {
        let curves = r
            .levels
            .iter()
            .filter_map(|l| Curve::of_hist(&l.label, &decode(l.histograms.get("total"))?))
            .collect();
        (curves, "One curve per level of the sweep.")
    };
    if curves.is_empty() {
        return (None, String::new());
    }
    (Some(plot::spectrum::svg(&curves)), note.to_string())
}

/// The stacked bars and the breakdown table, when responses were recorded: client phases up
/// to the request written (up to the connection ready when the server sent `Server-Timing`),
/// the server's metrics (its parts, or its total when it lists no parts), the network and
/// client overhead (write + wait − server total) or the wait, then read.
pub(super) fn breakdown(r: &RunRecord) -> Option<Breakdown> {
    let s = &r.summary;
    let total = &s.latency.total;
    if total.count == 0 {
        return None;
    }
    let phases = breakdown_phases(r);
    // A phase every response went through is stacked; one that only some went through
    // (connect, with keep-alive) has no value at the typical request: in the table only.
    let every = s.requests.ok;
    let ns = |st: &Stats| [st.p50_us, st.p90_us, st.p99_us].map(|v| v.unwrap_or(0.0) * 1e3);
    let (whole, partial): (Vec<_>, Vec<_>) = phases.iter().partition(|(_, st)| st.count >= every);
    let stacked: Vec<Segment> = whole
        .iter()
        .map(|(name, st)| Segment {
            name: name.clone(),
            ns: ns(st),
        })
        .collect();
    let mut rows = phases.clone();
    let server_total = s.server_timing.get(&s.server_timing_total);
    if let (true, Some(st)) = (s.server_timing_responses > 0, server_total) {
        // In the table beside its parts; not stacked twice.
        rows.push((format!("server {} (its total)", s.server_timing_total), st));
    }
    rows.push(("total".into(), total));
    let partial: Vec<String> = partial.iter().map(|(n, _)| n.clone()).collect();
    Some(Breakdown {
        svg: plot::breakdown::svg(&stacked, ns(total)),
        rows: breakdown_rows(rows, every, total.p50_us.unwrap_or(0.0)),
        partial: if partial.is_empty() {
            "none here".into()
        } else {
            partial.join(", ")
        },
        labels: timing_labels(r),
    })
}

/// The breakdown's phases that recorded something, in the order of a request's life.
fn breakdown_phases(r: &RunRecord) -> Vec<(String, &Stats)> {
    let s = &r.summary;
    let mut phases: Vec<(String, &Stats)> = Vec::new();
    let open = open_loop(r);
    let timed = s.server_timing_responses > 0;
    for &p in super::tables::BEFORE_THE_WAIT {
        let stats = match p {
            Phase::Lag => Some(&s.latency.schedule_lag),
            _ => s.latency.phases.get(&p),
        };
        match stats {
            // With Server-Timing the write is in the network and client overhead.
            Some(_) if p == Phase::Write && timed => {}
            Some(st) if !matches!(p, Phase::Queue | Phase::Lag) || open => {
                phases.push((p.name().to_string(), st))
            }
            _ => {}
        }
    }
    if timed {
        let parts: Vec<&String> = s
            .server_timing_order
            .iter()
            .filter(|n| **n != s.server_timing_total)
            .collect();
        let stacked = if parts.is_empty() {
            vec![&s.server_timing_total]
        } else {
            parts
        };
        for name in stacked {
            if let Some(st) = s.server_timing.get(name) {
                phases.push((format!("server {name}"), st));
            }
        }
        phases.push((
            "network+client (write + wait − server total)".into(),
            &s.server_timing_overhead,
        ));
    } else if let Some(st) = s.latency.phases.get(&Phase::Wait) {
        phases.push(("wait".into(), st));
    }
    if let Some(st) = s.latency.phases.get(&Phase::Read) {
        phases.push(("read".into(), st));
    }
    phases.retain(|(_, st)| st.count > 0);
    phases
}

/// The breakdown table's rows: percentiles, count and the share of the p50 total
/// (`p50_total`, µs) of a phase that `every` response went through.
fn breakdown_rows(rows: Vec<(String, &Stats)>, every: u64, p50_total: f64) -> Vec<super::Row> {
    rows.into_iter()
        .map(|(name, st)| {
            let share = match st.p50_us {
                Some(v) if st.count >= every && p50_total > 0.0 => {
                    format!("{:.1}%", 100.0 * v / p50_total)
                }
                _ => "-".into(),
            };
            let cells = [st.p50_us, st.p90_us, st.p99_us, st.p999_us, st.p9999_us]
                .iter()
                .map(|v| cell(*v))
                .chain([st.count.to_string(), share])
                .collect();
            (name, cells)
        })
        .collect()
}

/// The Server-Timing labels (`level;desc="L1"`) in words: each description's share.
fn timing_labels(r: &RunRecord) -> Vec<String> {
    r.summary
        .server_timing_labels
        .iter()
        .map(|(name, descs)| {
            let all: u64 = descs.values().sum();
            let parts: Vec<String> = descs
                .iter()
                .map(|(d, n)| format!("{d} {:.1}%", 100.0 * *n as f64 / all.max(1) as f64))
                .collect();
            format!("Server-Timing {name}: {}", parts.join(", "))
        })
        .collect()
}

/// One log2 histogram per phase and server metric that recorded something.
pub(super) fn histograms(r: &RunRecord) -> Vec<String> {
    let open = open_loop(r);
    let others = ["total", "uncorrected", "first_event"];
    let mut names: Vec<(String, String)> = super::tables::CLIENT_PHASES
        .iter()
        .map(|p| p.name())
        .chain(others)
        .filter(|n| open || !matches!(*n, "queue" | "uncorrected" | "schedule_lag"))
        .map(|n| (n.to_string(), n.replace('_', " ")))
        .collect();
    for m in &r.summary.server_timing_order {
        names.push((format!("server_timing.{m}"), format!("server {m}")));
    }
    names
        .into_iter()
        .filter_map(|(key, title)| {
            let h = r.histogram(&key).ok().filter(|h| !h.is_empty())?;
            Some(plot::histogram::svg(&title, &Log2Hist::of_hist(&h)))
        })
        .collect()
}

pub(super) fn throughput(r: &RunRecord) -> Option<String> {
    if r.intervals.is_empty() {
        return None;
    }
    let rates: Vec<plot::throughput::Rate> = r
        .intervals
        .iter()
        .map(|i| plot::throughput::Rate {
            start_s: i.start_s,
            end_s: i.start_s + i.duration_s,
            completed_per_s: i.throughput_rps,
            errors_per_s: if i.duration_s > 0.0 {
                i.errors as f64 / i.duration_s
            } else {
                0.0
            },
        })
        .collect();
    let offered = r.summary.generator.offered_rps.or(r.config.rate_rps);
    let offered = if r.levels.is_empty() { offered } else { None };
    Some(plot::throughput::svg(&rates, offered))
}

pub(super) fn levels(r: &RunRecord) -> Option<Levels> {
    if r.levels.is_empty() {
        return None;
    }
    let boxes: Vec<BoxStats> = r
        .levels
        .iter()
        .filter_map(|l| {
            let h = crate::recorder::hist::decode(l.histograms.get("total")?).ok()?;
            BoxStats::of_hist(&l.label, &h)
        })
        .collect();
    let rows = r
        .levels
        .iter()
        .map(|l| {
            let t = &l.summary.latency.total;
            let offered = l.offered_rps.map_or("-".into(), |o| format!("{o:.0}"));
            let cells = vec![
                offered,
                format!("{:.1}", l.summary.throughput_rps),
                cell(t.p50_us),
                cell(t.p90_us),
                cell(t.p99_us),
                cell(t.p999_us),
                cell(t.max_us),
                l.summary.requests.errors.to_string(),
            ];
            (l.label.clone(), cells)
        })
        .collect();
    Some(Levels {
        svg: plot::boxes::svg(&boxes, "level"),
        rows,
    })
}

pub(super) fn bursts(r: &RunRecord) -> Option<Bursts> {
    let b = r.summary.bursts.as_ref()?;
    let boxes: Vec<BoxStats> = [
        ("burst_dispatch", "dispatch all (connect + write)"),
        ("burst_wait", "wait for all answers"),
    ]
    .iter()
    .filter_map(|(key, label)| BoxStats::of_hist(label, &r.histogram(key).ok()?))
    .collect();
    let us = |v: f64| human(v * 1e3);
    let rows = [
        ("dispatch all (connect + write)", &b.dispatch),
        ("wait for all answers", &b.wait),
    ]
    .iter()
    .map(|(name, s)| {
        (
            name.to_string(),
            vec![us(s.mean_us), us(s.p50_us), us(s.p95_us), us(s.max_us)],
        )
    })
    .collect();
    Some(Bursts {
        note: format!(
            "{} of {}, {} apart (one thread).",
            crate::util::units::counted(b.count, "burst"),
            crate::util::units::counted(b.size, "request"),
            human(b.interval_s * 1e9)
        ),
        svg: (!boxes.is_empty()).then(|| plot::boxes::svg(&boxes, "per burst")),
        rows,
    })
}

/// `--repeat N`: each run's total latency as a box, the spectrum with a curve per run, a row
/// per run, and the median and spread of each figure across the runs.
pub(super) fn repetitions(r: &RunRecord) -> Option<Repetitions> {
    if r.repetitions.is_empty() {
        return None;
    }
    let decode = |l: &crate::recorder::record::Level| {
        crate::recorder::hist::decode(l.histograms.get("total")?).ok()
    };
    let boxes: Vec<BoxStats> = r
        .repetitions
        .iter()
        .filter_map(|l| BoxStats::of_hist(&l.label, &decode(l)?))
        .collect();
    let curves: Vec<Curve> = r
        .repetitions
        .iter()
        .filter_map(|l| Curve::of_hist(&l.label, &decode(l)?))
        .collect();
    let figures = crate::report::REPETITION_FIGURES;
    let show = |i: usize, v: f64| {
        if i == 0 {
            format!("{v:.1}")
        } else {
            cell(Some(v))
        }
    };
    let rows = r
        .repetitions
        .iter()
        .map(|l| {
            let mut cells: Vec<String> = figures
                .iter()
                .enumerate()
                .map(|(i, (_, f))| f(&l.summary).map_or("-".into(), |v| show(i, v)))
                .collect();
            cells.push(l.summary.requests.errors.to_string());
            (l.label.clone(), cells)
        })
        .collect();
    let columns: Vec<Vec<f64>> = figures
        .iter()
        .map(|(_, f)| r.repetitions.iter().filter_map(|l| f(&l.summary)).collect())
        .collect();
    let stat = |pick: &dyn Fn(&[f64]) -> f64, percent: bool| -> Vec<String> {
        columns
            .iter()
            .enumerate()
            .map(|(i, col)| match (col.is_empty(), percent) {
                (true, _) => "-".into(),
                (false, true) => format!("{:.1}%", pick(col)),
                (false, false) => show(i, pick(col)),
            })
            .collect()
    };
    let median = |c: &[f64]| crate::analysis::significance::median(&mut c.to_vec());
    let min = |c: &[f64]| c.iter().cloned().fold(f64::MAX, f64::min);
    let max = |c: &[f64]| c.iter().cloned().fold(f64::MIN, f64::max);
    let range = |c: &[f64]| 100.0 * (max(c) - min(c)) / median(c).max(f64::MIN_POSITIVE);
    let spread = vec![
        ("median".to_string(), stat(&median, false)),
        ("min".to_string(), stat(&min, false)),
        ("max".to_string(), stat(&max, false)),
        ("range (of the median)".to_string(), stat(&range, true)),
    ];
    Some(Repetitions {
        boxes: plot::boxes::svg(&boxes, "run"),
        spectrum: plot::spectrum::svg(&curves),
        rows,
        spread,
    })
}
