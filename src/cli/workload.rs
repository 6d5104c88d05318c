//! The plans of a run that sends a workload (`--scenario FILE`, `--targets FILE`): the
//! workload half of [`super::plan`], with the same rule that every check of user input and
//! every message about bad input lives in `cli`. A scenario with phases gives one plan per
//! phase (run in order, like the levels of a sweep); without phases, or with a target list,
//! the command line's load applies to the whole mix.

use super::error::err;
use super::plan::{self, PlanError};
use super::RunArgs;
use crate::plan::RunPlan;
use crate::workload::{mix::Mix, scenario, targets, Workload, WorkloadError};
use std::sync::Arc;

/// Whether the run sends a workload rather than one fixed request.
pub fn is_workload(args: &RunArgs) -> bool {
    args.workload.scenario.is_some() || args.workload.targets.is_some()
}

/// The flags that describe the one fixed request, which a workload replaces.
fn refuse_request_flags(args: &RunArgs, what: &str) -> Result<(), PlanError> {
    let given: Vec<&str> = super::error::flags_given(&[
        (args.request.method.is_some(), "-m/--method"),
        (!args.request.headers.is_empty(), "-H/--header"),
        (args.request.body.is_some(), "--body"),
        (args.request.body_file.is_some(), "--body-file"),
        (args.framed.payload_file.is_some(), "--payload-file"),
    ]);
    if given.is_empty() {
        return Ok(());
    }
    err(format!(
        "{} conflict{} with {what}: its requests give their own method, headers and body",
        given.join(", "),
        if given.len() == 1 { "s" } else { "" }
    ))
}

/// The plans of a workload run: `url` is the server (the user's, or the embedded target's);
/// with `--targets` it is `None` and the list names the server.
pub fn build(args: &RunArgs, url: Option<&str>) -> Result<Vec<RunPlan>, PlanError> {
    if args.load.connections.len() > 1 || args.length.rate.len() > 1 {
        return err("a sweep (-c a,b,... or -R a,b,...) and a workload conflict: give one level");
    }
    match (&args.workload.scenario, &args.workload.targets) {
        (Some(path), _) => {
            refuse_request_flags(args, "--scenario")?;
            let url = url.ok_or_else(|| PlanError("--scenario needs a server URL".into()))?;
            let sc = scenario::load(path).map_err(WorkloadError::from)?;
            let specs: Vec<_> = sc.requests.iter().map(|r| r.spec.clone()).collect();
            let mut args = args.clone();
            if args.load.seed.is_none() {
                args.load.seed = sc.seed;
            }
            let base = plan::build(&args, url)?;
            if sc.phases.is_empty() {
                return Ok(vec![with_workload(base, &specs, sc.default_mix(), None)]);
            }
            let given: Vec<&str> = super::error::flags_given(&[
                (!args.length.rate.is_empty(), "-R/--rate"),
                (args.length.duration.is_some(), "-d/--duration"),
                (args.length.requests.is_some(), "-n/--requests"),
                (args.length.stages.is_some(), "--stages"),
                (args.length.burst.is_some(), "--burst"),
                (args.length.repeat.unwrap_or(1) > 1, "--repeat"),
            ]);
            if !given.is_empty() {
                return err(format!(
                    "{} conflict{} with the phases of '{}': each phase gives its own load and length (drop the [[phase]] tables to use the command line's)",
                    given.join(", "),
                    if given.len() == 1 { "s" } else { "" },
                    path.display()
                ));
            }
            sc.phases
                .iter()
                .map(|ph| {
                    // The phase's load, checked when the scenario was read.
                    let p = RunPlan {
                        load: ph.load.clone(),
                        stop: ph.stop,
                        ..base.clone()
                    }
                    .fit_threads(&crate::model::load_spec::SCENARIO)
                    .map_err(|e| PlanError(format!("phase '{}': {}", ph.name, e.message)))?;
                    Ok(with_workload(
                        p,
                        &specs,
                        ph.mix.clone(),
                        Some(ph.name.clone()),
                    ))
                })
                .collect()
        }
        (None, Some(path)) => {
            refuse_request_flags(args, "--targets")?;
            if url.is_some() {
                return err(format!(
                    "--targets '{}' names the server in its URLs: drop the URL argument",
                    path.display()
                ));
            }
            let entries = targets::load(path).map_err(WorkloadError::from)?;
            let origin = targets::common_origin(&entries, path).map_err(WorkloadError::from)?;
            let base = plan::build(args, &format!("{origin}/"))?;
            let specs: Vec<_> = entries.iter().map(|e| e.spec.clone()).collect();
            let n = specs.len();
            Ok(vec![with_workload(base, &specs, Mix::round_robin(n), None)])
        }
        (None, None) => err("internal: a workload needs --scenario or --targets"),
    }
}

fn with_workload(
    mut p: RunPlan,
    specs: &[crate::workload::request::RequestSpec],
    mix: Mix,
    phase: Option<String>,
) -> RunPlan {
    let mut workload = Workload::new(specs, mix, &p.target, p.keepalive, p.compressed);
    // HTTP/2 and HTTP/3 build each stream's request from the rendered parts.
    workload.parts = p.multiplexed();
    p.workload = Some(Arc::new(workload));
    p.phase = phase;
    p
}
