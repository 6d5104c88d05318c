//! Framed binary requests as one of the engine's protocols ([`crate::engine::protocol`]):
//! the connector and the plan's payload and framing ([`FramedWire`]), and a session's own
//! connection ([`FramedChannel`]).

use super::{FramedConn, Reply};
use crate::engine::channel::{Answer, Kept};
use crate::engine::connect::Connector;
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::{EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{ErrorKind, Timestamps};
use crate::plan::{FramedPlan, RunPlan};
use std::sync::Arc;

/// `tcp://`: the framed binary request and its reply's framing.
#[derive(Clone)]
pub struct FramedWire {
    /// Opens the connections to the framed target.
    pub connector: Connector,
    /// The request's bytes and how the reply is framed.
    pub plan: FramedPlan,
}

/// A framed session's own connection.
pub(in crate::engine) struct FramedChannel {
    wire: Arc<FramedWire>,
    conn: FramedConn,
}

impl Protocol for FramedWire {
    type Plan = FramedPlan;
    type Channel = FramedChannel;

    fn new(plan: &RunPlan, own: &FramedPlan) -> Result<Self, SetupError> {
        Ok(FramedWire {
            connector: Connector::new(plan, &[b"http/1.1"])?,
            plan: own.clone(),
        })
    }

    fn channel(wire: &Arc<Self>, _max_body_bytes: u64) -> FramedChannel {
        FramedChannel {
            conn: FramedConn::new(&wire.plan),
            wire: wire.clone(),
        }
    }

    fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }
}

impl Connection for FramedChannel {
    fn sibling(&self, max_body_bytes: u64) -> Self {
        Protocol::channel(&self.wire, max_body_bytes)
    }

    async fn open(
        &mut self,
        _config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.conn.stream = Some(self.wire.connector.connect(stamps).await?);
        Ok(())
    }

    /// Sends the payload, numbered by the send's sequence number: a rendered request is
    /// an internal error.
    async fn exchange(
        &mut self,
        config: &SessionConfig,
        _kept: &mut Kept,
        _trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let Send::Fixed { seq } = send else {
            return Err(EngineError::new(
                ErrorKind::Write,
                "internal: a tcp:// target sends its payload, not a rendered request".into(),
            ));
        };
        let max_body_bytes = config.max_body_bytes;
        self.conn
            .exchange(&self.wire, max_body_bytes, seq, stamps)
            .await
            .map(Answer::from)
    }

    fn is_open(&self) -> bool {
        self.conn.stream.is_some()
    }

    fn close(&mut self) {
        self.conn.stream = None;
    }

    fn request_bytes(&self, send: Send<'_>) -> u64 {
        (match send {
            Send::Rendered { rendered, .. } => rendered.bytes.len(),
            Send::Fixed { .. } => self.wire.plan.payload.len(),
        }) as u64
    }

    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        (self.conn.read, None)
    }
}

impl From<Reply> for Answer {
    fn from(r: Reply) -> Self {
        Answer {
            // A complete reply counts as a success: framing has no status of its own.
            status: 200,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: true,
            found_closed: false,
            events: Default::default(),
            wire: r.wire,
        }
    }
}
