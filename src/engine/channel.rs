//! A session's connection state in the run's one protocol ([`Channel`]), what responses
//! leave besides their counts ([`Kept`]), and the protocol-neutral [`Answer`] each
//! protocol's own response type becomes.

use super::config::{FramedWire, GrpcWire, H2Wire, H3Wire, Http1Wire, Wire, WsWire};
use super::events::EventTracker;
use super::extras::Extras;
use super::framed::FramedConn;
use super::http1::{self, Http1Conn};
use super::websocket::WsConn;
use super::{decode, grpc, http2, http3, Send};
use crate::model::trace::TraceHeaders;
use crate::model::Traffic;
use std::rc::Rc;
use std::sync::Arc;

/// A session's connection state, in the run's one protocol, with that protocol's part of the
/// config: HTTP/1.1 and framed sessions hold their own connection, HTTP/2 (gRPC) and HTTP/3
/// sessions are streams of their connection slot's shared one.
pub(super) enum Channel {
    Http1 {
        wire: Arc<Http1Wire>,
        conn: Option<Http1Conn>,
    },
    Http2 {
        wire: Arc<H2Wire>,
        link: Rc<http2::H2Link>,
    },
    Grpc {
        wire: Arc<GrpcWire>,
        link: Rc<http2::H2Link>,
        /// The last call's status.
        status: grpc::Status,
    },
    Http3 {
        wire: Arc<H3Wire>,
        link: Rc<http3::H3Link>,
    },
    Framed {
        wire: Arc<FramedWire>,
        conn: FramedConn,
    },
    WebSocket {
        wire: Arc<WsWire>,
        conn: WsConn,
    },
}

impl Channel {
    /// A new connection slot's first channel (a new link for HTTP/2 and HTTP/3); a
    /// WebSocket's reads messages of at most `max_body_bytes`.
    pub(super) fn new(wire: &Wire, max_body_bytes: u64) -> Channel {
        match wire {
            Wire::Http1(wire) => Channel::Http1 {
                wire: wire.clone(),
                conn: None,
            },
            Wire::Http2(wire) => Channel::Http2 {
                wire: wire.clone(),
                link: Rc::default(),
            },
            Wire::Grpc(wire) => Channel::Grpc {
                wire: wire.clone(),
                link: Rc::default(),
                status: grpc::Status::default(),
            },
            Wire::Http3(wire) => Channel::Http3 {
                wire: wire.clone(),
                link: Rc::default(),
            },
            Wire::Framed(wire) => Channel::Framed {
                conn: FramedConn::new(&wire.plan),
                wire: wire.clone(),
            },
            Wire::WebSocket(wire) => Channel::WebSocket {
                conn: WsConn::new(
                    max_body_bytes,
                    wire.plan.ping,
                    wire.plan.match_path.is_some(),
                ),
                wire: wire.clone(),
            },
        }
    }

    /// Another channel of the same connection slot: HTTP/2's and HTTP/3's share its link.
    pub(super) fn sibling(&self, max_body_bytes: u64) -> Channel {
        match self {
            Channel::Http2 { wire, link } => Channel::Http2 {
                wire: wire.clone(),
                link: link.clone(),
            },
            Channel::Grpc { wire, link, .. } => Channel::Grpc {
                wire: wire.clone(),
                link: link.clone(),
                status: grpc::Status::default(),
            },
            Channel::Http3 { wire, link } => Channel::Http3 {
                wire: wire.clone(),
                link: link.clone(),
            },
            Channel::Http1 { wire, .. } => Channel::new(&Wire::Http1(wire.clone()), max_body_bytes),
            Channel::Framed { wire, .. } => {
                Channel::new(&Wire::Framed(wire.clone()), max_body_bytes)
            }
            Channel::WebSocket { wire, .. } => {
                Channel::new(&Wire::WebSocket(wire.clone()), max_body_bytes)
            }
        }
    }

    /// What the last request's protocol told besides its outcome, into `extras`
    /// (`answered`: it got a complete response): a WebSocket connection's events and pings, a
    /// gRPC call's status; nothing for the other protocols.
    pub(super) fn extras<'a>(&'a self, answered: bool, extras: &mut Extras<'a>) {
        match self {
            Channel::WebSocket { conn, .. } => conn.extras(extras),
            Channel::Grpc { status, .. } if answered => extras.status = status.told(),
            _ => {}
        }
    }

    /// The session's own connection is open (HTTP/1.1, `tcp://`; streams have none).
    pub(super) fn is_open(&self) -> bool {
        match self {
            Channel::Http1 { conn, .. } => conn.is_some(),
            Channel::Framed { conn, .. } => conn.stream.is_some(),
            Channel::WebSocket { conn, .. } => conn.stream.is_some(),
            Channel::Http2 { .. } | Channel::Grpc { .. } | Channel::Http3 { .. } => false,
        }
    }

    /// Drops the session's own connection (streams leave theirs to the link).
    pub(super) fn close(&mut self) {
        match self {
            Channel::Http1 { conn, .. } => *conn = None,
            Channel::Framed { conn, .. } => conn.stream = None,
            Channel::WebSocket { conn, .. } => conn.stream = None,
            Channel::Http2 { .. } | Channel::Grpc { .. } | Channel::Http3 { .. } => {}
        }
    }

    /// Ends what a request left under way on the connection, within `bound`: a WebSocket
    /// subscription's close handshake ([`WsConn::finish_close`]); nothing for the others.
    pub(super) async fn settle(&mut self, bound: std::time::Duration) {
        if let Channel::WebSocket { conn, .. } = self {
            conn.finish_close(bound).await;
        }
    }

    /// Forgets a shared connection: the next stream to need it connects anew (an HTTP/3
    /// stream of this connection still in flight finishes on it).
    pub(super) fn reset_link(&self) {
        match self {
            Channel::Http2 { link, .. } | Channel::Grpc { link, .. } => link.reset(),
            Channel::Http3 { link, .. } => link.reset(),
            Channel::Http1 { .. } | Channel::Framed { .. } | Channel::WebSocket { .. } => {}
        }
    }

    /// What a request would have written, for a failed one (HTTP/1.1 and `tcp://`: the
    /// request; streams, whose frames are the connection's: the body).
    pub(super) fn request_bytes(&self, send: Send<'_>) -> u64 {
        let fixed = match (self, send) {
            (Channel::Http1 { .. } | Channel::Framed { .. }, Send::Rendered { rendered, .. }) => {
                return rendered.bytes.len() as u64
            }
            (Channel::WebSocket { .. }, Send::Rendered { rendered, .. }) => {
                return WsConn::frame_len(rendered.parts.body.len())
            }
            (_, Send::Rendered { rendered, .. }) => return rendered.parts.body.len() as u64,
            (channel, Send::Fixed { .. }) => channel,
        };
        (match fixed {
            Channel::Http1 { wire, .. } => wire.template.bytes().len(),
            Channel::Framed { wire, .. } => wire.plan.payload.len(),
            Channel::WebSocket { wire, conn } => {
                // Compressed where the connection agreed permessage-deflate.
                let (message, _) = super::websocket::deflate::outgoing(conn.deflate, wire);
                return WsConn::frame_len(message.len());
            }
            Channel::Http2 { wire, .. } => wire.request.body.len(),
            Channel::Grpc { wire, .. } => wire.h2.request.body.len(),
            Channel::Http3 { wire, .. } => wire.request.body.len(),
        }) as u64
    }

    /// The bytes a failed request read (a body cut at `--max-body` or by the timeout, a
    /// broken framing): what its connection read since its request went out (HTTP/1.1,
    /// `tcp://`), or the link's share since the last response (HTTP/2, HTTP/3: with the bytes
    /// written, which no later response may carry). Counted in `bytes`, as they did cross.
    pub(super) fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        let (read, written) = match self {
            Channel::Http2 { link, .. } | Channel::Grpc { link, .. } => link.take_failed(),
            Channel::Http3 { link, .. } => link.take_failed(),
            Channel::Framed { conn, .. } => return (conn.read, None),
            Channel::WebSocket { conn, .. } => return (conn.read, None),
            Channel::Http1 { conn, .. } => {
                return (conn.as_ref().map_or(0, |c| c.read_since_send), None)
            }
        };
        (read, Some(written))
    }
}

/// What a response leaves besides its counts: its `Server-Timing` values, the decoder of an
/// encoded body (`--compressed`), the events of a streamed one (kept for their capacity).
pub(super) struct Kept {
    /// The last response's `Server-Timing` values.
    pub(super) timing: Vec<u8>,
    pub(super) decoder: Option<decode::BodyDecoder>,
    pub(super) stream: EventTracker,
}

impl Kept {
    /// Where an HTTP/1.1 response's parts go.
    pub(super) fn http1(&mut self) -> http1::Sinks<'_> {
        http1::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            stream: &mut self.stream,
        }
    }

    /// Where a stream's response parts go (a gRPC call's status to `grpc`).
    /// (`trace`: the request's trace headers, added to its header block).
    pub(super) fn streams<'a>(
        &'a mut self,
        grpc: Option<&'a mut grpc::Status>,
        trace: Option<TraceHeaders<'a>>,
    ) -> http2::Sinks<'a> {
        http2::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            tracker: &mut self.stream,
            grpc,
            trace,
        }
    }
}

/// A complete response of any protocol, as the session counts it.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    pub(super) traffic: Traffic,
    /// The connection may carry another request (else the server ended it).
    pub(super) keep_alive: bool,
    /// What the protocol counted of it (HTTP/2: the server's stream limit, when this request
    /// opened the connection).
    pub(super) events: super::extras::Events,
    /// Where its bytes lay on the connection.
    pub(super) wire: crate::model::Wire,
}

impl From<http1::Response> for Answer {
    fn from(r: http1::Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: r.keep_alive,
            events: Default::default(),
            wire: r.wire,
        }
    }
}

impl From<http2::H2Response> for Answer {
    fn from(r: http2::H2Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            // The server's end of the connection before this one (GOAWAY, or a close), told once.
            keep_alive: !r.server_closed,
            events: r.events(),
            wire: r.wire,
        }
    }
}

impl From<http3::H3Response> for Answer {
    fn from(r: http3::H3Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: !r.server_closed,
            events: Default::default(),
            // QUIC: not TCP, no port to join by.
            wire: crate::model::Wire::default(),
        }
    }
}

impl From<super::websocket::Reply> for Answer {
    fn from(r: super::websocket::Reply) -> Self {
        Answer {
            // A reply message counts as a success, as a framed reply does: no status of its own.
            status: 200,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: r.keep_alive,
            events: Default::default(),
            wire: r.wire,
        }
    }
}

impl From<super::framed::Reply> for Answer {
    fn from(r: super::framed::Reply) -> Self {
        Answer {
            // A complete reply counts as a success: framing has no status of its own.
            status: 200,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: true,
            events: Default::default(),
            wire: r.wire,
        }
    }
}
