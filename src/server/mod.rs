//! The embedded target: a small, fast HTTP server (hyper, HTTP/1.1 and h2 on one port, with
//! or without TLS) whose routes ([`routes`]) report their own phases in `Server-Timing`, and
//! whose WebSocket routes (`ws.rs`) take an HTTP/1.1 upgrade. It
//! runs on its own thread for `reqlife run` without a URL and for tests ([`spawn`]), or in the
//! foreground for `reqlife serve` ([`serve_until_signal`]); both shut down gracefully, with a
//! bound on how long in-flight connections may take.

mod compress;
mod events;
pub mod faults;
mod h3;
pub mod kv;
pub mod routes;
#[cfg(test)]
mod tests;
mod tls;
mod ws;
mod ws_h2;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long a graceful shutdown waits for open connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long a TLS handshake may take before the connection is dropped.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The accept queue asked of the kernel (which caps it at net.core.somaxconn).
const LISTEN_BACKLOG: i32 = 4096;
/// Concurrent HTTP/2 streams allowed per connection.
const MAX_H2_STREAMS: u32 = 1024;

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address to listen on.
    pub addr: SocketAddr,
    /// Plain HTTP, or TLS with which certificate.
    pub tls: ServerTls,
    /// Keys `1..=kv_preload` stored in `/kv` before serving (`--kv-preload`).
    pub kv_preload: u64,
    /// Bytes of each preloaded value (`--value-size`).
    pub kv_value_bytes: usize,
    /// Connections served at once; more wait in the kernel's accept queue.
    pub max_connections: usize,
    /// A request's head must arrive within this (and an idle keep-alive connection is closed
    /// after it): a slow client (slowloris) cannot hold a connection for long.
    pub header_timeout: Duration,
    /// Serve HTTP/3 too, on the UDP port of the same number (`serve --http3`; TLS is then
    /// on, self-signed unless a certificate is given).
    pub http3: bool,
}

/// Connections the embedded target serves at once by default.
pub const MAX_CONNECTIONS: usize = 16_384;
/// The default wait for a request head (and the idle keep-alive limit).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest request head the embedded target reads (HTTP/1.1) or header list (HTTP/2).
pub const MAX_REQUEST_HEAD: usize = 64 * 1024;
/// Most request headers (HTTP/1.1).
pub const MAX_REQUEST_HEADERS: usize = 100;

impl ServerConfig {
    /// Serving `addr` with `tls`, an empty store.
    pub fn new(addr: SocketAddr, tls: ServerTls) -> Self {
        ServerConfig {
            addr,
            tls,
            kv_preload: 0,
            kv_value_bytes: 100,
            max_connections: MAX_CONNECTIONS,
            header_timeout: HEADER_TIMEOUT,
            http3: false,
        }
    }
}

/// Plain HTTP, a self-signed certificate, or one from files.
#[derive(Debug, Clone)]
pub enum ServerTls {
    /// Plain HTTP (and h2c).
    None,
    /// TLS with a certificate made at start for `localhost`, `127.0.0.1` and `::1`.
    SelfSigned,
    /// TLS with a certificate and key read from PEM files.
    Files {
        /// The certificate chain's file.
        cert: PathBuf,
        /// The private key's file.
        key: PathBuf,
    },
}

/// Why the server could not start. Each message names the address or file and the cause.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// e.g. "cannot bind 127.0.0.1:80: permission denied (ports below 1024 need privileges)".
    #[error("cannot bind {addr}: {}", bind_reason(*.addr, .error))]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why it could not be bound.
        error: std::io::Error,
    },
    /// e.g. "cannot read certificate file '/x/cert.pem': no such file or directory".
    #[error("cannot read {what} file '{}': {}", .path.display(), io_reason(.error))]
    ReadFile {
        /// Which file: `certificate` or `key`.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// Why it could not be read.
        error: std::io::Error,
    },
    /// A file that is not valid PEM.
    #[error("invalid PEM in {what} file '{}': {}", .path.display(), io_reason(.error))]
    InvalidPem {
        /// Which file: `certificate` or `key`.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// What the PEM reader said.
        error: std::io::Error,
    },
    /// A certificate file with no certificate in it.
    #[error("no certificate found in '{}' (expected PEM -----BEGIN CERTIFICATE-----)", .0.display())]
    NoCertificate(PathBuf),
    /// A key file with no private key in it.
    #[error("no private key found in '{}' (expected PEM PKCS#8, PKCS#1 or SEC1)", .0.display())]
    NoPrivateKey(PathBuf),
    /// A certificate and a key that do not belong together.
    #[error("the certificate in '{}' and the key in '{}' do not fit: {reason}", .cert.display(), .key.display())]
    CertificateKey {
        /// The certificate's file.
        cert: PathBuf,
        /// The key's file.
        key: PathBuf,
        /// What TLS said of them.
        reason: String,
    },
    /// The self-signed certificate could not be made.
    #[error("cannot make a self-signed certificate: {0}")]
    SelfSigned(String),
    /// The server's runtime could not start.
    #[error("cannot start the server: {}", io_reason(.0))]
    Runtime(std::io::Error),
}

impl crate::util::exit::ExitCode for ServerError {
    /// An address, certificate or key the user gave that does not serve: bad input (exit 2);
    /// a certificate or a runtime that cannot be made here: the server failed (exit 1).
    fn exit_code(&self) -> i32 {
        use crate::util::exit::{EXIT_FAILURE, EXIT_USAGE};
        match self {
            ServerError::Bind { .. }
            | ServerError::ReadFile { .. }
            | ServerError::InvalidPem { .. }
            | ServerError::NoCertificate(_)
            | ServerError::NoPrivateKey(_)
            | ServerError::CertificateKey { .. } => EXIT_USAGE,
            ServerError::SelfSigned(_) | ServerError::Runtime(_) => EXIT_FAILURE,
        }
    }
}

/// An I/O error as a short phrase: "no such file or directory", without "(os error 2)".
fn io_reason(e: &std::io::Error) -> String {
    let text = crate::model::io_reason(e);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Why a bind failed, with a hint for the usual causes.
fn bind_reason(addr: SocketAddr, e: &std::io::Error) -> String {
    use std::io::ErrorKind;
    let reason = io_reason(e);
    match e.kind() {
        ErrorKind::PermissionDenied if addr.port() < 1024 => {
            format!("{reason} (ports below 1024 need privileges)")
        }
        ErrorKind::AddrInUse => {
            format!("{reason} (another process listens there; port 0 picks a free one)")
        }
        ErrorKind::AddrNotAvailable => format!("{reason} (not an address of this machine)"),
        _ => reason,
    }
}

/// A bound listener and its TLS acceptor, ready to serve.
struct Prepared {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cert_pem: Option<String>,
    /// The `/kv` store, shared by every connection.
    kv: std::sync::Arc<kv::Kv>,
    max_connections: usize,
    header_timeout: Duration,
    /// HTTP/3 on the same port number, over UDP.
    h3: Option<h3::Prepared>,
}

fn prepare(config: &ServerConfig) -> Result<Prepared, ServerError> {
    let (tls, cert_pem) = match &config.tls {
        ServerTls::None if config.http3 => {
            let (tls, pem) = tls::self_signed()?;
            (Some(tls), Some(pem))
        }
        ServerTls::None => (None, None),
        ServerTls::SelfSigned => {
            let (tls, pem) = tls::self_signed()?;
            (Some(tls), Some(pem))
        }
        ServerTls::Files { cert, key } => (Some(tls::from_files(cert, key)?), None),
    };
    let bind_err = |error| ServerError::Bind {
        addr: config.addr,
        error,
    };
    let listener = listen(config.addr).map_err(bind_err)?;
    let addr = listener.local_addr().map_err(bind_err)?;
    let h3 = match (&tls, config.http3) {
        (Some(tls), true) => Some(h3::prepare(addr, tls, config.header_timeout)?),
        _ => None,
    };
    Ok(Prepared {
        listener,
        addr,
        tls: tls.map(tokio_rustls::TlsAcceptor::from),
        h3,
        cert_pem,
        kv: std::sync::Arc::new(kv::Kv::preloaded(config.kv_preload, config.kv_value_bytes)),
        max_connections: config.max_connections.max(1),
        header_timeout: config.header_timeout,
    })
}

/// A non-blocking listener with a deep accept queue (std's is 128: a load test opening a
/// thousand connections at once would see SYNs dropped and 1 s retransmits) and SO_REUSEADDR,
/// so that `reqlife serve` can be restarted at once on the same port.
fn listen(addr: SocketAddr) -> std::io::Result<std::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// A server running on a background OS thread with its own tokio current_thread runtime.
/// Dropping it shuts it down as [`RunningServer::shutdown`] does.
pub struct RunningServer {
    addr: SocketAddr,
    cert_pem: Option<String>,
    is_tls: bool,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningServer {
    /// The bound address (the real port when port 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether connections must speak TLS.
    pub fn is_tls(&self) -> bool {
        self.is_tls
    }

    /// The URL of `path` on this server: `http://127.0.0.1:PORT` + `path`, or `https://…`.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.is_tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// The PEM of the self-signed certificate ([`ServerTls::SelfSigned`]), for clients to
    /// trust as a CA; `None` otherwise.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// Graceful shutdown: stops accepting, lets in-flight connections finish (idle keep-alive
    /// ones are closed at once; busy ones get at most [`SHUTDOWN_GRACE`], then are dropped) and
    /// joins the thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Binds and starts serving on a background thread; returns once the socket is bound (so the
/// real port of port 0 is known) and TLS is set up.
pub fn spawn(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let p = prepare(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (addr, cert_pem, is_tls) = (p.addr, p.cert_pem.clone(), p.tls.is_some());
    let thread = std::thread::Builder::new()
        .name("reqlife-target".into())
        .spawn(move || {
            runtime.block_on(async move {
                let _ = serve(
                    (p.listener, p.h3),
                    p.tls,
                    p.kv,
                    (p.max_connections, p.header_timeout),
                    async {
                        let _ = rx.await;
                    },
                )
                .await;
            });
        })
        .map_err(ServerError::Runtime)?;
    Ok(RunningServer {
        addr,
        cert_pem,
        is_tls,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// `reqlife serve`: binds, calls `on_ready(addr, is_tls)` (the caller prints the address),
/// serves on every core until SIGINT or SIGTERM, then shuts down gracefully (bounded by
/// [`SHUTDOWN_GRACE`]). Runs on the calling thread, with a runtime of its own.
pub fn serve_until_signal(
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr, bool),
) -> Result<(), ServerError> {
    let p = prepare(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int = signal(SignalKind::interrupt()).map_err(ServerError::Runtime)?;
        let mut term = signal(SignalKind::terminate()).map_err(ServerError::Runtime)?;
        on_ready(p.addr, p.tls.is_some());
        serve(
            (p.listener, p.h3),
            p.tls,
            p.kv,
            (p.max_connections, p.header_timeout),
            async move {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
            },
        )
        .await
    })
}

/// HTTP/1.1 with keep-alive and HTTP/2 (h2 after ALPN, h2c by prior knowledge) on one port,
/// with bounds on what a client can make the target hold: the request head's size and header
/// count, and the time its head may take (idle keep-alive connections included).
fn connection_builder(header_timeout: Duration) -> auto::Builder<TokioExecutor> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .keep_alive(true)
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_REQUEST_HEAD)
        .max_headers(MAX_REQUEST_HEADERS);
    // hyper's default is 200; load testers ask for more (h2load -m, reqlife --streams).
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_concurrent_streams(MAX_H2_STREAMS)
        .max_header_list_size(MAX_REQUEST_HEAD as u32)
        // RFC 8441: WebSocket routes over HTTP/2 (`ws_h2`).
        .enable_connect_protocol();
    builder
}

/// Accepts and serves connections until `shutdown` resolves, then drains them (bounded).
async fn serve(
    (listener, h3): (std::net::TcpListener, Option<h3::Prepared>),
    tls: Option<tokio_rustls::TlsAcceptor>,
    kv: std::sync::Arc<kv::Kv>,
    (max_connections, header_timeout): (usize, Duration),
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let listener = TcpListener::from_std(listener).map_err(ServerError::Runtime)?;
    let (stop_h3, stopped) = tokio::sync::watch::channel(false);
    let h3 = h3.map(|h3| tokio::spawn(h3::serve(h3, kv.clone(), stopped)));
    let builder = std::sync::Arc::new(connection_builder(header_timeout));
    // One permit per connection served; at the limit, new ones wait in the accept queue.
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut accept_error_shown = false;
    tokio::pin!(shutdown);
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            break;
        };
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let socket = match accepted {
                    Ok((socket, _)) => socket,
                    Err(e) => {
                        // EMFILE and friends: say it once, back off, keep serving.
                        if !accept_error_shown {
                            eprintln!(
                                "reqlife target: accept failed: {e} (serving on; later accept errors are not shown)"
                            );
                            accept_error_shown = true;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let kv = kv.clone();
                // The slot is the connection's, and an upgraded WebSocket's after it.
                let slot = std::sync::Arc::new(slot);
                let held = slot.clone();
                let service = hyper::service::service_fn(move |req| ws::handle(req, kv.clone(), held.clone()));
                match &tls {
                    None => {
                        let conn = builder.serve_connection_with_upgrades(TokioIo::new(socket), service).into_owned();
                        let conn = graceful.watch(conn);
                        tokio::spawn(async move {
                            let _ = conn.await;
                            drop(slot);
                        });
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        let builder = builder.clone();
                        let watcher = graceful.watcher();
                        tokio::spawn(async move {
                            // A failed handshake only drops this connection.
                            if let Ok(Ok(socket)) = tokio::time::timeout(
                                TLS_HANDSHAKE_TIMEOUT,
                                acceptor.accept(socket),
                            ).await {
                                let conn = builder.serve_connection_with_upgrades(TokioIo::new(socket), service).into_owned();
                                let _ = watcher.watch(conn).await;
                            }
                            drop(slot);
                        });
                    }
                }
            }
        }
    }
    drop(listener);
    let _ = stop_h3.send(true);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => {}
    }
    if let Some(h3) = h3 {
        let _ = h3.await;
    }
    Ok(())
}
