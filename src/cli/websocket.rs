//! The flags of WebSocket runs (`ws://HOST[:PORT]/PATH`, `wss://…`, the message from `--data`,
//! `--body` or `--body-file`) checked into a [`WsPlan`]: every message about them lives here.
//! `--data` is a template ([`crate::workload::template::Template::parse_json`]: JSON's braces
//! literal, a brace before a letter a generator slot, e.g. `{"id":{seq},"op":"quote"}`),
//! rendered per message by the run's workload when it has generators ([`apply`]); and
//! `--ws-match FIELD` is checked against its renderings: every message must carry the field,
//! a string or a number, with a value that differs from one message to the next.

use super::error::err;
use super::plan::PlanError;
use super::{RunArgs, StreamArg};
use crate::engine::websocket::field;
use crate::model::io_reason;
use crate::plan::{RunPlan, WsPlan};
use crate::workload::gen::GenState;
use clap::Args;
use std::sync::Arc;
use std::time::Duration;

/// The WebSocket flags of `reqlife run` (besides `--stream messages`).
#[derive(Debug, Clone, Default, Args)]
pub struct WsArgs {
    /// ws:// with --stream messages: end each subscription after N pushed messages (the
    /// client then closes the connection with a close handshake; the next request connects
    /// anew). Without it a subscription ends when the server closes it (code 1000).
    #[arg(help_heading = "Protocol", long = "ws-messages", value_name = "N", value_parser = super::count_arg)]
    pub messages: Option<u64>,

    /// ws://: each connection sends a ping every INTERVAL while a request is on it and times
    /// the pong (`ws_ping`, a figure apart from the requests' phases), e.g. 100ms.
    #[arg(help_heading = "Protocol", long = "ws-ping", value_name = "INTERVAL", value_parser = super::duration_arg)]
    pub ping: Option<Duration>,

    /// ws://: match each reply to the message in flight whose JSON FIELD (a name, or a dotted
    /// path a.b) has the same value, in any order; the message from --data with a generator
    /// there, e.g. --data '{"id":{seq},"op":"quote"}'. Without it, replies answer in order.
    #[arg(help_heading = "Protocol", long = "ws-match", value_name = "FIELD")]
    pub match_field: Option<String>,
}

/// The shortest `--ws-ping` interval.
const MIN_PING: Duration = Duration::from_millis(1);

/// Whether `url` names a WebSocket target (`ws://` or `wss://`, in any case).
pub fn is_ws(url: &str) -> bool {
    as_http(url).is_some()
}

/// The HTTP URL a WebSocket URL upgrades from (`ws://` → `http://`, `wss://` → `https://`),
/// which the one URL parser reads; `None` for any other URL.
pub fn as_http(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme.eq_ignore_ascii_case("ws") {
        Some(format!("http://{rest}"))
    } else if scheme.eq_ignore_ascii_case("wss") {
        Some(format!("https://{rest}"))
    } else {
        None
    }
}

/// Refuses the WebSocket flags (`--stream messages`, `--ws-messages`, `--ws-ping`,
/// `--ws-match`) for `url`,
/// which is not a WebSocket target.
fn only_ws(args: &RunArgs, url: &str) -> Result<(), PlanError> {
    let given: Vec<&str> = super::error::flags_given(&[
        (
            args.response.stream == Some(StreamArg::Messages),
            "--stream messages",
        ),
        (args.ws.messages.is_some(), "--ws-messages"),
        (args.ws.ping.is_some(), "--ws-ping"),
        (args.ws.match_field.is_some(), "--ws-match"),
    ]);
    if given.is_empty() {
        return Ok(());
    }
    err(format!(
        "{} appl{} to WebSocket targets only (ws://HOST/PATH, wss://HOST/PATH), not {url}",
        given.join(", "),
        if given.len() == 1 { "ies" } else { "y" }
    ))
}

/// A WebSocket run's `--stream` (`messages` only), `--ws-messages` (with it, at least 1) and
/// `--ws-ping` (at least 1ms) checked: the subscription's message limit.
fn subscription(args: &RunArgs) -> Result<Option<u32>, PlanError> {
    if let Some(other) = args.response.stream.filter(|s| *s != StreamArg::Messages) {
        let value = clap::ValueEnum::to_possible_value(&other);
        let name = value.as_ref().map_or("", |v| v.get_name());
        return err(format!(
            "--stream {name} does not apply to WebSocket: --stream messages times the messages a ws:// server pushes after the request's"
        ));
    }
    if args.ws.ping.is_some_and(|p| p < MIN_PING) {
        return err("--ws-ping must be at least 1ms (e.g. 100ms, 1s)");
    }
    match args.ws.messages {
        None => Ok(None),
        Some(0) => err("--ws-messages must be at least 1 (the messages that end a subscription)"),
        Some(_) if args.response.stream != Some(StreamArg::Messages) => {
            err("--ws-messages ends a subscription: give --stream messages too")
        }
        Some(n) => u32::try_from(n).map(Some).map_err(|_| {
            PlanError(format!(
                "--ws-messages {n} is more than {} messages",
                u32::MAX
            ))
        }),
    }
}

/// The WebSocket plan of a run for `url`, its connections kept or not (`keepalive`): `Some`
/// for a `ws://` or `wss://` target (which needs a message and refuses the flags of other
/// protocols), `None` for any other URL. A message from `--data` is a template, rendered by
/// the plan's workload ([`apply`]).
pub fn plan(args: &RunArgs, url: &str, keepalive: bool) -> Result<Option<WsPlan>, PlanError> {
    let messages = args.response.stream == Some(StreamArg::Messages);
    if !is_ws(url) {
        return only_ws(args, url).map(|()| None);
    }
    let limit = subscription(args)?;
    let refused: Vec<&str> = super::error::flags_given(&[
        (args.request.method.is_some(), "-m/--method"),
        (args.http.http3, "--http3"),
        (super::grpc::is_grpc(args), "--grpc"),
        (args.grpc.data_file.is_some(), "--data-file"),
        (args.http.streams.is_some(), "--streams"),
        (args.http.h2_window.is_some(), "--h2-window"),
        (args.http.h2_coalesce.is_some(), "--h2-coalesce"),
        (args.http.h2_writes.is_some(), "--h2-writes"),
        (args.workload.scenario.is_some(), "--scenario"),
        (args.workload.targets.is_some(), "--targets"),
        (args.trace.trace_context, "--trace-context"),
    ]);
    if !refused.is_empty() {
        return err(format!(
            "{} do{} not apply to WebSocket: a ws:// or wss:// target sends a message per request (--data TEXT, --body TEXT or --body-file FILE) and times its reply",
            refused.join(", "),
            if refused.len() == 1 { "es" } else { "" }
        ));
    }
    if args.http.http2 && args.response.compressed {
        return err(
            "--compressed and --http2 conflict on a WebSocket target: permessage-deflate is offered on HTTP/1.1's upgrade only; drop --http2 to measure compressed messages",
        );
    }
    let given = [
        args.grpc.data.is_some(),
        args.request.body.is_some(),
        args.request.body_file.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return err("--data, --body and --body-file conflict: give one message");
    }
    let (message, text) = match (&args.grpc.data, &args.request.body, &args.request.body_file) {
        (Some(t), _, _) | (None, Some(t), _) => (t.as_bytes().to_vec(), true),
        (None, None, Some(path)) => {
            let bytes = std::fs::read(path).map_err(|e| {
                PlanError(format!(
                    "cannot read body file '{}': {}",
                    path.display(),
                    io_reason(&e)
                ))
            })?;
            (bytes, false)
        }
        (None, None, None) => {
            return err(format!(
                "a WebSocket target needs a message to send: --data TEXT (a text frame) or --body-file FILE (a binary one) for {url}"
            ))
        }
    };
    let pipeline = super::protocol::pipeline(args, keepalive, false, false)?;
    if pipeline > 1 && messages {
        return err(format!(
            "--pipeline {pipeline} does not apply to --stream messages: a subscription holds its connection until it ends"
        ));
    }
    Ok(Some(WsPlan {
        message,
        text,
        subscribe: messages,
        messages: limit,
        ping: args.ws.ping,
        pipeline,
        match_path: match_path(args, text)?,
        http2: args.http.http2,
    }))
}

/// Messages rendered to check `--ws-match` (their sequence numbers 0, 1, …): a generator that
/// gives them all one value gives every message that value.
const SAMPLES: u64 = 8;

/// `--ws-match FIELD` checked on its own: a name or a dotted path, the message from `--data`
/// (a `text` message), not with `--stream messages`. The message itself is checked by
/// [`apply`].
fn match_path(args: &RunArgs, text: bool) -> Result<Option<Vec<String>>, PlanError> {
    let Some(name) = &args.ws.match_field else {
        return Ok(None);
    };
    let Some(path) = field::parse_path(name) else {
        return err(format!(
            "--ws-match must name a JSON field: a name (id) or a dotted path (a.b), not '{name}'"
        ));
    };
    if args.response.stream == Some(StreamArg::Messages) {
        return err("--ws-match matches a reply to its message: a subscription (--stream messages) has no reply to match");
    }
    if args.response.compressed {
        return err(format!(
            "--ws-match {name} reads each reply's JSON: not with --compressed (a compressed reply is inflated only to be counted)"
        ));
    }
    if args.grpc.data.is_none() || !text {
        return err(format!(
            "--ws-match {name} needs a JSON message template from --data, its {name} different per message, e.g. --data '{{\"{name}\":{{seq}},\"op\":\"quote\"}}'"
        ));
    }
    Ok(Some(path))
}

/// `plan` with a WebSocket run's `--data` as a template: its message rendered once when it has
/// no generator, else by a workload per message (`plan.message` its first rendering); the
/// `--ws-match` field checked in its renderings. Any other plan as it is.
pub fn apply(args: &RunArgs, mut plan: RunPlan) -> Result<RunPlan, PlanError> {
    let Some(ws) = plan.protocol.websocket() else {
        return Ok(plan);
    };
    let Some(data) = &args.grpc.data else {
        return Ok(plan);
    };
    let template = super::grpc::json_template(data)?;
    let mut state = GenState::new(plan.seed, 0, 1);
    let renders: Vec<Vec<u8>> = (0..SAMPLES)
        .map(|seq| {
            let mut out = Vec::new();
            template.render_into(&mut out, &mut state, seq);
            out
        })
        .collect();
    if let Some(path) = &ws.match_path {
        check_match(data, path, &renders)?;
    }
    let message = match template.static_bytes() {
        Some(bytes) => bytes.to_vec(),
        None => {
            if std::str::from_utf8(&renders[0]).is_err() {
                return err(format!(
                    "--data '{data}' renders bytes that are not UTF-8 (a text message must be): drop {{random_bytes}}, or send binary with --body-file"
                ));
            }
            plan.workload = Some(Arc::new(super::grpc::call_workload(&plan, template)));
            renders[0].clone()
        }
    };
    if let Some(ws) = plan.protocol.websocket_mut() {
        ws.message = message;
    }
    Ok(plan)
}

/// Each rendering of the message must be JSON holding `path` as a string or a number, and
/// not all the same value.
fn check_match(data: &str, path: &[String], renders: &[Vec<u8>]) -> Result<(), PlanError> {
    let name = path.join(".");
    let first = &renders[0];
    let shown = String::from_utf8_lossy(first);
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(first) {
        return err(format!(
            "--ws-match {name}: the message is not JSON ('{shown}': {e}); give --data a JSON object"
        ));
    }
    let Some(value) = field::value_of(first, path) else {
        return err(format!(
            "--ws-match {name}: the message '{shown}' has no field {name} holding a string or a number (--data '{data}')"
        ));
    };
    if renders
        .iter()
        .all(|r| field::value_of(r, path) == Some(value))
    {
        return err(format!(
            "--ws-match {name}: every message carries the same {name} ({}): put a generator there, e.g. {{seq}} or {{uuid}}",
            String::from_utf8_lossy(value)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::cli::plan::build;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn build_ws(url: &str, flags: &[&str]) -> Result<crate::plan::RunPlan, String> {
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        build(&args, url).map_err(|e| e.0)
    }

    #[test]
    fn ws_targets_and_their_messages() {
        let p = build_ws("ws://127.0.0.1:9/chat?room=1", &["--data", "hi"]).unwrap();
        assert_eq!(p.target.path_and_query, "/chat?room=1");
        assert_eq!(p.target.port, 9);
        assert_eq!(p.protocol_name().name(), "ws");
        let ws = p.protocol.websocket().expect("a WebSocket plan");
        assert_eq!((ws.message.as_slice(), ws.text), (&b"hi"[..], true));
        assert!(!ws.subscribe && ws.messages.is_none() && ws.ping.is_none() && !ws.http2);
        let p = build_ws("WSS://127.0.0.1/", &["--body", "x"]).unwrap();
        assert_eq!((p.target.port, p.protocol_name().name()), (443, "wss"));
        let flags = [
            "--data",
            "sub",
            "--stream",
            "messages",
            "--ws-messages",
            "7",
            "--ws-ping",
            "250ms",
        ];
        let p = build_ws("ws://127.0.0.1:9/", &flags).unwrap();
        let ws = p.protocol.websocket().expect("a WebSocket plan");
        assert!(ws.subscribe);
        assert_eq!(ws.messages, Some(7));
        assert_eq!(ws.ping, Some(std::time::Duration::from_millis(250)));
        // --http2: RFC 8441, h2c by prior knowledge on ws://, h2 by ALPN on wss://.
        for (url, name) in [
            ("ws://127.0.0.1:9/", "ws+h2c"),
            ("wss://127.0.0.1/", "wss+h2"),
        ] {
            let p = build_ws(url, &["--data", "a", "--http2"]).unwrap();
            let ws = p.protocol.websocket().expect("a WebSocket plan");
            assert!(ws.http2);
            assert_eq!(p.protocol_name().name(), name);
        }
        // --compressed offers permessage-deflate (engine::websocket::deflate).
        let p = build_ws("ws://127.0.0.1:9/", &["--data", "x", "--compressed"]).unwrap();
        assert!(p.compressed);
        // … on HTTP/1.1's upgrade only: with --http2, one line.
        let e = build_ws(
            "ws://127.0.0.1:9/",
            &["--data", "x", "--compressed", "--http2"],
        )
        .unwrap_err();
        assert!(e.contains("drop --http2"), "{e}");
    }

    #[test]
    fn bad_ws_input_is_one_line() {
        // (url, flags, a part of the message)
        let rows: [(&str, &[&str], &str); 9] = [
            ("ws://127.0.0.1:9/", &[], "needs a message"),
            (
                "ws://127.0.0.1:9/",
                &["--data", "a", "--http2", "--streams", "2"],
                "--streams does not apply",
            ),
            (
                "ws://127.0.0.1:9/",
                &["--data", "a", "--http2", "--h2-coalesce", "1ms"],
                "--h2-coalesce does not apply",
            ),
            (
                "ws://127.0.0.1:9/",
                &["--data", "a", "--http2", "--http3"],
                "--http3 does not apply",
            ),
            (
                "ws://127.0.0.1:9/",
                &["--data", "a", "--grpc", "a.B/C"],
                "--grpc does not apply",
            ),
            (
                "ws://127.0.0.1:9/",
                &["--data", "a", "--body", "b"],
                "conflict",
            ),
            ("ws://127.0.0.1:0/", &["--data", "a"], "port 0"),
            (
                "ws://u@127.0.0.1:9/",
                &["--data", "a"],
                "'ws://u@127.0.0.1:9/'",
            ),
            (
                "http://127.0.0.1:9/",
                &["--data", "a"],
                "--data applies to gRPC",
            ),
        ];
        for (url, flags, want) in rows {
            let e = build_ws(url, flags).unwrap_err();
            assert!(
                e.contains(want) && !e.contains('\n'),
                "{url} {flags:?}: {e}"
            );
        }
    }

    /// `run --seed 1 FLAGS ws://127.0.0.1:9/`'s plan.
    fn build_seeded(flags: &[&str]) -> Result<crate::plan::RunPlan, String> {
        let mut argv = vec!["--seed", "1"];
        argv.extend_from_slice(flags);
        build_ws("ws://127.0.0.1:9/", &argv)
    }

    #[test]
    fn a_message_with_generators_is_rendered_per_message() {
        let p =
            build_seeded(&["--data", r#"{"id":{seq},"op":"quote"}"#, "--ws-match", "id"]).unwrap();
        let ws = p.protocol.websocket().expect("a WebSocket plan");
        assert_eq!(ws.message, br#"{"id":0,"op":"quote"}"#);
        assert_eq!(ws.match_path.as_deref(), Some(&["id".to_string()][..]));
        let w = p
            .workload
            .as_ref()
            .expect("a workload renders the messages");
        assert!(w.parts);
        // A static message: rendered once (a literal brace of a string unescaped), no workload.
        let p = build_seeded(&["--data", r#"{"t":"{{x}}"}"#, "--pipeline", "4"]).unwrap();
        let ws = p.protocol.websocket().expect("a WebSocket plan");
        assert_eq!(
            (ws.message.as_slice(), ws.pipeline),
            (&br#"{"t":"{x}"}"#[..], 4)
        );
        assert!(p.workload.is_none() && ws.match_path.is_none());
        assert_eq!(p.pipeline(), 4);
        // --body is sent as it is.
        let p = build_seeded(&["--body", "{seq}"]).unwrap();
        let ws = p.protocol.websocket().expect("a WebSocket plan");
        assert_eq!(ws.message, b"{seq}");
        // A nested path, a string value.
        assert!(
            build_seeded(&["--data", r#"{"m":{"id":"{uuid}"}}"#, "--ws-match", "m.id"]).is_ok()
        );
    }

    #[test]
    fn bad_match_and_pipeline_flags_are_one_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.bin");
        std::fs::write(&file, b"x").unwrap();
        let file = file.to_str().unwrap();
        // (flags, a part of the message)
        let rows: [(&[&str], &str); 11] = [
            (
                &["--data", "x", "--ws-match", "a..b"],
                "must name a JSON field",
            ),
            (
                &["--body-file", file, "--ws-match", "id"],
                "needs a JSON message template from --data",
            ),
            (
                &["--body", r#"{"id":1}"#, "--ws-match", "id"],
                "needs a JSON message template",
            ),
            (
                &["--data", "hi {seq}", "--ws-match", "id"],
                "the message is not JSON",
            ),
            (
                &["--data", r#"{"op":{seq}}"#, "--ws-match", "id"],
                "has no field id",
            ),
            (
                &["--data", r#"{"id":{"x":{seq}}}"#, "--ws-match", "id"],
                "has no field id",
            ),
            (
                &["--data", r#"{"id":7}"#, "--ws-match", "id"],
                "every message carries the same id (7)",
            ),
            (
                &["--data", "x", "--stream", "messages", "--ws-match", "id"],
                "a subscription (--stream messages) has no reply",
            ),
            (
                &["--data", "x", "--pipeline", "0"],
                "--pipeline must be from 1 to",
            ),
            (
                &["--data", "x", "--pipeline", "2", "--stream", "messages"],
                "does not apply to --stream messages",
            ),
            (
                &["--data", "x", "--pipeline", "2", "-R", "100"],
                "needs a closed loop",
            ),
        ];
        for (flags, want) in rows {
            let e = build_seeded(flags).unwrap_err();
            assert!(e.contains(want) && !e.contains('\n'), "{flags:?}: {e}");
        }
    }
}
