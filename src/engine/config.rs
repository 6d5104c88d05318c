//! What every session of a run shares ([`SessionConfig`]), and the protocol at the engine's
//! edge ([`Wire`]): one variant per protocol, each with what its requests need (HTTP/1.1's
//! prepared bytes, HTTP/2's and HTTP/3's request, a gRPC call's codec, a framed payload), so
//! that no session holds the parts of a protocol it does not speak.

use super::connect::Connector;
use super::request::{Request, RequestTemplate};
use super::{grpc, http2, http3, websocket, SetupError};
use crate::model::Phase;
use crate::plan::{FramedPlan, ProtocolPlan, RunPlan, WsPlan};
use crate::workload::request::Rendered;
use crate::workload::Workload;
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

/// HTTP/1.1: the fixed request's bytes, prepared once.
#[derive(Clone)]
pub struct Http1Wire {
    /// Opens the connections (TCP, and TLS for `https`).
    pub connector: Connector,
    /// The fixed request, rendered once.
    pub template: RequestTemplate,
    /// `--pipeline`: requests in flight per connection ([`super::pipeline`]).
    pub pipeline: usize,
}

/// HTTP/2: the request of every stream (the fixed one; templated requests take its scheme,
/// authority and default headers) and the connection's settings.
#[derive(Clone)]
pub struct H2Wire {
    /// Opens the connections (TCP, and TLS with ALPN `h2` for `https`).
    pub connector: Connector,
    /// The fixed request, or the defaults of templated ones.
    pub request: Request,
    /// The connection's settings and windows.
    pub tuning: http2::Tuning,
}

/// gRPC: an HTTP/2 run whose calls' statuses are read; with a codec, a rendered body is
/// JSON to encode.
#[derive(Clone)]
pub struct GrpcWire {
    /// The HTTP/2 side of the calls.
    pub h2: H2Wire,
    /// The codec that encodes a JSON body as the method's input message; `None`: bodies go as
    /// given.
    pub codec: Option<grpc::Codec>,
}

/// HTTP/3: QUIC connections, and the request of every stream (as HTTP/2's).
#[derive(Clone)]
pub struct H3Wire {
    /// Opens the QUIC connections.
    pub connector: http3::H3Connector,
    /// The request of every stream.
    pub request: Request,
}

/// `tcp://`: the framed binary request and its reply's framing.
#[derive(Clone)]
pub struct FramedWire {
    /// Opens the connections to the framed target.
    pub connector: Connector,
    /// The request's bytes and how the reply is framed.
    pub plan: FramedPlan,
}

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
    pub connect: Option<super::websocket::over_h2::Connect>,
    /// `--compressed`: the message deflated once for the run, sent compressed where a
    /// connection agreed permessage-deflate (the upgrade offers it: [`websocket::deflate`]).
    pub deflated: Option<Vec<u8>>,
}

impl WsWire {
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
            (b"h2", Some(super::websocket::over_h2::Connect::new(&get)?))
        } else {
            (b"http/1.1", None)
        };
        if plan.compressed {
            head.extend_from_slice(websocket::deflate::OFFER);
        }
        Ok(WsWire {
            connector: Connector::new(plan, &[alpn])?,
            head,
            plan: ws.clone(),
            connect,
            deflated: plan
                .compressed
                .then(|| websocket::deflate::deflated(&ws.message)),
        })
    }
}

impl Wire {
    /// The wire of `plan`'s protocol.
    fn new(plan: &RunPlan) -> Result<Wire, SetupError> {
        let h2 = |tuning: http2::Tuning| -> Result<H2Wire, SetupError> {
            Ok(H2Wire {
                connector: Connector::new(plan, &[b"h2"])?,
                request: RequestTemplate::http2(plan)?,
                tuning,
            })
        };
        let tuning = |h2: &crate::plan::Http2Plan| http2::Tuning {
            window: h2.window,
            coalesce: h2.coalesce,
            gather: h2.gather,
            max_header_list: plan.max_header_bytes as u32,
        };
        Ok(match &plan.protocol {
            ProtocolPlan::Http1(h1) => Wire::Http1(Arc::new(Http1Wire {
                connector: Connector::new(plan, &[b"http/1.1"])?,
                template: RequestTemplate::http1(plan),
                pipeline: h1.pipeline,
            })),
            ProtocolPlan::Http2(p) => Wire::Http2(Arc::new(h2(tuning(p))?)),
            ProtocolPlan::Grpc(g) => Wire::Grpc(Arc::new(GrpcWire {
                h2: h2(tuning(&g.http2))?,
                codec: g.encode.clone().map(grpc::Codec::new),
            })),
            ProtocolPlan::Http3(h3) => Wire::Http3(Arc::new(H3Wire {
                connector: http3::H3Connector::new(plan, h3)?,
                request: RequestTemplate::http2(plan)?,
            })),
            ProtocolPlan::Framed(f) => Wire::Framed(Arc::new(FramedWire {
                connector: Connector::new(plan, &[b"http/1.1"])?,
                plan: f.clone(),
            })),
            ProtocolPlan::WebSocket(ws) => Wire::WebSocket(Arc::new(WsWire::new(plan, ws)?)),
        })
    }

    /// The same wire, its parts copied: a thread's own.
    fn copied(&self) -> Wire {
        match self {
            Wire::Http1(w) => Wire::Http1(Arc::new(Http1Wire::clone(w))),
            Wire::Http2(w) => Wire::Http2(Arc::new(H2Wire::clone(w))),
            Wire::Grpc(w) => Wire::Grpc(Arc::new(GrpcWire::clone(w))),
            Wire::Http3(w) => Wire::Http3(Arc::new(H3Wire::clone(w))),
            Wire::Framed(w) => Wire::Framed(Arc::new(FramedWire::clone(w))),
            Wire::WebSocket(w) => Wire::WebSocket(Arc::new(WsWire::clone(w))),
        }
    }

    /// Connections are TLS (QUIC's always are).
    pub fn is_tls(&self) -> bool {
        match self {
            Wire::Http1(w) => w.connector.is_tls(),
            Wire::Http2(w) => w.connector.is_tls(),
            Wire::Grpc(w) => w.h2.connector.is_tls(),
            Wire::Http3(_) => true,
            Wire::Framed(w) => w.connector.is_tls(),
            Wire::WebSocket(w) => w.connector.is_tls(),
        }
    }
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
        match &self.wire {
            Wire::Http3(_) => phases.extend([Phase::QuicHandshake, Phase::Quic0Rtt]),
            Wire::Http2(_) | Wire::Grpc(_) => {
                phases.extend([Phase::H2Handshake, Phase::StreamWait])
            }
            Wire::WebSocket(w) => {
                phases.push(Phase::WsUpgrade);
                if w.connect.is_some() {
                    phases.push(Phase::H2Handshake);
                }
                if w.plan.ping.is_some() {
                    phases.push(Phase::WsPing);
                }
            }
            Wire::Http1(_) | Wire::Framed(_) => {}
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
        match &self.wire {
            Wire::Http1(w) => w.pipeline,
            Wire::WebSocket(w) => w.plan.pipeline,
            _ => 1,
        }
    }

    /// The HTTP/2 or HTTP/3 request of a templated request `rendered` as parts, on the fixed
    /// request's authority; a gRPC call's rendered JSON becomes its framed message (`codec`).
    pub(super) fn request_of(
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
