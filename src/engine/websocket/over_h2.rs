//! WebSocket over HTTP/2 (RFC 8441): `--http2` on a `ws://` target (h2c by prior knowledge) or
//! a `wss://` one (ALPN `h2`). Each WebSocket connection is one stream of an HTTP/2 connection
//! of its own, over the h2 crate, as gRPC reflection's call that streams both ways
//! (`engine::http2::crate_link`): the load's own HTTP/2 client carries request and
//! response streams, not one that stays open both ways for the run.
//!
//! [`open`] sends the connection preface and waits for the server's SETTINGS (stamped as
//! `h2_settings`): without SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 the connection fails with the
//! cause that stops the run ([`Cause::NoWsOverH2`]). It then opens a stream with an extended
//! CONNECT (`:method CONNECT`, `:protocol websocket`, `:scheme`, `:path`, `:authority`,
//! `sec-websocket-version: 13`, the user's headers); a 2xx accepts it (RFC 8441 has no
//! `Sec-WebSocket-Accept`), any other status fails the connection as a refused upgrade does
//! ([`Cause::NotWebSocket`]). The stream's DATA frames then carry RFC 6455's frames both ways:
//! [`Tunnel`] is the byte stream the WebSocket code reads and writes as it does a TCP
//! connection, the stream's and the connection's windows given back (WINDOW_UPDATE) as its
//! bytes are read.

use crate::engine::cause::Cause;
use crate::engine::connect::Socket;
use crate::engine::http2::{self, crate_link::h2_error};
use crate::engine::request::RequestTemplate;
use crate::engine::{EngineError, SetupError};
use crate::model::{ErrorKind, Timestamps};
use crate::plan::RunPlan;
use bytes::{Buf, Bytes};
use std::cell::Cell;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{ready, Context, Poll};
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest SETTINGS frame read for the setting: 64 settings (RFC 9113 defines 7).
const MAX_SETTINGS: usize = 9 + 6 * 64;

/// The extended CONNECT every WebSocket connection of a run sends: its URI (`:scheme`,
/// `:authority`, `:path`) and headers, prepared once.
#[derive(Clone)]
pub struct Connect {
    uri: http::Uri,
    headers: http::HeaderMap,
}

impl Connect {
    /// The extended CONNECT of `plan`: its target's URI, `sec-websocket-version: 13`, the
    /// user's headers (lower-cased, those HTTP/2 forbids dropped) and `user-agent` unless given.
    pub fn new(plan: &RunPlan) -> Result<Connect, SetupError> {
        let request = RequestTemplate::http2(plan)?;
        let mut headers = request.headers;
        headers.insert(
            http::header::SEC_WEBSOCKET_VERSION,
            http::HeaderValue::from_static("13"),
        );
        Ok(Connect {
            uri: request.uri,
            headers,
        })
    }

    /// The request: `CONNECT` with `:protocol websocket`.
    fn request(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = http::Method::CONNECT;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req.extensions_mut()
            .insert(h2::ext::Protocol::from_static("websocket"));
        req
    }
}

/// What the server's first frame said, as [`Sniff`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum First {
    /// Not whole yet.
    Waiting,
    /// Not a SETTINGS frame: the server does not speak HTTP/2 (an HTTP/1.1 answer).
    NotH2,
    /// Its SETTINGS, whole at `at`, and whether they enable the extended CONNECT.
    Settings { at: Instant, connect: bool },
}

/// A socket that reads the server's first frame as it passes (a server's preface is its
/// SETTINGS, RFC 9113 section 3.4) into [`First`]; then only passes bytes.
struct Sniff {
    inner: Socket,
    /// The first frame's bytes so far (dropped once it is whole).
    head: Vec<u8>,
    first: Rc<Cell<First>>,
}

/// What the SETTINGS frame at the start of `bytes` says, once it is whole (`None`: not yet):
/// whether it enables the extended CONNECT, or `Err` when it is no SETTINGS frame.
fn first_frame(bytes: &[u8]) -> Option<Result<bool, ()>> {
    http2::preface_setting(bytes, http2::SETTINGS_ENABLE_CONNECT_PROTOCOL)
        .map(|setting| setting.map(|value| value == Some(1)))
}

impl AsyncRead for Sniff {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut me.inner).poll_read(cx, buf);
        let new = &buf.filled()[before..];
        if me.first.get() == First::Waiting && !new.is_empty() {
            let room = MAX_SETTINGS.saturating_sub(me.head.len());
            me.head.extend_from_slice(&new[..new.len().min(room)]);
            let seen = match first_frame(&me.head) {
                Some(Ok(connect)) => First::Settings {
                    at: Instant::now(),
                    connect,
                },
                Some(Err(())) => First::NotH2,
                // A SETTINGS frame longer than any server sends: read what it holds.
                None if me.head.len() == MAX_SETTINGS => First::Settings {
                    at: Instant::now(),
                    connect: false,
                },
                None => First::Waiting,
            };
            if seen != First::Waiting {
                me.first.set(seen);
                me.head = Vec::new();
            }
        }
        r
    }
}

impl AsyncWrite for Sniff {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Sends HTTP/2's preface on `socket` and waits for the server's SETTINGS: the connection's
/// sender (the connection then driven by a task of its own) and when the SETTINGS came. A
/// server that does not speak HTTP/2, or whose SETTINGS do not enable the extended CONNECT,
/// fails it with the cause that names the fix.
async fn preface(
    socket: Socket,
    max_head: usize,
) -> Result<(h2::client::SendRequest<Bytes>, Instant), EngineError> {
    crate::engine::http2::check_alpn(&socket)?;
    let first = Rc::new(Cell::new(First::Waiting));
    let sniff = Sniff {
        inner: socket,
        head: Vec::new(),
        first: first.clone(),
    };
    let (sender, mut conn) = h2::client::Builder::new()
        .max_header_list_size(u32::try_from(max_head).unwrap_or(u32::MAX))
        .handshake::<_, Bytes>(sniff)
        .await
        .map_err(|e| h2_error(&e, "HTTP/2 handshake"))?;
    // The connection is driven here until the server's first frame is whole (or the
    // connection ends: `ended`, why), then by a task of its own.
    let mut ended = None;
    let seen = std::future::poll_fn(|cx| {
        if first.get() == First::Waiting {
            if let Poll::Ready(r) = Pin::new(&mut conn).poll(cx) {
                ended = Some(r.err().map_or("closed".into(), |e| e.to_string()));
            }
        }
        match first.get() {
            First::Waiting if ended.is_none() => Poll::Pending,
            seen => Poll::Ready(seen),
        }
    })
    .await;
    let at = match (seen, ended) {
        (First::NotH2, _) => return Err(crate::engine::http2::not_h2_error()),
        (First::Settings { connect: false, .. }, _) => {
            return Err(EngineError::new(
                ErrorKind::Protocol,
                "the server's SETTINGS do not enable the extended CONNECT (SETTINGS_ENABLE_CONNECT_PROTOCOL, RFC 8441)".into(),
            )
            .with_cause(Some(Cause::NoWsOverH2)))
        }
        (First::Settings { at, .. }, None) => at,
        (_, why) => {
            return Err(EngineError::new(
                ErrorKind::Closed,
                format!(
                    "HTTP/2 connection ended before the WebSocket CONNECT: {}",
                    why.unwrap_or_default()
                ),
            ))
        }
    };
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    Ok((sender, at))
}

/// Opens a WebSocket over HTTP/2 on `socket` (connected, and stamped, by the caller): the
/// preface, the server's SETTINGS (stamped `h2_settings`), the extended CONNECT and its 2xx;
/// the stream's DATA as a byte stream. Answers of at most `max_head` header bytes are taken.
pub async fn open(
    socket: Socket,
    connect: &Connect,
    max_head: usize,
    stamps: &mut Timestamps,
) -> Result<Socket, EngineError> {
    let (sender, settings) = preface(socket, max_head).await?;
    stamps.h2_settings = Some(settings);
    let mut sender = sender
        .ready()
        .await
        .map_err(|e| h2_error(&e, "HTTP/2 connection"))?;
    let (response, send) = sender
        .send_request(connect.request(), false)
        .map_err(|e| h2_error(&e, "WebSocket CONNECT"))?;
    let response = response
        .await
        .map_err(|e| h2_error(&e, "WebSocket CONNECT"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(EngineError::new(
            ErrorKind::Protocol,
            format!(
                "the server answered the WebSocket CONNECT (RFC 8441) with {} {}, not 200",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            ),
        )
        .with_cause(Some(Cause::NotWebSocket)));
    }
    Ok(Socket::WsH2(Box::new(Tunnel {
        send,
        recv: response.into_body(),
        pending: Bytes::new(),
    })))
}

/// A WebSocket's HTTP/2 stream as a byte stream: what is written goes as DATA frames (h2 holds
/// what the stream's window does not let go yet; a connection has one message in flight, so
/// that is one message at most), what is read is the server's DATA, its window given back as
/// it is read. The server's END_STREAM reads as the end of the connection; shutting it down
/// sends ours. Unlike the HTTP/1.1 path, a message allocates here: each write is copied into a
/// buffer h2 owns, and h2's frames are its own.
pub struct Tunnel {
    send: h2::SendStream<Bytes>,
    recv: h2::RecvStream,
    /// The rest of the last DATA frame, not read yet.
    pending: Bytes,
}

/// An h2 error as an I/O error.
fn io_error(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e
            .into_io()
            .unwrap_or_else(|| io::Error::other("HTTP/2 I/O"));
    }
    io::Error::other(e)
}

impl AsyncRead for Tunnel {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        while me.pending.is_empty() {
            match ready!(me.recv.poll_data(cx)) {
                None => return Poll::Ready(Ok(())),
                Some(Ok(data)) => me.pending = data,
                Some(Err(e)) => return Poll::Ready(Err(io_error(e))),
            }
        }
        let n = me.pending.len().min(buf.remaining());
        buf.put_slice(&me.pending[..n]);
        me.pending.advance(n);
        let _ = me.recv.flow_control().release_capacity(n);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Tunnel {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let data = Bytes::copy_from_slice(buf);
        Poll::Ready(
            me.send
                .send_data(data, false)
                .map(|()| buf.len())
                .map_err(io_error),
        )
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        Poll::Ready(me.send.send_data(Bytes::new(), true).map_err(io_error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_frame_says_whether_the_extended_connect_is_on() {
        // (bytes, what they say)
        let settings = |entries: &[(u16, u32)]| {
            let mut f = vec![0, 0, (entries.len() * 6) as u8, 0x4, 0, 0, 0, 0, 0];
            for (id, v) in entries {
                f.extend_from_slice(&id.to_be_bytes());
                f.extend_from_slice(&v.to_be_bytes());
            }
            f
        };
        let on = settings(&[(0x3, 100), (0x8, 1)]);
        assert_eq!(first_frame(&on), Some(Ok(true)));
        assert_eq!(first_frame(&on[..on.len() - 1]), None);
        assert_eq!(first_frame(&on[..5]), None);
        assert_eq!(first_frame(&settings(&[(0x3, 100)])), Some(Ok(false)));
        assert_eq!(first_frame(&settings(&[(0x8, 0)])), Some(Ok(false)));
        assert_eq!(first_frame(&settings(&[])), Some(Ok(false)));
        assert_eq!(first_frame(b"HTTP/1.1 400 Bad Request\r\n"), Some(Err(())));
    }
}
