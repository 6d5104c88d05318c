//! gRPC server reflection before a run (`--grpc SERVICE/METHOD --data JSON` without
//! `--proto-set`): the server asked for the service's descriptors once, over the connection
//! the run would open (`engine::grpc::reflect`, within `--timeout`), as [`crate::cli::reflect`]
//! says; the descriptors are then handed to the command's build as if a descriptor set had
//! been given. A server that cannot answer gets one line that names the fix: a descriptor set.

use super::Failure;
use crate::cli::reflect::Ask;
use crate::engine::grpc::reflect::{self, ReflectError};
use crate::plan::RunPlan;
use crate::util::exit::{EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_USAGE};
use prost_reflect::DescriptorPool;

/// The fix when the server cannot describe the service.
const PROTO_SET: &str =
    "give --proto-set FILE.pb (protoc --descriptor_set_out=FILE.pb --include_imports your.proto)";

/// The descriptors `ask` asks the server for, or the failure that says why there are none.
pub(super) fn descriptors(ask: &Ask) -> Result<DescriptorPool, Failure> {
    reflect::descriptors(&ask.plan, &ask.service).map_err(|e| {
        let (exit_code, line) = failure(&ask.plan, &ask.service, e);
        match exit_code {
            EXIT_FAIL_FAST => Failure::FailFast(line),
            EXIT_USAGE => Failure::Usage(line),
            _ => Failure::Failed(line),
        }
    })
}

/// The descriptors the flags need, if any (`ask` from [`crate::cli::reflect::ask`]).
pub(super) fn asked(ask: Option<Ask>) -> Result<Option<DescriptorPool>, Failure> {
    ask.as_ref().map(descriptors).transpose()
}

/// The one line of a reflection that gave nothing, with its exit code: a connection that
/// failed is the fail-fast rule's (exit 3), a server without the service or without
/// reflection is input to fix (exit 2), anything else exit 1.
fn failure(plan: &RunPlan, service: &str, e: ReflectError) -> (i32, String) {
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
    (exit_code, line)
}
