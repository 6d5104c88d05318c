//! The h2 crate's HTTP/2 client, kept for gRPC reflection (`--proto-reflect`): a call that
//! streams messages both ways on one stream, asked once before a run. The load's streams go
//! over reqlife's own client ([`super::conn`]). `FirstBytes` tells a server that does not
//! speak HTTP/2 on this connection.

use super::EngineError;
use crate::engine::connect::Connector;
use crate::model::{ErrorKind, Timestamps};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// A live connection: its sender, and what its driver task reports.
struct Live {
    sender: SendRequest<Bytes>,
    /// The driver task still runs.
    alive: Rc<Cell<bool>>,
    /// The server's first bytes were not a SETTINGS frame (an HTTP/1.x answer).
    not_h2: Rc<Cell<bool>>,
}

/// One HTTP/2 connection over the h2 crate, for gRPC reflection's calls.
#[derive(Default)]
pub struct CrateLink {
    sender: RefCell<Option<Live>>,
}

impl CrateLink {
    /// A sender on a live connection, connecting first (and stamping) if there is none.
    pub(in crate::engine) async fn sender(
        &self,
        connector: &Connector,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        if let Some(live) = self.sender.borrow().as_ref().filter(|l| l.alive.get()) {
            return Ok(live.sender.clone());
        }
        *self.sender.borrow_mut() = None;
        let socket = connector.connect(stamps).await?;
        super::check_alpn(&socket)?;
        let not_h2 = Rc::new(Cell::new(false));
        let socket = FirstBytes::new(socket, not_h2.clone());
        let (sr, conn) = h2::client::Builder::new()
            .handshake::<_, Bytes>(socket)
            .await
            .map_err(|e| h2_error(&e, "HTTP/2 handshake"))?;
        let alive = Rc::new(Cell::new(true));
        let flag = alive.clone();
        tokio::task::spawn_local(async move {
            let _ = conn.await;
            flag.set(false);
        });
        *self.sender.borrow_mut() = Some(Live {
            sender: sr.clone(),
            alive,
            not_h2,
        });
        Ok(sr)
    }

    /// Whether the current connection's server answered with something else than HTTP/2.
    pub(in crate::engine) fn not_h2(&self) -> bool {
        self.sender
            .borrow()
            .as_ref()
            .is_some_and(|live| live.not_h2.get())
    }
}

/// The kind of an h2 error: a stream reset by the server is `reset` (with its code); a GOAWAY
/// from the server, or the connection closing under us, is `closed`; a violation h2 detected
/// itself (the peer does not speak HTTP/2) is `protocol`; other I/O is `read`.
pub(in crate::engine) fn h2_error(e: &h2::Error, what: &str) -> EngineError {
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

/// A connection that looks at the server's first bytes: a server's preface is a SETTINGS
/// frame (RFC 9113, section 3.4), whose fourth byte is its type, 4; `HTTP/1.1 400`'s is 'P'.
/// When it is not, `not_h2` is set.
struct FirstBytes<S> {
    inner: S,
    seen: bool,
    not_h2: Rc<Cell<bool>>,
}

impl<S> FirstBytes<S> {
    fn new(inner: S, not_h2: Rc<Cell<bool>>) -> Self {
        FirstBytes {
            inner,
            seen: false,
            not_h2,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstBytes<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let first = &buf.filled()[before..];
        if !self.seen && !first.is_empty() {
            self.seen = true;
            self.not_h2.set(first.len() >= 4 && first[3] != 0x4);
        }
        r
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstBytes<S> {
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
