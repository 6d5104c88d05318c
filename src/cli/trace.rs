//! The flags that make every slow request findable: trace context on each request
//! (`--trace-context`, `--trace-sample`, `--tracestate`), the link from a kept request to its
//! trace (`--trace-link`) and the per-request log (`--log-requests`, `--log-sample`).

use super::error::{err, PlanError};
use crate::model::trace::{check_tracestate, TraceContext};
use crate::plan::LogPlan;
use clap::Args;
use std::path::PathBuf;

/// Trace context and the per-request log (`run`).
#[derive(Debug, Clone, Args)]
pub struct TraceArgs {
    /// Send a W3C `traceparent` header with every request (HTTP/1.1, HTTP/2, HTTP/3, gRPC
    /// metadata): a trace id and span id per request, the same for the same --seed; the
    /// slowest requests are kept with theirs.
    #[arg(help_heading = "Output", long = "trace-context")]
    pub trace_context: bool,

    /// The share of requests sent with traceparent's sampled flag set (0 to 1) [default: 1].
    #[arg(help_heading = "Output", long = "trace-sample", value_name = "RATIO")]
    pub trace_sample: Option<f64>,

    /// A `tracestate` header sent as is with every request (e.g. 'vendor=abc').
    #[arg(help_heading = "Output", long = "tracestate", value_name = "VALUE")]
    pub tracestate: Option<String>,

    /// Link each kept slow request of the HTML report to its trace: a URL with {trace_id}
    /// (e.g. 'http://tempo:3200/trace/{trace_id}').
    #[arg(help_heading = "Output", long = "trace-link", value_name = "URL")]
    pub trace_link: Option<String>,

    /// Write one CSV row per request (due and start times, every phase in ns, status, bytes,
    /// error, connection, trace id, request name, interval) to this file as the run goes.
    #[arg(help_heading = "Output", long = "log-requests", value_name = "FILE")]
    pub log_requests: Option<PathBuf>,

    /// With --log-requests: one row of every N requests (per worker thread) [default: 1].
    #[arg(
        help_heading = "Output",
        long = "log-sample",
        value_name = "N",
        requires = "log_requests"
    )]
    pub log_sample: Option<u64>,
}

/// The run's trace context (ids from `seed`) and per-request log, `--trace-link` checked.
pub(super) fn plan_parts(
    a: &TraceArgs,
    seed: u64,
) -> Result<(Option<TraceContext>, Option<LogPlan>), PlanError> {
    trace_link(a)?;
    Ok((trace_context(a, seed)?, log_plan(a)?))
}

/// The run's trace context (`None` without --trace-context), ids from `seed`.
fn trace_context(a: &TraceArgs, seed: u64) -> Result<Option<TraceContext>, PlanError> {
    if !a.trace_context {
        if a.trace_sample.is_some() || a.tracestate.is_some() {
            return err("--trace-sample and --tracestate go with --trace-context");
        }
        return Ok(None);
    }
    let sample = a.trace_sample.unwrap_or(1.0);
    if !(0.0..=1.0).contains(&sample) {
        return err(format!(
            "--trace-sample {sample} is not a share: give 0 to 1 (e.g. 0.1 sets the sampled flag on 10% of requests)"
        ));
    }
    if let Some(state) = &a.tracestate {
        check_tracestate(state).map_err(|e| PlanError(format!("--tracestate: {e}")))?;
    }
    Ok(Some(TraceContext {
        seed,
        sample,
        tracestate: a.tracestate.clone(),
        link: a.trace_link.clone(),
    }))
}

/// `--trace-link`: a URL template that names `{trace_id}`.
fn trace_link(a: &TraceArgs) -> Result<Option<String>, PlanError> {
    match &a.trace_link {
        Some(t) if !t.contains("{trace_id}") => err(format!(
            "--trace-link '{t}' has no {{trace_id}}: give a URL with it, e.g. 'http://tempo:3200/trace/{{trace_id}}'"
        )),
        Some(_) if !a.trace_context => {
            err("--trace-link links requests by their trace ids: give --trace-context too")
        }
        t => Ok(t.clone()),
    }
}

/// `--log-requests`: the file, created (and its header written) before the run starts, so an
/// unwritable path is refused at once.
fn log_plan(a: &TraceArgs) -> Result<Option<LogPlan>, PlanError> {
    let Some(path) = &a.log_requests else {
        return Ok(None);
    };
    let every = a.log_sample.unwrap_or(1);
    if every == 0 {
        return err("--log-sample must be at least 1 (1 logs every request, 100 one in 100)");
    }
    if path.as_os_str() == "-" {
        return err("--log-requests needs a file, not standard output (the report goes there)");
    }
    // Created empty now, then written in append mode: the runs of a sweep, a knee search or
    // `compare --run`'s two sides add their rows to the one file, whole buffers at a time.
    let create = std::fs::File::create(path)
        .and_then(|_| std::fs::OpenOptions::new().append(true).open(path));
    let file = create.map_err(|e| {
        PlanError(format!(
            "--log-requests {}: cannot write it ({e}): give a path in a writable directory",
            path.display()
        ))
    })?;
    Ok(Some(LogPlan {
        path: path.clone(),
        file: std::sync::Arc::new(file),
        every,
    }))
}
