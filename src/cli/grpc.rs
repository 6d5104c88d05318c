//! The flags of gRPC runs (`--grpc SERVICE/METHOD URL`, `--proto-set`, `--data`,
//! `--data-file`, `--grpc-timeout`) checked into a [`GrpcPlan`]: every message about them
//! lives here. A gRPC run is an HTTP/2 run (h2c on `http://`, h2 by ALPN on `https://`) of
//! `POST /SERVICE/METHOD` with `content-type: application/grpc` and `te: trailers`, whose body
//! is one length-prefixed message: encoded once when it is fixed, or, when the JSON has
//! generators, rendered and encoded on every call (a one-request workload).

use super::error::err;
use super::plan::PlanError;
use super::RunArgs;
use crate::engine::grpc::{frame, timeout_value, Codec};
use crate::model::io_reason;
use crate::plan::{GrpcPlan, Http2Plan, ProtocolPlan, RunPlan};
use crate::workload::gen::GenState;
use crate::workload::request::RequestSpec;
use crate::workload::template::{Sources, Template};
use crate::workload::{mix::Mix, Workload};
use clap::Args;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The gRPC flags of `reqlife run`.
#[derive(Debug, Clone, Default, Args)]
pub struct GrpcArgs {
    /// gRPC: make unary calls to this method (package.Service/Method) over HTTP/2 (h2c on
    /// http://, h2 by ALPN on https://); a call whose grpc-status is not OK is a failed
    /// request, its status counted by code.
    #[arg(help_heading = "gRPC", long = "grpc", value_name = "SERVICE/METHOD")]
    pub grpc: Option<String>,

    /// gRPC: the descriptor set that defines the method and its messages, as `protoc
    /// --descriptor_set_out=FILE.pb --include_imports` writes it. Without it, --data asks the
    /// server for them by gRPC server reflection before the run.
    #[arg(help_heading = "gRPC", long = "proto-set", value_name = "FILE.pb")]
    pub proto_set: Option<PathBuf>,

    /// gRPC: the request message in JSON (protobuf's JSON mapping), encoded through
    /// --proto-set (or the server's reflection); ws://: the text message. Generators are
    /// rendered per call or message, in strings or as values: '{"id": {seq}, "text": "k{uniform:1:100}"}'.
    #[arg(help_heading = "gRPC", long = "data", value_name = "JSON")]
    pub data: Option<String>,

    /// gRPC: the request message's encoded bytes, sent as they are (no --proto-set needed).
    #[arg(help_heading = "gRPC", long = "data-file", value_name = "FILE")]
    pub data_file: Option<PathBuf>,

    /// gRPC: send `grpc-timeout`, the server's deadline for each call (e.g. 50ms, 2s).
    #[arg(help_heading = "gRPC", long = "grpc-timeout", value_name = "DURATION", value_parser = super::duration_arg)]
    pub grpc_timeout: Option<Duration>,
}

/// `a, b apply` or `a applies`: the flags given, joined, with the verb that fits.
fn given(flags: &[(bool, &str)], verb: (&str, &str)) -> Option<String> {
    let on = super::error::flags_given(flags);
    let verb = if on.len() == 1 { verb.0 } else { verb.1 };
    (!on.is_empty()).then(|| format!("{} {verb}", on.join(", ")))
}

/// Whether the run makes gRPC calls (HTTP/2 without `--http2`).
pub fn is_grpc(args: &RunArgs) -> bool {
    args.grpc.grpc.is_some()
}

/// The service whose descriptors the server is asked for by reflection: `--grpc` with
/// `--data` and neither `--proto-set` nor `--data-file`.
pub fn reflection_service(args: &RunArgs) -> Option<&str> {
    let g = &args.grpc;
    match (&g.grpc, &g.data, &g.proto_set, &g.data_file) {
        (Some(method), Some(_), None, None) => method
            .trim_start_matches('/')
            .split_once('/')
            .map(|(service, _)| service)
            .filter(|s| !s.is_empty()),
        _ => None,
    }
}

/// `plan` made a gRPC run when `--grpc` is given (refusing the flags that do not apply), its
/// message encoded through `--proto-set` or the descriptors the server's reflection gave
/// (`reflected`, asked by `app`); otherwise `plan` as it is, refusing the gRPC flags.
pub fn apply(
    args: &RunArgs,
    reflected: Option<&DescriptorPool>,
    plan: RunPlan,
) -> Result<RunPlan, PlanError> {
    let g = &args.grpc;
    if g.grpc.is_none() {
        return plan_without_grpc(args, plan);
    }
    let (mut plan, service, rpc) = call(args, plan)?;
    let input = match (&g.proto_set, reflected) {
        (Some(path), _) => {
            let source = format!("'{}'", path.display());
            Some(input_of(&load_pool(path)?, &source, &service, &rpc)?)
        }
        (None, Some(pool)) => Some(input_of(pool, "the server's reflection", &service, &rpc)?),
        (None, None) => None,
    };
    let encode = message(g, input, &mut plan)?;
    let encode = encode.map(|(template, input)| {
        plan.workload = Some(Arc::new(call_workload(&plan, template)));
        input
    });
    if let Some(grpc) = plan.protocol.grpc_mut() {
        grpc.encode = encode;
    }
    Ok(plan)
}

/// The plan of the call without its message: what the server's reflection is asked over
/// (its target, TLS and headers), the gRPC flags checked as for the run.
pub fn reflection_plan(args: &RunArgs, plan: RunPlan) -> Result<RunPlan, PlanError> {
    call(args, plan).map(|(plan, _, _)| plan)
}

/// `plan` when `--grpc` is not given, refusing the gRPC flags.
fn plan_without_grpc(args: &RunArgs, plan: RunPlan) -> Result<RunPlan, PlanError> {
    let g = &args.grpc;
    // A WebSocket run's message may be `--data`.
    let ws = plan.protocol.settings().message_of_data();
    let flags = [
        (g.proto_set.is_some(), "--proto-set"),
        (g.data.is_some() && !ws, "--data"),
        (g.data_file.is_some(), "--data-file"),
        (g.grpc_timeout.is_some(), "--grpc-timeout"),
    ];
    match given(&flags, ("applies", "apply")) {
        None => Ok(plan),
        Some(f) => err(format!("{f} to gRPC calls: give --grpc SERVICE/METHOD too")),
    }
}

/// `plan` made a call of `--grpc SERVICE/METHOD` (POST to its path, gRPC's headers, HTTP/2),
/// its message not yet set; with the service and method.
fn call(args: &RunArgs, mut plan: RunPlan) -> Result<(RunPlan, String, String), PlanError> {
    let g = &args.grpc;
    let Some(method) = &g.grpc else {
        return err("a gRPC call needs --grpc SERVICE/METHOD");
    };
    let refused = [
        (args.request.method.is_some(), "-m/--method"),
        (args.request.body.is_some(), "--body"),
        (args.request.body_file.is_some(), "--body-file"),
        (args.response.compressed, "--compressed"),
        (args.response.stream.is_some(), "--stream"),
        (args.workload.scenario.is_some(), "--scenario"),
        (args.workload.targets.is_some(), "--targets"),
    ];
    if let Some(f) = given(&refused, ("conflicts", "conflict")) {
        return err(format!(
            "{f} with --grpc: a call is POST /SERVICE/METHOD with the message of --data or --data-file"
        ));
    }
    let (service, rpc) = match method.trim_start_matches('/').split_once('/') {
        Some((s, m)) if !s.is_empty() && !m.is_empty() && !m.contains('/') => (s, m),
        _ => {
            return err(format!(
                "invalid --grpc '{method}': expected SERVICE/METHOD with the package, e.g. helloworld.Greeter/SayHello"
            ))
        }
    };
    plan.method = "POST".into();
    plan.target.path_and_query = format!("/{service}/{rpc}");
    // gRPC's headers, unless the user gave their own (`application/grpc+proto`, say).
    let timeout = g.grpc_timeout.map(timeout_value);
    for (name, value) in [
        ("content-type", Some("application/grpc".to_string())),
        ("te", Some("trailers".to_string())),
        ("grpc-timeout", timeout),
    ] {
        let given = plan
            .headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name));
        if let (false, Some(v)) = (given, value) {
            plan.headers.push((name.into(), v));
        }
    }
    // `--grpc` turns HTTP/2 on (`--http3` and tcp:// targets are refused before).
    let http2 = plan.http2().copied().unwrap_or(Http2Plan {
        streams: 1,
        window: None,
        coalesce: None,
        gather: true,
    });
    plan.protocol = ProtocolPlan::Grpc(GrpcPlan {
        method: format!("{service}/{rpc}"),
        encode: None,
        http2,
    });
    Ok((plan, service.to_string(), rpc.to_string()))
}

/// The request message of the call: `plan`'s body when it is encoded once, or the JSON
/// template and message type to encode per call.
fn message(
    g: &GrpcArgs,
    input: Option<MessageDescriptor>,
    plan: &mut RunPlan,
) -> Result<Option<(Template, MessageDescriptor)>, PlanError> {
    Ok(match (&g.data, &g.data_file, input) {
        (Some(_), Some(_), _) => return err("--data and --data-file conflict: give one of them"),
        (None, None, _) => return err(
            "--grpc needs the request message: --data JSON with --proto-set FILE.pb, or --data-file FILE (the encoded message)",
        ),
        (Some(_), None, None) => return err(
            "--data needs --proto-set FILE.pb to encode the JSON (protoc --descriptor_set_out=FILE.pb --include_imports your.proto), or give the encoded message with --data-file",
        ),
        (None, Some(path), input) => {
            plan.body = frame(&read_message(path, input.as_ref())?);
            None
        }
        (Some(json), None, Some(input)) => {
            let template = json_template(json)?;
            let codec = Codec::new(input.clone());
            match template.static_bytes() {
                Some(bytes) => {
                    plan.body = codec.frame_json(bytes).map_err(|e| bad_data(json, &e))?;
                    None
                }
                None => {
                    // One call rendered now: a message that cannot match fails here, not per call.
                    let mut sample = Vec::new();
                    template.render_into(&mut sample, &mut GenState::new(plan.seed, 0, 1), 0);
                    codec.frame_json(&sample).map_err(|e| bad_data(json, &e))?;
                    plan.body.clear();
                    Some((template, input))
                }
            }
        }
    })
}

fn bad_data(json: &str, why: &str) -> PlanError {
    PlanError(format!("invalid --data '{json}': {why}"))
}

/// The descriptor set in `path`.
fn load_pool(path: &Path) -> Result<DescriptorPool, PlanError> {
    let bytes = std::fs::read(path).map_err(|e| {
        PlanError(format!(
            "cannot read descriptor set '{}': {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    DescriptorPool::decode(bytes.as_slice()).map_err(|e| {
        PlanError(format!(
            "'{}' is not a descriptor set ({e}): make one with protoc --descriptor_set_out=FILE.pb --include_imports your.proto",
            path.display()
        ))
    })
}

/// The request message type of `service`'s unary method `rpc` in `pool` (from `source`: a
/// descriptor set's quoted path, or the server's reflection).
fn input_of(
    pool: &DescriptorPool,
    source: &str,
    service: &str,
    rpc: &str,
) -> Result<MessageDescriptor, PlanError> {
    let Some(svc) = pool.get_service_by_name(service) else {
        let known: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
        return err(format!(
            "no service '{service}' in {source}: it defines {}",
            if known.is_empty() {
                "no service".to_string()
            } else {
                known.join(", ")
            }
        ));
    };
    let Some(m) = svc.methods().find(|m| m.name() == rpc) else {
        let known: Vec<String> = svc.methods().map(|m| m.name().to_string()).collect();
        return err(format!(
            "service '{service}' has no method '{rpc}': it has {}",
            known.join(", ")
        ));
    };
    if m.is_client_streaming() || m.is_server_streaming() {
        return err(format!(
            "{service}/{rpc} is a streaming method: reqlife makes unary calls only"
        ));
    }
    Ok(m.input())
}

/// The encoded message in `path`, checked against the method's input type when known.
fn read_message(path: &Path, input: Option<&MessageDescriptor>) -> Result<Vec<u8>, PlanError> {
    let bytes = std::fs::read(path).map_err(|e| {
        PlanError(format!(
            "cannot read --data-file '{}': {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    if let Some(input) = input {
        if let Err(e) = DynamicMessage::decode(input.clone(), bytes.as_slice()) {
            return err(format!(
                "--data-file '{}' is not an encoded {}: {e}",
                path.display(),
                input.full_name()
            ));
        }
    }
    Ok(bytes)
}

/// The template of JSON `text`: its braces are JSON's, and a brace before a letter opens a
/// generator slot, in a string (`{"id": "{seq}"}`) or as a value (`{"id": {seq}}`); a literal
/// brace inside a string is written `{{` ([`Template::parse_json`]).
pub(super) fn json_template(text: &str) -> Result<Template, PlanError> {
    Template::parse_json(text, &mut Sources::new("."))
        .map_err(|e| PlanError(format!("invalid --data '{text}': {}", e.message)))
}

/// The one-request workload of a call (or a WebSocket message) whose JSON has generators:
/// rendered as parts (the engine encodes the body, or frames the message), unnamed (its
/// figures are the run's).
pub(super) fn call_workload(plan: &RunPlan, body: Template) -> Workload {
    let mut spec = RequestSpec::fixed(
        &plan.method,
        &plan.target.path_and_query,
        &plan.headers,
        b"",
    );
    spec.body = body;
    let mut w = Workload::new(&[spec], Mix::round_robin(1), &plan.target, true, false);
    w.names.clear();
    w.slot = vec![Workload::UNNAMED];
    w.parts = true;
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_an_http2_post_of_one_framed_message() {
        use crate::cli::{Cli, Command};
        use clap::Parser;
        let dir = tempfile::tempdir().unwrap();
        let message = dir.path().join("m.bin");
        std::fs::write(&message, b"\x0a\x01x").unwrap();
        let argv = [
            "reqlife",
            "run",
            "--grpc",
            "a.B/C",
            "--data-file",
            message.to_str().unwrap(),
            "-H",
            "Content-Type: application/grpc+proto",
            "--grpc-timeout",
            "2s",
        ];
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let plan = crate::cli::plan::build(&args, "http://127.0.0.1:9/").unwrap();
        assert_eq!(plan.method, "POST");
        assert_eq!(plan.target.path_and_query, "/a.B/C");
        assert_eq!(plan.body, frame(b"\x0a\x01x"));
        assert_eq!(plan.http2().map(|h| h.streams), Some(1));
        // the user's content-type is the one; te and grpc-timeout added
        let headers: Vec<(&str, &str)> = plan
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("Content-Type", "application/grpc+proto"),
                ("te", "trailers"),
                ("grpc-timeout", "2000000u")
            ]
        );
        let g = plan.grpc().unwrap();
        assert_eq!(g.method, "a.B/C");
        assert!(g.encode.is_none() && plan.workload.is_none());
    }

    #[test]
    fn json_braces_are_literal_and_strings_hold_the_slots() {
        // (the JSON, the first call's rendering)
        let rows = [
            (r#"{"text": "hi"}"#, r#"{"text": "hi"}"#),
            (r#"{"id": "{seq}", "v": [1]}"#, r#"{"id": "0", "v": [1]}"#),
            (r#"{"a": {"b": "x\"{seq}"}}"#, r#"{"a": {"b": "x\"0"}}"#),
            (r#"{"t": "{{literal}}"}"#, r#"{"t": "{literal}"}"#),
        ];
        for (json, want) in rows {
            let t = json_template(json).unwrap();
            let mut out = Vec::new();
            t.render_into(&mut out, &mut GenState::new(1, 0, 1), 0);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{json}");
        }
        let e = json_template(r#"{"id": "{nope}"}"#).unwrap_err();
        assert!(e.0.contains("invalid --data"), "{e}");
    }
}
