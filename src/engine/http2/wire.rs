//! What an HTTP/2 link reads and writes, for h2load's traffic line ([`WireStats`], counted by
//! the connection as it takes frames), and [`FirstBytes`], which tells a server that does not
//! speak HTTP/2 on the h2 crate's connection (gRPC reflection's).

use std::cell::Cell;
use std::rc::Rc;

/// What a link's connections have read, shared with its streams: every byte, and the
/// payloads of HEADERS and CONTINUATION frames; and what they wrote. Streams take the growth
/// since the last take.
#[derive(Default)]
pub(super) struct WireStats {
    pub(super) read: Cell<u64>,
    pub(super) header: Cell<u64>,
    pub(super) written: Cell<u64>,
}

/// A stream's share of its connection's traffic (see [`super::H2Link::take_wire`]).
pub(super) struct WireShare {
    pub(super) read: u64,
    pub(super) header: u64,
    pub(super) written: u64,
}

/// A stream that looks at the server's first bytes: a server's preface is a SETTINGS frame
/// (RFC 9113, section 3.4), whose fourth byte is its type, 4; `HTTP/1.1 400`'s is 'P'. When
/// it is not, `not_h2` is set.
pub(super) struct FirstBytes<S> {
    inner: S,
    seen: bool,
    not_h2: Rc<Cell<bool>>,
}

impl<S> FirstBytes<S> {
    pub(super) fn new(inner: S, not_h2: Rc<Cell<bool>>) -> Self {
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
