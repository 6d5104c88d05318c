//! One interface per protocol, and the one place that dispatches to it. Each protocol's
//! module owns three things: its settings in the plan (its [`ProtocolPlan`] variant), what
//! the run's sessions share, prepared once ([`Protocol`]: today's `Http1Wire`, `H2Wire`, …),
//! and a session's connection state ([`Connection`]: how it opens, sends, reads, closes and
//! what it tells besides its outcome). [`Wire`] and [`Channel`] hold the run's one protocol;
//! their methods are one line each, a `match` with one arm per protocol that calls that
//! protocol's own function directly (enum dispatch: no `dyn` call, no allocation per request).
//! A new protocol adds its module, a variant to each enum and an arm to each list here
//! ([`Wire::new`], [`Wire::copied`], [`Channel::new`], [`Channel::sibling`], the two
//! dispatch macros, and the pipelined batch's, `Session::protocol_batch`). The session's request runs its protocol's exchange through
//! `each_channel!` itself, inside its deadline, so that no future stands between the two.

use super::channel::{Answer, Kept};
use super::extras::Extras;
use super::framed::{FramedChannel, FramedWire};
use super::grpc::{GrpcChannel, GrpcWire};
use super::http1::{Http1Channel, Http1Wire};
use super::http2::{H2Channel, H2Wire};
use super::http3::{H3Channel, H3Wire};
use super::pipeline::Batch;
use super::websocket::{WsChannel, WsWire};
use super::{EngineError, Outcome, Send, Session, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{Phase, Timestamps};
use crate::plan::{ProtocolPlan, RunPlan};
use std::sync::Arc;
use std::time::Duration;

/// What a protocol's sessions share in a run, prepared once from the plan (a request's
/// bytes, a connector, settings), and the connection state ([`Protocol::Channel`]) each of
/// its sessions holds.
pub(super) trait Protocol: Clone {
    /// The protocol's own settings in the plan.
    type Plan;
    /// A session's connection state in this protocol.
    type Channel: Connection;
    /// The shared part of `plan`'s sessions, with the protocol's settings `own`.
    fn new(plan: &RunPlan, own: &Self::Plan) -> Result<Self, SetupError>;
    /// A new connection slot's first channel (a new shared connection for streams); a
    /// WebSocket's reads messages of at most `max_body_bytes`.
    fn channel(wire: &Arc<Self>, max_body_bytes: u64) -> Self::Channel;
    /// Connections are TLS (QUIC's always are).
    fn is_tls(&self) -> bool;
    /// The phases the protocol's requests record besides [`Phase::EVERY_REQUEST`], connect
    /// and TLS: a connection's opening (HTTP/2's handshake, QUIC's, a WebSocket's upgrade).
    fn phases(&self, _phases: &mut Vec<Phase>) {}
    /// Requests in flight per connection (`--pipeline`): 1 where the protocol has none.
    fn pipeline(&self) -> usize {
        1
    }
}

/// A session's connection state in one protocol: what the session calls to open, send,
/// read and close, and what the last request told besides its outcome.
pub(super) trait Connection: Sized {
    /// Another channel of the same connection slot: streams share their connection.
    fn sibling(&self, max_body_bytes: u64) -> Self;
    /// Opens the connection ahead of its first request, stamping connect (and TLS).
    async fn open(
        &mut self,
        config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError>;
    /// Sends one request (opening a connection first if none is open) and reads its
    /// response: what the response leaves goes to `kept`, `trace` goes with the request.
    async fn exchange(
        &mut self,
        config: &SessionConfig,
        kept: &mut Kept,
        trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError>;
    /// A complete response with this `status` came (a gRPC call's status is final then).
    fn answered(&mut self, _status: u16) {}
    /// What the last request told besides its outcome, into `extras` (`answered`: it got a
    /// complete response).
    fn extras<'a>(&'a self, _answered: bool, _extras: &mut Extras<'a>) {}
    /// The session's own connection is open (streams have none).
    fn is_open(&self) -> bool {
        false
    }
    /// Drops the session's own connection (streams leave theirs to the shared one).
    fn close(&mut self) {}
    /// Ends what a request left under way on the connection, within `bound`.
    async fn settle(&mut self, _bound: Duration) {}
    /// Forgets a shared connection: the next stream to need it connects anew.
    fn reset_link(&self) {}
    /// What a request would have written, for a failed one.
    fn request_bytes(&self, send: Send<'_>) -> u64;
    /// The bytes a failed request read, and (streams) the connection's bytes written since
    /// the last response.
    fn read_of_failed(&mut self) -> (u64, Option<u64>);
    /// The request's bytes are stamped by the kernel, so its thread may sleep through it
    /// ([`super::arrival`]); `kept` says whether it decodes or tracks a stream.
    fn stamped(&self, _config: &SessionConfig, _kept: &Kept) -> bool {
        false
    }
    /// The fixed request pipelined batches are made of, and whether its method is HEAD;
    /// `None` where the protocol does not pipeline.
    fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        None
    }
}

/// The protocol of a run's sessions, with what its requests need. The parts are shared by
/// the sessions of a thread (see [`SessionConfig::per_thread`]), each holding its own.
#[derive(Clone)]
pub enum Wire {
    /// HTTP/1.1: a session holds its own connection.
    Http1(Arc<Http1Wire>),
    /// HTTP/2: the sessions of a connection slot are streams of one connection.
    Http2(Arc<H2Wire>),
    /// Unary gRPC calls over HTTP/2.
    Grpc(Arc<GrpcWire>),
    /// HTTP/3 over QUIC: streams of one connection, as HTTP/2's.
    Http3(Arc<H3Wire>),
    /// Framed binary requests on a `tcp://` target.
    Framed(Arc<FramedWire>),
    /// WebSocket messages on a `ws://` or `wss://` target.
    WebSocket(Arc<WsWire>),
}

/// A session's connection state, in the run's one protocol, with that protocol's part of the
/// config: HTTP/1.1, framed and WebSocket sessions hold their own connection, HTTP/2 (gRPC)
/// and HTTP/3 sessions are streams of their connection slot's shared one.
pub(super) enum Channel {
    Http1(Http1Channel),
    Http2(H2Channel),
    Grpc(GrpcChannel),
    Http3(H3Channel),
    Framed(FramedChannel),
    WebSocket(WsChannel),
}

/// `$body` with `$w` bound to the run's wire, whichever its protocol.
macro_rules! each_wire {
    ($wire:expr, $w:ident => $body:expr) => {
        match $wire {
            Wire::Http1($w) => $body,
            Wire::Http2($w) => $body,
            Wire::Grpc($w) => $body,
            Wire::Http3($w) => $body,
            Wire::Framed($w) => $body,
            Wire::WebSocket($w) => $body,
        }
    };
}

/// `$body` with `$c` bound to the session's channel, whichever its protocol: one arm per
/// protocol, each calling that protocol's own [`Connection`] method.
macro_rules! each_channel {
    ($channel:expr, $c:ident => $body:expr) => {
        match $channel {
            Channel::Http1($c) => $body,
            Channel::Http2($c) => $body,
            Channel::Grpc($c) => $body,
            Channel::Http3($c) => $body,
            Channel::Framed($c) => $body,
            Channel::WebSocket($c) => $body,
        }
    };
}
pub(super) use each_channel;

/// The shared part of protocol `P`, with its settings `own` in `plan`.
fn wire<P: Protocol>(plan: &RunPlan, own: &P::Plan) -> Result<Arc<P>, SetupError> {
    P::new(plan, own).map(Arc::new)
}

impl Wire {
    /// The wire of `plan`'s protocol.
    pub(super) fn new(plan: &RunPlan) -> Result<Wire, SetupError> {
        Ok(match &plan.protocol {
            ProtocolPlan::Http1(p) => Wire::Http1(wire(plan, p)?),
            ProtocolPlan::Http2(p) => Wire::Http2(wire(plan, p)?),
            ProtocolPlan::Grpc(p) => Wire::Grpc(wire(plan, p)?),
            ProtocolPlan::Http3(p) => Wire::Http3(wire(plan, p)?),
            ProtocolPlan::Framed(p) => Wire::Framed(wire(plan, p)?),
            ProtocolPlan::WebSocket(p) => Wire::WebSocket(wire(plan, p)?),
        })
    }

    /// The same wire, its parts copied: a thread's own.
    pub(super) fn copied(&self) -> Wire {
        fn own<P: Clone>(w: &Arc<P>) -> Arc<P> {
            Arc::new(P::clone(w))
        }
        match self {
            Wire::Http1(w) => Wire::Http1(own(w)),
            Wire::Http2(w) => Wire::Http2(own(w)),
            Wire::Grpc(w) => Wire::Grpc(own(w)),
            Wire::Http3(w) => Wire::Http3(own(w)),
            Wire::Framed(w) => Wire::Framed(own(w)),
            Wire::WebSocket(w) => Wire::WebSocket(own(w)),
        }
    }

    /// Connections are TLS (QUIC's always are).
    pub fn is_tls(&self) -> bool {
        each_wire!(self, w => w.is_tls())
    }

    /// Adds the phases the protocol's requests record besides every request's, connect and
    /// TLS ([`SessionConfig::phases`]).
    pub(super) fn phases(&self, phases: &mut Vec<Phase>) {
        each_wire!(self, w => w.phases(phases))
    }

    /// The pipeline depth (`--pipeline`): 1 for every protocol but HTTP/1.1 and WebSocket.
    pub(super) fn pipeline(&self) -> usize {
        each_wire!(self, w => w.pipeline())
    }
}

impl Channel {
    /// A new connection slot's first channel (a new link for HTTP/2 and HTTP/3); a
    /// WebSocket's reads messages of at most `max_body_bytes`.
    pub(super) fn new(wire: &Wire, max_body_bytes: u64) -> Channel {
        match wire {
            Wire::Http1(w) => Channel::Http1(Protocol::channel(w, max_body_bytes)),
            Wire::Http2(w) => Channel::Http2(Protocol::channel(w, max_body_bytes)),
            Wire::Grpc(w) => Channel::Grpc(Protocol::channel(w, max_body_bytes)),
            Wire::Http3(w) => Channel::Http3(Protocol::channel(w, max_body_bytes)),
            Wire::Framed(w) => Channel::Framed(Protocol::channel(w, max_body_bytes)),
            Wire::WebSocket(w) => Channel::WebSocket(Protocol::channel(w, max_body_bytes)),
        }
    }

    /// Another channel of the same connection slot: HTTP/2's and HTTP/3's share its link.
    pub(super) fn sibling(&self, max_body_bytes: u64) -> Channel {
        match self {
            Channel::Http1(c) => Channel::Http1(c.sibling(max_body_bytes)),
            Channel::Http2(c) => Channel::Http2(c.sibling(max_body_bytes)),
            Channel::Grpc(c) => Channel::Grpc(c.sibling(max_body_bytes)),
            Channel::Http3(c) => Channel::Http3(c.sibling(max_body_bytes)),
            Channel::Framed(c) => Channel::Framed(c.sibling(max_body_bytes)),
            Channel::WebSocket(c) => Channel::WebSocket(c.sibling(max_body_bytes)),
        }
    }

    /// Opens the connection ahead of its first request ([`Connection::open`]).
    pub(super) async fn open(
        &mut self,
        config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        each_channel!(self, c => c.open(config, stamps).await)
    }

    /// A complete response with `status` came ([`Connection::answered`]).
    pub(super) fn answered(&mut self, status: u16) {
        each_channel!(self, c => c.answered(status))
    }

    /// What the last request's protocol told besides its outcome, into `extras`
    /// (`answered`: it got a complete response): a WebSocket connection's events and pings, a
    /// gRPC call's status; nothing for the other protocols.
    pub(super) fn extras<'a>(&'a self, answered: bool, extras: &mut Extras<'a>) {
        each_channel!(self, c => c.extras(answered, extras))
    }

    /// The session's own connection is open (HTTP/1.1, `tcp://`, WebSocket; streams have
    /// none).
    pub(super) fn is_open(&self) -> bool {
        each_channel!(self, c => c.is_open())
    }

    /// Drops the session's own connection (streams leave theirs to the link).
    pub(super) fn close(&mut self) {
        each_channel!(self, c => c.close())
    }

    /// Ends what a request left under way on the connection, within `bound`: a WebSocket
    /// subscription's close handshake; nothing for the others.
    pub(super) async fn settle(&mut self, bound: Duration) {
        each_channel!(self, c => c.settle(bound).await)
    }

    /// Forgets a shared connection: the next stream to need it connects anew (an HTTP/3
    /// stream of this connection still in flight finishes on it).
    pub(super) fn reset_link(&self) {
        each_channel!(self, c => c.reset_link())
    }

    /// What a request would have written, for a failed one (HTTP/1.1 and `tcp://`: the
    /// request; streams, whose frames are the connection's: the body).
    pub(super) fn request_bytes(&self, send: Send<'_>) -> u64 {
        each_channel!(self, c => c.request_bytes(send))
    }

    /// The bytes a failed request read (a body cut at `--max-body` or by the timeout, a
    /// broken framing): what its connection read since its request went out (HTTP/1.1,
    /// `tcp://`), or the link's share since the last response (HTTP/2, HTTP/3: with the bytes
    /// written, which no later response may carry). Counted in `bytes`, as they did cross.
    pub(super) fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        each_channel!(self, c => c.read_of_failed())
    }

    /// The request's bytes are stamped by the kernel ([`Connection::stamped`]).
    pub(super) fn stamped(&self, config: &SessionConfig, kept: &Kept) -> bool {
        each_channel!(self, c => c.stamped(config, kept))
    }

    /// The fixed request pipelined batches are made of ([`Connection::pipelined_request`]).
    pub(super) fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        each_channel!(self, c => c.pipelined_request())
    }
}

impl Session {
    /// `batch` sent pipelined in the session's protocol's own way
    /// ([`Session::request_batch`]): HTTP/1.1's requests written on its connection, a
    /// WebSocket's messages; in a protocol that does not pipeline every request of it fails
    /// (the load pipelines only where [`Session::pipeline`] is above 1). One `match` per
    /// batch: no `dyn` call, no allocation.
    pub(super) async fn protocol_batch(
        &mut self,
        batch: &mut Batch,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        match self.channel {
            Channel::Http1(_) => self.http1_batch(batch, each).await,
            Channel::WebSocket(_) => self.ws_batch(batch, each).await,
            Channel::Http2(_) | Channel::Grpc(_) | Channel::Http3(_) | Channel::Framed(_) => {
                self.fail_from(batch, 0, &not_pipelined(), each)
            }
        }
    }
}

/// A batch given to a session of a protocol that does not pipeline (the load layer pipelines
/// only where [`Session::pipeline`] is above 1).
pub(super) fn not_pipelined() -> EngineError {
    EngineError::new(
        crate::model::ErrorKind::Write,
        "internal: pipelining is HTTP/1.1's and WebSocket's, not this run's protocol".into(),
    )
}
