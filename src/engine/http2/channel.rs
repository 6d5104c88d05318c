//! HTTP/2 as one of the engine's protocols ([`crate::engine::protocol`]): the request of
//! every stream and the connection's settings, prepared once for the run ([`H2Wire`]), and a
//! session's stream of its connection slot's shared [`H2Link`] ([`H2Channel`]).

use super::{H2Link, H2Response, Tuning};
use crate::engine::channel::{Answer, Kept};
use crate::engine::connect::Connector;
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::request::{Request, RequestTemplate};
use crate::engine::{EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{Phase, Timestamps};
use crate::plan::{Http2Plan, RunPlan};
use std::rc::Rc;
use std::sync::Arc;

/// HTTP/2: the request of every stream (the fixed one; templated requests take its scheme,
/// authority and default headers) and the connection's settings.
#[derive(Clone)]
pub struct H2Wire {
    /// Opens the connections (TCP, and TLS with ALPN `h2` for `https`).
    pub connector: Connector,
    /// The fixed request, or the defaults of templated ones.
    pub request: Request,
    /// The connection's settings and windows.
    pub tuning: Tuning,
}

/// An HTTP/2 session: a stream of its connection slot's link.
pub(in crate::engine) struct H2Channel {
    wire: Arc<H2Wire>,
    link: Rc<H2Link>,
}

impl Tuning {
    /// The settings of `plan`'s connections, with its HTTP/2 settings `h2`.
    pub(in crate::engine) fn of(plan: &RunPlan, h2: &Http2Plan) -> Tuning {
        Tuning {
            window: h2.window,
            coalesce: h2.coalesce,
            gather: h2.gather,
            max_header_list: plan.max_header_bytes as u32,
        }
    }
}

impl H2Wire {
    /// Opens the stream's connection ahead of its first request (a live one is kept).
    pub(in crate::engine) async fn open(
        &self,
        link: &H2Link,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        link.open(&self.connector, self.tuning, stamps).await
    }

    /// The phases of a request on a stream: the connection's handshake, the wait for a
    /// stream.
    pub(in crate::engine) fn stream_phases(phases: &mut Vec<Phase>) {
        phases.extend([Phase::H2Handshake, Phase::StreamWait]);
    }
}

impl Protocol for H2Wire {
    type Plan = Http2Plan;
    type Channel = H2Channel;

    fn new(plan: &RunPlan, own: &Http2Plan) -> Result<Self, SetupError> {
        Ok(H2Wire {
            connector: Connector::new(plan, &[b"h2"])?,
            request: RequestTemplate::http2(plan)?,
            tuning: Tuning::of(plan, own),
        })
    }

    fn channel(wire: &Arc<Self>, _max_body_bytes: u64) -> H2Channel {
        H2Channel {
            wire: wire.clone(),
            link: Rc::default(),
        }
    }

    fn is_tls(&self) -> bool {
        self.connector.is_tls()
    }

    fn phases(&self, phases: &mut Vec<Phase>) {
        H2Wire::stream_phases(phases);
    }
}

impl Connection for H2Channel {
    fn sibling(&self, _max_body_bytes: u64) -> Self {
        H2Channel {
            wire: self.wire.clone(),
            link: self.link.clone(),
        }
    }

    async fn open(
        &mut self,
        _config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.wire.open(&self.link, stamps).await
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
        let (request, fixed) = config.stream_request(&wire.request, None, send)?;
        let sinks = kept.streams(None, trace);
        let connector = &wire.connector;
        super::exchange(link, connector, wire.tuning, &request, fixed, stamps, sinks)
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

impl From<H2Response> for Answer {
    fn from(r: H2Response) -> Self {
        Answer {
            status: r.status,
            bytes_read: r.bytes_read,
            bytes_written: r.bytes_written,
            traffic: r.traffic,
            // The server's end of the connection before this one (GOAWAY, or a close), told once.
            keep_alive: !r.server_closed,
            found_closed: false,
            events: r.events(),
            wire: r.wire,
        }
    }
}

impl Kept {
    /// Where a stream's response parts go (a gRPC call's status to `grpc`).
    /// (`trace`: the request's trace headers, added to its header block).
    pub(in crate::engine) fn streams<'a>(
        &'a mut self,
        grpc: Option<&'a mut crate::engine::grpc::Status>,
        trace: Option<TraceHeaders<'a>>,
    ) -> super::Sinks<'a> {
        super::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            tracker: &mut self.stream,
            grpc,
            trace,
        }
    }
}
