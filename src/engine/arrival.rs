//! When a response's bytes arrived, from the kernel rather than from the worker's clock.
//!
//! Plain TCP connections ask the kernel to stamp every segment on arrival (`SO_TIMESTAMPNS`),
//! and read with `recvmsg`, which hands back the stamp of the last segment a read consumed:
//! the instant the response's last byte (or the first read's bytes) reached this host, however
//! late the worker thread got round to reading it. So a worker that was busy, descheduled or
//! asleep when a response came (the open loop lets its thread sleep through responses: see
//! [`awake`]) does not lengthen the `wait` and `read` it records; the tool's own delays stay
//! out of its figures. The stamp is on the realtime clock; it becomes an [`Instant`] by its
//! age, measured against both clocks read together, so clock steps between runs do not matter.
//!
//! A read of several segments gets the stamp of the last: the first byte of a large response
//! read in one go is stamped when the read's last segment came (the total is exact; the split
//! between `wait` and `read` of that response is as fine as one read buffer, 16 KiB).

use std::cell::Cell;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Instant, SystemTime};
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Asks the kernel to stamp the segments this socket receives (best effort: without it, reads
/// carry no stamp and the clock at the read is used). The kernel turns stamping on for the
/// whole host asynchronously when the first socket asks (a deferred work item): segments that
/// come in the moment after may carry no stamp, and are timed by the clock. An open loop opens
/// its connections before its schedule starts, which leaves that moment behind.
pub fn stamp_arrivals(tcp: &TcpStream) {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket descriptor and a c_int option value of the right size.
    unsafe {
        libc::setsockopt(
            tcp.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// When the bytes of this thread's last read arrived, if the kernel said: for what is timed
/// right after a read, with no await in between (a streamed response's events).
pub fn of_last_read() -> Option<Instant> {
    LAST.with(Cell::get)
}

/// Notes the arrival of the bytes just read (`None`: not stamped).
pub fn note(at: Option<Instant>) {
    LAST.with(|l| l.set(at));
}

/// Reads into `buf` once the socket is readable: the byte count and, when the kernel stamped
/// the bytes, the instant the last of them arrived (never later than now).
pub async fn read(tcp: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    let len = buf.len();
    loop {
        read_ready(tcp).await?;
        let mut got = None;
        let r = tcp.try_io(Interest::READABLE, || {
            let (n, at) = recv_stamped(tcp.as_raw_fd(), buf)?;
            got = Some((n, at));
            // A short read drained the socket: tell tokio (as its own `poll_read` does), so
            // the next response's read waits for readiness instead of costing an EAGAIN.
            if n > 0 && n < len {
                Err(io::ErrorKind::WouldBlock.into())
            } else {
                Ok(())
            }
        });
        match (got, r) {
            (Some(read), _) => return Ok(read),
            (None, Err(e)) if e.kind() == io::ErrorKind::WouldBlock => continue,
            (None, Err(e)) => return Err(e),
            (None, Ok(())) => unreachable!("a successful read sets its result"),
        }
    }
}

/// Waits until `tcp` is readable (or closed) by tokio's readiness. The connection's one task
/// reads it: the waker goes in the socket's reader slot, not in a list of waiters that a
/// `readable()` future joins and leaves (two locks and a list walk per wait: ~700
/// instructions per request).
pub async fn read_ready(tcp: &TcpStream) -> io::Result<()> {
    std::future::poll_fn(|cx| tcp.poll_read_ready(cx)).await
}

/// The control buffer for one `SCM_TIMESTAMPNS` message (and room to spare), aligned for cmsghdr.
#[repr(C, align(8))]
struct Control([u8; 64]);

fn recv_stamped(fd: libc::c_int, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    let mut control = Control([0; 64]);
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = control.0.len() as _;
    // SAFETY: a valid descriptor and a msghdr whose buffers are valid for their lengths.
    let n = unsafe { libc::recvmsg(fd, &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, stamp_of(&msg)))
}

/// The `SCM_TIMESTAMPNS` stamp of a received message, as an instant.
fn stamp_of(msg: &libc::msghdr) -> Option<Instant> {
    // SAFETY: the control buffer was filled by recvmsg; CMSG_* walk it within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                return Some(instant_of(ts.tv_sec as i64, ts.tv_nsec as i64));
            }
            c = libc::CMSG_NXTHDR(msg, c);
        }
    }
    None
}

/// The instant of a realtime-clock stamp: now, less the stamp's age (clamped to now). The
/// realtime clock is read first: a pause between the two reads makes the age shorter, the
/// instant later, never earlier than the bytes came.
fn instant_of(secs: i64, nanos: i64) -> Instant {
    let real = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    let now = Instant::now();
    let stamp = secs as i128 * 1_000_000_000 + nanos as i128;
    let age = (real - stamp).clamp(0, u64::MAX as i128) as u64;
    now.checked_sub(std::time::Duration::from_nanos(age))
        .unwrap_or(now)
}

/// Whether the worker thread may sleep through responses: counts the connections of this
/// thread that wait for something timed by the clock when the thread notices it (a connect, a
/// TLS or HTTP/2 exchange, a decoded or streamed body) rather than by the kernel's stamps.
pub mod awake {
    use std::cell::Cell;

    thread_local! {
        static NEEDED: Cell<usize> = const { Cell::new(0) };
        static ALWAYS: Cell<bool> = const { Cell::new(false) };
    }

    /// From now on this thread never sleeps through responses: it met a streamed response
    /// (detected by its content type), whose events are timed one by one as they are read, and
    /// several events read at once would share one stamp.
    pub fn from_now_on() {
        ALWAYS.with(|a| a.set(true));
    }

    /// Held while a connection needs its thread awake to time what it waits for.
    pub struct Needed(());

    impl Needed {
        /// Marks this thread's connection as needing the thread awake until the guard is dropped.
        pub fn new() -> Self {
            NEEDED.with(|n| n.set(n.get() + 1));
            Needed(())
        }
    }

    impl Default for Needed {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Drop for Needed {
        fn drop(&mut self) {
            NEEDED.with(|n| n.set(n.get().saturating_sub(1)));
        }
    }

    /// No connection of this thread needs it awake.
    pub fn may_sleep() -> bool {
        NEEDED.with(|n| n.get() == 0) && !ALWAYS.with(Cell::get)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    #[test]
    fn a_read_long_after_the_bytes_came_carries_their_arrival() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let client = TcpStream::connect(addr).await.unwrap();
            stamp_arrivals(&client);
            // Stamping comes on for the host a moment after the first socket asks for it. Kept:
            // the kernel shows nothing to wait on (it enables stamping in deferred work).
            std::thread::sleep(Duration::from_millis(50));
            let (mut server, _) = listener.accept().await.unwrap();
            server.write_all(b"hello").await.unwrap();
            let sent = Instant::now();
            // The reader is late by 30 ms: the stamp is not.
            std::thread::sleep(Duration::from_millis(30));
            let mut buf = [0u8; 16];
            let (n, at) = read(&client, &mut buf).await.unwrap();
            let read_at = Instant::now();
            assert_eq!(&buf[..n], b"hello");
            let at = at.expect("the kernel stamps loopback segments");
            assert!(at <= read_at);
            let late = read_at - at;
            assert!(
                late >= Duration::from_millis(25),
                "stamped {late:?} before the read"
            );
            let early = at.saturating_duration_since(sent);
            assert!(
                early < Duration::from_millis(5),
                "stamped {early:?} after the write"
            );
            // Without the option, no stamp: the caller uses its clock.
            let other = TcpStream::connect(addr).await.unwrap();
            let (mut s2, _) = listener.accept().await.unwrap();
            s2.write_all(b"x").await.unwrap();
            let (n, at) = read(&other, &mut buf).await.unwrap();
            assert_eq!((n, at), (1, None));
        });
    }

    #[test]
    fn the_count_of_connections_needing_the_thread_awake() {
        assert!(awake::may_sleep());
        let a = awake::Needed::new();
        let b = awake::Needed::new();
        assert!(!awake::may_sleep());
        drop(a);
        assert!(!awake::may_sleep());
        drop(b);
        assert!(awake::may_sleep());
    }
}
