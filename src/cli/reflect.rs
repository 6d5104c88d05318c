//! gRPC server reflection before a run, as the flags ask for it: `--grpc SERVICE/METHOD --data
//! JSON` without `--proto-set` needs the service's descriptors from the server, asked once
//! over the connection the run would open. What to ask, and over which plan (its target, TLS
//! and headers), is decided here ([`ask`]); `app` asks (network I/O, within `--timeout`), says
//! what a server that cannot answer lacks, and hands the descriptors to the command's build
//! (as [`super::plan::build_levels_with`] takes them), so that nothing in `cli` does I/O on
//! the network.

use super::plan::PlanError;
use super::RunArgs;
use crate::plan::RunPlan;

/// What the server's reflection is asked before a run: the descriptors of `service`, over
/// the connection of `plan`.
#[derive(Debug, Clone)]
pub struct Ask {
    /// The call's plan without its message (its target, TLS and headers).
    pub plan: RunPlan,
    /// The service named by `--grpc SERVICE/METHOD`.
    pub service: String,
}

/// The reflection the flags of a run at `url` need (`--grpc` with `--data` and neither
/// `--proto-set` nor `--data-file`), every flag but the message checked as for the run;
/// `None` when they need none.
pub fn ask(args: &RunArgs, url: &str) -> Result<Option<Ask>, PlanError> {
    let Some(service) = super::grpc::reflection_service(args) else {
        return Ok(None);
    };
    Ok(Some(Ask {
        plan: super::plan::reflection_plan(args, url)?,
        service: service.to_string(),
    }))
}
