//! Exact merges of RunRecords (`reqlife merge`): the records of the segments of one plan
//! (`--segment i/n`, run by several generators at once), or several runs of the same plan.
//! Histograms are added bucket by bucket (HdrHistogram merges are exact), counters summed,
//! every statistic recomputed from the merged histograms; interval series are merged by
//! wall-clock time (each record's recording start plus the interval's offset, rounded to the
//! widest interval of the parts: a long run's are wider), so generators started together
//! (`--start-at`) line up. Stages, sweep levels and
//! repetitions merge element by element. Warnings are kept per part, and the merged figures
//! get their own. Records of different plans are refused, naming the first difference.

mod compatible;

use super::hist;
use super::record::{warnings_of, Interval, Level, Requests, RunRecord, Stage, Summary};
use super::summary::{latency, round3, summarize};
use super::RecordError;
use compatible::{check, ids};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Display;

/// Decoded histograms by name (or by phase: a stage's).
type Hists<K = String> = BTreeMap<K, Histogram<u64>>;

/// Adds the encoded histograms of `maps`, key by key.
fn add_maps<'a, K: Ord + Clone + Display + 'a>(
    maps: impl Iterator<Item = &'a BTreeMap<K, String>>,
) -> Result<Hists<K>, RecordError> {
    let mut out: Hists<K> = BTreeMap::new();
    for m in maps {
        for (key, text) in m {
            let h = hist::decode(text).map_err(|e| RecordError::InHistogram {
                name: key.to_string(),
                source: Box::new(e),
            })?;
            let into = out.entry(key.clone()).or_insert_with(hist::new_hist);
            into.add(&h).map_err(|e| RecordError::CannotAdd {
                name: key.to_string(),
                reason: format!("{e:?}"),
            })?;
        }
    }
    Ok(out)
}

fn encode_all<K: Ord + Clone>(h: &Hists<K>) -> BTreeMap<K, String> {
    h.iter()
        .map(|(k, v)| (k.clone(), hist::encode(v)))
        .collect()
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
) -> Result<Vec<Interval>, RecordError> {
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

/// The slow requests of several records (each at its offset, s), near the percentiles of the
/// merged `total`.
fn merged_slow(
    records: &[RunRecord],
    offsets: &[f64],
    total: Option<&Histogram<u64>>,
) -> Option<super::record::slow::SlowRequests> {
    let parts: Vec<_> = (records.iter().zip(offsets))
        .filter_map(|(r, o)| Some((r.slow_requests.as_ref()?, *o)))
        .collect();
    super::record::slow::SlowRequests::merge(&parts, total)
}

/// Intervals of several generators in one slot, added exactly.
fn merged_interval(
    parts: &[&Interval],
    start_s: f64,
    duration_s: f64,
) -> Result<Interval, RecordError> {
    let h = add_maps(parts.iter().map(|i| &i.histograms))?;
    let requests: u64 = parts.iter().map(|i| i.requests).sum();
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
        latency: BTreeMap::new(),
        server_timing: BTreeMap::new(),
        server_probes: BTreeMap::new(),
        histograms: BTreeMap::new(),
        generator: None,
        slowest: slowest_of_parts(parts),
    }
    .with_hists(&h, busy_max))
}

/// The slowest requests of several generators' intervals: the [`crate::recorder::exemplar::KEEP`]
/// slowest of theirs.
fn slowest_of_parts(parts: &[&Interval]) -> Vec<super::record::slow::SlowRequest> {
    let mut all: Vec<_> = parts
        .iter()
        .flat_map(|i| i.slowest.iter().cloned())
        .collect();
    all.sort_by_key(|r| std::cmp::Reverse(r.total_ns()));
    all.truncate(crate::recorder::exemplar::KEEP);
    all
}

/// Merges the stages of parts that ran the same stages side by side.
fn stages(parts: &[&[Stage]]) -> Result<Vec<Stage>, RecordError> {
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

/// A warning when the parts did not all run at the same time: the merge adds their rates as
/// if they ran side by side. Names the part that started last and the one that ended first.
pub fn overlap_warning(records: &[RunRecord], names: &[String]) -> Option<String> {
    if records.len() < 2 || records.iter().any(|r| parse_time(r).is_none()) {
        return None;
    }
    let offsets = start_offsets(records);
    let spans: Vec<(f64, f64)> = offsets
        .iter()
        .zip(records)
        .map(|(o, r)| (*o, o + r.summary.duration_s))
        .collect();
    let (late, &(start, _)) = spans
        .iter()
        .enumerate()
        .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0))?;
    let (early, &(_, end)) = spans
        .iter()
        .enumerate()
        .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?;
    (start > end).then(|| {
        format!(
            "the parts did not overlap in time: {} started {:.3}s after {} ended; the merged \
             rates add the parts up as if they ran side by side",
            names[late],
            start - end,
            names[early]
        )
    })
}

fn parse_time(r: &RunRecord) -> Option<f64> {
    time::OffsetDateTime::parse(
        &r.environment.start_time,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()
    .map(|t| t.unix_timestamp_nanos() as f64 / 1e9)
}

/// Seconds from the earliest recording start to each record's, from their RFC 3339 times.
fn start_offsets(records: &[RunRecord]) -> Vec<f64> {
    let secs: Vec<Option<f64>> = records.iter().map(parse_time).collect();
    let min = secs.iter().flatten().cloned().fold(f64::MAX, f64::min);
    secs.iter().map(|s| s.map_or(0.0, |s| s - min)).collect()
}

/// Merges the levels (or repetitions) of the parts, element by element.
fn levels(parts: &[&[Level]], offsets: &[f64], interval_s: f64) -> Result<Vec<Level>, RecordError> {
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
                summary: summarize(&sums, &h, duration_s),
                intervals: intervals(&series, &offs, interval_s)?,
                histograms: encode_all(&h),
                // Judged again on the merged figures, as the whole is.
                validity: None,
            })
        })
        .collect()
}

/// The run ids of the parts (a merged part's own parts), each once, in order.
fn merged_ids(records: &[RunRecord]) -> Vec<String> {
    let mut merged_ids: Vec<String> = Vec::new();
    for r in records {
        for id in ids(r) {
            if !merged_ids.iter().any(|m| m == id) {
                merged_ids.push(id.to_string());
            }
        }
    }
    merged_ids
}

/// What the merged record takes of every part: the first error of each kind, the threads,
/// the hosts and their cores, and the earliest start; it is of no one segment.
fn of_the_parts(out: &mut RunRecord, records: &[RunRecord], offsets: &[f64]) {
    for r in records {
        for (k, v) in &r.first_errors {
            out.first_errors
                .entry(k.clone())
                .or_insert_with(|| v.clone());
        }
    }
    out.config.segment = None;
    out.config.threads = records.iter().map(|r| r.config.threads).sum();
    let mut hosts: Vec<&str> = Vec::new();
    for r in records {
        if !hosts.contains(&r.environment.hostname.as_str()) {
            hosts.push(&r.environment.hostname);
        }
    }
    out.environment.hostname = hosts.join(",");
    out.environment.cores = records.iter().map(|r| r.environment.cores).sum();
    if let Some(earliest) = offsets
        .iter()
        .zip(records)
        .min_by(|a, b| a.0.total_cmp(b.0))
        .map(|(_, r)| r.environment.start_time.clone())
    {
        out.environment.start_time = earliest;
    }
}

/// Merges `records` (named `names` in messages) into one record of the whole plan.
pub fn merge(records: Vec<RunRecord>, names: &[String]) -> Result<RunRecord, RecordError> {
    if records.is_empty() {
        return Err(RecordError::NothingToMerge);
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
        run_id: Some(super::record::new_run_id()),
        merged_run_ids: merged_ids(&records),
        tool: first.tool.clone(),
        config: first.config.clone(),
        environment: first.environment.clone(),
        stop_reason: first.stop_reason.clone(),
        interrupted: records.iter().any(|r| r.interrupted),
        summary: summarize(&sums, &h, duration_s),
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
        slow_requests: merged_slow(&records, &offsets, h.get("total")),
        request_log: None,
        // The parts' sends are timed by clocks of their own: no one sample of them.
        arrivals: None,
        validity: None,
    };
    of_the_parts(&mut out, &records, &offsets);
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
mod tests;
