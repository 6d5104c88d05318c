//! gRPC as one of the engine's protocols ([`crate::engine::protocol`]): HTTP/2's wire with
//! the call's codec ([`GrpcWire`]), and a session's stream of its slot's shared link with the
//! last call's status ([`GrpcChannel`]), told in the call's extras.

use super::{Codec, Status};
use crate::engine::channel::{Answer, Kept};
use crate::engine::extras::Extras;
use crate::engine::http2::{self, H2Link, H2Wire};
use crate::engine::protocol::{Connection, Protocol};
use crate::engine::{EngineError, Send, SessionConfig, SetupError};
use crate::model::trace::TraceHeaders;
use crate::model::{Phase, Timestamps};
use crate::plan::{GrpcPlan, RunPlan};
use std::rc::Rc;
use std::sync::Arc;

/// gRPC: an HTTP/2 run whose calls' statuses are read; with a codec, a rendered body is
/// JSON to encode.
#[derive(Clone)]
pub struct GrpcWire {
    /// The HTTP/2 side of the calls.
    pub h2: H2Wire,
    /// The codec that encodes a JSON body as the method's input message; `None`: bodies go as
    /// given.
    pub codec: Option<Codec>,
}

/// A gRPC session: a stream of its connection slot's link, and its last call's status.
pub(in crate::engine) struct GrpcChannel {
    wire: Arc<GrpcWire>,
    link: Rc<H2Link>,
    /// The last call's status.
    status: Status,
}

impl Protocol for GrpcWire {
    type Plan = GrpcPlan;
    type Channel = GrpcChannel;

    fn new(plan: &RunPlan, own: &GrpcPlan) -> Result<Self, SetupError> {
        Ok(GrpcWire {
            h2: <H2Wire as Protocol>::new(plan, &own.http2)?,
            codec: own.encode.clone().map(Codec::new),
        })
    }

    fn channel(wire: &Arc<Self>, _max_body_bytes: u64) -> GrpcChannel {
        GrpcChannel {
            wire: wire.clone(),
            link: Rc::default(),
            status: Status::default(),
        }
    }

    fn is_tls(&self) -> bool {
        self.h2.connector.is_tls()
    }

    fn phases(&self, phases: &mut Vec<Phase>) {
        H2Wire::stream_phases(phases);
    }
}

impl Connection for GrpcChannel {
    fn sibling(&self, _max_body_bytes: u64) -> Self {
        GrpcChannel {
            wire: self.wire.clone(),
            link: self.link.clone(),
            status: Status::default(),
        }
    }

    async fn open(
        &mut self,
        _config: &SessionConfig,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.wire.h2.open(&self.link, stamps).await
    }

    async fn exchange(
        &mut self,
        config: &SessionConfig,
        kept: &mut Kept,
        trace: Option<TraceHeaders<'_>>,
        stamps: &mut Timestamps,
        send: Send<'_>,
    ) -> Result<Answer, EngineError> {
        let GrpcChannel { wire, link, status } = self;
        let codec = wire.codec.as_ref();
        let (request, fixed) = config.stream_request(&wire.h2.request, codec, send)?;
        status.clear();
        let sinks = kept.streams(Some(status), trace);
        let (connector, tuning) = (&wire.h2.connector, wire.h2.tuning);
        http2::exchange(link, connector, tuning, &request, fixed, stamps, sinks)
            .await
            .map(Answer::from)
    }

    fn answered(&mut self, status: u16) {
        self.status.finish(status);
    }

    /// The call's status, once it got a complete response.
    fn extras<'a>(&'a self, answered: bool, extras: &mut Extras<'a>) {
        if answered {
            extras.status = self.status.told();
        }
    }

    fn reset_link(&self) {
        self.link.reset();
    }

    fn request_bytes(&self, send: Send<'_>) -> u64 {
        send.body_or(&self.wire.h2.request.body).len() as u64
    }

    fn read_of_failed(&mut self) -> (u64, Option<u64>) {
        let (read, written) = self.link.take_failed();
        (read, Some(written))
    }
}
