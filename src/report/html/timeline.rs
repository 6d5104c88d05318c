//! A kept request drawn as a timeline (`--server-probes`): its client phases in a row, and
//! under them the server's side of it on the same time axis, from the client's write: its
//! bytes on the way to the server (`send`), in the server's socket, from the server's read
//! to its write, and back to the client. An inline SVG, one per kept request.

use super::human;
use crate::model::Phase;
use crate::recorder::record::slow::SlowRequest;
use std::fmt::Write as _;

/// Width of the drawing, px (the time axis less the labels).
const WIDTH: f64 = 560.0;
/// Left margin for the rows' labels, px.
const LABEL: f64 = 60.0;
/// Height of a row, px.
const ROW: f64 = 16.0;

/// The colour of a part (client phases in blues and greys, the server's in oranges).
fn colour(name: &str) -> &'static str {
    match name {
        "schedule_lag" | "queue" => "#9aa5b1",
        "connect" | "tls" | "ws_upgrade" | "quic_handshake" | "quic_0rtt" => "#7b8794",
        "write" => "#4c78a8",
        "wait" => "#72b7b2",
        "read" | "decode" => "#54a24b",
        "send" => "#bab0ac",
        "socket" => "#e45756",
        "handle" => "#f58518",
        "return" => "#eeca3b",
        _ => "#cccccc",
    }
}

/// One bar of a row: from `from` to `to` ns, named `name`.
fn bar(svg: &mut String, y: f64, scale: f64, from: f64, to: f64, name: &str) {
    let (x, w) = (LABEL + from * scale, ((to - from) * scale).max(0.5));
    let _ = write!(
        svg,
        "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{name} {}</title></rect>",
        ROW - 3.0,
        colour(name),
        human(to - from)
    );
}

/// The timeline of `r`, when its server phases were joined to it.
pub(super) fn timeline(r: &SlowRequest) -> Option<String> {
    let socket = *r.server_ns.get("socket")? as f64;
    let handle = *r.server_ns.get("handle")? as f64;
    let send = r.server_ns.get("send").copied().unwrap_or(0) as f64;
    let ret = r.server_ns.get("return").copied().unwrap_or(0) as f64;
    let total = r.total_ns() as f64;
    if total <= 0.0 {
        return None;
    }
    // The client's phases tile its total; the write begins after those before it.
    let mut at = 0.0;
    let mut client = Vec::new();
    let mut write_at = None;
    for p in Phase::LIFE.iter().filter(|p| p.tiles()) {
        let ns = r.phases_ns.get(p.name()).copied().unwrap_or(0) as f64;
        if *p == Phase::Write {
            write_at = Some(at);
        }
        if ns > 0.0 {
            client.push((p.name(), at, at + ns));
        }
        at += ns;
    }
    let w0 = write_at.unwrap_or(0.0);
    let server = [
        ("send", w0, w0 + send),
        ("socket", w0 + send, w0 + send + socket),
        ("handle", w0 + send + socket, w0 + send + socket + handle),
        (
            "return",
            w0 + send + socket + handle,
            w0 + send + socket + handle + ret,
        ),
    ];
    let end = server[3].2.max(at).max(total);
    let scale = WIDTH / end;
    let mut svg = format!(
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" role=\"img\"><title>client and server phases of one request, {} in all</title>",
        LABEL + WIDTH + 4.0,
        2.0 * ROW + 14.0,
        human(total)
    );
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"{:.0}\" font-size=\"10\">client</text><text x=\"0\" y=\"{:.0}\" font-size=\"10\">server</text>",
        ROW - 4.0,
        2.0 * ROW - 4.0
    );
    for (name, a, b) in client {
        bar(&mut svg, 0.0, scale, a, b, name);
    }
    for (name, a, b) in server.into_iter().filter(|(_, a, b)| b > a) {
        bar(&mut svg, ROW, scale, a, b, name);
    }
    let _ = write!(
        svg,
        "<text x=\"{LABEL}\" y=\"{:.0}\" font-size=\"9\">0</text><text x=\"{:.0}\" y=\"{:.0}\" font-size=\"9\" text-anchor=\"end\">{}</text></svg>",
        2.0 * ROW + 11.0,
        LABEL + WIDTH,
        2.0 * ROW + 11.0,
        human(end)
    );
    Some(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn a_joined_request_is_drawn_client_over_server_on_one_axis() {
        let mut r = SlowRequest {
            due_s: 1.0,
            phases_ns: BTreeMap::from([
                ("write".into(), 10_000),
                ("wait".into(), 980_000),
                ("read".into(), 10_000),
                ("total".into(), 1_000_000),
            ]),
            status: Some(200),
            error: None,
            request: None,
            connection: 0,
            trace_id: None,
            span_id: None,
            sampled: None,
            server_timing: String::new(),
            server_ns: BTreeMap::new(),
        };
        assert_eq!(timeline(&r), None, "nothing of the server's: no drawing");
        r.server_ns = BTreeMap::from([
            ("send".into(), 10_000),
            ("socket".into(), 900_000),
            ("handle".into(), 60_000),
            ("return".into(), 10_000),
        ]);
        let svg = timeline(&r).unwrap();
        // The socket's bar is 90% of the axis, after the send's 1% from the write's start.
        assert!(svg.contains("<title>socket 900"), "{svg}");
        let x = LABEL + 10_000.0 * WIDTH / 1_000_000.0;
        assert!(svg.contains(&format!("x=\"{x:.1}\"")), "{svg}");
        assert!(
            svg.contains(&format!("width=\"{:.1}\"", 0.9 * WIDTH)),
            "{svg}"
        );
    }
}
