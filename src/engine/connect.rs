//! Opening connections: TCP (with `TCP_NODELAY`) and TLS over rustls with the ring provider,
//! stamping `connect_start`, `connect_end` and `tls_end` on the request that opened the
//! connection. Certificate verification is on by default (webpki roots plus `--cacert`);
//! `--insecure` turns it off explicitly.

use super::tally::{Counted, Tally};
use super::{EngineError, SetupError};
use crate::model::{ErrorKind, Scheme, Timestamps};
use crate::plan::RunPlan;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A connected socket, plain or TLS. Reads from it yield application bytes: a TLS
/// record that carries no application data (a session ticket) is not a response byte. The
/// TCP bytes under it are counted ([`Socket::tally`]).
pub enum Socket {
    /// A plain TCP connection.
    Plain(Counted<TcpStream>),
    /// A TLS session over TCP.
    Tls(Box<tokio_rustls::client::TlsStream<Counted<TcpStream>>>),
    /// A WebSocket's stream of an HTTP/2 connection (RFC 8441): its DATA frames' bytes.
    WsH2(Box<super::websocket::over_h2::Tunnel>),
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
            Socket::WsH2(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
            Socket::WsH2(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_flush(cx),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
            Socket::WsH2(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
            Socket::WsH2(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl Socket {
    /// The TCP bytes written and read on the connection so far, and its local port (a
    /// WebSocket's HTTP/2 stream: none, port 0).
    #[inline]
    pub fn tally(&self) -> Tally {
        match self {
            Socket::Plain(t) => t.tally(),
            Socket::Tls(s) => s.get_ref().0.tally(),
            Socket::WsH2(_) => Tally::default(),
        }
    }

    /// Whether the bytes read from this socket are the TCP bytes themselves (plain TCP): a
    /// response's offsets on the connection are then exact.
    #[inline]
    pub fn is_plain(&self) -> bool {
        matches!(self, Socket::Plain(_))
    }

    /// Whether the server closed this kept connection while it was idle: its FIN (or reset)
    /// already seen by tokio's reactor, read from the readiness it keeps, so a connection
    /// still open costs no syscall. A plain socket readable while idle (bytes no request asked
    /// for, or readiness left by a read that filled the buffer) is peeked at once (nothing
    /// consumed); over TLS such bytes are a record (a session ticket) the next read handles.
    /// A WebSocket's HTTP/2 stream is not a kept connection of this kind: `false`.
    pub fn peer_closed(&self) -> bool {
        let (tcp, tls) = match self {
            Socket::Plain(t) => (t.get_ref(), false),
            Socket::Tls(s) => (s.get_ref().0.get_ref(), true),
            Socket::WsH2(_) => return false,
        };
        // The common case, nothing seen since the last read: tokio's cached readiness says so
        // without a future (whose waiter would be listed and unlisted, ~250 instructions).
        if tcp
            .try_io(tokio::io::Interest::READABLE, || Ok(()))
            .is_err()
        {
            return false;
        }
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let ready = std::pin::pin!(tcp.ready(tokio::io::Interest::READABLE));
        match ready.poll(&mut cx) {
            Poll::Pending => false,
            Poll::Ready(Ok(r)) if r.is_read_closed() => true,
            Poll::Ready(Ok(_)) if tls => false,
            Poll::Ready(Ok(_)) => {
                let mut byte = [0u8; 1];
                // Pending: nothing to read after all (the readiness was stale; now cleared).
                tcp.poll_peek(&mut cx, &mut ReadBuf::new(&mut byte))
                    .is_ready()
            }
            Poll::Ready(Err(_)) => true,
        }
    }
}

/// Opens connections to the plan's target.
#[derive(Clone)]
pub struct Connector {
    addr: SocketAddr,
    tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Connector {
    /// Connections are TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// A connector for `plan`; fails on an unusable `--cacert` or server name.
    pub fn new(plan: &RunPlan, alpn: &[&[u8]]) -> Result<Self, SetupError> {
        let tls = match plan.target.scheme {
            Scheme::Http => None,
            Scheme::Https => {
                let config = client_config(plan, alpn)?;
                let name = ServerName::try_from(plan.target.host.clone()).map_err(|e| {
                    SetupError(format!(
                        "invalid TLS server name '{}': {e}",
                        plan.target.host
                    ))
                })?;
                Some((TlsConnector::from(Arc::new(config)), name))
            }
        };
        Ok(Connector {
            addr: plan.target.addr,
            tls,
        })
    }

    /// Opens a connection, stamping its phases on `stamps`.
    pub async fn connect(&self, stamps: &mut Timestamps) -> Result<Socket, EngineError> {
        stamps.connect_start = Some(Instant::now());
        let tcp = TcpStream::connect(self.addr).await.map_err(|e| {
            EngineError::io(
                connect_error_kind(&e),
                format!("connect to {}", self.addr),
                &e,
            )
            .with_cause(super::cause::of_connect(&e))
        })?;
        stamps.connect_end = Some(Instant::now());
        // Small requests must leave at once; Nagle would hold them for an ACK.
        let _ = tcp.set_nodelay(true);
        // The port the server's probes know this connection by: asked once, here.
        let port = tcp.local_addr().map_or(0, |a| a.port());
        match &self.tls {
            None => {
                super::arrival::stamp_arrivals(&tcp);
                Ok(Socket::Plain(Counted::new(tcp, port)))
            }
            Some((connector, name)) => {
                // Boxed: the handshake's future is large, and inline it would size every
                // connection's task for it while the connection is open (issue 18's ≤ 6 KB).
                let handshake = Box::pin(connector.connect(name.clone(), Counted::new(tcp, port)));
                let tls = handshake.await.map_err(|e| {
                    EngineError::io(ErrorKind::Tls, "TLS handshake".into(), &e)
                        .with_cause(super::cause::of_tls(&e))
                })?;
                stamps.tls_end = Some(Instant::now());
                Ok(Socket::Tls(Box::new(tls)))
            }
        }
    }
}

/// The kind of a failed connect: `addr_not_avail` when the local ports ran out
/// (`EADDRNOTAVAIL`, "Cannot assign requested address"), else `connect`.
pub fn connect_error_kind(e: &io::Error) -> ErrorKind {
    if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
        ErrorKind::AddrNotAvail
    } else {
        ErrorKind::Connect
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The rustls client configuration: webpki roots plus `--cacert`, or no verification.
pub(super) fn client_config(
    plan: &RunPlan,
    alpn: &[&[u8]],
) -> Result<rustls::ClientConfig, SetupError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError(format!("TLS setup: {e}")))?;
    let mut config = if plan.tls.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        // Read and checked by the plan; a certificate rustls refuses is still bad input.
        for der in &plan.tls.ca_certs {
            roots
                .add(CertificateDer::from(der.clone()))
                .map_err(|e| SetupError(format!("invalid CA certificate in --cacert: {e}")))?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(config)
}

/// `--insecure`: accepts any certificate, still checks handshake signatures.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// One connect at a time for a connection that several streams share (an HTTP/2 or HTTP/3
/// link): the first stream to find no live connection opens one; the others wait for it and
/// look again. A connect abandoned half-way (its request timed out) lets the next one in.
#[derive(Default)]
pub struct SharedConnect {
    connecting: std::cell::Cell<bool>,
    connected: tokio::sync::Notify,
}

impl SharedConnect {
    /// What `live` finds, or else what `connect` opens (one stream at a time connects).
    pub async fn get<T, E, F>(
        &self,
        mut live: impl FnMut() -> Option<T>,
        connect: impl FnOnce() -> F,
    ) -> Result<T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        loop {
            if let Some(found) = live() {
                return Ok(found);
            }
            if !self.connecting.get() {
                break;
            }
            self.connected.notified().await;
        }
        /// Ends the connect however it ends: done, failed or dropped.
        struct Connecting<'a>(&'a SharedConnect);
        impl Drop for Connecting<'_> {
            fn drop(&mut self) {
                self.0.connecting.set(false);
                self.0.connected.notify_waiters();
            }
        }
        self.connecting.set(true);
        let _connecting = Connecting(self);
        connect().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_sharing_a_connection_connect_once_and_an_abandoned_connect_lets_the_next_in() {
        use std::cell::Cell;
        use std::time::Duration;
        // On a paused clock: the 20 ms connect and the 5 ms timeout that drops one take no
        // real time and always end in that order.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async {
            let shared = std::rc::Rc::new(SharedConnect::default());
            let (conn, connects) = (
                std::rc::Rc::new(Cell::new(None)),
                std::rc::Rc::new(Cell::new(0)),
            );
            let get = |shared: std::rc::Rc<SharedConnect>,
                       conn: std::rc::Rc<Cell<Option<u32>>>,
                       n: std::rc::Rc<Cell<u32>>| async move {
                shared
                    .get(
                        || conn.get(),
                        || async {
                            n.set(n.get() + 1);
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            conn.set(Some(7));
                            Ok::<u32, ()>(7)
                        },
                    )
                    .await
            };
            // Three streams at once: one connects, the other two wait and find its connection.
            let tasks: Vec<_> = (0..3)
                .map(|_| {
                    tokio::task::spawn_local(get(shared.clone(), conn.clone(), connects.clone()))
                })
                .collect();
            for t in tasks {
                assert_eq!(t.await.unwrap(), Ok(7));
            }
            assert_eq!(connects.get(), 1);
            // A connect dropped half-way (its request timed out): the next stream connects.
            conn.set(None);
            let first = get(shared.clone(), conn.clone(), connects.clone());
            assert!(tokio::time::timeout(Duration::from_millis(5), first)
                .await
                .is_err());
            let second = get(shared.clone(), conn.clone(), connects.clone());
            assert_eq!(
                tokio::time::timeout(Duration::from_secs(5), second).await,
                Ok(Ok(7)),
                "the next stream was not left waiting"
            );
            assert_eq!(connects.get(), 3);
        });
    }

    #[test]
    fn port_exhaustion_is_its_own_kind() {
        // (OS error, kind)
        let rows = [
            (libc::EADDRNOTAVAIL, ErrorKind::AddrNotAvail), // the ephemeral ports ran out
            (libc::ECONNREFUSED, ErrorKind::Connect),
            (libc::ENETUNREACH, ErrorKind::Connect),
        ];
        for (errno, kind) in rows {
            assert_eq!(
                connect_error_kind(&io::Error::from_raw_os_error(errno)),
                kind
            );
        }
        let e = EngineError::io(
            ErrorKind::AddrNotAvail,
            "connect to 127.0.0.1:80".into(),
            &io::Error::from_raw_os_error(libc::EADDRNOTAVAIL),
        );
        assert_eq!(
            e.detail,
            "connect to 127.0.0.1:80: Cannot assign requested address"
        );
    }
}
