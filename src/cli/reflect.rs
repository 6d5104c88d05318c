//! gRPC server reflection before a run: `--grpc SERVICE/METHOD --data JSON` without
//! `--proto-set` asks the server for the service's descriptors once, over the connection the
//! run would open (`engine::grpc::reflect`, within `--timeout`), and the run's flags then carry
//! them as if a descriptor set had been given. A server that cannot answer gets one line that
//! names the fix: a descriptor set. Part of turning the flags into plans, so in `cli`: the
//! commands get the resolved flags, never ask themselves.

use super::error::PrepareError;
use super::RunArgs;
use crate::engine::grpc::reflect::{self, ReflectError};
use crate::plan::RunPlan;
use crate::util::exit::{EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_USAGE};
use std::borrow::Cow;

/// The fix when the server cannot describe the service.
const PROTO_SET: &str =
    "give --proto-set FILE.pb (protoc --descriptor_set_out=FILE.pb --include_imports your.proto)";

/// `args` with the descriptors of the server's reflection when the run needs them (as they
/// are otherwise).
pub fn resolve<'a>(args: &'a RunArgs, url: &str) -> Result<Cow<'a, RunArgs>, PrepareError> {
    let Some(service) = super::grpc::reflection_service(args) else {
        return Ok(Cow::Borrowed(args));
    };
    let plan = super::plan::reflection_plan(args, url)?;
    let pool = reflect::descriptors(&plan, service).map_err(|e| failure(&plan, service, e))?;
    let mut args = args.clone();
    args.grpc.reflected = Some(pool);
    Ok(Cow::Owned(args))
}

/// The one line of a reflection that gave nothing, with its exit code: a connection that
/// failed is the fail-fast rule's (exit 3), a server without the service or without
/// reflection is input to fix (exit 2), anything else exit 1.
fn failure(plan: &RunPlan, service: &str, e: ReflectError) -> PrepareError {
    let at = &plan.target.url;
    let (exit_code, line) = match e {
        ReflectError::Connect(e) => {
            let why = match e.cause {
                Some(cause) => cause.hint(plan),
                None => e.detail,
            };
            (
                EXIT_FAIL_FAST,
                format!("cannot ask {at} for gRPC reflection: {why}; or {PROTO_SET}"),
            )
        }
        ReflectError::Unsupported => (
            EXIT_USAGE,
            format!(
                "{at} offers no gRPC server reflection ({} and {}: UNIMPLEMENTED): {PROTO_SET}",
                reflect::SERVICES[0],
                reflect::SERVICES[1]
            ),
        ),
        ReflectError::UnknownService { detail, known } => {
            // The reflection service lists itself: not one the user means.
            let known: Vec<String> = known
                .into_iter()
                .filter(|s| !s.starts_with("grpc.reflection."))
                .collect();
            let known = match known.len() {
                0 => String::new(),
                _ => format!("; it offers {}", known.join(", ")),
            };
            (
                EXIT_USAGE,
                format!(
                    "{at} does not know service '{service}' (its reflection answered NOT_FOUND: {detail}{known}): check --grpc SERVICE/METHOD, or {PROTO_SET}"
                ),
            )
        }
        ReflectError::Failed(why) => (
            EXIT_FAILURE,
            format!("gRPC reflection from {at} failed: {why}; {PROTO_SET}"),
        ),
    };
    PrepareError { line, exit_code }
}
