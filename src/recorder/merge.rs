//! Exact merges of RunRecords (`reqlife merge`): the records of the segments of one plan
//! (`--segment i/n`, run by several generators at once), or several runs of the same plan.
//! Histograms are added bucket by bucket (HdrHistogram merges are exact), counters summed,
//! every statistic recomputed from the merged histograms; interval series are merged by
//! wall-clock time (each record's recording start plus the interval's offset, rounded to the
//! widest interval of the parts: a long run's are wider), so generators started together
//! (`--start-at`) line up. Stages, sweep levels and
//! repetitions merge element by element. Warnings are kept per part, and the merged figures
//! get their own. Records of different plans are refused, naming the first difference.

use super::hist::{self, IntervalStats, Stats};
use super::record::{
    warnings_of, BurstStats, Bursts, Bytes, Connections, Generator, Interval, IntervalGenerator,
    Latency, Level, RequestFigures, Requests, RunRecord, Stage, Summary,
};
use crate::model::Phase;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Decoded histograms by name.
type Hists = BTreeMap<String, Histogram<u64>>;

/// Adds the encoded histograms of `maps`, name by name.
fn add_maps<'a>(maps: impl Iterator<Item = &'a BTreeMap<String, String>>) -> Result<Hists, String> {
    let mut out: Hists = BTreeMap::new();
    for m in maps {
        for (name, text) in m {
            let h = hist::decode(text).map_err(|e| format!("histogram '{name}': {e}"))?;
            let into = out.entry(name.clone()).or_insert_with(hist::new_hist);
            into.add(&h)
                .map_err(|e| format!("histogram '{name}' cannot be added: {e:?}"))?;
        }
    }
    Ok(out)
}

fn encode_all(h: &Hists) -> BTreeMap<String, String> {
    h.iter()
        .map(|(k, v)| (k.clone(), hist::encode(v)))
        .collect()
}

fn stats(h: &Hists, name: &str) -> Stats {
    h.get(name).map(Stats::of).unwrap_or_default()
}

/// The latency statistics of merged phase histograms.
fn latency(h: &Hists) -> Latency {
    Latency {
        total: stats(h, Phase::Total.name()),
        uncorrected: stats(h, Phase::Uncorrected.name()),
        phases: Phase::CLIENT
            .iter()
            .map(|p| (p.name().to_string(), stats(h, p.name())))
            .collect(),
        schedule_lag: stats(h, Phase::Lag.name()),
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

fn round3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

/// The summary of parts that ran side by side (segments) over `duration_s`, with the merged
/// histograms `h` (named as in a record's `histograms`).
fn summary(parts: &[&Summary], h: &Hists, duration_s: f64) -> Summary {
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
    let bursts = first.bursts.as_ref().map(|b| {
        let of = |name: &str| match h.get(name) {
            Some(h) if !h.is_empty() => BurstStats {
                mean_us: round3(h.mean() / 1000.0),
                p50_us: h.value_at_quantile(0.5) as f64 / 1000.0,
                p95_us: h.value_at_quantile(0.95) as f64 / 1000.0,
                max_us: h.max() as f64 / 1000.0,
            },
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
    });
    let offered: Vec<f64> = parts
        .iter()
        .filter_map(|s| s.generator.offered_rps)
        .collect();
    // Parts side by side share the window: their sending rates add up.
    let sent: Vec<f64> = parts.iter().filter_map(|s| s.generator.sent_rps).collect();
    Summary {
        requests: Requests {
            total: sum(&|s| s.requests.total),
            ok: sum(&|s| s.requests.ok),
            errors: sum(&|s| s.requests.errors),
            non_2xx_3xx: sum(&|s| s.requests.non_2xx_3xx),
        },
        duration_s,
        throughput_rps: round3(per_s(sum(&|s| s.requests.total) - sum(&|s| s.end.drained))),
        end: super::record::EndOfRun {
            drained: sum(&|s| s.end.drained),
            drain_timeouts: sum(&|s| s.end.drain_timeouts),
            in_flight: sum(&|s| s.end.in_flight),
            not_sent: sum(&|s| s.end.not_sent),
            drain_s: parts.iter().map(|s| s.end.drain_s).fold(0.0, f64::max),
        },
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
        generator: Generator {
            offered_rps: (offered.len() == parts.len()).then(|| offered.iter().sum()),
            sent_rps: (sent.len() == parts.len()).then(|| round3(sent.iter().sum())),
            thread_busy: parts
                .iter()
                .flat_map(|s| s.generator.thread_busy.iter().copied())
                .collect(),
            interval_snapshot_bytes: sum(&|s| s.generator.interval_snapshot_bytes),
        },
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

/// The named requests' figures of the parts, from the merged `request.<name>.<phase>`
/// histograms.
fn by_request(parts: &[&Summary], h: &Hists, duration_s: f64) -> BTreeMap<String, RequestFigures> {
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
        let prefix = format!("request.{name}.");
        let own: Hists = h
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_string(), v.clone())))
            .collect();
        f.latency = latency(&own);
        f.throughput_rps = round3(if duration_s > 0.0 {
            f.requests.total as f64 / duration_s
        } else {
            0.0
        });
    }
    out
}

/// Merges interval series by wall-clock time: `series[i]` started recording `offsets_s[i]`
/// seconds after the earliest part. The step is the widest entry of any part (a long run's
/// series is wider than `interval_s`, by a power of two); an interval lands in slot
/// `floor((offset + start_s) / step + ½ interval_s / step)`, so with equal widths it is
/// `round((offset + start_s) / interval_s)`, and narrower entries add up in the wider slot.
fn intervals(
    series: &[&[Interval]],
    offsets_s: &[f64],
    interval_s: f64,
) -> Result<Vec<Interval>, String> {
    let widest = series
        .iter()
        .flat_map(|s| s.iter())
        .map(|i| i.duration_s)
        .fold(interval_s, f64::max);
    let step = interval_s * (widest / interval_s - 1e-6).max(1.0).log2().ceil().exp2();
    // (slot, extent of the part in the slot in seconds, the part)
    let mut slots: BTreeMap<u64, Vec<(f64, &Interval)>> = BTreeMap::new();
    for (s, &offset) in series.iter().zip(offsets_s) {
        for i in s.iter() {
            let at = offset + i.start_s;
            let slot = (at / step + 0.5 * interval_s / step).floor().max(0.0) as u64;
            let within = ((at / interval_s).round() * interval_s - slot as f64 * step).max(0.0);
            slots
                .entry(slot)
                .or_default()
                .push((within + i.duration_s, i));
        }
    }
    let Some(&last) = slots.keys().next_back() else {
        return Ok(Vec::new());
    };
    (0..=last)
        .map(|slot| {
            let parts = slots.remove(&slot).unwrap_or_default();
            let duration_s = parts
                .iter()
                .map(|(extent, _)| *extent)
                .fold(0.0, f64::max)
                .min(step);
            let duration_s = if parts.is_empty() { step } else { duration_s };
            let parts: Vec<&Interval> = parts.into_iter().map(|(_, i)| i).collect();
            merged_interval(&parts, slot as f64 * step, duration_s)
        })
        .collect()
}

/// Intervals of several generators in one slot, added exactly.
fn merged_interval(parts: &[&Interval], start_s: f64, duration_s: f64) -> Result<Interval, String> {
    let h = add_maps(parts.iter().map(|i| &i.histograms))?;
    let requests: u64 = parts.iter().map(|i| i.requests).sum();
    let mut latency = BTreeMap::new();
    let mut server_timing = BTreeMap::new();
    for (name, hist) in &h {
        match name.strip_prefix("server_timing.") {
            Some(metric) => server_timing.insert(metric.to_string(), IntervalStats::of(hist)),
            None => latency.insert(name.clone(), IntervalStats::of(hist)),
        };
    }
    let busy_max = parts
        .iter()
        .filter_map(|i| i.generator.as_ref()?.busy_max)
        .reduce(f64::max);
    Ok(Interval {
        start_s: (start_s * 1e6).round() / 1e6,
        duration_s,
        requests,
        ok: parts.iter().map(|i| i.ok).sum(),
        errors: parts.iter().map(|i| i.errors).sum(),
        throughput_rps: round3(if duration_s > 0.0 {
            requests as f64 / duration_s
        } else {
            0.0
        }),
        bytes_read: parts.iter().map(|i| i.bytes_read).sum(),
        latency,
        server_timing,
        histograms: encode_all(&h),
        generator: IntervalGenerator::of(h.get(Phase::Lag.name()), busy_max),
    })
}

/// Merges the stages of parts that ran the same stages side by side.
fn stages(parts: &[&[Stage]]) -> Result<Vec<Stage>, String> {
    let n = parts.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let same: Vec<&Stage> = parts.iter().filter_map(|s| s.get(k)).collect();
            let first = same[0];
            let h = add_maps(same.iter().map(|s| &s.histograms))?;
            let total: u64 = same.iter().map(|s| s.requests.total).sum();
            let offered: Vec<f64> = same.iter().filter_map(|s| s.offered_rps).collect();
            Ok(Stage {
                label: first.label.clone(),
                start_s: first.start_s,
                duration_s: first.duration_s,
                requests: Requests {
                    total,
                    ok: same.iter().map(|s| s.requests.ok).sum(),
                    errors: same.iter().map(|s| s.requests.errors).sum(),
                    non_2xx_3xx: same.iter().map(|s| s.requests.non_2xx_3xx).sum(),
                },
                throughput_rps: round3(total as f64 / first.duration_s.max(f64::MIN_POSITIVE)),
                offered_rps: (offered.len() == same.len()).then(|| offered.iter().sum()),
                latency: latency(&h),
                histograms: encode_all(&h),
            })
        })
        .collect()
}

/// The config fields that make two records the same plan, with their names: everything but
/// where and how a part ran (segment, threads, command line, seed, CA file).
fn plan_key(r: &RunRecord) -> Vec<(&'static str, String)> {
    let c = &r.config;
    vec![
        ("url", c.url.clone()),
        ("method", c.method.clone()),
        ("headers", format!("{:?}", c.headers)),
        ("body_bytes", c.body_bytes.to_string()),
        ("connections", c.connections.to_string()),
        ("duration_s", format!("{:?}", c.duration_s)),
        ("requests", format!("{:?}", c.requests)),
        ("warmup_s", c.warmup_s.to_string()),
        ("timeout_s", c.timeout_s.to_string()),
        ("interval_s", c.interval_s.to_string()),
        ("protocol", c.protocol.clone()),
        ("streams", c.streams.to_string()),
        ("load_model", c.load_model.clone()),
        ("rate_rps", format!("{:?}", c.rate_rps)),
        ("arrival", format!("{:?}", c.arrival)),
        ("connection_policy", c.connection_policy.clone()),
        ("sweep", format!("{:?}", c.sweep)),
        ("repeat", c.repeat.to_string()),
        ("workload", format!("{:?}", c.workload)),
        (
            "stages",
            format!(
                "{:?}",
                r.stages.iter().map(|s| &s.label).collect::<Vec<_>>()
            ),
        ),
    ]
}

/// Parses `i/n`.
fn segment_of(text: &str) -> Option<(u64, u64)> {
    let (i, n) = text.split_once('/')?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// Checks that `records` are parts of one plan; returns notes on what is missing.
fn check(records: &[RunRecord], names: &[String]) -> Result<Vec<String>, String> {
    let first = &records[0];
    let key = plan_key(first);
    for (r, name) in records.iter().zip(names).skip(1) {
        if r.schema_version != first.schema_version {
            return Err(format!(
                "{name} has schema_version {}, {} has {}: records of different reqlife versions",
                r.schema_version, names[0], first.schema_version
            ));
        }
        for ((field, a), (_, b)) in key.iter().zip(plan_key(r)) {
            if *a != b {
                return Err(format!(
                    "{name} is not the same plan as {}: {field} is {b} there and {a} here; \
                     merge only the records of one plan (its segments, or its repeated runs)",
                    names[0]
                ));
            }
        }
    }
    let segments: Vec<Option<(u64, u64)>> = records
        .iter()
        .map(|r| r.config.segment.as_deref().and_then(segment_of))
        .collect();
    let mut notes = Vec::new();
    if segments.iter().all(Option::is_some) {
        let n = segments[0].map_or(1, |s| s.1);
        let mut seen = vec![false; n as usize];
        for (s, name) in segments.iter().flatten().zip(names) {
            if s.1 != n {
                return Err(format!(
                    "{name} is segment {}/{} but {} is one of {n}: the segments of one plan share n",
                    s.0, s.1, names[0]
                ));
            }
            let slot = &mut seen[(s.0 - 1) as usize];
            if *slot {
                return Err(format!(
                    "segment {}/{n} is given twice ({name}): each segment once",
                    s.0
                ));
            }
            *slot = true;
        }
        let missing: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, s)| !**s)
            .map(|(i, _)| format!("{}/{n}", i + 1))
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "segments {} are missing: the merged figures cover part of the plan",
                missing.join(", ")
            ));
        }
    } else if segments.iter().any(Option::is_some) {
        return Err(
            "some records are segments of a plan (--segment) and some are not: merge one kind"
                .into(),
        );
    }
    Ok(notes)
}

/// Seconds from the earliest recording start to each record's, from their RFC 3339 times.
fn start_offsets(records: &[RunRecord]) -> Vec<f64> {
    let secs: Vec<Option<f64>> = records
        .iter()
        .map(|r| {
            time::OffsetDateTime::parse(
                &r.environment.start_time,
                &time::format_description::well_known::Rfc3339,
            )
            .ok()
            .map(|t| t.unix_timestamp_nanos() as f64 / 1e9)
        })
        .collect();
    let min = secs.iter().flatten().cloned().fold(f64::MAX, f64::min);
    secs.iter().map(|s| s.map_or(0.0, |s| s - min)).collect()
}

/// Merges the levels (or repetitions) of the parts, element by element.
fn levels(parts: &[&[Level]], offsets: &[f64], interval_s: f64) -> Result<Vec<Level>, String> {
    let n = parts.iter().map(|l| l.len()).max().unwrap_or(0);
    (0..n)
        .map(|k| {
            let (same, offs): (Vec<&Level>, Vec<f64>) = parts
                .iter()
                .zip(offsets)
                .filter_map(|(l, o)| Some((l.get(k)?, *o)))
                .unzip();
            let h = add_maps(same.iter().map(|l| &l.histograms))?;
            let duration_s = same
                .iter()
                .map(|l| l.summary.duration_s)
                .fold(0.0, f64::max);
            let sums: Vec<&Summary> = same.iter().map(|l| &l.summary).collect();
            let series: Vec<&[Interval]> = same.iter().map(|l| &l.intervals[..]).collect();
            let first = same[0];
            Ok(Level {
                label: first.label.clone(),
                connections: same.iter().map(|l| l.connections).sum(),
                offered_rps: first
                    .offered_rps
                    .map(|_| same.iter().filter_map(|l| l.offered_rps).sum()),
                stop_reason: first.stop_reason.clone(),
                summary: summary(&sums, &h, duration_s),
                intervals: intervals(&series, &offs, interval_s)?,
                histograms: encode_all(&h),
            })
        })
        .collect()
}

/// Merges `records` (named `names` in messages) into one record of the whole plan.
pub fn merge(records: Vec<RunRecord>, names: &[String]) -> Result<RunRecord, String> {
    if records.is_empty() {
        return Err("nothing to merge: give at least one record".into());
    }
    let notes = check(&records, names)?;
    let offsets = start_offsets(&records);
    let interval_s = records[0].config.interval_s;
    let h = add_maps(records.iter().map(|r| &r.histograms))?;
    let duration_s = records
        .iter()
        .map(|r| r.summary.duration_s)
        .fold(0.0, f64::max);
    let sums: Vec<&Summary> = records.iter().map(|r| &r.summary).collect();
    let series: Vec<&[Interval]> = records.iter().map(|r| &r.intervals[..]).collect();
    let stage_parts: Vec<&[Stage]> = records.iter().map(|r| &r.stages[..]).collect();
    let level_parts: Vec<&[Level]> = records.iter().map(|r| &r.levels[..]).collect();
    let rep_parts: Vec<&[Level]> = records.iter().map(|r| &r.repetitions[..]).collect();
    let first = &records[0];
    let mut out = RunRecord {
        schema_version: first.schema_version,
        tool: first.tool.clone(),
        config: first.config.clone(),
        environment: first.environment.clone(),
        stop_reason: first.stop_reason.clone(),
        interrupted: records.iter().any(|r| r.interrupted),
        summary: summary(&sums, &h, duration_s),
        intervals: intervals(&series, &offsets, interval_s)?,
        stages: stages(&stage_parts)?,
        levels: levels(&level_parts, &offsets, interval_s)?,
        repetitions: levels(&rep_parts, &offsets, interval_s)?,
        histograms: encode_all(&h),
        first_errors: BTreeMap::new(),
        // The parts' raw samples, each shifted to the merged clock, drawn uniformly.
        samples: super::record::Samples::concat(
            &records
                .iter()
                .zip(&offsets)
                .filter_map(|(r, o)| Some((r.samples.as_ref()?, (o * 1e6) as u64)))
                .collect::<Vec<_>>(),
            first.config.seed,
        ),
        knee: None,
    };
    for r in &records {
        for (k, v) in &r.first_errors {
            out.first_errors
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
    }
    out.config.segment = None;
    out.config.threads = records.iter().map(|r| r.config.threads).sum();
    let mut hosts: Vec<&str> = Vec::new();
    for r in &records {
        if !hosts.contains(&r.environment.hostname.as_str()) {
            hosts.push(&r.environment.hostname);
        }
    }
    out.environment.hostname = hosts.join(",");
    out.environment.cores = records.iter().map(|r| r.environment.cores).sum();
    if let Some(earliest) = offsets
        .iter()
        .zip(&records)
        .min_by(|a, b| a.0.total_cmp(b.0))
        .map(|(_, r)| r.environment.start_time.clone())
    {
        out.environment.start_time = earliest;
    }
    // The merged figures' own warnings, then each part's, named by its part.
    let mut warnings = notes;
    warnings.extend(warnings_of(&out));
    for (r, name) in records.iter().zip(names) {
        let part = r
            .config
            .segment
            .as_ref()
            .map_or(name.clone(), |s| format!("segment {s}"));
        warnings.extend(r.summary.warnings.iter().map(|w| format!("{part}: {w}")));
    }
    out.summary.warnings = warnings;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval of `requests` at `start_s` lasting `duration_s`, with no histograms.
    fn iv(start_s: f64, duration_s: f64, requests: u64) -> Interval {
        Interval {
            start_s,
            duration_s,
            requests,
            ok: requests,
            errors: 0,
            throughput_rps: 0.0,
            bytes_read: 0,
            latency: BTreeMap::new(),
            server_timing: BTreeMap::new(),
            histograms: BTreeMap::new(),
            generator: None,
        }
    }

    #[test]
    fn narrow_intervals_add_up_in_the_wider_slots() {
        // A long run's series (20 ms wide, the last one partial) and a short run's (10 ms).
        let wide = [iv(0.0, 0.02, 2), iv(0.02, 0.02, 4), iv(0.04, 0.01, 1)];
        let narrow: Vec<Interval> = (0..5).map(|i| iv(i as f64 * 0.01, 0.01, 1)).collect();
        let merged = intervals(&[&wide, &narrow], &[0.0, 0.0], 0.01).unwrap();
        let got: Vec<(f64, f64, u64)> = merged
            .iter()
            .map(|i| (i.start_s, i.duration_s, i.requests))
            .collect();
        assert_eq!(
            got,
            vec![(0.0, 0.02, 4), (0.02, 0.02, 6), (0.04, 0.01, 2)],
            "{got:?}"
        );
    }

    #[test]
    fn equal_widths_merge_by_rounded_offset_as_before() {
        let a = [iv(0.0, 1.0, 1), iv(1.0, 1.0, 2)];
        let b = [iv(0.0, 1.0, 10), iv(1.0, 0.5, 20)];
        // b started 1.1 s after a: its intervals land in slots 1 and 2.
        let merged = intervals(&[&a, &b], &[0.0, 1.1], 1.0).unwrap();
        let got: Vec<(f64, f64, u64)> = merged
            .iter()
            .map(|i| (i.start_s, i.duration_s, i.requests))
            .collect();
        assert_eq!(got, vec![(0.0, 1.0, 1), (1.0, 1.0, 12), (2.0, 0.5, 20)]);
    }
}
