//! Counting an HTTP/2 connection's bytes above TLS, frame by frame ([`WireCount`]), for
//! h2load's traffic line: all bytes read and written, and the HEADERS and CONTINUATION
//! payloads (the compressed header bytes); and the time of the server's first bytes (its
//! SETTINGS on a new connection).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

/// What a link's connections have read, shared with its streams: every byte, and the
/// payloads of HEADERS and CONTINUATION frames. Streams take the growth since the last take.
#[derive(Default)]
pub(super) struct WireStats {
    pub(super) read: Cell<u64>,
    pub(super) header: Cell<u64>,
    pub(super) written: Cell<u64>,
}

/// A stream's share of its connection's traffic (see [`H2Link::take_wire`]).
pub(super) struct WireShare {
    pub(super) read: u64,
    pub(super) header: u64,
    pub(super) written: u64,
}

/// HTTP/2 frame types whose payload is a header block (RFC 9113, section 6).
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;

/// A stream that notes when its first bytes were read (on a new HTTP/2 connection those are
/// the server's SETTINGS frame) and counts what it reads, following the frame headers
/// (9 bytes: a 24-bit payload length, then the type) to tell header-block bytes apart. It
/// sits above TLS: application bytes only.
pub(super) struct WireCount<S> {
    inner: S,
    at: Rc<Cell<Option<Instant>>>,
    stats: Rc<WireStats>,
    /// The frame header being read, and how much of it.
    frame_head: [u8; 9],
    frame_head_len: usize,
    /// Payload bytes of the current frame still to come.
    payload_left: usize,
    /// Set when the server's first bytes are not a SETTINGS frame (RFC 9113, section 3.4:
    /// a server's preface is one): an HTTP/1.x answer, an error page.
    not_h2: Rc<Cell<bool>>,
}

impl<S> WireCount<S> {
    pub(super) fn new(
        inner: S,
        at: Rc<Cell<Option<Instant>>>,
        stats: Rc<WireStats>,
        not_h2: Rc<Cell<bool>>,
    ) -> Self {
        WireCount {
            inner,
            at,
            stats,
            not_h2,
            frame_head: [0; 9],
            frame_head_len: 0,
            payload_left: 0,
        }
    }

    /// Follows the frames through `data`, adding header-block payloads to the stats.
    fn scan(&mut self, mut data: &[u8]) {
        self.stats
            .read
            .set(self.stats.read.get() + data.len() as u64);
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(data.len());
                self.payload_left -= n;
                data = &data[n..];
                continue;
            }
            let n = (9 - self.frame_head_len).min(data.len());
            self.frame_head[self.frame_head_len..self.frame_head_len + n]
                .copy_from_slice(&data[..n]);
            self.frame_head_len += n;
            data = &data[n..];
            if self.frame_head_len == 9 {
                let h = &self.frame_head;
                let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
                if matches!(h[3], HEADERS | CONTINUATION) {
                    self.stats.header.set(self.stats.header.get() + len as u64);
                }
                self.payload_left = len;
                self.frame_head_len = 0;
            }
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WireCount<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let after = buf.filled().len();
        if after > before {
            if self.at.get().is_none() {
                self.at.set(Some(Instant::now()));
                // A frame's type is its fourth byte: SETTINGS is 4 (`HTTP/1.1 400`'s is 'P').
                let first = &buf.filled()[before..after];
                self.not_h2.set(first.len() >= 4 && first[3] != 0x4);
            }
            self.scan(&buf.filled()[before..after]);
        }
        r
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WireCount<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = r {
            self.stats.written.set(self.stats.written.get() + n as u64);
        }
        r
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
