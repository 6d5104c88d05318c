//! HTTP/1.1 as one of the engine's protocols ([`crate::engine::protocol`]): the request's
//! bytes, prepared once for the run ([`Http1Wire`]), and a session's own connection
//! ([`Http1Channel`]), sent on again while the server keeps it, replaced once when a kept one
//! turns out closed under an idempotent request.

use super::{Http1Conn, Response};
use crate::engine::channel::{Answer, Kept};
use crate::engine::connect::Connector;
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::request::RequestTemplate;
use crate::engine::{arrival, EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::Timestamps;
use crate::plan::{Http1Plan, RunPlan};
use std::sync::Arc;

/// HTTP/1.1: the fixed request's bytes, prepared once.
#[derive(Clone)]
pub struct Http1Wire {
    /// Opens the connections (TCP, and TLS for `https`).
    pub connector: Connector,
    /// The fixed request, rendered once.
    pub template: RequestTemplate,
    /// `--pipeline`: requests in flight per connection ([`crate::engine::pipeline`]).
    pub pipeline: usize,
}

/// An HTTP/1.1 session's connection: its own, opened at its first request.
pub(in crate::engine) struct Http1Channel {
    pub(in crate::engine) wire: Arc<Http1Wire>,
    pub(in crate::engine) conn: Option<Http1Conn>,
    /// With trace context: the request with its trace headers (capacity kept).
    traced: Vec<u8>,
}

impl Protocol for Http1Wire {
    type Plan = Http1Plan;
    type Channel = Http1Channel;

    fn new(plan: &RunPlan, own: &Http1Plan) -> Result<Self, SetupError> {
        Ok(Http1Wire {
            connector: Connector::new(plan, &[b"http/1.1"])?,
            template: RequestTemplate::http1(plan),
            pipeline: own.pipeline,
        })
    }

    fn channel(wire: &Arc<Self>, _max_body_bytes: u64) -> Http1Channel {
        Http1Channel {
            wire: wire.clone(),
            conn: None,
            traced: Vec::new(),
        }
    }

    fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }

    fn pipeline(&self) -> usize {
        self.pipeline
    }
}

impl Connection for Http1Channel {
    fn sibling(&self, max_body_bytes: u64) -> Self {
        Protocol::channel(&self.wire, max_body_bytes)
    }

    async fn open(
        &mut self,
        _config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.conn = Some(Http1Conn::new(self.wire.connector.connect(stamps).await?));
        Ok(())
    }

    /// Sends the request and reads its response; tried again on a new connection when a kept
    /// one turned out closed before anything came back (the answer's `found_closed`: the kept
    /// one was found closed).
    async fn exchange(
        &mut self,
        config: &SessionConfig,
        kept: &mut Kept,
        trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let Http1Channel { wire, conn, traced } = self;
        let (bytes, head) = http1_bytes(wire, send, trace.as_ref(), traced);
        let mut h1 = Http1 { config, wire, kept };
        let mut found_closed = drop_if_peer_closed(conn);
        let reused = conn.is_some();
        let response = match h1.exchange(conn, stamps, bytes, head).await {
            Err(e) if reused && crate::engine::retry_on_a_new_connection(&e, stamps, bytes) => {
                found_closed = true;
                *conn = None;
                stamps.written = None;
                h1.exchange(conn, stamps, bytes, head).await
            }
            result => result,
        }?;
        Ok(Answer {
            found_closed,
            ..Answer::from(response)
        })
    }

    fn is_open(&self) -> bool {
        self.conn.is_some()
    }

    fn close(&mut self) {
        self.conn = None;
    }

    fn request_bytes(&self, send: Send<'_>) -> u64 {
        (match send {
            Send::Rendered { rendered, .. } => rendered.bytes.len(),
            Send::Fixed { .. } => self.wire.template.bytes().len(),
        }) as u64
    }

    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        (self.conn.as_ref().map_or(0, |c| c.read_since_send), None)
    }

    /// Over plain TCP without `--compressed` or `--stream`.
    fn stamped(&self, config: &SessionConfig, kept: &Kept) -> bool {
        kept.decoder.is_none() && config.stream.is_none() && !self.wire.connector.is_tls()
    }

    fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        Some((self.wire.template.bytes(), self.wire.template.head))
    }
}

impl Kept {
    /// Where an HTTP/1.1 response's parts go.
    pub(in crate::engine) fn http1(&mut self) -> super::Sinks<'_> {
        super::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            stream: &mut self.stream,
        }
    }
}

impl From<Response> for Answer {
    fn from(r: Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: r.keep_alive,
            found_closed: false,
            events: Default::default(),
            wire: r.wire,
        }
    }
}

/// A kept HTTP/1.1 connection the server closed while idle is dropped before the next
/// send (which opens a new one); true when it was.
pub(in crate::engine) fn drop_if_peer_closed(conn: &mut Option<Http1Conn>) -> bool {
    let closed = conn.as_ref().is_some_and(|c| c.socket.peer_closed());
    if closed {
        *conn = None;
    }
    closed
}

/// The bytes of an HTTP/1.1 request (the run's fixed one, or one rendered for this send),
/// with the trace headers when there are (written into `traced`), and whether it is a HEAD.
fn http1_bytes<'a>(
    wire: &'a Http1Wire,
    send: Send<'a>,
    trace: Option<&TraceHeaders<'_>>,
    traced: &'a mut Vec<u8>,
) -> (&'a [u8], bool) {
    let (bytes, head) = match send {
        Send::Fixed { .. } => (wire.template.bytes(), wire.template.head),
        Send::Rendered { rendered, head } => (rendered.bytes.as_slice(), head),
    };
    let bytes = match trace {
        Some(headers) => {
            crate::engine::trace::http1_into(traced, bytes, headers);
            traced.as_slice()
        }
        None => bytes,
    };
    (bytes, head)
}

/// What an HTTP/1.1 exchange reads besides its connection.
struct Http1<'a> {
    config: &'a SessionConfig,
    wire: &'a Http1Wire,
    kept: &'a mut Kept,
}

impl Http1<'_> {
    /// Sends `bytes` on `conn` (opened first if none is open) and reads the response.
    async fn exchange(
        &mut self,
        conn: &mut Option<Http1Conn>,
        stamps: &mut Timestamps,
        bytes: &[u8],
        head: bool,
    ) -> Result<Response, EngineError> {
        let config = self.config;
        let conn = match conn {
            Some(c) => c,
            None => {
                let _awake = arrival::awake::Needed::new();
                let stream = self.wire.connector.connect(stamps).await?;
                conn.insert(Http1Conn::new(stream))
            }
        };
        let sinks = self.kept.http1();
        if let Some(bound) = config.expect_continue {
            let max = config.max_header_bytes;
            let response = conn
                .exchange_expecting(bound, max, stamps, bytes, head, sinks)
                .await;
            conn.buf.release();
            return response;
        }
        // Send, then read: one future each, none around them (a nested one costs).
        let response = match conn.send_all(bytes).await {
            Ok(written) => {
                stamps.written = Some(written);
                conn.read_response(head, config.max_header_bytes, stamps, sinks, false)
                    .await
                    .map(|r| r.written(bytes.len() as u64))
            }
            Err(e) => Err(e),
        };
        // Idle again: the read buffer goes back to the thread's pool (on an error the
        // connection is dropped, and its buffer with it goes back too).
        conn.buf.release();
        response
    }
}
