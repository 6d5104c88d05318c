//! The TCP payload bytes a connection wrote and read, from its first byte, and its local port
//! ([`Tally`]), counted by [`Counted`] right on the TCP socket: under TLS it sits below
//! rustls, so the handshake and every record's framing count. Each request's
//! [`Wire`](crate::model::Wire) offsets are read from it: the server's probes see the kernel's
//! counters of the same connection (`bytes_received`, `copied_seq`, `write_seq`, ...), which
//! count the same bytes from the same start. Counting is an addition per read and per write:
//! no syscall, no allocation; the port is asked once, at connect.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What a TCP connection wrote and read so far, and its local port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// The connection's local (client) port; 0: not a TCP connection of ours.
    pub port: u16,
    /// TCP payload bytes written, from the connection's first.
    pub written: u64,
    /// TCP payload bytes read, from the connection's first.
    pub read: u64,
}

/// A byte stream whose reads and writes are counted ([`Tally`]).
#[derive(Debug)]
pub struct Counted<S> {
    inner: S,
    tally: Tally,
}

impl<S> Counted<S> {
    /// `inner`, nothing counted yet, its local port `port`.
    pub fn new(inner: S, port: u16) -> Self {
        Counted {
            inner,
            tally: Tally {
                port,
                written: 0,
                read: 0,
            },
        }
    }

    /// The stream counted.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// What was counted so far.
    #[inline]
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// `n` bytes were read from the stream past this adapter (a read with the kernel's
    /// arrival stamp, [`super::arrival::read`], is made on the socket itself).
    #[inline]
    pub fn count_read(&mut self, n: usize) {
        self.tally.read += n as u64;
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        self.tally.read += n as u64;
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = r {
            self.tally.written += n as u64;
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = r {
            self.tally.written += n as u64;
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn reads_and_writes_are_counted_whole_and_vectored() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (a, mut b) = tokio::io::duplex(64);
            let mut c = Counted::new(a, 4242);
            c.write_all(b"hello").await.unwrap();
            let slices = [io::IoSlice::new(b"ab"), io::IoSlice::new(b"cde")];
            let n = c.write_vectored(&slices).await.unwrap();
            b.write_all(b"0123456789").await.unwrap();
            let mut buf = [0u8; 4];
            c.read_exact(&mut buf).await.unwrap();
            c.count_read(3);
            assert_eq!(
                c.tally(),
                Tally {
                    port: 4242,
                    written: 5 + n as u64,
                    read: 4 + 3,
                }
            );
        });
    }
}
