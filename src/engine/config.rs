//! What every session of a run shares ([`SessionConfig`]): the protocol at the engine's
//! edge ([`Wire`]: one variant per protocol, each with what its requests need, so that no
//! session holds the parts of a protocol it does not speak; see [`super::protocol`]), and the
//! settings every protocol's sessions read.

use super::protocol::Wire;
use super::request::Request;
use super::{grpc, EngineError, Send, SetupError};
use crate::model::{ErrorKind, Phase};
use crate::plan::RunPlan;
use crate::workload::request::Rendered;
use crate::workload::Workload;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

/// What every session of a run shares.
#[derive(Clone)]
pub struct SessionConfig {
    /// The protocol the sessions speak, with what its requests need.
    pub wire: Wire,
    /// The per-request timeout, connect included (`--timeout`).
    pub timeout: Duration,
    /// The most bytes a response's header list may have (`--max-header-list`; HTTP/1.1: its head).
    pub max_header_bytes: usize,
    /// HTTP/1.1 requests sent with `Expect: 100-continue` and a body: how long to wait for the
    /// server's `100 Continue` before the body goes anyway (`--expect100-timeout`).
    pub expect_continue: Option<Duration>,
    /// Keep the connection for the next request (`false`: one connection per request).
    pub keepalive: bool,
    /// The whole run's connect rate limit, per second.
    pub max_connects_per_s: Option<f64>,
    /// The templated requests (their methods and header names), when there are.
    pub workload: Option<Arc<Workload>>,
    /// `--compressed`: decode encoded bodies, keeping at most this many bytes of one.
    pub decode_max_bytes: Option<u64>,
    /// The most bytes a body (or a framed reply) may have.
    pub max_body_bytes: u64,
    /// `--stream`: what counts as an event of a streamed response.
    pub stream: Option<crate::model::EventMode>,
    /// `--trace-context`: how each request's trace ids are made (the load gives each request
    /// its ids with [`super::Session::trace_next`]).
    pub trace: Option<crate::model::trace::TraceContext>,
}

impl SessionConfig {
    /// The phases this run's requests record besides [`Phase::EVERY_REQUEST`]: a connection's
    /// opening (TCP and TLS, HTTP/2's handshake, QUIC's, a WebSocket's upgrade), decoding and a stream's events. The
    /// recorder's histograms of these start full-size, so none grows while the run is timed.
    pub fn phases(&self) -> Vec<Phase> {
        let mut phases = vec![Phase::Connect];
        if self.wire.is_tls() {
            phases.push(Phase::Tls);
        }
        self.wire.phases(&mut phases);
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

    /// The shared settings of `plan`'s sessions (HTTP/1.1, HTTP/2 with `--http2`, gRPC with
    /// `--grpc`, HTTP/3 with `--http3`, framed on `tcp://`).
    pub fn new(plan: &RunPlan) -> Result<Self, SetupError> {
        Ok(SessionConfig {
            wire: Wire::new(plan)?,
            timeout: plan.timeout,
            max_header_bytes: plan.max_header_bytes,
            expect_continue: plan.expect_continue,
            keepalive: plan.keepalive,
            max_connects_per_s: plan.max_connects_per_s,
            decode_max_bytes: plan.compressed.then_some(plan.max_body_bytes),
            workload: plan.workload.clone(),
            max_body_bytes: plan.max_body_bytes,
            stream: plan.stream,
            trace: plan.trace.clone(),
        })
    }

    /// A worker thread's own copy (its protocol's parts copied too): no reference count is
    /// shared with another thread.
    pub fn per_thread(&self) -> SessionConfig {
        SessionConfig {
            wire: self.wire.copied(),
            ..self.clone()
        }
    }

    /// The pipeline depth (`--pipeline`): 1 for every protocol but HTTP/1.1 and WebSocket.
    pub fn pipeline(&self) -> usize {
        self.wire.pipeline()
    }

    /// A stream's request: the run's fixed one (`true`: its header block is replayed), or one
    /// built from a rendered request (a few allocations, as h2 needs; a gRPC call's rendered
    /// JSON framed by `codec`).
    pub(super) fn stream_request<'a>(
        &self,
        fixed: &'a Request,
        codec: Option<&grpc::Codec>,
        send: Send<'_>,
    ) -> Result<(Cow<'a, Request>, bool), EngineError> {
        match send {
            Send::Fixed { .. } => Ok((Cow::Borrowed(fixed), true)),
            Send::Rendered { rendered, .. } => self
                .request_of(fixed, codec, rendered)
                .map(|r| (Cow::Owned(r), false))
                .map_err(|e| EngineError::new(ErrorKind::Write, e)),
        }
    }

    /// The HTTP/2 or HTTP/3 request of a templated request `rendered` as parts, on the fixed
    /// request's authority; a gRPC call's rendered JSON becomes its framed message (`codec`).
    fn request_of(
        &self,
        fixed: &Request,
        codec: Option<&grpc::Codec>,
        rendered: &Rendered,
    ) -> Result<Request, String> {
        let parts = &rendered.parts;
        let prepared = self
            .workload
            .as_ref()
            .and_then(|w| w.requests.get(parts.id))
            .ok_or("internal: a rendered request without its workload")?;
        let mut request = fixed.with_parts(prepared, parts)?;
        if let Some(codec) = codec {
            request.body = codec.frame_json(&parts.body)?.into();
        }
        Ok(request)
    }
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
            phases("wss://127.0.0.1:9/", &["--data", "x"]),
            [Connect, Tls, WsUpgrade]
        );
        let ws = "ws://127.0.0.1:9/";
        assert_eq!(
            phases(ws, &["--data", "x", "--ws-ping", "1s"]),
            [Connect, WsUpgrade, WsPing]
        );
        assert_eq!(
            phases(ws, &["--data", "x", "--stream", "messages"]),
            [Connect, WsUpgrade, FirstEvent, EventGap, Events]
        );
        // --compressed on a ws target: permessage-deflate, its inflating the decode phase.
        assert_eq!(
            phases(ws, &["--data", "x", "--compressed"]),
            [Connect, WsUpgrade, Decode]
        );
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
