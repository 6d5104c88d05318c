//! HTTP/3 over QUIC (`--http3`), with quinn and the `h3` crate (through h3-quinn), rustls with
//! the ring provider as everywhere. An [`H3Link`] is one QUIC connection shared by the
//! `--streams` sessions of a connection slot, as an HTTP/2 link is; each connection has a UDP
//! socket (an endpoint) of its own, as each TCP connection has. The request that opens a
//! connection stamps `connect_start` and `quic_end`: its `quic_handshake` phase is the whole
//! QUIC handshake, TLS 1.3 inside it (there is no TCP connect and no TLS apart from it). Then
//! `write`, `wait` and `read` as for an HTTP/2 stream. Bytes read and written are the
//! connection's UDP payloads, shared out to the streams as they complete.
//!
//! Errors are counted by kind: a handshake or idle timeout is `timeout`, a stream reset by the
//! server is `reset` with its HTTP/3 code, a stateless reset or a close by the server is
//! `closed`, a failed version negotiation is `protocol` (its cause names the fix), a TLS
//! failure inside the handshake is `tls` (with the cause of a certificate or ALPN refusal). A
//! UDP port with nothing listening answers with ICMP port unreachable: a probe datagram sent
//! beside the handshake sees it as `ECONNREFUSED`, so the run fails fast (`connect`, cause
//! refused) instead of waiting out the handshake.

mod channel;
mod failure;

use super::cause::Cause;
use super::connect::SharedConnect;
use super::http2::{Reception, Sinks};
use super::request::Request;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic};
use crate::plan::{Http3Plan, RunPlan};
use bytes::{Buf, Bytes};
use std::cell::{Cell, RefCell};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(in crate::engine) use channel::H3Channel;
pub use channel::H3Wire;
pub use failure::code_name;
use failure::{of_connection, of_h3_connection, of_stream};

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// A QUIC connection idle this long is closed (both sides take the smaller of their limits).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Opens QUIC connections to the plan's target, with ALPN `h3`.
#[derive(Clone)]
pub struct H3Connector {
    addr: SocketAddr,
    server_name: String,
    config: quinn::ClientConfig,
    /// `--max-header-list`: the largest field section taken (SETTINGS_MAX_FIELD_SECTION_SIZE).
    max_field_section: u64,
}

impl H3Connector {
    /// A connector for `plan` (`--cacert`, `--insecure` as over TCP).
    pub fn new(plan: &RunPlan, h3: &Http3Plan) -> Result<Self, super::SetupError> {
        let mut tls = super::connect::client_config(plan, &[b"h3"])?;
        tls.enable_early_data = h3.zero_rtt;
        // The server name is checked now, as over TCP, not at the first connect.
        rustls::pki_types::ServerName::try_from(plan.target.host.as_str()).map_err(|e| {
            super::SetupError(format!(
                "invalid TLS server name '{}': {e}",
                plan.target.host
            ))
        })?;
        let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(Arc::new(tls))
            .map_err(|e| super::SetupError(format!("QUIC TLS setup: {e}")))?;
        let mut config = quinn::ClientConfig::new(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport.max_idle_timeout(Some(
            IDLE_TIMEOUT
                .try_into()
                .map_err(|e| super::SetupError(format!("QUIC idle timeout: {e}")))?,
        ));
        config.transport_config(Arc::new(transport));
        Ok(H3Connector {
            addr: plan.target.addr,
            server_name: plan.target.host.clone(),
            config,
            max_field_section: plan.max_header_bytes as u64,
        })
    }

    /// Opens a connection (its own UDP socket), stamping `connect_start` and `quic_end`.
    async fn connect(&self, stamps: &mut Timestamps) -> Result<Live, EngineError> {
        stamps.connect_start = Some(Instant::now());
        let bind: SocketAddr = if self.addr.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let socket_error = |e: &std::io::Error| {
            EngineError::io(
                super::connect::connect_error_kind(e),
                format!("QUIC connect to {}: UDP socket", self.addr),
                e,
            )
            .with_cause(super::cause::of_connect(e))
        };
        let endpoint = quinn::Endpoint::client(bind).map_err(|e| socket_error(&e))?;
        let connecting = endpoint
            .connect_with(self.config.clone(), self.addr, &self.server_name)
            .map_err(|e| {
                EngineError::new(
                    ErrorKind::Connect,
                    format!("QUIC connect to {}: {e}", self.addr),
                )
            })?;
        // `--zero-rtt` with a ticket from an earlier connection: usable at once.
        let connecting = match connecting.into_0rtt() {
            Ok((conn, _accepted)) => {
                stamps.quic_0rtt = Some(Instant::now());
                return start(conn, endpoint, self.max_field_section).await;
            }
            Err(connecting) => connecting,
        };
        let conn = tokio::select! {
            r = connecting => r.map_err(|e| of_connection(&e, true))?,
            e = refused(self.addr) => {
                return Err(EngineError::io(
                    ErrorKind::Connect,
                    format!("QUIC connect to {} (ICMP port unreachable)", self.addr),
                    &e,
                )
                .with_cause(Some(Cause::Refused)));
            }
        };
        stamps.quic_end = Some(Instant::now());
        start(conn, endpoint, self.max_field_section).await
    }
}

/// HTTP/3 on a QUIC connection: its driver task, its request sender.
async fn start(
    conn: quinn::Connection,
    endpoint: quinn::Endpoint,
    max_field_section: u64,
) -> Result<Live, EngineError> {
    let (mut driver, sender) = h3::client::builder()
        .max_field_section_size(max_field_section)
        .build(h3_quinn::Connection::new(conn.clone()))
        .await
        .map_err(|e| of_h3_connection(&e))?;
    let alive = Rc::new(Cell::new(true));
    let flag = alive.clone();
    tokio::task::spawn_local(async move {
        // Drives the control streams until the connection ends.
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        flag.set(false);
    });
    Ok(Live {
        sender,
        conn,
        _endpoint: endpoint,
        alive,
    })
}

/// Resolves when `addr` answers a probe datagram with ICMP port unreachable (`ECONNREFUSED`
/// on a connected UDP socket): nothing listens on that UDP port. Pending otherwise (a QUIC
/// server drops a one-byte datagram that is not a QUIC packet).
async fn refused(addr: SocketAddr) -> std::io::Error {
    let probe = async {
        let bind: SocketAddr = if addr.is_ipv6() {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        };
        let socket = tokio::net::UdpSocket::bind(bind).await?;
        socket.connect(addr).await?;
        socket.send(&[0]).await?;
        let mut buf = [0u8; 1];
        loop {
            socket.recv(&mut buf).await?;
        }
    };
    let r: std::io::Result<()> = probe.await;
    match r {
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => e,
        _ => std::future::pending().await,
    }
}

/// A live connection: its request sender, the QUIC connection (for its byte counts) and its
/// endpoint (the UDP socket), and whether its driver task still runs.
struct Live {
    sender: Sender,
    conn: quinn::Connection,
    _endpoint: quinn::Endpoint,
    alive: Rc<Cell<bool>>,
}

/// One HTTP/3 connection shared by several streams.
#[derive(Default)]
pub struct H3Link {
    live: RefCell<Option<Live>>,
    /// One stream connects at a time; the others wait for it.
    connect: SharedConnect,
    /// The connection's UDP bytes (read, written) at the last take.
    taken: Cell<(u64, u64)>,
}

impl H3Link {
    /// A sender on a live connection, connecting first (and stamping) if there is none.
    async fn sender(
        &self,
        connector: &H3Connector,
        stamps: &mut Timestamps,
    ) -> Result<Sender, EngineError> {
        let live = || {
            let live = self.live.borrow();
            live.as_ref()
                .filter(|l| l.alive.get() && l.conn.close_reason().is_none())
                .map(|l| l.sender.clone())
        };
        let connect = move || async move {
            *self.live.borrow_mut() = None;
            connector.connect(stamps).await.map(|live| {
                let sender = live.sender.clone();
                self.taken.set((0, 0));
                *self.live.borrow_mut() = Some(live);
                sender
            })
        };
        self.connect.get(live, connect).await
    }

    /// Opens the link's connection ahead of its first stream (stamping the QUIC handshake),
    /// or does nothing if it is live.
    pub async fn open(
        &self,
        connector: &H3Connector,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.sender(connector, stamps).await.map(|_| ())
    }

    /// The UDP bytes read and written since the last take: a stream's share of the
    /// connection's traffic (handshake, control streams and acknowledgements included, so
    /// the run's totals are the connection's).
    fn take_bytes(&self) -> (u64, u64) {
        let Some(live) = self.live.borrow().as_ref().map(|l| l.conn.stats()) else {
            return (0, 0);
        };
        let now = (live.udp_rx.bytes, live.udp_tx.bytes);
        let before = self.taken.replace(now);
        (
            now.0.saturating_sub(before.0),
            now.1.saturating_sub(before.1),
        )
    }

    /// The UDP bytes read and written since the last take, taken: a failed stream's share.
    pub(super) fn take_failed(&self) -> (u64, u64) {
        self.take_bytes()
    }

    /// Forgets the connection (after a connection error, the server's GOAWAY, or a request
    /// with keep-alive off).
    pub(super) fn reset(&self) {
        if let Some(live) = self.live.borrow().as_ref() {
            live.alive.set(false);
        }
    }
}

/// Why a stream failed: HTTP/3 (or QUIC under it), or a body that would not decode.
enum StreamError {
    H3(h3::error::StreamError),
    Decode(String),
}

impl From<h3::error::StreamError> for StreamError {
    fn from(e: h3::error::StreamError) -> Self {
        StreamError::H3(e)
    }
}

/// A response: status, bytes, and whether the server ended the connection under a request
/// it left unprocessed (sent again on a new one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H3Response {
    /// The HTTP status (`:status`).
    pub status: u16,
    /// The connection's UDP bytes read and written since the previous response.
    pub bytes_read: u64,
    /// The connection's UDP bytes written since the previous response.
    pub bytes_written: u64,
    /// The response's header and body bytes, as received and decoded.
    pub traffic: Traffic,
    /// The server ended the connection under an earlier try of this request, which went again on a
    /// new one.
    pub server_closed: bool,
}

/// Sends one request on a stream of `link`, what the response says going to `sinks` (as
/// [`super::http2::exchange`]). A request the server rejected
/// unprocessed (H3_REQUEST_REJECTED, or a GOAWAY before it was sent) is sent once more on a
/// new connection.
pub async fn exchange(
    link: &H3Link,
    connector: &H3Connector,
    request: &Request,
    stamps: &mut Timestamps,
    mut sinks: Sinks<'_>,
) -> Result<H3Response, EngineError> {
    let mut server_closed = false;
    loop {
        sinks.timing.clear();
        let sender = link.sender(connector, stamps).await?;
        match stream(sender, request, stamps, &mut sinks).await {
            Ok((status, traffic)) => {
                let (read, written) = link.take_bytes();
                return Ok(H3Response {
                    status,
                    bytes_read: read,
                    bytes_written: written,
                    traffic,
                    server_closed,
                });
            }
            Err(StreamError::Decode(e)) => return Err(EngineError::new(ErrorKind::Protocol, e)),
            Err(StreamError::H3(e)) => {
                let failure = of_stream(&e);
                if failure.connection {
                    link.reset();
                }
                if failure.unprocessed && !server_closed {
                    server_closed = true;
                    continue;
                }
                return Err(failure.error);
            }
        }
    }
}

async fn stream(
    mut sender: Sender,
    request: &Request,
    stamps: &mut Timestamps,
    sinks: &mut Sinks<'_>,
) -> Result<(u16, Traffic), StreamError> {
    let mut head = request.head();
    for (name, value) in sinks.trace.iter().flat_map(|t| t.fields()) {
        if let Ok(value) = http::HeaderValue::from_bytes(value) {
            head.headers_mut()
                .insert(http::HeaderName::from_static(name), value);
        }
    }
    let mut stream = sender.send_request(head).await?;
    if !request.body.is_empty() {
        stream.send_data(request.body.clone()).await?;
    }
    stream.finish().await?;
    stamps.written = Some(Instant::now());
    let response = stream.recv_response().await?;
    stamps.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    let mut reception = Reception::begin(response.headers(), sinks).map_err(StreamError::Decode)?;
    while let Some(mut data) = stream.recv_data().await? {
        while data.has_remaining() {
            let n = data.chunk().len();
            reception.data(data.chunk()).map_err(StreamError::Decode)?;
            data.advance(n);
        }
    }
    reception.body_end();
    if let Ok(Some(trailers)) = stream.recv_trailers().await {
        reception.trailers(&trailers);
    }
    let mut traffic = reception.finish(stamps).map_err(StreamError::Decode)?;
    // QPACK's compressed size is not visible through h3: the header bytes are the decoded
    // ones, claiming no savings.
    traffic.header = traffic.header_decoded;
    Ok((status, traffic))
}

#[cfg(test)]
mod tests;
