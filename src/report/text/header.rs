//! The report's header: what was run (target, protocol, load, length, pipelining, the
//! resolver), as the run starts ([`start_header`]) and in the report, with how it ended.

use crate::model::Protocol;
use crate::recorder::record::RunRecord;
use crate::util::units::{counted, human_ns};
use std::fmt::Write as _;

/// The run's header (unless `shown` already, on the same terminal), and how it ended if it
/// did not run its course.
pub(super) fn header(out: &mut String, r: &RunRecord, shown: bool) {
    let labels: Vec<&str> = r.levels.iter().map(|l| l.label.as_str()).collect();
    let knee = r.knee.is_some();
    if !shown {
        header_of(out, &r.config, &labels, knee, Some(r.repetitions.len()));
    }
    if r.interrupted {
        let _ = writeln!(
            out,
            "  {} after {}: the figures cover what was measured until then",
            r.stop_reason
                .cut_short()
                .unwrap_or_else(|| "INTERRUPTED".into()),
            human_ns(r.summary.duration_s * 1e9)
        );
    }
    if matches!(r.stop_reason, crate::model::StopReason::FailFast(_)) {
        let _ = writeln!(
            out,
            "  STOPPED EARLY ({}) after {}: every connection failed the same way before any request succeeded",
            r.stop_reason,
            human_ns(r.summary.duration_s * 1e9)
        );
    }
}

/// The header of a run as it starts (the report's first lines, before anything is measured):
/// `config` as planned, the `levels` of a sweep or a scenario's phases by label.
pub fn start_header(config: &crate::recorder::record::Config, levels: &[&str]) -> String {
    let mut out = String::new();
    header_of(&mut out, config, levels, false, None);
    out
}

/// The header's line on pipelining (`--pipeline`) and on an open loop's offered rate (a knee
/// search's steps each have their own, in its table: none here).
fn pipeline_and_rate(out: &mut String, c: &crate::recorder::record::Config, knee: bool) {
    if c.pipeline > 1 {
        let ws = matches!(
            c.protocol,
            Protocol::Ws | Protocol::Wss | Protocol::WsH2c | Protocol::WssH2
        );
        let answered = match &c.ws_match {
            Some(field) => format!("replies matched by their {field}"),
            None => "answered in order".into(),
        };
        let _ = writeln!(
            out,
            "  pipelined: {} {} per connection sent in one write, {answered}",
            c.pipeline,
            if ws { "messages" } else { "requests" }
        );
    } else if let Some(field) = &c.ws_match {
        let _ = writeln!(out, "  replies matched to their messages by {field}");
    }
    if let Some(s) = c.h2_coalesce_s {
        let _ = writeln!(
            out,
            "  coalesced: a freed stream's request waits up to {} for its connection's \
             streams in flight (--h2-coalesce; counted in write)",
            human_ns(s * 1e9)
        );
    }
    if let (Some(rate), None, false) = (c.rate_rps, &c.sweep, knee) {
        let _ = writeln!(
            out,
            "  offered {rate:.0} req/s, {} arrivals (seed {})",
            c.arrival.as_deref().unwrap_or("constant"),
            c.seed
        );
    }
}

/// The resolver's part, when the URL named its host: once, before the run (no request waited
/// for it, so it is no request's phase).
fn resolved(out: &mut String, c: &crate::recorder::record::Config) {
    if let Some(r) = &c.resolved {
        let _ = writeln!(
            out,
            "  resolved to {} in {}, once, before the run",
            r.addr,
            human_ns(r.took_s * 1e9)
        );
    }
}

/// The header's lines; `ran`: how many repetitions ran (`None` before the run).
fn header_of(
    out: &mut String,
    c: &crate::recorder::record::Config,
    levels: &[&str],
    knee: bool,
    ran: Option<usize>,
) {
    let what = what_of(c, levels, knee);
    let target = if c.embedded_target {
        format!("{} (the embedded target)", c.url)
    } else {
        c.url.clone()
    };
    let _ = writeln!(out, "Running {what} @ {target}");
    resolved(out, c);
    workload_and_sweep(out, c, levels);
    let grpc = c.grpc.as_ref().map(|m| format!("gRPC {m} over"));
    let method = match (&grpc, &c.workload) {
        (Some(g), _) => g.as_str(),
        (None, Some(_)) => "requests of the workload",
        (None, None) => c.method.as_str(),
    };
    if c.sweep.is_some() || !levels.is_empty() {
        let _ = writeln!(
            out,
            "  up to {}, {} {}, {} loop",
            counted(c.threads, "thread"),
            method,
            c.protocol,
            c.load_model
        );
    } else {
        let _ = writeln!(
            out,
            "  {} and {}, {} {}, {} loop",
            counted(c.threads, "thread"),
            counted(c.connections, "connection"),
            method,
            c.protocol,
            c.load_model
        );
    }
    pipeline_and_rate(out, c, knee);
    if let Some(seg) = &c.segment {
        let _ = writeln!(
            out,
            "  segment {seg} of the plan: this generator's share (`reqlife merge` adds the segments up)"
        );
    }
    match (c.repeat, ran) {
        (1, _) => {}
        (n, Some(ran)) => {
            let _ = writeln!(
                out,
                "  repeated {n} times ({ran} ran): the totals and phases below merge the runs"
            );
        }
        (n, None) => {
            let _ = writeln!(out, "  repeated {n} times");
        }
    }
    if c.connection_policy == "new" {
        let _ = writeln!(out, "  a new connection for every request");
    }
    if c.warmup_s > 0.0 {
        let _ = writeln!(
            out,
            "  warm-up of {} not recorded",
            human_ns(c.warmup_s * 1e9)
        );
    }
}

/// What kind of test the header announces: a knee search, a scenario's phases, a length or a
/// number of requests.
fn what_of(c: &crate::recorder::record::Config, levels: &[&str], knee: bool) -> String {
    match (c.duration_s, c.requests) {
        _ if knee => format!(
            "knee search of {} of {}",
            counted(levels.len() as u64, "step"),
            human_ns(c.duration_s.unwrap_or(0.0) * 1e9)
        ),
        _ if c.workload.is_some() && c.sweep.is_none() && !levels.is_empty() => {
            format!("{}-phase test", levels.len())
        }
        (Some(d), _) if !c.until.is_empty() => format!(
            "test of up to {}, until {}",
            human_ns(d * 1e9),
            c.until.join(", ")
        ),
        (None, Some(n)) if !c.until.is_empty() => {
            format!("test of up to {n} requests, until {}", c.until.join(", "))
        }
        (Some(d), _) => format!("{} test", human_ns(d * 1e9)),
        (None, Some(n)) => format!("{n}-request test"),
        (None, None) => "test".to_string(),
    }
}

/// The header's lines on the workload (with its phases, `levels`) and on a sweep's levels.
fn workload_and_sweep(out: &mut String, c: &crate::recorder::record::Config, levels: &[&str]) {
    if let Some(w) = &c.workload {
        let phases = levels;
        if c.sweep.is_none() && !phases.is_empty() {
            let _ = writeln!(out, "  {w}, phases {}", phases.join(", "));
        } else {
            let _ = writeln!(out, "  {w}");
        }
    }
    if let Some(sweep) = &c.sweep {
        let levels: Vec<String> = sweep.levels.iter().map(|v| format!("{v}")).collect();
        let _ = writeln!(
            out,
            "  a sweep of {} over {} levels: {}",
            sweep.of,
            levels.len(),
            levels.join(", ")
        );
    }
}
