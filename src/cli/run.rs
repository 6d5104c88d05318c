//! `reqlife run`'s plans: a workload's (`--scenario`, `--targets`), or one per level of a
//! sweep ([`super::plan::build_levels`]), or one repeated (`--repeat`); with the checks of the
//! flags that shape a run as a whole (`--html`'s file, `--abort-on-fail`, `--repeat`).

use super::error::{err, PrepareError};
use super::RunArgs;
use crate::plan::RunPlan;
use prost_reflect::DescriptorPool;

/// The plans of a run, checked and ready to start.
pub struct RunPlans {
    /// One per level, or per repetition.
    pub plans: Vec<RunPlan>,
    /// `--repeat`.
    pub repeat: usize,
    /// A scenario's phases are the levels.
    pub phased: bool,
}

/// The plans of the run at `url` (none: a target list's own), `--repeat` times if asked; a
/// gRPC call's `--data` without `--proto-set` is encoded through `reflected`, the descriptors
/// the server's reflection gave ([`super::reflect::ask`]).
pub fn plans(
    args: &RunArgs,
    url: Option<&str>,
    reflected: Option<&DescriptorPool>,
) -> Result<RunPlans, PrepareError> {
    let built = levels(args, url, reflected);
    // A page that cannot be written is known now, not after the run.
    if let Some(path) = &args.files.html {
        crate::report::html::check_writable(path)?;
    }
    let mut plans = built?;
    let phased = plans.iter().any(|p| p.phase.is_some());
    if args.intervals.abort_on_fail && args.view.thresholds.is_empty() {
        return refuse("--abort-on-fail stops on a failed --threshold: give at least one");
    }
    let repeat = args.length.repeat.unwrap_or(1) as usize;
    match (repeat, plans.len()) {
        (0, _) => return refuse("--repeat must be at least 1"),
        (r, n) if r > 1 && n > 1 => return refuse(
            "--repeat and a sweep (-c a,b,... or -R a,b,...) conflict: repeat one level at a time",
        ),
        (r, _) if r > 1 => plans = vec![plans[0].clone(); r],
        _ => {}
    }
    Ok(RunPlans {
        plans,
        repeat,
        phased,
    })
}

/// Refuses the flags with `line` (bad input, exit 2).
fn refuse<T>(line: &str) -> Result<T, PrepareError> {
    Ok(err(line)?)
}

/// The plans of the levels: a workload's, or one per level of a sweep.
fn levels(
    args: &RunArgs,
    url: Option<&str>,
    reflected: Option<&DescriptorPool>,
) -> Result<Vec<RunPlan>, PrepareError> {
    Ok(if super::workload::is_workload(args) {
        // The user's URL is refused with --targets: pass it on to say so.
        let url = if args.workload.targets.is_some() {
            args.url.as_deref()
        } else {
            url
        };
        super::workload::build(args, url)
    } else {
        super::plan::build_levels_with(args, url.unwrap_or("/"), reflected)
    }?)
}
