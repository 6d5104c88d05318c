//! Sending requests: [`connect`] opens TCP and TLS connections with timestamps, [`http1`]
//! drives HTTP/1.1 exchanges over them ([`framed`]: pre-built binary requests on `tcp://`
//! targets, with length-prefixed replies), and a [`Session`] is one connection slot of a worker
//! applying the connection policy (keep-alive, reconnect after `Connection: close` or an
//! error) and the per-request timeout ([`pipeline`]: several requests of one connection
//! in flight, `--pipeline`). HTTP/2 ([`http2`]) and HTTP/3 ([`http3`]) send
//! protocol-neutral [`request::Request`]s, and [`grpc`] makes unary gRPC calls over HTTP/2.
//! Errors come back as values with a kind, never panics.

pub mod arrival;
pub mod buffer;
pub mod cause;
pub mod chunked;
pub mod connect;
pub mod deadline;
pub mod decode;
pub mod framed;
pub mod grpc;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod pipeline;
pub mod request;
pub mod server_timing;
pub mod stream;
pub mod trace;

use crate::engine::request::{Request, RequestTemplate};
use crate::model::trace::TraceHeaders;
use crate::model::{ErrorKind, Phase, Timestamps, Traffic};
use crate::plan::RunPlan;
use crate::workload::request::Rendered;
use crate::workload::Workload;
use connect::Connector;
use http1::Http1Conn;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A run's sessions that cannot be set up from its plan (a `--cacert` rustls refuses, a
/// server name or a header HTTP/2 cannot carry): one line naming it. Bad input: exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

crate::util::exit::exit_code!(crate::util::exit::EXIT_USAGE => SetupError);

/// A failed request: its kind (for counting) and a human detail (for the first of a kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub kind: ErrorKind,
    pub detail: String,
    /// HTTP/2: the RST_STREAM error code of a reset stream.
    pub code: Option<u32>,
    /// A failed connection attempt whose reason names its own fix (refused, untrusted
    /// certificate, …): what the fail-fast rule looks at.
    pub cause: Option<cause::Cause>,
}

impl EngineError {
    pub fn new(kind: ErrorKind, detail: String) -> Self {
        EngineError {
            kind,
            detail,
            code: None,
            cause: None,
        }
    }

    /// The same error, with the cause of a failed connection attempt.
    pub fn with_cause(mut self, cause: Option<cause::Cause>) -> Self {
        self.cause = cause;
        self
    }

    /// An I/O error during `what`; resets and broken pipes keep their OS wording.
    pub fn io(kind: ErrorKind, what: String, e: &std::io::Error) -> Self {
        EngineError {
            kind,
            detail: format!("{what}: {}", crate::model::io_reason(e)),
            code: None,
            cause: None,
        }
    }
}

/// What one request gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: Result<u16, EngineError>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Header and body bytes of the response, as received and decoded.
    pub traffic: Traffic,
    /// The server closed the connection after a complete response (this one, or over
    /// HTTP/1.1 the one before: this request found its kept connection closed, and replaced it).
    pub server_closed: bool,
    /// A gRPC call's status code (its message: [`Session::grpc_message`]).
    pub grpc: Option<u32>,
}

/// What every session of a run shares.
#[derive(Clone)]
pub struct SessionConfig {
    pub connector: Connector,
    pub template: RequestTemplate,
    pub timeout: Duration,
    pub max_header_bytes: usize,
    /// HTTP/1.1 requests sent with `Expect: 100-continue` and a body: how long to wait for the
    /// server's `100 Continue` before the body goes anyway (`--expect100-timeout`).
    pub expect_continue: Option<Duration>,
    /// Keep the connection for the next request (`false`: one connection per request).
    pub keepalive: bool,
    /// The whole run's connect rate limit, per second.
    pub max_connects_per_s: Option<f64>,
    /// HTTP/2 and HTTP/3: the request of every stream (the fixed one; templated requests
    /// take its scheme, authority and default headers) and HTTP/2's connection settings.
    pub http2: Option<(Request, http2::Tuning)>,
    /// HTTP/3: opens QUIC connections (`connector` is then unused).
    pub http3: Option<http3::H3Connector>,
    /// The templated requests (their methods and header names), when there are.
    pub workload: Option<Arc<Workload>>,
    /// gRPC: read each call's status; with a codec, the rendered body is JSON to encode.
    pub grpc: bool,
    pub codec: Option<grpc::Codec>,
    /// `--compressed`: decode encoded bodies, keeping at most this many bytes of one.
    pub decode_max_bytes: Option<u64>,
    /// `tcp://`: the framed binary request and its reply's framing; its reply may announce
    /// at most `max_body_bytes`.
    pub framed: Option<crate::plan::FramedPlan>,
    pub max_body_bytes: u64,
    /// `--stream`: what counts as an event of a streamed response.
    pub stream: Option<crate::model::StreamMode>,
    /// `--pipeline`: HTTP/1.1 requests in flight per connection ([`pipeline`]).
    pub pipeline: usize,
    /// `--trace-context`: how each request's trace ids are made (the load gives each request
    /// its ids with [`Session::trace_next`]).
    pub trace: Option<crate::model::trace::TraceContext>,
}

impl SessionConfig {
    /// The phases this run's requests record besides [`Phase::EVERY_REQUEST`]: a connection's
    /// opening (TCP and TLS, HTTP/2's handshake, QUIC's), decoding and a stream's events. The
    /// recorder's histograms of these start full-size, so none grows while the run is timed.
    pub fn phases(&self) -> Vec<Phase> {
        let mut phases = vec![Phase::Connect];
        if self.connector.is_tls() {
            phases.push(Phase::Tls);
        }
        match (&self.http2, &self.http3) {
            (_, Some(_)) => phases.extend([Phase::QuicHandshake, Phase::Quic0Rtt]),
            (Some(_), None) => phases.extend([Phase::H2Handshake, Phase::StreamWait]),
            (None, None) => {}
        }
        if self.decode_max_bytes.is_some() {
            phases.push(Phase::Decode);
        }
        if self.expect_continue.is_some() {
            phases.push(Phase::Continue);
        }
        if self.stream.is_some() {
            phases.extend(Phase::STREAM);
        }
        phases
    }

    /// The shared settings of `plan`'s sessions (HTTP/1.1, HTTP/2 with `--http2` or
    /// `--grpc`, HTTP/3 with `--http3`).
    pub fn new(plan: &RunPlan) -> Result<Self, SetupError> {
        let alpn: &[&[u8]] = if plan.http2.is_some() {
            &[b"h2"]
        } else if plan.http3.is_some() {
            &[b"h3"]
        } else {
            &[b"http/1.1"]
        };
        Ok(SessionConfig {
            connector: Connector::new(plan, alpn)?,
            template: RequestTemplate::http1(plan),
            timeout: plan.timeout,
            max_header_bytes: plan.max_header_bytes,
            expect_continue: plan.expect_continue,
            keepalive: plan.keepalive,
            max_connects_per_s: plan.max_connects_per_s,
            http2: match (&plan.http2, &plan.http3) {
                (Some(h2), _) => {
                    let tuning = http2::Tuning {
                        window: h2.window,
                        coalesce: h2.coalesce,
                        max_header_list: plan.max_header_bytes as u32,
                    };
                    Some((RequestTemplate::http2(plan)?, tuning))
                }
                (None, Some(_)) => Some((RequestTemplate::http2(plan)?, Default::default())),
                (None, None) => None,
            },
            http3: match plan.http3 {
                Some(_) => Some(http3::H3Connector::new(plan)?),
                None => None,
            },
            decode_max_bytes: plan.compressed.then_some(plan.max_body_bytes),
            workload: plan.workload.clone(),
            grpc: plan.grpc.is_some(),
            codec: plan
                .grpc
                .as_ref()
                .and_then(|g| g.encode.clone())
                .map(grpc::Codec::new),
            framed: plan.framed.clone(),
            max_body_bytes: plan.max_body_bytes,
            stream: plan.stream,
            pipeline: plan.pipeline,
            trace: plan.trace.clone(),
        })
    }
}

impl SessionConfig {
    /// A new connection slot's link, which its sessions (streams) share: HTTP/2 or HTTP/3;
    /// `None` for HTTP/1.1 (a session holds its own connection).
    pub fn link(&self) -> Option<Rc<Link>> {
        match (&self.http3, &self.http2) {
            (Some(_), _) => Some(Rc::new(Link::H3(http3::H3Link::default()))),
            (None, Some(_)) => Some(Rc::new(Link::H2(http2::H2Link::default()))),
            (None, None) => None,
        }
    }
}

/// The connection the sessions of one connection slot share.
pub enum Link {
    H2(http2::H2Link),
    H3(http3::H3Link),
}

impl Link {
    /// Forgets the connection: the next stream to need it connects anew.
    fn reset(&self) {
        match self {
            Link::H2(link) => link.reset(),
            Link::H3(link) => link.reset(),
        }
    }
}

/// What one send carries: the run's one fixed request (`seq`: its sequence number, for a
/// framed request's seqid slot), or a request rendered for this send (HTTP/1.1 bytes, or
/// the parts an HTTP/2 stream's request is built from).
#[derive(Debug, Clone, Copy)]
pub enum Send<'a> {
    Fixed { seq: u64 },
    Rendered { rendered: &'a Rendered, head: bool },
}

impl SessionConfig {
    /// The HTTP/2 request of a templated request `rendered` as parts, on the fixed request's
    /// authority; a gRPC call's rendered JSON becomes its framed message.
    fn request_of(&self, fixed: &Request, rendered: &Rendered) -> Result<Request, String> {
        let parts = &rendered.parts;
        let prepared = self
            .workload
            .as_ref()
            .and_then(|w| w.requests.get(parts.id))
            .ok_or("internal: a rendered request without its workload")?;
        let mut request = fixed.with_parts(prepared, parts)?;
        if let Some(codec) = &self.codec {
            request.body = codec.frame_json(&parts.body)?.into();
        }
        Ok(request)
    }
}

/// Spaces the new connections of one worker thread at least `gap` apart
/// (`--max-connections-per-second`, split evenly over the threads).
pub struct ConnectGate {
    gap: Duration,
    next: Cell<Option<Instant>>,
}

impl ConnectGate {
    /// A gate for one thread's share of `per_s` connections per second.
    pub fn new(per_s: f64, threads: usize) -> Self {
        ConnectGate {
            gap: Duration::from_secs_f64(threads as f64 / per_s),
            next: Cell::new(None),
        }
    }

    /// Reserves the next connect slot at or after `now`; returns its time.
    pub fn reserve(&self, now: Instant) -> Instant {
        let slot = self.next.get().map_or(now, |n| n.max(now));
        self.next.set(Some(slot + self.gap));
        slot
    }
}

/// Pause after a connect failed for want of a local port, so a run that exhausted the
/// ephemeral ports keeps going without spinning on the same error.
const ADDR_NOT_AVAIL_BACKOFF: Duration = Duration::from_millis(10);

/// One connection slot: keeps a connection open across requests and reopens it as needed.
pub struct Session {
    config: Rc<SessionConfig>,
    gate: Option<Rc<ConnectGate>>,
    conn: Option<Http1Conn>,
    /// HTTP/2 and HTTP/3: the connection this session's streams share with its siblings.
    link: Option<Rc<Link>>,
    /// The last response's `Server-Timing` values (kept for its capacity).
    timing: Vec<u8>,
    /// HTTP/2: the server's stream limit, when the last request opened the connection.
    max_streams: Option<usize>,
    /// `--compressed`: keeps and decodes encoded bodies.
    decoder: Option<decode::BodyDecoder>,
    /// `tcp://`: the connection, the framed request and the read buffer (`conn` stays empty).
    framed: Option<framed::FramedConn>,
    /// The events of a streamed response (and their gaps, kept for their capacity).
    stream: stream::StreamTracker,
    /// HTTP/1.1: this request found its kept connection closed by the server, and replaced it.
    found_closed: bool,
    /// The requests' timeout ([`deadline`]): armed once, moved when it fires.
    timer: deadline::Timer,
    /// gRPC: the last call's status.
    grpc: Option<grpc::Status>,
    /// `--trace-context`: the ids of the next request (set by the load before each send).
    trace: Option<crate::model::trace::TraceId>,
    /// HTTP/1.1 with trace context: the request with its trace headers (capacity kept).
    traced: Vec<u8>,
}

impl Session {
    pub fn new(
        config: Rc<SessionConfig>,
        gate: Option<Rc<ConnectGate>>,
        link: Option<Rc<Link>>,
    ) -> Self {
        Session {
            gate,
            conn: None,
            link,
            timing: Vec::new(),
            max_streams: None,
            decoder: config.decode_max_bytes.map(decode::BodyDecoder::new),
            framed: config.framed.as_ref().map(framed::FramedConn::new),
            stream: stream::StreamTracker::new(config.stream, config.max_body_bytes),
            found_closed: false,
            timer: None,
            grpc: config.grpc.then(grpc::Status::default),
            trace: None,
            traced: Vec::new(),
            config,
        }
    }

    /// The trace ids the next request carries (`--trace-context`; `None` sends none).
    #[inline]
    pub fn trace_next(&mut self, id: Option<crate::model::trace::TraceId>) {
        self.trace = id;
    }

    /// What every session of the run shares.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// HTTP/2: the server's SETTINGS_MAX_CONCURRENT_STREAMS, if the last request opened the
    /// connection and the server announced one.
    pub fn h2_max_streams(&self) -> Option<usize> {
        self.max_streams
    }

    /// The `Server-Timing` values of the last complete response (headers and trailers).
    pub fn server_timing(&self) -> &[u8] {
        &self.timing
    }

    /// The `grpc-message` of the last gRPC call (empty when it gave none).
    pub fn grpc_message(&self) -> &str {
        self.grpc.as_ref().map_or("", |s| s.message.as_str())
    }

    /// The gaps between the events of the last response, in nanoseconds (empty unless it was
    /// a tracked stream).
    pub fn event_gaps(&self) -> &[u64] {
        self.stream.gaps()
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
        let config = self.config.clone();
        let _awake = arrival::awake::Needed::new();
        let opening = async {
            match (self.link.as_deref(), &config.http2, &config.http3) {
                // HTTP/3's futures are large (quinn, h3): boxed, so that they do not size the
                // task of every connection of every protocol.
                (Some(Link::H3(link)), _, Some(connector)) => {
                    Box::pin(link.open(connector, stamps)).await
                }
                (Some(Link::H2(link)), Some((_, tuning)), _) => {
                    link.open(&config.connector, *tuning, stamps).await
                }
                _ => {
                    let stream = config.connector.connect(stamps).await?;
                    match &mut self.framed {
                        Some(f) => f.stream = Some(stream),
                        None => self.conn = Some(Http1Conn::new(stream)),
                    }
                    Ok(())
                }
            }
        };
        match tokio::time::timeout(config.timeout, opening).await {
            Ok(r) => r,
            Err(_) => Err(EngineError::new(
                ErrorKind::Timeout,
                format!("no connection within {:?}", config.timeout),
            )),
        }
    }

    /// Sends one request, opening a connection first if none is open, within the timeout.
    pub async fn request(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        if !self.is_open() {
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
        if !self.config.keepalive {
            self.close();
            // HTTP/2 (one stream per connection then) and HTTP/3: the next request connects
            // anew (an HTTP/3 stream of this connection still in flight finishes on it).
            if let Some(link) = self.link.as_deref() {
                link.reset();
            }
        }
        if let Err(e) = &outcome.result {
            if e.kind == ErrorKind::AddrNotAvail {
                tokio::time::sleep(ADDR_NOT_AVAIL_BACKOFF).await;
            }
        }
        outcome
    }

    /// A connection is open.
    fn is_open(&self) -> bool {
        self.conn.is_some() || self.framed.as_ref().is_some_and(|f| f.stream.is_some())
    }

    /// Drops the connection.
    fn close(&mut self) {
        self.conn = None;
        if let Some(f) = &mut self.framed {
            f.stream = None;
        }
    }

    async fn request_now(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        let timeout = self.config.timeout;
        // The deadline is derived from the dispatch stamp: no extra clock read per request.
        let deadline = stamps.dispatched + timeout;
        let _awake = self.needs_thread_awake().then(arrival::awake::Needed::new);
        self.stream.idle();
        let mut timer = self.timer.take();
        let result = {
            let exchange = std::pin::pin!(self.exchange(stamps, send));
            deadline::within(&mut timer, deadline, exchange).await
        };
        self.timer = timer;
        // A stream's events, also of one cut short by the timeout.
        if let Some((first, events)) = self.stream.stamps() {
            stamps.first_event = first;
            stamps.events = Some(events);
        }
        // A failed request counts what it would have written (HTTP/1.1: the request; HTTP/2,
        // whose frames are the connection's: the body); a response carries the real figure.
        let request_bytes = match (&self.config.http2, send) {
            (Some((request, _)), Send::Fixed { .. }) => request.body.len() as u64,
            (None, Send::Fixed { .. }) => match &self.config.framed {
                Some(f) => f.payload.len() as u64,
                None => self.config.template.bytes().len() as u64,
            },
            (Some(_), Send::Rendered { rendered, .. }) => rendered.parts.body.len() as u64,
            (None, Send::Rendered { rendered, .. }) => rendered.bytes.len() as u64,
        };
        match result {
            Some(Ok(response)) => {
                // With keep-alive off the close is ours, not the server's.
                let server_closed =
                    (!response.keep_alive && self.config.keepalive) || self.found_closed;
                if !response.keep_alive {
                    self.close();
                }
                Outcome {
                    result: Ok(response.status),
                    bytes_read: response.bytes_read,
                    bytes_written: response.bytes_written,
                    traffic: response.traffic,
                    server_closed,
                    grpc: self.grpc.as_mut().map(|g| g.finish(response.status)),
                }
            }
            Some(Err(e)) => {
                let (bytes_read, wire_written) = self.read_of_failed();
                self.close();
                Outcome {
                    bytes_written: match wire_written {
                        Some(n) => n,
                        None if stamps.written.is_some() => request_bytes,
                        None => 0,
                    },
                    result: Err(e),
                    bytes_read,
                    traffic: Traffic::default(),
                    server_closed: false,
                    grpc: None,
                }
            }
            None => {
                let (bytes_read, wire_written) = self.read_of_failed();
                self.close();
                Outcome {
                    bytes_written: match wire_written {
                        Some(n) => n,
                        None if stamps.written.is_some() => request_bytes,
                        None => 0,
                    },
                    result: Err(EngineError::new(
                        ErrorKind::Timeout,
                        format!("no complete response within {timeout:?}"),
                    )),
                    bytes_read,
                    traffic: Traffic::default(),
                    server_closed: false,
                    grpc: None,
                }
            }
        }
    }

    /// The bytes a failed request read (a body cut at `--max-body` or by the timeout, a
    /// broken framing): what its connection read since its request went out (HTTP/1.1,
    /// `tcp://`), or the link's share since the last response (HTTP/2, HTTP/3: with the bytes
    /// written, which no later response may carry). Counted in `bytes`, as they did cross.
    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        match (self.link.as_deref(), &self.framed) {
            (Some(Link::H2(link)), _) => {
                let (read, written) = link.take_failed();
                (read, Some(written))
            }
            (Some(Link::H3(link)), _) => {
                let (read, written) = link.take_failed();
                (read, Some(written))
            }
            (None, Some(f)) => (f.read, None),
            (None, None) => (self.conn.as_ref().map_or(0, |c| c.read_since_send), None),
        }
    }

    /// Whether this request's phases are timed by the clock when the thread notices them, so
    /// its thread must not sleep through them: all but an HTTP/1.1 exchange over plain TCP
    /// without `--compressed` or `--stream`, whose bytes the kernel stamps ([`arrival`]; its connect, if it
    /// opens one, keeps the thread awake by itself).
    fn needs_thread_awake(&self) -> bool {
        let stamped = self.config.http2.is_none()
            && self.config.http3.is_none()
            && self.framed.is_none()
            && self.decoder.is_none()
            && self.config.stream.is_none()
            && !self.config.connector.is_tls();
        !stamped
    }

    async fn exchange(
        &mut self,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<http1::Response, EngineError> {
        let config = &*self.config;
        self.max_streams = None;
        if let (Some(link), Some((fixed, tuning))) = (self.link.as_deref(), &config.http2) {
            // A rendered request becomes a stream's request (a few allocations, as h2 needs).
            let built;
            let (request, is_fixed) = match send {
                Send::Fixed { .. } => (fixed, true),
                Send::Rendered { rendered, .. } => {
                    built = config
                        .request_of(fixed, rendered)
                        .map_err(|e| EngineError::new(ErrorKind::Write, e))?;
                    (&built, false)
                }
            };
            if let Some(g) = self.grpc.as_mut() {
                g.clear();
            }
            let trace = match (&self.trace, &config.trace) {
                (Some(id), Some(ctx)) => Some(TraceHeaders::new(ctx, id)),
                _ => None,
            };
            let sinks = http2::Sinks {
                timing: &mut self.timing,
                decoder: self.decoder.as_mut(),
                tracker: &mut self.stream,
                grpc: self.grpc.as_mut(),
                trace,
            };
            let r = match (link, &config.http3) {
                (Link::H3(link), Some(connector)) => {
                    Box::pin(http3::exchange(link, connector, request, stamps, sinks)).await?
                }
                (Link::H2(link), _) => {
                    let connector = &config.connector;
                    http2::exchange(link, connector, *tuning, request, is_fixed, stamps, sinks)
                        .await?
                }
                (Link::H3(_), None) => unreachable!("an HTTP/3 link comes with its connector"),
            };
            self.max_streams = r.max_streams;
            // The server's end of the connection before this one (GOAWAY, or a close), told once.
            return Ok(http1::Response {
                status: r.status,
                bytes_read: r.bytes_read,
                bytes_written: r.bytes_written,
                traffic: r.traffic,
                keep_alive: !r.server_closed,
            });
        }
        if let (Some(f), Some(plan), Send::Fixed { seq }) =
            (self.framed.as_mut(), &config.framed, send)
        {
            return f.exchange(config, plan, seq, stamps).await;
        }
        let config = self.config.clone();
        let (bytes, head) = match send {
            Send::Fixed { .. } => (config.template.bytes(), config.template.head),
            Send::Rendered { rendered, head } => (rendered.bytes.as_slice(), head),
        };
        let mut traced = std::mem::take(&mut self.traced);
        let bytes = match (&self.trace, &config.trace) {
            (Some(id), Some(ctx)) => {
                trace::http1_into(&mut traced, bytes, &TraceHeaders::new(ctx, id));
                traced.as_slice()
            }
            _ => bytes,
        };
        self.found_closed = self.drop_if_peer_closed();
        let reused = self.conn.is_some();
        let result = match self.http1_exchange(stamps, bytes, head).await {
            Err(e) if reused && retry_on_a_new_connection(&e, stamps, bytes) => {
                self.found_closed = true;
                self.conn = None;
                stamps.written = None;
                self.http1_exchange(stamps, bytes, head).await
            }
            result => result,
        };
        self.traced = traced;
        result
    }

    /// A kept HTTP/1.1 connection the server closed while idle is dropped before the next
    /// send (which opens a new one); true when it was.
    fn drop_if_peer_closed(&mut self) -> bool {
        let closed = self.conn.as_ref().is_some_and(|c| c.stream.peer_closed());
        if closed {
            self.conn = None;
        }
        closed
    }

    /// Sends `bytes` on this session's HTTP/1.1 connection (opened first if none is open)
    /// and reads the response.
    async fn http1_exchange(
        &mut self,
        stamps: &mut Timestamps,
        bytes: &[u8],
        head: bool,
    ) -> Result<http1::Response, EngineError> {
        let config = &*self.config;
        if self.conn.is_none() {
            let _awake = arrival::awake::Needed::new();
            let stream = config.connector.connect(stamps).await?;
            self.conn = Some(Http1Conn::new(stream));
        }
        let conn = self.conn.as_mut().expect("connection opened above");
        let sinks = http1::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            stream: &mut self.stream,
        };
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

/// Whether a request that failed on a kept connection goes once more on a new one: the
/// server closed that connection as the request went out (the race of an idle timeout: the
/// write failed, or the connection closed or reset before any response byte), and the method
/// is idempotent (RFC 9110 9.2.2), as browsers and curl do.
fn retry_on_a_new_connection(e: &EngineError, stamps: &Timestamps, request: &[u8]) -> bool {
    const IDEMPOTENT: [&[u8]; 6] = [
        b"GET ",
        b"HEAD ",
        b"PUT ",
        b"DELETE ",
        b"OPTIONS ",
        b"TRACE ",
    ];
    matches!(
        e.kind,
        ErrorKind::Write | ErrorKind::Read | ErrorKind::Closed
    ) && stamps.first_byte.is_none()
        && IDEMPOTENT.iter().any(|m| request.starts_with(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{plan::build, Cli, Command};
    use clap::Parser;

    fn phases(url: &str, flags: &[&str]) -> Vec<Phase> {
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        SessionConfig::new(&build(&args, url).unwrap())
            .unwrap()
            .phases()
    }

    #[test]
    fn the_phases_a_run_records_besides_every_requests_follow_its_protocol_and_options() {
        use Phase::*;
        let plain = "http://127.0.0.1:9/";
        let tls = "https://127.0.0.1:9/";
        assert_eq!(phases(plain, &[]), [Connect]);
        assert_eq!(phases(tls, &[]), [Connect, Tls]);
        assert_eq!(
            phases(tls, &["--http2"]),
            [Connect, Tls, H2Handshake, StreamWait]
        );
        assert_eq!(phases(plain, &["--compressed"]), [Connect, Decode]);
        assert_eq!(
            phases(plain, &["-m", "POST", "-H", "expect: 100-Continue"]),
            [Connect, Continue]
        );
        assert_eq!(
            phases(plain, &["--stream", "sse"]),
            [Connect, FirstEvent, EventGap, Events]
        );
    }
}
