//! WebSocket as one of the engine's protocols ([`crate::engine::protocol`]): the upgrade
//! request's head, the message and its deflated form, prepared once for the run
//! ([`WsWire`]), and a session's own connection ([`WsChannel`]), whose events, pings and
//! close travel in the request's extras.

use super::over_h2::Connect;
use super::{deflate, Reply, WsConn};
use crate::engine::channel::{Answer, Kept};
use crate::engine::connect::Connector;
use crate::engine::extras::Extras;
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::request::RequestTemplate;
use crate::engine::{EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{Phase, Timestamps};
use crate::plan::{RunPlan, WsPlan};
use std::sync::Arc;
use std::time::Duration;

/// `ws://`, `wss://`: the upgrade request's head and the message.
#[derive(Clone)]
pub struct WsWire {
    /// Opens the connections (TCP, and TLS with ALPN `http/1.1` for `wss://`, `h2` with
    /// `--http2`).
    pub connector: Connector,
    /// The upgrade request's request line, Host, User-Agent and the user's headers (each line
    /// ended; the WebSocket headers and the key are added per connection).
    pub head: Vec<u8>,
    /// The message and its kind.
    pub plan: WsPlan,
    /// `--http2`: the extended CONNECT (RFC 8441) that opens each connection's stream, instead
    /// of the HTTP/1.1 upgrade of `head`.
    pub connect: Option<Connect>,
    /// `--compressed`: the message deflated once for the run, sent compressed where a
    /// connection agreed permessage-deflate (the upgrade offers it: [`deflate`]).
    pub deflated: Option<Vec<u8>>,
}

/// A WebSocket session's own connection.
pub(in crate::engine) struct WsChannel {
    pub(in crate::engine) wire: Arc<WsWire>,
    pub(in crate::engine) conn: WsConn,
}

impl Protocol for WsWire {
    type Plan = WsPlan;
    type Channel = WsChannel;

    /// The WebSocket wire of `plan`: its head is HTTP/1.1's fixed GET request, without body.
    fn new(plan: &RunPlan, ws: &WsPlan) -> Result<WsWire, SetupError> {
        let get = RunPlan {
            method: "GET".into(),
            body: Vec::new(),
            keepalive: true,
            compressed: false,
            ..plan.clone()
        };
        let mut head = RequestTemplate::http1(&get).bytes().to_vec();
        // Without the blank line that ends it: the upgrade's headers go after.
        head.truncate(head.len().saturating_sub(2));
        let (alpn, connect): (&[u8], _) = if ws.http2 {
            (b"h2", Some(Connect::new(&get)?))
        } else {
            (b"http/1.1", None)
        };
        if plan.compressed {
            head.extend_from_slice(deflate::OFFER);
        }
        Ok(WsWire {
            connector: Connector::new(plan, &[alpn])?,
            head,
            plan: ws.clone(),
            connect,
            deflated: plan.compressed.then(|| deflate::deflated(&ws.message)),
        })
    }

    fn channel(wire: &Arc<Self>, max_body_bytes: u64) -> WsChannel {
        let plan = &wire.plan;
        WsChannel {
            conn: WsConn::new(max_body_bytes, plan.ping, plan.match_path.is_some()),
            wire: wire.clone(),
        }
    }

    fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }

    /// The upgrade; over HTTP/2 its connection's handshake; with `--ws-ping` the pings.
    fn phases(&self, phases: &mut Vec<Phase>) {
        phases.push(Phase::WsUpgrade);
        if self.connect.is_some() {
            phases.push(Phase::H2Handshake);
        }
        if self.plan.ping.is_some() {
            phases.push(Phase::WsPing);
        }
    }

    fn pipeline(&self) -> usize {
        self.plan.pipeline
    }
}

impl Connection for WsChannel {
    fn sibling(&self, max_body_bytes: u64) -> Self {
        Protocol::channel(&self.wire, max_body_bytes)
    }

    async fn open(
        &mut self,
        config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.conn
            .open(&self.wire, config.max_header_bytes, stamps)
            .await
    }

    /// Sends the plan's message (or the one rendered for this send) and reads its reply; a
    /// subscription's messages go to `kept`'s stream.
    async fn exchange(
        &mut self,
        config: &SessionConfig,
        kept: &mut Kept,
        _trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let wire = &*self.wire;
        let (message, max_head) = (send.body_or(&wire.plan.message), config.max_header_bytes);
        self.conn
            .exchange(wire, message, max_head, stamps, &mut kept.stream)
            .await
            .map(Answer::from)
    }

    /// The connection's events and pings.
    fn extras<'a>(&'a self, _answered: bool, extras: &mut Extras<'a>) {
        self.conn.extras(extras);
    }

    fn is_open(&self) -> bool {
        self.conn.stream.is_some()
    }

    fn close(&mut self) {
        self.conn.stream = None;
    }

    /// A subscription's close handshake ([`WsConn::finish_close`]).
    async fn settle(&mut self, bound: Duration) {
        self.conn.finish_close(bound).await;
    }

    /// The message's frame (compressed where the connection agreed permessage-deflate).
    fn request_bytes(&self, send: Send<'_>) -> u64 {
        match send {
            Send::Rendered { rendered, .. } => WsConn::frame_len(rendered.parts.body.len()),
            Send::Fixed { .. } => {
                let (message, _) = deflate::outgoing(self.conn.deflate, &self.wire);
                WsConn::frame_len(message.len())
            }
        }
    }

    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        (self.conn.read, None)
    }

    /// `ws://` over TCP reads with the kernel's stamps too; a subscription's messages,
    /// pings, inflating and a batch in flight are timed as they are read.
    fn stamped(&self, _config: &SessionConfig, _kept: &Kept) -> bool {
        let (wire, ws) = (&*self.wire, &self.wire.plan);
        !wire.connector.is_tls()
            && !ws.http2
            && !ws.subscribe
            && ws.ping.is_none()
            && ws.pipeline <= 1
            && wire.deflated.is_none()
    }

    fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        Some((&self.wire.plan.message, false))
    }
}

impl From<Reply> for Answer {
    fn from(r: Reply) -> Self {
        Answer {
            // A reply message counts as a success, as a framed reply does: no status of its own.
            status: 200,
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
