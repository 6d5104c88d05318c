//! Read buffers on demand: an HTTP/1.1 connection holds no read buffer while it is idle or
//! waiting for its response. Once the socket has bytes to read, it borrows one from its
//! thread's pool; it gives it back when the exchange is over ([`ReadBuf::release`]) or when the
//! connection is dropped. A small response is read, parsed and finished without an `.await`
//! in between, so a thread reading small responses needs one buffer however many connections
//! it holds open; only responses that take several reads keep theirs across awaits. The pool
//! keeps at most [`POOL_MAX`] buffers, each cut back to [`BUF_BYTES`] when a large head grew it,
//! so neither a burst nor a large response leaves memory behind. Buffers come back from the
//! pool: no allocation per request in the steady state.

use super::connect::Socket;
use std::cell::RefCell;
use std::io;
use std::ops::{Deref, DerefMut};
use std::time::Instant;
use tokio::io::AsyncReadExt;

/// Size of a read buffer; one grows for a large head up to the header limit.
pub const BUF_BYTES: usize = 16 * 1024;
/// Most buffers a thread's pool keeps (1 MiB of 16 KiB buffers).
pub const POOL_MAX: usize = 64;

thread_local! {
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// A connection's read buffer: empty (no allocation) unless a response is being read.
#[derive(Debug, Default)]
pub struct ReadBuf(Vec<u8>);

impl ReadBuf {
    /// Borrows a buffer of [`BUF_BYTES`] from the thread's pool (or allocates one) if this
    /// one holds none.
    pub fn acquire(&mut self) {
        if self.0.is_empty() {
            self.0 = POOL
                .with(|p| p.borrow_mut().pop())
                .unwrap_or_else(|| vec![0; BUF_BYTES]);
        }
    }

    /// Whether a buffer is held.
    pub fn is_held(&self) -> bool {
        !self.0.is_empty()
    }

    /// Gives the buffer back to the thread's pool (cut back to [`BUF_BYTES`] if it grew), or
    /// frees it when the pool is full.
    pub fn release(&mut self) {
        if self.0.is_empty() {
            return;
        }
        let mut buf = std::mem::take(&mut self.0);
        if buf.len() > BUF_BYTES {
            buf.truncate(BUF_BYTES);
            buf.shrink_to(BUF_BYTES);
        }
        // A thread's pool may be gone at thread exit: then the buffer is just freed.
        let _ = POOL.try_with(|p| {
            let mut pool = p.borrow_mut();
            if pool.len() < POOL_MAX {
                pool.push(buf);
            }
        });
    }
}

impl Drop for ReadBuf {
    fn drop(&mut self) {
        self.release();
    }
}

impl Deref for ReadBuf {
    type Target = Vec<u8>;
    fn deref(&self) -> &Vec<u8> {
        &self.0
    }
}

impl DerefMut for ReadBuf {
    fn deref_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }
}

/// Reads from `socket` into `buf` at `at`: the byte count and, on plain TCP, the instant the
/// kernel received the last of them ([`super::arrival`]; `None` on TLS, whose bytes are the
/// decryption's). Without a buffer held, it first waits until the socket is readable (plain
/// TCP: the wait costs no syscall and no buffer; TLS borrows one at once), then borrows one.
/// A short read tells tokio the socket is drained: no extra `EAGAIN` read per response.
pub async fn read_at(
    socket: &mut Socket,
    buf: &mut ReadBuf,
    at: usize,
) -> io::Result<(usize, Option<Instant>)> {
    if let Socket::Plain(counted) = socket {
        let tcp = counted.get_ref();
        if !buf.is_held() {
            super::arrival::read_ready(tcp).await?;
            buf.acquire();
        }
        let (n, arrival) = super::arrival::read(tcp, &mut buf[at..]).await?;
        counted.count_read(n);
        super::arrival::note(arrival);
        return Ok((n, arrival));
    }
    buf.acquire();
    let n = socket.read(&mut buf[at..]).await?;
    super::arrival::note(None);
    Ok((n, None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_to_the_pool_cut_back_and_bounded() {
        let mut a = ReadBuf::default();
        assert!(!a.is_held());
        a.acquire();
        assert_eq!(a.len(), BUF_BYTES);
        a.resize(4 * BUF_BYTES, 0);
        let ptr = {
            a.release();
            assert!(!a.is_held());
            a.acquire();
            a.as_ptr()
        };
        assert_eq!(a.len(), BUF_BYTES, "a grown buffer is cut back");
        a.release();
        let mut b = ReadBuf::default();
        b.acquire();
        assert_eq!(b.as_ptr(), ptr, "the pooled buffer is reused");
        drop(b);
        // Many released at once: the pool keeps at most POOL_MAX.
        let mut many: Vec<ReadBuf> = (0..POOL_MAX + 10).map(|_| ReadBuf::default()).collect();
        many.iter_mut().for_each(ReadBuf::acquire);
        drop(many);
        assert_eq!(POOL.with(|p| p.borrow().len()), POOL_MAX);
    }
}
