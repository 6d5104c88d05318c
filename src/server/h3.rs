//! HTTP/3 for the embedded target (`serve --http3`, and tests): QUIC with quinn on the UDP
//! port of the same number as the TCP listener's, the same certificate (ALPN `h3`), and the
//! same routes ([`super::routes::handle`]): a request's body is read whole first (up to
//! `/echo`'s limit), then handed to the route as HTTP/1.1 and HTTP/2 requests are; the
//! response's frames (data, then the `Server-Timing` trailers of streamed routes) go out as
//! they come.

use super::kv::Kv;
use super::routes::{self, MAX_ECHO_BYTES};
use super::{ServerError, MAX_H2_STREAMS, SHUTDOWN_GRACE};
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

type Stream = h3::server::RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// A bound UDP socket and the QUIC configuration, ready to serve.
pub(super) struct Prepared {
    socket: std::net::UdpSocket,
    config: quinn::ServerConfig,
}

/// Binds UDP `addr` (the TCP listener's) and makes the QUIC configuration from the TCP
/// server's TLS configuration, with ALPN h3.
pub(super) fn prepare(
    addr: SocketAddr,
    tls: &rustls::ServerConfig,
    idle: Duration,
) -> Result<Prepared, ServerError> {
    let socket =
        std::net::UdpSocket::bind(addr).map_err(|error| ServerError::Bind { addr, error })?;
    let mut tls = tls.clone();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    // 0-RTT from resumed clients (QUIC asks for all or nothing).
    tls.max_early_data_size = u32::MAX;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(Arc::new(tls))
        .map_err(|e| ServerError::SelfSigned(format!("QUIC TLS setup: {e}")))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    transport.max_concurrent_bidi_streams(MAX_H2_STREAMS.into());
    if let Ok(idle) = idle.try_into() {
        transport.max_idle_timeout(Some(idle));
    }
    config.transport_config(Arc::new(transport));
    Ok(Prepared { socket, config })
}

/// Serves HTTP/3 until `stop` changes, then closes the connections (bounded by
/// [`SHUTDOWN_GRACE`]). Runs inside the server's runtime.
pub(super) async fn serve(p: Prepared, kv: Arc<Kv>, mut stop: tokio::sync::watch::Receiver<bool>) {
    let endpoint = match quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(p.config),
        p.socket,
        Arc::new(quinn::TokioRuntime),
    ) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("reqlife target: cannot serve HTTP/3: {e}");
            return;
        }
    };
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                let kv = kv.clone();
                tokio::spawn(async move {
                    // A failed handshake only drops this connection.
                    if let Ok(conn) = incoming.await {
                        connection(conn, kv).await;
                    }
                });
            }
        }
    }
    endpoint.close(0u32.into(), b"shutting down");
    let _ = tokio::time::timeout(SHUTDOWN_GRACE, endpoint.wait_idle()).await;
}

/// Serves the requests of one connection, each on a task of its own.
async fn connection(conn: quinn::Connection, kv: Arc<Kv>) {
    let mut builder = h3::server::builder();
    builder.max_field_section_size(super::MAX_REQUEST_HEAD as u64);
    let Ok(mut h3) = builder
        .build::<_, Bytes>(h3_quinn::Connection::new(conn))
        .await
    else {
        return;
    };
    while let Ok(Some(resolver)) = h3.accept().await {
        let kv = kv.clone();
        tokio::spawn(async move {
            if let Ok((req, stream)) = resolver.resolve_request().await {
                let _ = request(req, stream, kv).await;
            }
        });
    }
}

/// Reads a request's body, runs its route, sends the response.
async fn request(
    req: http::Request<()>,
    mut stream: Stream,
    kv: Arc<Kv>,
) -> Result<(), h3::error::StreamError> {
    let mut body = BytesMut::new();
    while let Some(mut data) = stream.recv_data().await? {
        // Past the limit the rest is dropped: the route sees a body over its limit (413).
        while data.has_remaining() {
            let chunk = data.chunk();
            if body.len() <= MAX_ECHO_BYTES {
                body.extend_from_slice(chunk);
            }
            let n = chunk.len();
            data.advance(n);
        }
    }
    let (parts, ()) = req.into_parts();
    let req = http::Request::from_parts(parts, http_body_util::Full::new(body.freeze()));
    let Ok(res) = routes::handle(req, kv).await;
    let (mut parts, mut body) = res.into_parts();
    // Connection-specific fields are not allowed in HTTP/3 (RFC 9114, section 4.2).
    parts.headers.remove(http::header::CONNECTION);
    stream
        .send_response(http::Response::from_parts(parts, ()))
        .await?;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame;
        match frame.into_data() {
            Ok(data) => stream.send_data(data).await?,
            Err(frame) => {
                if let Ok(trailers) = frame.into_trailers() {
                    stream.send_trailers(trailers).await?;
                }
            }
        }
    }
    stream.finish().await
}
