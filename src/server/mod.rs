//! The embedded target: a small, fast HTTP server (hyper, HTTP/1.1 and h2 on one port, with
//! or without TLS) whose routes ([`routes`]) report their own phases in `Server-Timing`. It
//! runs on its own thread for `reqlife run` without a URL and for tests ([`spawn`]), or in the
//! foreground for `reqlife serve` ([`serve_until_signal`]); both shut down gracefully, with a
//! bound on how long in-flight connections may take.

pub mod routes;
mod tls;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::net::TcpListener;

/// How long a graceful shutdown waits for open connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub addr: SocketAddr,
    pub tls: ServerTls,
}

/// Plain HTTP, a self-signed certificate, or one from files.
#[derive(Debug, Clone)]
pub enum ServerTls {
    None,
    SelfSigned,
    Files { cert: PathBuf, key: PathBuf },
}

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot bind {addr}: {reason}")]
    Bind { addr: SocketAddr, reason: String },
    #[error("{0}")]
    Tls(String),
    #[error("cannot start the server runtime: {0}")]
    Runtime(String),
}

/// A bound listener and its TLS acceptor, ready to serve.
struct Prepared {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
    cert_pem: Option<String>,
}

fn prepare(config: &ServerConfig) -> Result<Prepared, ServerError> {
    let (tls, cert_pem) = match &config.tls {
        ServerTls::None => (None, None),
        ServerTls::SelfSigned => {
            let (acceptor, pem) = tls::self_signed()?;
            (Some(acceptor), Some(pem))
        }
        ServerTls::Files { cert, key } => (Some(tls::from_files(cert, key)?), None),
    };
    let bind_err = |e: std::io::Error| ServerError::Bind {
        addr: config.addr,
        reason: e.to_string(),
    };
    let listener = std::net::TcpListener::bind(config.addr).map_err(bind_err)?;
    listener.set_nonblocking(true).map_err(bind_err)?;
    let addr = listener.local_addr().map_err(bind_err)?;
    Ok(Prepared {
        listener,
        addr,
        tls,
        cert_pem,
    })
}

/// A server running on a background thread with its own runtime.
pub struct RunningServer {
    addr: SocketAddr,
    cert_pem: Option<String>,
    is_tls: bool,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn is_tls(&self) -> bool {
        self.is_tls
    }

    /// The URL of `path` on this server.
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.is_tls { "https" } else { "http" };
        format!("{scheme}://{}{path}", self.addr)
    }

    /// The PEM of the self-signed certificate, for clients to trust.
    pub fn cert_pem(&self) -> Option<&str> {
        self.cert_pem.as_deref()
    }

    /// Stops accepting, lets open connections finish (bounded) and joins the thread.
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

/// Binds and serves on a background thread; returns once the port is known.
pub fn spawn(config: ServerConfig) -> Result<RunningServer, ServerError> {
    let p = prepare(&config)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::Runtime(e.to_string()))?;
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (addr, cert_pem, is_tls) = (p.addr, p.cert_pem.clone(), p.tls.is_some());
    let thread = std::thread::Builder::new()
        .name("reqlife-target".into())
        .spawn(move || {
            runtime.block_on(async move {
                let _ = serve(p.listener, p.tls, async {
                    let _ = rx.await;
                })
                .await;
            });
        })
        .map_err(|e| ServerError::Runtime(e.to_string()))?;
    Ok(RunningServer {
        addr,
        cert_pem,
        is_tls,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// `reqlife serve`: binds, calls `on_ready`, serves on every core until SIGINT or SIGTERM.
pub fn serve_until_signal(
    config: ServerConfig,
    on_ready: impl FnOnce(SocketAddr, bool),
) -> Result<(), ServerError> {
    let p = prepare(&config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| ServerError::Runtime(e.to_string()))?;
    runtime.block_on(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let mut int =
            signal(SignalKind::interrupt()).map_err(|e| ServerError::Runtime(e.to_string()))?;
        let mut term =
            signal(SignalKind::terminate()).map_err(|e| ServerError::Runtime(e.to_string()))?;
        on_ready(p.addr, p.tls.is_some());
        serve(p.listener, p.tls, async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        })
        .await
    })
}

/// Accepts and serves connections until `shutdown` resolves, then drains them (bounded).
async fn serve(
    listener: std::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServerError> {
    let addr = listener.local_addr().ok();
    let listener = TcpListener::from_std(listener).map_err(|e| ServerError::Bind {
        addr: addr.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))),
        reason: e.to_string(),
    })?;
    let builder = auto::Builder::new(TokioExecutor::new());
    let graceful = GracefulShutdown::new();
    let mut accept_error_shown = false;
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // EMFILE and friends: say it once, back off, keep serving.
                        if !accept_error_shown {
                            eprintln!("reqlife serve: accept failed: {e} (continuing)");
                            accept_error_shown = true;
                        }
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let service = hyper::service::service_fn(routes::handle);
                match &tls {
                    None => {
                        let conn = builder.serve_connection(TokioIo::new(stream), service).into_owned();
                        let conn = graceful.watch(conn);
                        tokio::spawn(async move {
                            let _ = conn.await;
                        });
                    }
                    Some(acceptor) => {
                        let acceptor = acceptor.clone();
                        let builder = builder.clone();
                        let watcher = graceful.watcher();
                        tokio::spawn(async move {
                            // A failed handshake only drops this connection.
                            if let Ok(Ok(stream)) = tokio::time::timeout(
                                Duration::from_secs(10),
                                acceptor.accept(stream),
                            ).await {
                                let conn = builder.serve_connection(TokioIo::new(stream), service).into_owned();
                                let _ = watcher.watch(conn).await;
                            }
                        });
                    }
                }
            }
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(SHUTDOWN_GRACE) => {}
    }
    Ok(())
}
