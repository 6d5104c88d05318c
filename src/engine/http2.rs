//! HTTP/2 over the `h2` crate, used directly so each stream is timed exactly: h2 negotiated by
//! ALPN over TLS, or h2c with prior knowledge on `http://`. An [`H2Link`] is one connection
//! shared by the `--streams` sessions of a connection slot; its driver task runs beside them,
//! and when the connection ends (GOAWAY, reset, error) the next stream to need it reconnects,
//! stamping connect and TLS on its own request.

use super::connect::Connector;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Instant;

/// What a stream needs to build its request.
#[derive(Clone)]
pub struct H2Request {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl H2Request {
    fn build(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// A live connection: its sender, and what its driver task reports.
struct Live {
    sender: SendRequest<Bytes>,
    /// The driver task still runs.
    alive: Rc<Cell<bool>>,
    /// When the server's first frame (its SETTINGS) arrived.
    settings_at: Rc<Cell<Option<Instant>>>,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, as h2 applies it.
    max_streams: Rc<Cell<usize>>,
}

/// A stream that notes when its first bytes were read: on a new HTTP/2 connection those are
/// the server's SETTINGS frame (above TLS: application bytes only).
struct FirstRead<S> {
    inner: S,
    at: Rc<Cell<Option<Instant>>>,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstRead<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if self.at.get().is_none() && buf.filled().len() > before {
            self.at.set(Some(Instant::now()));
        }
        r
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstRead<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One HTTP/2 connection shared by several streams.
#[derive(Default)]
pub struct H2Link {
    sender: RefCell<Option<Live>>,
    /// A stream is connecting: the others wait for it.
    connecting: Cell<bool>,
    connected: tokio::sync::Notify,
}

impl H2Link {
    /// A sender on a live connection, connecting first (and stamping) if there is none.
    async fn sender(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        loop {
            if let Some(live) = self.sender.borrow().as_ref() {
                if live.alive.get() {
                    return Ok(live.sender.clone());
                }
            }
            if !self.connecting.get() {
                break;
            }
            self.connected.notified().await;
        }
        self.connecting.set(true);
        let result = self.connect(connector, window, stamps).await;
        self.connecting.set(false);
        self.connected.notify_waiters();
        result
    }

    async fn connect(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        *self.sender.borrow_mut() = None;
        let stream = connector.connect(stamps).await?;
        let settings_at = Rc::new(Cell::new(None));
        let stream = FirstRead {
            inner: stream,
            at: settings_at.clone(),
        };
        let mut builder = h2::client::Builder::new();
        if let Some(w) = window {
            builder
                .initial_window_size(w)
                .initial_connection_window_size(w);
        }
        let (sr, mut conn) = builder
            .handshake::<_, Bytes>(stream)
            .await
            .map_err(|e| h2_error(&e, "HTTP/2 handshake"))?;
        let alive = Rc::new(Cell::new(true));
        let max_streams = Rc::new(Cell::new(usize::MAX));
        let (flag, max, seen) = (alive.clone(), max_streams.clone(), settings_at.clone());
        tokio::task::spawn_local(async move {
            // Drive the connection, noting the stream limit the server's SETTINGS give: asked
            // (it takes h2's lock) only until a poll after the SETTINGS arrived.
            let mut polls_after_settings = 0;
            let _ = std::future::poll_fn(|cx| {
                let r = std::pin::Pin::new(&mut conn).poll(cx);
                if polls_after_settings < 2 {
                    max.set(conn.max_concurrent_send_streams());
                    if seen.get().is_some() {
                        polls_after_settings += 1;
                    }
                }
                r
            })
            .await;
            flag.set(false);
        });
        *self.sender.borrow_mut() = Some(Live {
            sender: sr.clone(),
            alive,
            settings_at,
            max_streams,
        });
        Ok(sr)
    }

    /// The server's SETTINGS time and stream limit on the current connection.
    fn settings(&self) -> (Option<Instant>, Option<usize>) {
        match self.sender.borrow().as_ref() {
            Some(live) => (
                live.settings_at.get(),
                Some(live.max_streams.get()).filter(|m| *m != usize::MAX),
            ),
            None => (None, None),
        }
    }

    /// Forgets the connection (after an error on it).
    fn reset(&self) {
        if let Some(live) = self.sender.borrow().as_ref() {
            live.alive.set(false);
        }
    }
}

/// The kind of an h2 error: a stream reset by the server is `reset` (with its code); a GOAWAY
/// from the server, or the connection closing under us, is `closed`; a violation h2 detected
/// itself (the peer does not speak HTTP/2) is `protocol`; other I/O is `read`.
fn h2_error(e: &h2::Error, what: &str) -> EngineError {
    let broken = e.get_io().is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
        )
    });
    if e.is_reset() && e.is_remote() {
        let mut err = EngineError::new(ErrorKind::Reset, format!("{what}: {e}"));
        err.code = e.reason().map(u32::from);
        return err;
    }
    let kind = if e.is_library() {
        ErrorKind::Protocol
    } else if e.is_go_away() || broken {
        ErrorKind::Closed
    } else if e.is_io() {
        ErrorKind::Read
    } else {
        ErrorKind::Protocol
    };
    EngineError::new(kind, format!("{what}: {e}"))
}

/// Whether a failed stream was never processed by the server, so sending it again on a new
/// connection is safe: refused by a graceful GOAWAY (NO_ERROR: the server closes the
/// connection, as nginx does after `keepalive_requests`), or reset with REFUSED_STREAM.
fn unprocessed(e: &h2::Error) -> bool {
    match e.reason() {
        Some(h2::Reason::NO_ERROR) => e.is_go_away() && e.is_remote(),
        Some(h2::Reason::REFUSED_STREAM) => e.is_remote(),
        _ => false,
    }
}

/// A response: status, body bytes, and whether the server closed the connection (GOAWAY)
/// under this request, which was then sent again on a new one.
pub struct H2Response {
    pub status: u16,
    pub bytes: u64,
    pub server_closed: bool,
    /// On a request that opened the connection: the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: Option<usize>,
}

/// Sends one request on a stream of `link`; `timing` receives the `Server-Timing` values of
/// the response's headers and trailers. A stream the server refused unprocessed is sent once
/// more on a new connection.
pub async fn exchange(
    link: &H2Link,
    connector: &Connector,
    window: Option<u32>,
    request: &H2Request,
    stamps: &mut Timestamps,
    timing: &mut Vec<u8>,
) -> Result<H2Response, EngineError> {
    let mut server_closed = false;
    loop {
        timing.clear();
        let sr = link.sender(connector, window, stamps).await?;
        match stream(sr, request, stamps, timing).await {
            Ok((status, bytes)) => {
                // The request that opened the connection carries its handshake and limit.
                let mut max_streams = None;
                if stamps.connect_end.is_some() {
                    let (at, max) = link.settings();
                    stamps.h2_settings = at;
                    max_streams = max;
                }
                return Ok(H2Response {
                    status,
                    bytes,
                    server_closed,
                    max_streams,
                });
            }
            Err(e) if unprocessed(&e) && !server_closed => {
                link.reset();
                server_closed = true;
            }
            Err(e) => {
                link.reset();
                return Err(h2_error(&e, "HTTP/2 stream"));
            }
        }
    }
}

async fn stream(
    sr: SendRequest<Bytes>,
    request: &H2Request,
    stamps: &mut Timestamps,
    timing: &mut Vec<u8>,
) -> Result<(u16, u64), h2::Error> {
    let mut sr = sr.ready().await?;
    let has_body = !request.body.is_empty();
    let (response, mut send) = sr.send_request(request.build(), !has_body)?;
    if has_body {
        send.send_data(request.body.clone(), true)?;
    }
    stamps.written = Some(Instant::now());
    let response = response.await?;
    stamps.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    let mut bytes = 0u64;
    for v in response.headers().get_all("server-timing") {
        append(timing, v.as_bytes());
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        bytes += chunk.len() as u64;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    if let Ok(Some(trailers)) = body.trailers().await {
        for v in trailers.get_all("server-timing") {
            append(timing, v.as_bytes());
        }
    }
    stamps.done = Some(Instant::now());
    Ok((status, bytes))
}

fn append(timing: &mut Vec<u8>, value: &[u8]) {
    if !timing.is_empty() {
        timing.extend_from_slice(b", ");
    }
    timing.extend_from_slice(value);
}
