//! The text report's lines of codes that a protocol gives a request's end beside its HTTP
//! status: gRPC status codes (with the first `grpc-message` of each), HTTP/2 stream
//! resets and how WebSocket connections ended.

use crate::recorder::record::Summary;
use std::fmt::Write;

/// `gRPC status  OK: 990, UNAVAILABLE: 10`, then the first message of each code that has one.
pub fn grpc(out: &mut String, s: &Summary) {
    let g = &s.grpc;
    if g.grpc_status.is_empty() {
        return;
    }
    let codes: Vec<String> = g
        .grpc_status
        .iter()
        .map(|(c, n)| format!("{c}: {n}"))
        .collect();
    let _ = writeln!(out, "  gRPC status  {}", codes.join(", "));
    for (code, message) in &g.grpc_messages {
        let _ = writeln!(out, "    {code:<20} first: {message}");
    }
}

/// `WebSocket    closes: 1000 (normal) 3, abnormal (no close frame) 1`, when connections of a
/// WebSocket run ended (each kind with its meaning where it has a known one), and
/// `WebSocket    unmatched replies: 4 …` when replies matched no message in flight.
pub fn websocket(out: &mut String, s: &Summary) {
    if s.ws_unmatched > 0 {
        let _ = writeln!(
            out,
            "  WebSocket    unmatched replies: {} (their --ws-match value was no message's in flight)",
            s.ws_unmatched
        );
    }
    if s.ws_closes.is_empty() {
        return;
    }
    let kinds: Vec<String> = s
        .ws_closes
        .iter()
        .map(|(k, n)| match crate::engine::websocket::close::meaning(k) {
            Some(m) => format!("{k} ({m}) {n}"),
            None => format!("{k} {n}"),
        })
        .collect();
    let _ = writeln!(out, "  WebSocket    closes: {}", kinds.join(", "));
}

/// `WebSocket    permessage-deflate: agreed on 3 of 4 connections (1 uncompressed)`, when a
/// run with `--compressed` upgraded connections: whether compression was in effect.
pub fn ws_deflate(out: &mut String, s: &Summary) {
    if s.ws_deflate.is_empty() {
        return;
    }
    let agreed = s.ws_deflate.get("agreed").copied().unwrap_or(0);
    let all: u64 = s.ws_deflate.values().sum();
    let plain = match all - agreed {
        0 => String::new(),
        n => format!(" ({n} not: their messages uncompressed)"),
    };
    let _ = writeln!(
        out,
        "  WebSocket    permessage-deflate: agreed on {agreed} of {all} connections{plain}"
    );
}

/// `HTTP/2 stream resets by code: …`, when the server reset streams.
pub fn resets(out: &mut String, s: &Summary) {
    if !s.resets.is_empty() {
        let codes: Vec<String> = s.resets.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let _ = writeln!(out, "  HTTP/2 stream resets by code: {}", codes.join(", "));
    }
}
