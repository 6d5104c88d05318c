//! Whether records may be merged ([`check`]): each run given once, all of the same schema and
//! the same plan (everything but where and how a part ran: the first difference is named),
//! and the segments of one split complete or absent.

use crate::model::LoadKind;
use crate::recorder::record::RunRecord;
use crate::recorder::RecordError;

/// A duration in seconds in words.
fn secs(v: f64) -> String {
    crate::util::units::human_ns(v * 1e9)
}

/// The config fields that make two records the same plan, named and shown in words: everything
/// but where and how a part ran (segment, threads, command line, seed, CA file).
fn plan_key(r: &RunRecord) -> Vec<(&'static str, String)> {
    let c = &r.config;
    let closed = c.load_model == LoadKind::Closed;
    let none_because = if closed {
        "none (closed loop)"
    } else {
        "none (not one constant rate)"
    };
    let headers = if c.headers.is_empty() {
        "none".to_string()
    } else {
        c.headers
            .iter()
            .map(|(k, v)| format!("'{k}: {v}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let stages: Vec<&str> = r.stages.iter().map(|s| s.label.as_str()).collect();
    vec![
        ("the URL", c.url.clone()),
        ("the method", c.method.clone()),
        ("the headers", headers),
        ("the body", format!("{} bytes", c.body_bytes)),
        ("the connections", c.connections.to_string()),
        (
            "the rate",
            c.rate_rps
                .map_or(none_because.into(), |r| format!("{r} req/s")),
        ),
        (
            "the duration",
            c.duration_s.map_or("none (a request count)".into(), secs),
        ),
        (
            "the request count",
            c.requests
                .map_or("none (a duration)".into(), |n| n.to_string()),
        ),
        ("the warm-up", secs(c.warmup_s)),
        ("the timeout", secs(c.timeout_s)),
        ("the interval", secs(c.interval_s)),
        ("the protocol", c.protocol.to_string()),
        ("the streams per connection", c.streams.to_string()),
        ("the load model", format!("{} loop", c.load_model)),
        (
            "the arrivals",
            c.arrival.clone().unwrap_or_else(|| none_because.into()),
        ),
        ("the connection policy", c.connection_policy.clone()),
        (
            "the stream mode (--stream)",
            c.stream
                .clone()
                .unwrap_or_else(|| "none (SSE by its content type)".into()),
        ),
        (
            "the sweep",
            c.sweep.as_ref().map_or("none".into(), |s| {
                let levels: Vec<String> = s.levels.iter().map(|v| v.to_string()).collect();
                format!("{} {}", s.of, levels.join(", "))
            }),
        ),
        ("the repeat count", c.repeat.to_string()),
        (
            "the workload",
            c.workload
                .clone()
                .unwrap_or_else(|| "none (one request)".into()),
        ),
        (
            "the stages",
            if stages.is_empty() {
                "none".into()
            } else {
                stages.join(", ")
            },
        ),
    ]
}

/// Parses `i/n`.
fn segment_of(text: &str) -> Option<(u64, u64)> {
    let (i, n) = text.split_once('/')?;
    Some((i.parse().ok()?, n.parse().ok()?))
}

/// The run ids a record stands for: its own and, merged, its parts'.
pub(super) fn ids(r: &RunRecord) -> impl Iterator<Item = &str> {
    r.run_id.iter().chain(&r.merged_run_ids).map(String::as_str)
}

/// Refuses a run given twice: the same record (its run id, or the same content for records
/// without one), or a part of a merged record given with it.
fn check_once(records: &[RunRecord], names: &[String]) -> Result<(), RecordError> {
    for (j, (b, bn)) in records.iter().zip(names).enumerate() {
        for (a, an) in records[..j].iter().zip(names) {
            let same_id = match (&a.run_id, &b.run_id) {
                (Some(x), Some(y)) => x == y,
                (None, None) => a == b,
                _ => false,
            };
            if same_id {
                let why = a
                    .run_id
                    .as_deref()
                    .map_or("identical content".into(), |id| format!("run id {id}"));
                return Err(RecordError::SameRecord {
                    a: an.clone(),
                    b: bn.clone(),
                    why,
                });
            }
            let shared = ids(a).find(|x| ids(b).any(|y| y == *x));
            if let Some(id) = shared {
                return Err(RecordError::SharedRun {
                    a: an.clone(),
                    b: bn.clone(),
                    id: id.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Checks that `records` are parts of one plan; returns notes on what is missing.
pub(super) fn check(records: &[RunRecord], names: &[String]) -> Result<Vec<String>, RecordError> {
    check_once(records, names)?;
    let first = &records[0];
    let key = plan_key(first);
    for (r, name) in records.iter().zip(names).skip(1) {
        if r.schema_version != first.schema_version {
            return Err(RecordError::SchemaDiffers {
                name: name.clone(),
                version: r.schema_version,
                first: names[0].clone(),
                first_version: first.schema_version,
            });
        }
        for ((field, a), (_, b)) in key.iter().zip(plan_key(r)) {
            if *a != b {
                return Err(RecordError::PlanDiffers {
                    field,
                    a: a.clone(),
                    first: names[0].clone(),
                    b,
                    name: name.clone(),
                });
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
        // The file that holds each segment index.
        let mut seen: Vec<Option<&String>> = vec![None; n as usize];
        for (s, name) in segments.iter().flatten().zip(names) {
            if s.1 != n {
                return Err(RecordError::SegmentCount {
                    name: name.clone(),
                    i: s.0,
                    n: s.1,
                    first: names[0].clone(),
                    first_n: n,
                });
            }
            let Some(slot) = seen.get_mut((s.0 as usize).wrapping_sub(1)) else {
                return Err(RecordError::SegmentIndex {
                    name: name.clone(),
                    i: s.0,
                    n,
                });
            };
            if let Some(other) = slot {
                return Err(RecordError::SegmentTwice {
                    i: s.0,
                    n,
                    other: other.to_string(),
                    name: name.clone(),
                });
            }
            *slot = Some(name);
        }
        let missing: Vec<String> = seen
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(i, _)| format!("{}/{n}", i + 1))
            .collect();
        if !missing.is_empty() {
            notes.push(format!(
                "segments {} are missing: the merged figures cover part of the plan",
                missing.join(", ")
            ));
        }
    } else if segments.iter().any(Option::is_some) {
        return Err(RecordError::MixedSegments);
    }
    Ok(notes)
}
