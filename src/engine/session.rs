//! A [`Session`]: one connection slot of a worker, applying the connection policy
//! (keep-alive, reconnect after `Connection: close` or an error) and the per-request timeout
//! over its [`Channel`]: the connection state of the one protocol the run speaks. Each
//! protocol's exchange gives its own response type, an [`Answer`] to the session, which
//! makes it the protocol-neutral [`Outcome`] the recorder takes.

use super::channel::{Answer, Channel, Kept};
use super::config::Http1Wire;
use super::events::EventTracker;
use super::extras::{Extras, Tally};
use super::http1::{self, Http1Conn};
use super::request::Request;
use super::{arrival, deadline, decode, grpc, http2, http3};
use super::{ConnectGate, EngineError, Outcome, Send, SessionConfig};
use crate::model::trace::{TraceHeaders, TraceId};
use crate::model::{ErrorKind, Timestamps, Traffic};
use std::borrow::Cow;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Pause after a connect failed for want of a local port, so a run that exhausted the
/// ephemeral ports keeps going without spinning on the same error.
const ADDR_NOT_AVAIL_BACKOFF: Duration = Duration::from_millis(10);

/// One connection slot: keeps a connection open across requests and reopens it as needed.
pub struct Session {
    pub(super) config: Rc<SessionConfig>,
    pub(super) gate: Option<Rc<ConnectGate>>,
    pub(super) channel: Channel,
    pub(super) kept: Kept,
    /// HTTP/1.1: this request found its kept connection closed by the server, and replaced it.
    found_closed: bool,
    /// The requests' timeout ([`deadline`]): armed once, moved when it fires.
    timer: deadline::Timer,
    /// `--trace-context`: the ids of the next request (set by the load before each send).
    trace: Option<TraceId>,
    /// HTTP/1.1 with trace context: the request with its trace headers (capacity kept).
    traced: Vec<u8>,
}

impl Session {
    /// The first session of a new connection slot (HTTP/2 and HTTP/3: with a new link, which
    /// its [`Session::sibling`]s share).
    pub fn new(config: Rc<SessionConfig>, gate: Option<Rc<ConnectGate>>) -> Self {
        let channel = Channel::new(&config.wire, config.max_body_bytes);
        Session::with_channel(config, gate, channel)
    }

    /// The `n` sessions of a new connection slot: over HTTP/2 and HTTP/3, streams of one
    /// connection (the other protocols' slots have one session).
    pub fn slot(
        config: &Rc<SessionConfig>,
        gate: &Option<Rc<ConnectGate>>,
        n: usize,
    ) -> Vec<Session> {
        let first = Session::new(config.clone(), gate.clone());
        let mut sessions = Vec::with_capacity(n.max(1));
        for _ in 1..n {
            sessions.push(first.sibling());
        }
        sessions.insert(0, first);
        sessions
    }

    /// Another session of this one's connection slot: over HTTP/2 and HTTP/3 a stream of the
    /// same connection, else one with its own.
    pub fn sibling(&self) -> Self {
        Session::with_channel(
            self.config.clone(),
            self.gate.clone(),
            self.channel.sibling(self.config.max_body_bytes),
        )
    }

    fn with_channel(
        config: Rc<SessionConfig>,
        gate: Option<Rc<ConnectGate>>,
        channel: Channel,
    ) -> Self {
        Session {
            gate,
            channel,
            kept: Kept {
                timing: Vec::new(),
                decoder: config.decode_max_bytes.map(decode::BodyDecoder::new),
                stream: EventTracker::new(config.stream, config.max_body_bytes),
            },
            found_closed: false,
            timer: None,
            trace: None,
            traced: Vec::new(),
            config,
        }
    }

    /// The trace ids the next request carries (`--trace-context`; `None` sends none).
    #[inline]
    pub fn trace_next(&mut self, id: Option<TraceId>) {
        self.trace = id;
    }

    /// An HTTP/1.1 session's parts, for pipelining ([`super::pipeline`]): the config, the
    /// wire, the connection and what responses leave; `None` for the other protocols.
    pub(super) fn http1_parts(
        &mut self,
    ) -> Option<(
        &SessionConfig,
        &Http1Wire,
        &mut Option<Http1Conn>,
        &mut Kept,
    )> {
        match &mut self.channel {
            Channel::Http1 { wire, conn } => Some((&self.config, wire, conn, &mut self.kept)),
            _ => None,
        }
    }

    /// What every session of the run shares.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The fixed request pipelined batches are made of, and whether its method is HEAD:
    /// HTTP/1.1's request, or a WebSocket's message; `None` for the other protocols, which do
    /// not pipeline.
    pub fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        match &self.channel {
            Channel::Http1 { wire, .. } => Some((wire.template.bytes(), wire.template.head)),
            Channel::WebSocket { wire, .. } => Some((&wire.plan.message, false)),
            _ => None,
        }
    }

    /// Whether the session sends WebSocket messages.
    pub(super) fn is_websocket(&self) -> bool {
        matches!(self.channel, Channel::WebSocket { .. })
    }

    /// The `Server-Timing` values of the last complete response (headers and trailers).
    pub fn server_timing(&self) -> &[u8] {
        &self.kept.timing
    }

    /// The gaps between the events of the last response, in nanoseconds (empty unless it was
    /// a tracked response).
    pub fn event_gaps(&self) -> &[u64] {
        self.kept.stream.gaps()
    }

    /// What the last request's protocol told besides its `outcome` ([`Extras`]): the events
    /// it counted (an HTTP/2 stream's reset code among them; a WebSocket connection's are
    /// taken, told once), a gRPC call's status and a WebSocket connection's pings, borrowed
    /// until the next request. Ask once per outcome.
    pub fn extras(&self, outcome: &Outcome) -> Extras<'_> {
        let mut extras = Extras {
            events: outcome.events,
            ..Extras::default()
        };
        if let Err(EngineError {
            code: Some(code), ..
        }) = &outcome.result
        {
            extras.events.push(Tally::Reset, u64::from(*code));
        }
        self.channel.extras(outcome.result.is_ok(), &mut extras);
        extras
    }

    /// Opens this session's connection ahead of its first request, within the timeout,
    /// stamping connect (and TLS) on `stamps`: an open loop's schedule starts once its
    /// connections are open. The sessions of an HTTP/2 link share its connection: call this on
    /// one of them.
    pub async fn open(&mut self, stamps: &mut Timestamps) -> Result<(), EngineError> {
        if let Some(gate) = &self.gate {
            let now = Instant::now();
            let slot = gate.reserve(now);
            if slot > now {
                tokio::time::sleep_until(slot.into()).await;
            }
        }
        let timeout = self.config.timeout;
        let _awake = arrival::awake::Needed::new();
        let opening = async {
            match &mut self.channel {
                // HTTP/3's futures are large (quinn, h3): boxed, so that they do not size the
                // task of every connection of every protocol.
                Channel::Http3 { wire, link } => Box::pin(link.open(&wire.connector, stamps)).await,
                Channel::Http2 { wire, link } => {
                    link.open(&wire.connector, wire.tuning, stamps).await
                }
                Channel::Grpc { wire, link, .. } => {
                    link.open(&wire.h2.connector, wire.h2.tuning, stamps).await
                }
                Channel::Http1 { wire, conn } => {
                    *conn = Some(Http1Conn::new(wire.connector.connect(stamps).await?));
                    Ok(())
                }
                Channel::Framed { wire, conn } => {
                    conn.stream = Some(wire.connector.connect(stamps).await?);
                    Ok(())
                }
                Channel::WebSocket { wire, conn } => {
                    conn.open(wire, self.config.max_header_bytes, stamps).await
                }
            }
        };
        match tokio::time::timeout(timeout, opening).await {
            Ok(r) => r,
            Err(_) => Err(EngineError::new(
                ErrorKind::Timeout,
                format!("no connection within {timeout:?}"),
            )),
        }
    }

    /// Sends one request, opening a connection first if none is open, within the timeout.
    pub async fn request(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        if !self.channel.is_open() {
            if let Some(gate) = &self.gate {
                // Waiting for a connect slot happens before dispatch: it shows as queue.
                let slot = gate.reserve(stamps.dispatched);
                if slot > stamps.dispatched {
                    tokio::time::sleep_until(slot.into()).await;
                    stamps.dispatched = Instant::now();
                }
            }
        }
        let outcome = self.request_now(stamps, send).await;
        // A WebSocket subscription's close handshake, after its stamps: in no request's time.
        self.channel.settle(self.config.timeout).await;
        if !self.config.keepalive {
            self.channel.close();
            // HTTP/2 (one stream per connection then) and HTTP/3: the next request connects
            // anew (an HTTP/3 stream of this connection still in flight finishes on it).
            self.channel.reset_link();
        }
        if let Err(e) = &outcome.result {
            if e.kind == ErrorKind::AddrNotAvail {
                tokio::time::sleep(ADDR_NOT_AVAIL_BACKOFF).await;
            }
        }
        outcome
    }

    async fn request_now(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        let timeout = self.config.timeout;
        // The deadline is derived from the dispatch stamp: no extra clock read per request.
        let deadline = stamps.dispatched + timeout;
        let _awake = self.needs_thread_awake().then(arrival::awake::Needed::new);
        self.kept.stream.idle();
        let mut timer = self.timer.take();
        let result = {
            let exchange = std::pin::pin!(self.exchange(stamps, send));
            deadline::within(&mut timer, deadline, exchange).await
        };
        self.timer = timer;
        // A streamed response's events, also of one cut short by the timeout.
        if let Some((first, events)) = self.kept.stream.stamps() {
            stamps.first_event = first;
            stamps.events = Some(events);
        }
        let error = match result {
            Some(Ok(answer)) => return self.answered(answer),
            Some(Err(e)) => e,
            None => EngineError::new(
                ErrorKind::Timeout,
                format!("no complete response within {timeout:?}"),
            ),
        };
        let (bytes_read, wire_written) = self.channel.read_of_failed();
        self.channel.close();
        Outcome {
            bytes_written: match wire_written {
                Some(n) => n,
                None if stamps.written.is_some() => self.channel.request_bytes(send),
                None => 0,
            },
            result: Err(error),
            bytes_read,
            traffic: Traffic::default(),
            server_closed: false,
            events: Default::default(),
            wire: crate::model::Wire::default(),
        }
    }

    /// The outcome of a complete response.
    fn answered(&mut self, answer: Answer) -> Outcome {
        // With keep-alive off the close is ours, not the server's.
        let server_closed = (!answer.keep_alive && self.config.keepalive) || self.found_closed;
        if !answer.keep_alive {
            self.channel.close();
        }
        if let Channel::Grpc { status, .. } = &mut self.channel {
            status.finish(answer.status);
        }
        Outcome {
            result: Ok(answer.status),
            bytes_read: answer.bytes_read,
            bytes_written: answer.bytes_written,
            traffic: answer.traffic,
            server_closed,
            events: answer.events,
            wire: answer.wire,
        }
    }

    /// Whether this request's phases are timed by the clock when the thread notices them, so
    /// its thread must not sleep through them: all but an HTTP/1.1 exchange over plain TCP
    /// without `--compressed` or `--stream`, or a `ws://` message alone (no TLS, HTTP/2,
    /// subscription, pings, deflate or batch), whose bytes the kernel stamps ([`arrival`]; its
    /// connect or upgrade, if it opens one, keeps the thread awake by itself).
    pub(super) fn needs_thread_awake(&self) -> bool {
        let stamped = match &self.channel {
            Channel::Http1 { wire, .. } => {
                self.kept.decoder.is_none()
                    && self.config.stream.is_none()
                    && !wire.connector.is_tls()
            }
            // ws:// over TCP reads with the kernel's stamps too; a subscription's messages,
            // pings, inflating and a batch in flight are timed as they are read.
            Channel::WebSocket { wire, .. } => {
                let ws = &wire.plan;
                !wire.connector.is_tls()
                    && !ws.http2
                    && !ws.subscribe
                    && ws.ping.is_none()
                    && ws.pipeline <= 1
                    && wire.deflated.is_none()
            }
            _ => false,
        };
        !stamped
    }

    async fn exchange(
        &mut self,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let Session {
            config,
            channel,
            kept,
            found_closed,
            trace,
            traced,
            ..
        } = self;
        let trace = match (&*trace, &config.trace) {
            (Some(id), Some(ctx)) => Some(TraceHeaders::new(ctx, id)),
            _ => None,
        };
        match channel {
            Channel::Http1 { wire, conn } => {
                let (bytes, head) = http1_bytes(wire, send, trace.as_ref(), traced);
                let mut h1 = Http1 { config, wire, kept };
                h1.exchange_or_retry(conn, stamps, bytes, head, found_closed)
                    .await
                    .map(Answer::from)
            }
            Channel::Framed { wire, conn } => {
                let Send::Fixed { seq } = send else {
                    return Err(EngineError::new(
                        ErrorKind::Write,
                        "internal: a tcp:// target sends its payload, not a rendered request"
                            .into(),
                    ));
                };
                conn.exchange(wire, config.max_body_bytes, seq, stamps)
                    .await
                    .map(Answer::from)
            }
            Channel::WebSocket { wire, conn } => {
                let (message, max_head) =
                    (send.body_or(&wire.plan.message), config.max_header_bytes);
                conn.exchange(wire, message, max_head, stamps, &mut kept.stream)
                    .await
                    .map(Answer::from)
            }
            Channel::Http2 { wire, link } => {
                let (request, fixed) = stream_request(config, &wire.request, None, send)?;
                let sinks = kept.streams(None, trace);
                let connector = &wire.connector;
                http2::exchange(link, connector, wire.tuning, &request, fixed, stamps, sinks)
                    .await
                    .map(Answer::from)
            }
            Channel::Grpc { wire, link, status } => {
                let codec = wire.codec.as_ref();
                let (request, fixed) = stream_request(config, &wire.h2.request, codec, send)?;
                status.clear();
                let sinks = kept.streams(Some(status), trace);
                let (connector, tuning) = (&wire.h2.connector, wire.h2.tuning);
                http2::exchange(link, connector, tuning, &request, fixed, stamps, sinks)
                    .await
                    .map(Answer::from)
            }
            Channel::Http3 { wire, link } => {
                let (request, _) = stream_request(config, &wire.request, None, send)?;
                let sinks = kept.streams(None, trace);
                Box::pin(http3::exchange(
                    link,
                    &wire.connector,
                    &request,
                    stamps,
                    sinks,
                ))
                .await
                .map(Answer::from)
            }
        }
    }
}

/// A stream's request: the run's fixed one (`true`: its header block is replayed), or one
/// built from a rendered request (a few allocations, as h2 needs).
fn stream_request<'a>(
    config: &SessionConfig,
    fixed: &'a Request,
    codec: Option<&grpc::Codec>,
    send: Send<'_>,
) -> Result<(Cow<'a, Request>, bool), EngineError> {
    match send {
        Send::Fixed { .. } => Ok((Cow::Borrowed(fixed), true)),
        Send::Rendered { rendered, .. } => config
            .request_of(fixed, codec, rendered)
            .map(|r| (Cow::Owned(r), false))
            .map_err(|e| EngineError::new(ErrorKind::Write, e)),
    }
}

/// A kept HTTP/1.1 connection the server closed while idle is dropped before the next
/// send (which opens a new one); true when it was.
pub(super) fn drop_if_peer_closed(conn: &mut Option<Http1Conn>) -> bool {
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
            super::trace::http1_into(traced, bytes, headers);
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
    /// [`Http1::exchange`], tried again on a new connection when a kept one turned out closed
    /// before anything came back (`found_closed`: the kept one was found closed).
    async fn exchange_or_retry(
        &mut self,
        conn: &mut Option<Http1Conn>,
        stamps: &mut Timestamps,
        bytes: &[u8],
        head: bool,
        found_closed: &mut bool,
    ) -> Result<http1::Response, EngineError> {
        *found_closed = drop_if_peer_closed(conn);
        let reused = conn.is_some();
        match self.exchange(conn, stamps, bytes, head).await {
            Err(e) if reused && super::retry_on_a_new_connection(&e, stamps, bytes) => {
                *found_closed = true;
                *conn = None;
                stamps.written = None;
                self.exchange(conn, stamps, bytes, head).await
            }
            result => result,
        }
    }

    /// Sends `bytes` on `conn` (opened first if none is open) and reads the response.
    async fn exchange(
        &mut self,
        conn: &mut Option<Http1Conn>,
        stamps: &mut Timestamps,
        bytes: &[u8],
        head: bool,
    ) -> Result<http1::Response, EngineError> {
        let config = self.config;
        let conn = match conn {
            Some(c) => c,
            None => {
                let _awake = arrival::awake::Needed::new();
                let socket = self.wire.connector.connect(stamps).await?;
                conn.insert(Http1Conn::new(socket))
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
