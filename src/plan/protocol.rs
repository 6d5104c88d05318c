//! The protocol of a plan ([`ProtocolPlan`]): one variant per protocol, each with its own
//! settings, and what every protocol's settings tell the layers above the plan
//! ([`ProtocolSettings`]: its name in records, its streams, its pipeline, what its requests
//! are named by, whether `--data` is its message, whether it goes over QUIC, how the hints of
//! a connection it could not open read), each protocol answering for itself; and the one
//! place that reads a variant's own settings ([`ProtocolPlan::http2`], [`ProtocolPlan::grpc`],
//! [`ProtocolPlan::websocket`]).

use crate::model::{Protocol, Scheme};
use std::time::Duration;

/// The protocol of a run, one variant per protocol with its own settings: a plan cannot
/// speak two at once, nor hold the settings of one it does not speak.
#[derive(Debug, Clone)]
pub enum ProtocolPlan {
    /// HTTP/1.1 (over TLS on `https://`).
    Http1(Http1Plan),
    /// HTTP/2 (`--http2`): h2 by ALPN over TLS, h2c with prior knowledge on `http://`.
    Http2(Http2Plan),
    /// HTTP/3 (`--http3`): over QUIC, on `https://` URLs only.
    Http3(Http3Plan),
    /// `--grpc SERVICE/METHOD`: unary gRPC calls over HTTP/2 (`method` is POST, the path is
    /// `/SERVICE/METHOD`, the body one length-prefixed message).
    Grpc(GrpcPlan),
    /// `tcp://` targets: a pre-built binary request and how its reply is delimited
    /// (`--payload-file`, `--framing`); no HTTP (`method`, `headers` and `body` unused).
    Framed(FramedPlan),
    /// `ws://` and `wss://` targets: WebSocket messages (RFC 6455) over a connection upgraded
    /// from HTTP/1.1, or over an HTTP/2 stream (RFC 8441, `--http2`) (`method` GET, `headers`
    /// sent with the upgrade request, `body` unused: the message is the plan's own).
    WebSocket(WsPlan),
}

/// A WebSocket run: the message every request sends, and how its reply is read (the next
/// data message, or the one carrying its `--ws-match` value; at most `--max-body` bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsPlan {
    /// The message's payload (a templated message's first rendering: the run's `workload`
    /// renders each).
    pub message: Vec<u8>,
    /// A text frame (`--data`, `--body`: UTF-8) or a binary one (`--body-file`).
    pub text: bool,
    /// `--stream messages`: a request is a subscription, the messages the server pushes after
    /// the request's timed as a stream's events, instead of one reply.
    pub subscribe: bool,
    /// `--ws-messages N`: a subscription ends after N messages (the client closes the
    /// connection); `None`: when the server closes it normally.
    pub messages: Option<u32>,
    /// `--ws-ping INTERVAL`: each connection pings the server this often while a request is
    /// on it, and times the pong (`ws_ping`).
    pub ping: Option<std::time::Duration>,
    /// `--pipeline N`: messages in flight per connection, sent in one write (closed loops
    /// only); 1: one at a time.
    pub pipeline: usize,
    /// `--ws-match FIELD`: the names of the JSON path whose value matches a reply to its
    /// message, in any order; `None`: the replies answer the messages in order.
    pub match_path: Option<Vec<String>>,
    /// `--http2`: each WebSocket connection is a stream of an HTTP/2 connection of its own,
    /// opened by an extended CONNECT (RFC 8441), instead of an HTTP/1.1 upgrade.
    pub http2: bool,
}

/// HTTP/1.1 settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http1Plan {
    /// Requests in flight per connection, sent back to back in one write and answered in
    /// order (`--pipeline`; closed loops only): 1 without pipelining.
    pub pipeline: usize,
}

/// A gRPC run: which method is called, and how its request message is made.
#[derive(Debug, Clone)]
pub struct GrpcPlan {
    /// `package.Service/Method`.
    pub method: String,
    /// The request message's type when the message is JSON with generators, encoded on every
    /// send from the rendered text (the run's `workload` renders it); `None` when the message
    /// was encoded once into the body (static JSON, `--data-file`).
    pub encode: Option<prost_reflect::MessageDescriptor>,
    /// The HTTP/2 settings the calls go with.
    pub http2: Http2Plan,
}

/// A framed binary run (`tcp://HOST:PORT --payload-file FILE`): the same bytes sent on every
/// request (its sequence number written at `seqid_offset`, if given), and a reply read as
/// `framing` says, its length limited by `--max-body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FramedPlan {
    /// The request, sent as it is (with `u32be`, a whole frame: its length prefix included).
    pub payload: Vec<u8>,
    /// How the reply is delimited.
    pub framing: Framing,
    /// Where the request's sequence number goes, as a big-endian i32 (Thrift's seqid).
    pub seqid_offset: Option<usize>,
}

/// How a framed reply is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// A 4-byte big-endian length, then that many bytes (Thrift's framed transport).
    U32Be,
    /// No framing: the reply is exactly this many bytes (`--response-bytes`).
    Fixed(u64),
}

impl Framing {
    /// The name used on the command line and in the record.
    pub fn name(self) -> &'static str {
        match self {
            Framing::U32Be => "u32be",
            Framing::Fixed(_) => "none",
        }
    }
}

/// HTTP/2 settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Plan {
    /// Concurrent streams per connection.
    pub streams: usize,
    /// Initial flow-control window (stream and connection), bytes.
    pub window: Option<u32>,
    /// `--h2-coalesce`: how long a freed stream's request may wait for the connection's
    /// streams in flight (closed loops; `None`: not at all).
    pub coalesce: Option<Duration>,
    /// New requests wait one turn of the runtime before their write, so that the answers read
    /// meanwhile join their streams' next requests to it (`--h2-writes gather`, the default);
    /// `false`: written at once (`--h2-writes at-once`, a benchmark's before figure).
    pub gather: bool,
}

/// HTTP/3 settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http3Plan {
    /// Concurrent streams per connection.
    pub streams: usize,
    /// `--zero-rtt`: resume connections with 0-RTT where the server allows it.
    pub zero_rtt: bool,
}

/// What a protocol's settings tell the layers above the plan, whatever the protocol: each
/// protocol's settings answer for themselves ([`ProtocolPlan::settings`]).
pub trait ProtocolSettings {
    /// The protocol's name in records, on a target of `scheme`.
    fn name(&self, scheme: Scheme) -> Protocol;
    /// Sessions (streams) sharing one connection.
    fn streams(&self) -> usize {
        1
    }
    /// Requests in flight per connection (`--pipeline`).
    fn pipeline(&self) -> usize {
        1
    }
    /// Streams carry the requests, each built from a templated request's rendered parts.
    fn multiplexed(&self) -> bool {
        false
    }
    /// What the requests are named by where not by their HTTP method.
    fn method_label(&self) -> Option<&'static str> {
        None
    }
    /// `--data` may give the protocol's own message (a WebSocket's), not only a gRPC call's.
    fn message_of_data(&self) -> bool {
        false
    }
    /// Connections go over QUIC, on UDP: no TCP socket to probe, and a refused connection or
    /// a failed handshake is QUIC's.
    fn over_quic(&self) -> bool {
        false
    }
    /// What a server's ALPN lacks for this protocol, and the fix: the end of the hint
    /// "{host} does not offer …".
    fn alpn_missing(&self) -> &'static str {
        "HTTP/1.1 in ALPN: try --http2"
    }
    /// The hint for `host` when it answered HTTP/2's connection preface with something else
    /// (asked of the protocols that speak HTTP/2).
    fn not_h2_hint(&self, host: &str) -> String {
        not_h2c(host, H2C_FIX)
    }
}

/// What to do when an `http://` server does not speak HTTP/2 in the clear.
const H2C_FIX: &str = "drop --http2, or use https:// if it offers h2 over TLS";

/// The hint for `host` when it answered HTTP/2's connection preface in the clear with
/// something else, with the `fix`.
fn not_h2c(host: &str, fix: &str) -> String {
    format!(
        "{host} does not speak HTTP/2 without TLS (h2c) on this port (it answered the connection preface \
         with something else, HTTP/1.1?): {fix}"
    )
}

impl ProtocolPlan {
    /// The protocol's settings, as every protocol's answer the same questions (one `match`
    /// for them all; read when a run is set up and recorded, never per request).
    pub fn settings(&self) -> &dyn ProtocolSettings {
        match self {
            ProtocolPlan::Http1(p) => p,
            ProtocolPlan::Http2(p) => p,
            ProtocolPlan::Http3(p) => p,
            ProtocolPlan::Grpc(p) => p,
            ProtocolPlan::Framed(p) => p,
            ProtocolPlan::WebSocket(p) => p,
        }
    }

    /// The HTTP/2 settings of an HTTP/2 or gRPC run.
    pub fn http2(&self) -> Option<&Http2Plan> {
        match self {
            ProtocolPlan::Http2(h2) | ProtocolPlan::Grpc(GrpcPlan { http2: h2, .. }) => Some(h2),
            _ => None,
        }
    }

    /// The call of a gRPC run.
    pub fn grpc(&self) -> Option<&GrpcPlan> {
        match self {
            ProtocolPlan::Grpc(g) => Some(g),
            _ => None,
        }
    }

    /// The call of a gRPC run, to complete while the plan is built.
    pub fn grpc_mut(&mut self) -> Option<&mut GrpcPlan> {
        match self {
            ProtocolPlan::Grpc(g) => Some(g),
            _ => None,
        }
    }

    /// The settings of a WebSocket run.
    pub fn websocket(&self) -> Option<&WsPlan> {
        match self {
            ProtocolPlan::WebSocket(w) => Some(w),
            _ => None,
        }
    }

    /// The settings of a WebSocket run, to complete while the plan is built.
    pub fn websocket_mut(&mut self) -> Option<&mut WsPlan> {
        match self {
            ProtocolPlan::WebSocket(w) => Some(w),
            _ => None,
        }
    }
}

impl ProtocolSettings for Http1Plan {
    fn name(&self, _: Scheme) -> Protocol {
        Protocol::Http1
    }

    fn pipeline(&self) -> usize {
        self.pipeline
    }
}

impl ProtocolSettings for Http2Plan {
    /// h2 by ALPN over TLS, h2c in the clear.
    fn name(&self, scheme: Scheme) -> Protocol {
        match scheme {
            Scheme::Https => Protocol::H2,
            Scheme::Http => Protocol::H2c,
        }
    }

    fn streams(&self) -> usize {
        self.streams.max(1)
    }

    fn multiplexed(&self) -> bool {
        true
    }

    fn alpn_missing(&self) -> &'static str {
        "HTTP/2 (h2) in ALPN: drop --http2, or enable h2 on the server"
    }
}

impl ProtocolSettings for Http3Plan {
    fn name(&self, _: Scheme) -> Protocol {
        Protocol::H3
    }

    fn streams(&self) -> usize {
        self.streams.max(1)
    }

    fn multiplexed(&self) -> bool {
        true
    }

    fn over_quic(&self) -> bool {
        true
    }

    fn alpn_missing(&self) -> &'static str {
        "HTTP/3 (h3) in ALPN: drop --http3, or enable HTTP/3 on the server"
    }
}

/// gRPC answers as the HTTP/2 its calls go over, its hints naming what gRPC needs.
impl ProtocolSettings for GrpcPlan {
    fn name(&self, scheme: Scheme) -> Protocol {
        self.http2.name(scheme)
    }

    fn streams(&self) -> usize {
        self.http2.streams()
    }

    fn multiplexed(&self) -> bool {
        true
    }

    fn alpn_missing(&self) -> &'static str {
        "HTTP/2 (h2) in ALPN, which gRPC needs: check that a gRPC server listens there"
    }

    fn not_h2_hint(&self, host: &str) -> String {
        format!(
            "{host} does not speak HTTP/2 (it answered the connection preface with something else, HTTP/1.1?): gRPC needs a server that speaks h2c (HTTP/2 without TLS) \
             on http://, or h2 on https://; check the port and the scheme"
        )
    }
}

impl ProtocolSettings for FramedPlan {
    fn name(&self, _: Scheme) -> Protocol {
        Protocol::Tcp
    }

    fn method_label(&self) -> Option<&'static str> {
        Some(match self.framing {
            Framing::U32Be => "u32be-framed",
            Framing::Fixed(_) => "unframed",
        })
    }
}

impl ProtocolSettings for WsPlan {
    /// `ws`, `wss`, or their forms over a stream of HTTP/2 (`--http2`).
    fn name(&self, scheme: Scheme) -> Protocol {
        match (scheme, self.http2) {
            (Scheme::Http, true) => Protocol::WsH2c,
            (Scheme::Https, true) => Protocol::WssH2,
            (Scheme::Http, false) => Protocol::Ws,
            (Scheme::Https, false) => Protocol::Wss,
        }
    }

    fn pipeline(&self) -> usize {
        self.pipeline
    }

    fn method_label(&self) -> Option<&'static str> {
        Some(if self.text { "text" } else { "binary" })
    }

    fn message_of_data(&self) -> bool {
        true
    }

    /// Over HTTP/2 (`--http2`), the fix is to upgrade over HTTP/1.1 instead.
    fn alpn_missing(&self) -> &'static str {
        if self.http2 {
            "HTTP/2 (h2) in ALPN: drop --http2 to upgrade over HTTP/1.1"
        } else {
            "HTTP/1.1 in ALPN: try --http2"
        }
    }

    fn not_h2_hint(&self, host: &str) -> String {
        let fix = if self.http2 {
            "drop --http2 to upgrade over HTTP/1.1, or use wss:// if it offers h2 over TLS"
        } else {
            H2C_FIX
        };
        not_h2c(host, fix)
    }
}
