//! HTTP/3 as one of the engine's protocols ([`crate::engine::protocol`]): the QUIC connector
//! and the request of every stream, prepared once for the run ([`H3Wire`]), and a session's
//! stream of its connection slot's shared [`H3Link`] ([`H3Channel`]).

use super::{H3Connector, H3Link, H3Response};
use crate::engine::channel::{Answer, Kept};
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::request::{Request, RequestTemplate};
use crate::engine::{EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{Phase, Timestamps};
use crate::plan::{Http3Plan, RunPlan};
use std::rc::Rc;
use std::sync::Arc;

/// HTTP/3: QUIC connections, and the request of every stream (as HTTP/2's).
#[derive(Clone)]
pub struct H3Wire {
    /// Opens the QUIC connections.
    pub connector: H3Connector,
    /// The request of every stream.
    pub request: Request,
}

/// An HTTP/3 session: a stream of its connection slot's link.
pub(in crate::engine) struct H3Channel {
    wire: Arc<H3Wire>,
    link: Rc<H3Link>,
}

impl Protocol for H3Wire {
    type Plan = Http3Plan;
    type Channel = H3Channel;

    fn new(plan: &RunPlan, own: &Http3Plan) -> Result<Self, SetupError> {
        Ok(H3Wire {
            connector: H3Connector::new(plan, own)?,
            request: RequestTemplate::http2(plan)?,
        })
    }

    fn channel(wire: &Arc<Self>, _max_body_bytes: u64) -> H3Channel {
        H3Channel {
            wire: wire.clone(),
            link: Rc::default(),
        }
    }

    /// QUIC's connections always are.
    fn is_tls(&self) -> bool {
        true
    }

    fn phases(&self, phases: &mut Vec<Phase>) {
        phases.extend([Phase::QuicHandshake, Phase::Quic0Rtt]);
    }
}

impl Connection for H3Channel {
    fn sibling(&self, _max_body_bytes: u64) -> Self {
        H3Channel {
            wire: self.wire.clone(),
            link: self.link.clone(),
        }
    }

    /// Boxed: HTTP/3's futures are large (quinn, h3), and inline they would size the task of
    /// every connection of every protocol.
    async fn open(
        &mut self,
        _config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        Box::pin(self.link.open(&self.wire.connector, stamps)).await
    }

    async fn exchange(
        &mut self,
        config: &SessionConfig,
        kept: &mut Kept,
        trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let (wire, link) = (&*self.wire, &*self.link);
        let (request, _) = config.stream_request(&wire.request, None, send)?;
        let sinks = kept.streams(None, trace);
        Box::pin(super::exchange(
            link,
            &wire.connector,
            &request,
            stamps,
            sinks,
        ))
        .await
        .map(Answer::from)
    }

    fn reset_link(&self) {
        self.link.reset();
    }

    fn request_bytes(&self, send: Send<'_>) -> u64 {
        send.body_or(&self.wire.request.body).len() as u64
    }

    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        let (read, written) = self.link.take_failed();
        (read, Some(written))
    }
}

impl From<H3Response> for Answer {
    fn from(r: H3Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            keep_alive: !r.server_closed,
            found_closed: false,
            events: Default::default(),
            // QUIC: not TCP, no port to join by.
            wire: crate::model::Wire::default(),
        }
    }
}
