//! `run --segment K/N --coordinator HOST:PORT`: the segments of one plan start together and
//! are merged where they started. Segment 1 is the coordinator: it listens on the port
//! ([`lead`]); every other segment reaches it ([`follow`]), measures its clock's offset, and
//! says it is ready once its run is prepared. When all N are ready, each is given one start
//! (a time on the coordinator's clock, shifted to its own by its offset); at its end each
//! sends its record over the same connection ([`wire`]), and segment 1 merges them exactly
//! with its own, checks the thresholds, writes the merged record and report, and gives every
//! segment the verdict as its exit code. No shared volume: the records travel over the
//! connection. A segment whose connection ends before its record is named missing, and the
//! run fails: never a silent part of a plan.

mod follow;
mod lead;
mod wire;

use super::failure::Failure;
use crate::cli::command::{OutputPlan, Together as Plan};
use crate::recorder::record::{GeneratorStart, RunRecord};
use crate::util::exit::{EXIT_FAILURE, EXIT_OK};
use crate::util::units::{human_ns, StartAt};
use std::time::Duration;

pub use follow::Follow;
pub use lead::Lead;

/// How far ahead of the moment all are ready the start is given (more where the clock
/// exchanges were slow).
const LEAD: Duration = Duration::from_millis(300);

/// A segment's record as it came to the coordinator.
pub struct Joined {
    /// 1-based.
    pub index: u64,
    /// Its clock's offset (the coordinator's minus its own) and the exchange's delay, ns.
    pub offset: i128,
    pub delay: i128,
    pub record: RunRecord,
}

/// This process's side of the plan's coordination.
pub enum Together {
    Lead(Lead, Plan),
    Follow(Follow, Plan),
}

impl Together {
    /// Before the run, once it is prepared: segment 1 listens (a port that cannot be had is
    /// refused now), any other reaches it and says it is ready.
    pub fn open(plan: &Plan, stop: &impl Fn() -> bool) -> Result<Together, Failure> {
        let (index, count) = (plan.segment.index + 1, plan.segment.count);
        if index == 1 {
            let listener = std::net::TcpListener::bind(&plan.listen).map_err(|e| {
                Failure::Failed(format!(
                    "--coordinator: segment 1 cannot listen on {}: {e}",
                    plan.listen
                ))
            })?;
            return Ok(Together::Lead(Lead::listen(listener, count), plan.clone()));
        }
        let follow = Follow::join(&plan.addr, (index, count), plan.timeout, stop)
            .map_err(|e| Failure::Failed(format!("segment {index}/{count}: {e}")))?;
        Ok(Together::Follow(follow, plan.clone()))
    }

    /// The start every segment is given, once all are ready: when to start on this
    /// machine's clock.
    pub fn start(&mut self, stop: &impl Fn() -> bool, quiet: bool) -> Result<StartAt, Failure> {
        let at = match self {
            Together::Lead(lead, plan) => {
                if !quiet {
                    eprintln!(
                        "reqlife: segment 1/{} waits on {} for the other segments",
                        plan.segment.count, plan.listen
                    );
                }
                lead.barrier(plan.timeout, LEAD, stop)
                    .map(wire::time_of)
                    .map_err(|e| format!("segment 1/{}: {e}", plan.segment.count))
            }
            Together::Follow(follow, plan) => follow.start(stop).map_err(|e| {
                format!(
                    "segment {}/{}: {e}",
                    plan.segment.index + 1,
                    plan.segment.count
                )
            }),
        };
        at.map(StartAt::At).map_err(Failure::Failed)
    }
}

impl Together {
    /// After the run, with this segment's `record` (annotated, its thresholds not checked):
    /// segment 1 takes the others' records, merges them with its own, checks the thresholds
    /// on the merged record and has `report` write its files and report (the run's exit code),
    /// then gives every segment that code; any other segment sends its record, has `report`
    /// write its own (without the thresholds: they are the merged record's), and exits with
    /// the merged verdict.
    pub fn end(
        self,
        record: RunRecord,
        output: &OutputPlan,
        report: impl Fn(&OutputPlan, &RunRecord) -> i32,
    ) -> i32 {
        match self {
            Together::Follow(follow, plan) => {
                let json = crate::report::record_json(&record);
                let verdict = follow.finish(&json, plan.timeout);
                let mut own = output.clone();
                own.view.thresholds.clear();
                let code = report(&own, &record);
                match verdict {
                    Ok(merged) if code == EXIT_OK => merged,
                    Ok(_) => code,
                    Err(e) => Failure::Failed(format!(
                        "segment {}/{}: its record did not reach the merge: {e}",
                        plan.segment.index + 1,
                        plan.segment.count
                    ))
                    .report(),
                }
            }
            Together::Lead(lead, plan) => {
                let (joined, mut missing) = lead.collect(plan.timeout);
                // A part interrupted on its own (its process signalled, its pod deleted) is
                // short of its share: said as a missing one is, unless this one was too.
                if !record.interrupted {
                    missing.extend(joined.iter().filter(|j| j.record.interrupted).map(|j| {
                        (
                            j.index,
                            format!(
                                "is short in the merge: it was interrupted after {:.1}s of its run",
                                j.record.summary.duration_s
                            ),
                        )
                    }));
                }
                let start = lead.start().unwrap_or(0);
                let mut merged = match merged(record, joined, (start, plan.segment.count)) {
                    Ok(m) => m,
                    Err(e) => {
                        let code = Failure::from(e).report();
                        lead.done(code);
                        return code;
                    }
                };
                let n = plan.segment.count;
                let lines: Vec<String> = missing
                    .iter()
                    .map(|(k, what)| format!("segment {k}/{n} {what}"))
                    .collect();
                merged.summary.warnings.extend(lines.iter().cloned());
                crate::analysis::precision::annotate(&mut merged);
                crate::analysis::validity::annotate(&mut merged);
                output.view.check(&mut merged);
                if let (false, Some(line)) =
                    (output.quiet, started_line(&merged.environment.generators))
                {
                    eprintln!("reqlife: {line}");
                }
                let mut code = report(output, &merged);
                if !lines.is_empty() {
                    eprintln!(
                        "reqlife: {}: the merged record is not the whole plan",
                        lines.join("; ")
                    );
                    if code == EXIT_OK {
                        code = EXIT_FAILURE;
                    }
                }
                lead.done(code);
                code
            }
        }
    }
}

/// The merged record of segment 1's own `record` and the others' `joined`: each part's
/// recording start moved to the coordinator's clock (so that their intervals line up), and
/// each segment's start against the one given (`start`, Unix ns) kept in
/// `environment.generators`; `count` segments in the plan.
pub fn merged(
    record: RunRecord,
    joined: Vec<Joined>,
    (start, count): (i128, u64),
) -> Result<RunRecord, crate::recorder::RecordError> {
    let mut starts = vec![generator(&record, 1, count, (0, 0), start)];
    let mut records = vec![record];
    let mut names = vec![format!("segment 1/{count}")];
    for j in joined {
        let mut r = j.record;
        starts.push(generator(&r, j.index, count, (j.offset, j.delay), start));
        if let Some(t) = unix_ns(&r.environment.start_time) {
            r.environment.start_time = rfc3339(t + j.offset);
        }
        names.push(format!("segment {}/{count}", j.index));
        records.push(r);
    }
    let mut merged = crate::recorder::merge::merge(records, &names)?;
    merged.environment.generators = starts;
    Ok(merged)
}

/// Segment `index` of `count`'s start: its recording's start on the coordinator's clock
/// (its offset added) against the start given.
fn generator(
    r: &RunRecord,
    index: u64,
    count: u64,
    (offset, delay): (i128, i128),
    start: i128,
) -> GeneratorStart {
    GeneratorStart {
        segment: format!("{index}/{count}"),
        hostname: r.environment.hostname.clone(),
        clock_offset_us: offset as f64 / 1e3,
        exchange_delay_us: delay as f64 / 1e3,
        start_late_ms: unix_ns(&r.environment.start_time)
            .map(|t| (t + offset - start) as f64 / 1e6),
    }
}

fn unix_ns(rfc3339: &str) -> Option<i128> {
    time::OffsetDateTime::parse(rfc3339, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos())
}

fn rfc3339(ns: i128) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// The line that says how together the segments started: the spread of their starts and
/// the range of their clocks' offsets.
pub fn started_line(starts: &[GeneratorStart]) -> Option<String> {
    let late: Vec<f64> = starts.iter().filter_map(|g| g.start_late_ms).collect();
    if late.len() < 2 {
        return None;
    }
    let spread = late.iter().cloned().fold(f64::MIN, f64::max)
        - late.iter().cloned().fold(f64::MAX, f64::min);
    let offsets = starts.iter().map(|g| g.clock_offset_us);
    let (lo, hi) = offsets.fold((f64::MAX, f64::MIN), |(lo, hi), o| (lo.min(o), hi.max(o)));
    let signed = |us: f64| {
        let sign = if us < 0.0 { "-" } else { "+" };
        format!("{sign}{}", human_ns(us.abs() * 1e3))
    };
    Some(format!(
        "{} segments started within {} of each other (clock offsets {} to {} from segment \
         1's)",
        starts.len(),
        human_ns(spread * 1e6),
        signed(lo),
        signed(hi)
    ))
}

#[cfg(test)]
mod tests;
