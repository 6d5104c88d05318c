//! `uring_probe`: the client CPU of HTTP/1.1 keep-alive requests in a closed loop, driven by
//! epoll or by io_uring, on one thread. A measurement to choose an I/O backend with, not part of
//! reqlife.
//!
//! N connections, one request in flight on each: write `GET PATH HTTP/1.1`, read the whole
//! response (its length from `Content-Length`), write the next one, for the duration. Then one
//! line on stdout: the requests completed, the loop's seconds, its CPU (getrusage(RUSAGE_SELF),
//! from the first request written to the end), CPU microseconds per request, and the system calls
//! the loop made (counted by the probe; connection setup left out).
//!
//! ```text
//! uring_probe --mode MODE --addr 127.0.0.1:PORT [--connections 50] [--duration 5] [--path /]
//!             [--fixed-files]
//! ```

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

/// The event loop a run uses.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Level-triggered epoll: on readable, one `recv` into a buffer shared by all connections;
    /// on a complete response, one `send`. wrk's calls less its two `epoll_ctl` per request (it
    /// waits for writability before each write).
    Epoll,
    /// One io_uring, entered once per loop turn (`submit_and_wait(1)`), every completion
    /// available handled before the next entry; sends post no completion unless they fail.
    Uring {
        /// One multishot recv per connection, into buffers of a registered buffer ring (else one
        /// single-shot recv per connection, into that connection's own buffer).
        bufring: bool,
        /// IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN | COOP_TASKRUN: completion work runs when
        /// the thread enters the ring, not as task work interrupting it.
        defer: bool,
    },
}

/// The names `--mode` takes.
const MODES: [(&str, Mode); 5] = [
    ("epoll", Mode::Epoll),
    (
        "uring",
        Mode::Uring {
            bufring: false,
            defer: false,
        },
    ),
    (
        "uring-bufring",
        Mode::Uring {
            bufring: true,
            defer: false,
        },
    ),
    (
        "uring-defer",
        Mode::Uring {
            bufring: false,
            defer: true,
        },
    ),
    (
        "uring-bufring-defer",
        Mode::Uring {
            bufring: true,
            defer: true,
        },
    ),
];

/// A connection's receive buffer (single-shot recv), and the size of each provided buffer.
const BUF_SIZE: usize = 4096;
/// The provided buffers of the buffer ring (a power of two; at most one per connection is out).
const RING_BUFS: u16 = 256;
/// The buffer group id of the ring.
const GROUP: u16 = 0;
/// user_data tags; the low 32 bits are the connection's index.
const RECV: u64 = 1 << 32;
const SEND: u64 = 2 << 32;
/// The largest response head the probe keeps while it arrives in pieces.
const MAX_HEAD: usize = 64 * 1024;
/// `IORING_RECVSEND_POLL_FIRST` (linux/io_uring.h): arm the poll before trying the recv.
const RECVSEND_POLL_FIRST: u16 = 1;

const USAGE: &str =
    "usage: uring_probe --mode epoll|uring|uring-bufring|uring-defer|uring-bufring-defer \
--addr HOST:PORT [--connections 50] [--duration SECONDS] [--path /] [--fixed-files]";

/// The command line.
struct Args {
    mode_name: &'static str,
    mode: Mode,
    addr: SocketAddr,
    connections: usize,
    duration: Duration,
    path: String,
    /// io_uring modes: the sockets registered as fixed files (no file lookup per operation).
    fixed_files: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut mode = None;
    let mut addr = None;
    let mut connections = 50usize;
    let mut duration = Duration::from_secs(5);
    let mut path = "/".to_string();
    let mut fixed_files = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--fixed-files" {
            fixed_files = true;
            continue;
        }
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--mode" => {
                mode = Some(
                    MODES
                        .iter()
                        .find(|(name, _)| *name == value)
                        .copied()
                        .ok_or_else(|| format!("unknown mode {value:?}"))?,
                )
            }
            "--addr" => addr = Some(value.parse().map_err(|e| format!("--addr {value}: {e}"))?),
            "--connections" => {
                connections = value
                    .parse()
                    .ok()
                    .filter(|&n| n > 0 && n < (1 << 16))
                    .ok_or_else(|| format!("--connections {value}: 1 to 65535"))?
            }
            "--duration" => {
                duration = value
                    .trim_end_matches('s')
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| format!("--duration {value}: seconds, > 0"))?
            }
            "--path" => path = value,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let (mode_name, mode) = mode.ok_or("--mode is required")?;
    Ok(Args {
        mode_name,
        mode,
        addr: addr.ok_or("--addr is required")?,
        connections,
        duration,
        path,
        fixed_files,
    })
}

/// What the loop did.
#[derive(Default, Debug)]
struct Counts {
    /// Responses received whole.
    requests: u64,
    /// Of those, the ones whose status was not 2xx.
    non_2xx: u64,
    /// System calls made by the loop (epoll_wait, recv, send; or io_uring_enter).
    syscalls: u64,
}

impl Counts {
    fn complete(&mut self, ok: bool) {
        self.requests += 1;
        if !ok {
            self.non_2xx += 1;
        }
    }
}

/// How much of a response has arrived on one connection.
#[derive(Default)]
struct Response {
    /// The head's bytes so far while its end has not arrived (empty when a head arrives whole).
    head: Vec<u8>,
    /// The body's bytes still to come, once the head is complete.
    body_left: Option<usize>,
    /// Whether the status of the response in progress is 2xx.
    ok: bool,
}

/// The outcome of bytes fed to a [`Response`].
#[derive(Debug, PartialEq, Eq)]
enum Fed {
    Partial,
    Complete { ok: bool },
}

impl Response {
    /// Takes the connection's next bytes. With one request in flight, bytes past the end of the
    /// response are an error.
    fn feed(&mut self, mut data: &[u8]) -> io::Result<Fed> {
        let left = match self.body_left {
            Some(left) => left,
            None => {
                let (content_length, ok) = if self.head.is_empty() {
                    match head_end(data, 0) {
                        Some(end) => {
                            let parsed = parse_head(&data[..end])?;
                            data = &data[end..];
                            parsed
                        }
                        None => {
                            self.head.extend_from_slice(data);
                            return Ok(Fed::Partial);
                        }
                    }
                } else {
                    let had = self.head.len();
                    self.head.extend_from_slice(data);
                    match head_end(&self.head, had.saturating_sub(3)) {
                        Some(end) => {
                            let parsed = parse_head(&self.head[..end])?;
                            data = &data[end - had..];
                            self.head.clear();
                            parsed
                        }
                        None if self.head.len() > MAX_HEAD => {
                            return Err(invalid("response head over 64 KiB"))
                        }
                        None => return Ok(Fed::Partial),
                    }
                };
                self.ok = ok;
                content_length
            }
        };
        match data.len().cmp(&left) {
            std::cmp::Ordering::Less => {
                self.body_left = Some(left - data.len());
                Ok(Fed::Partial)
            }
            std::cmp::Ordering::Equal => {
                self.body_left = None;
                Ok(Fed::Complete { ok: self.ok })
            }
            std::cmp::Ordering::Greater => Err(invalid("bytes past the end of the response")),
        }
    }
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// The index just past the first `\r\n\r\n` of `data` at or after `from`.
fn head_end(data: &[u8], from: usize) -> Option<usize> {
    data.get(from..)?
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| from + at + 4)
}

/// A complete head's body length (`Content-Length`) and whether its status is 2xx.
fn parse_head(head: &[u8]) -> io::Result<(usize, bool)> {
    let mut lines = head.split(|&b| b == b'\n');
    let status = lines.next().unwrap_or_default();
    if !status.starts_with(b"HTTP/1.") || status.len() < 12 {
        return Err(invalid("not an HTTP/1.x status line"));
    }
    let ok = status[9] == b'2';
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| invalid("bad Content-Length"))?;
            return Ok((value, ok));
        }
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return Err(invalid("chunked responses are not read by the probe"));
        }
    }
    Err(invalid("response without Content-Length"))
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Writes the whole request; the send buffer of an idle keep-alive socket takes it at once.
fn send_request(fd: RawFd, request: &[u8]) -> io::Result<()> {
    let sent = unsafe {
        libc::send(
            fd,
            request.as_ptr().cast(),
            request.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    if sent as usize != request.len() {
        return Err(io::Error::other("short send of a request"));
    }
    Ok(())
}

fn run_epoll(conns: &[TcpStream], request: &[u8], deadline: Instant) -> io::Result<Counts> {
    let epoll = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    for (i, conn) in conns.iter().enumerate() {
        let mut event = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        cvt(unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                conn.as_raw_fd(),
                &mut event,
            )
        })?;
    }
    let mut responses: Vec<Response> = conns.iter().map(|_| Response::default()).collect();
    let mut buf = vec![0u8; 64 * 1024];
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; conns.len()];
    let mut counts = Counts::default();
    for conn in conns {
        send_request(conn.as_raw_fd(), request)?;
        counts.syscalls += 1;
    }
    while Instant::now() < deadline {
        let ready = unsafe {
            libc::epoll_wait(
                epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as libc::c_int,
                100,
            )
        };
        counts.syscalls += 1;
        if ready < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in &events[..ready as usize] {
            let i = event.u64 as usize;
            let fd = conns[i].as_raw_fd();
            let got = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
            counts.syscalls += 1;
            if got < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    continue;
                }
                return Err(e);
            }
            if got == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            if let Fed::Complete { ok } = responses[i].feed(&buf[..got as usize])? {
                counts.complete(ok);
                send_request(fd, request)?;
                counts.syscalls += 1;
            }
        }
    }
    Ok(counts)
}

/// A buffer ring registered with io_uring (provided buffers for multishot recv): the ring's
/// entries in their own pages, the buffers in one allocation.
struct Provided {
    ring: *mut types::BufRingEntry,
    ring_bytes: usize,
    bufs: Vec<u8>,
    /// The tail as this thread has written it; published to the kernel by [`Provided::publish`].
    tail: u16,
}

impl Provided {
    fn new() -> io::Result<Self> {
        let ring_bytes = RING_BUFS as usize * std::mem::size_of::<types::BufRingEntry>();
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut provided = Provided {
            ring: ring.cast(),
            ring_bytes,
            bufs: vec![0; RING_BUFS as usize * BUF_SIZE],
            tail: 0,
        };
        for bid in 0..RING_BUFS {
            provided.give_back(bid);
        }
        provided.publish();
        Ok(provided)
    }

    /// The first `len` bytes of buffer `bid`.
    fn buffer(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * BUF_SIZE;
        &self.bufs[start..start + len.min(BUF_SIZE)]
    }

    /// Puts buffer `bid` back in the ring (seen by the kernel once published).
    fn give_back(&mut self, bid: u16) {
        let slot = (self.tail & (RING_BUFS - 1)) as usize;
        // The slot is past the published tail, so the kernel does not read it now.
        let entry = unsafe { &mut *self.ring.add(slot) };
        entry.set_addr(self.bufs[bid as usize * BUF_SIZE..].as_ptr() as u64);
        entry.set_len(BUF_SIZE as u32);
        entry.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the buffers given back so far visible to the kernel.
    fn publish(&self) {
        let tail = unsafe { AtomicU16::from_ptr(types::BufRingEntry::tail(self.ring) as *mut u16) };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for Provided {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.ring.cast(), self.ring_bytes) };
    }
}

/// The SQEs of the io_uring modes, on plain or fixed (registered) file descriptors.
struct Ops<'a> {
    fds: Vec<RawFd>,
    fixed: bool,
    request: &'a [u8],
}

impl Ops<'_> {
    /// One recv into `buf` (`BUF_SIZE` bytes); `poll_first` right after a send, when the
    /// response cannot be there yet.
    fn recv(&self, i: usize, buf: *mut u8, poll_first: bool) -> squeue::Entry {
        let prio = if poll_first { RECVSEND_POLL_FIRST } else { 0 };
        let entry = if self.fixed {
            opcode::Recv::new(types::Fixed(i as u32), buf, BUF_SIZE as u32)
                .ioprio(prio)
                .build()
        } else {
            opcode::Recv::new(types::Fd(self.fds[i]), buf, BUF_SIZE as u32)
                .ioprio(prio)
                .build()
        };
        entry.user_data(RECV | i as u64)
    }

    /// A multishot recv into the provided buffers of [`GROUP`].
    fn recv_multi(&self, i: usize) -> squeue::Entry {
        let entry = if self.fixed {
            opcode::RecvMulti::new(types::Fixed(i as u32), GROUP).build()
        } else {
            opcode::RecvMulti::new(types::Fd(self.fds[i]), GROUP).build()
        };
        entry.user_data(RECV | i as u64)
    }

    /// The request; it posts a completion only if it fails (MSG_WAITALL: no short send).
    fn send(&self, i: usize) -> squeue::Entry {
        let (ptr, len) = (self.request.as_ptr(), self.request.len() as u32);
        let flags = libc::MSG_NOSIGNAL | libc::MSG_WAITALL;
        let entry = if self.fixed {
            opcode::Send::new(types::Fixed(i as u32), ptr, len)
                .flags(flags)
                .build()
        } else {
            opcode::Send::new(types::Fd(self.fds[i]), ptr, len)
                .flags(flags)
                .build()
        };
        entry
            .flags(squeue::Flags::SKIP_SUCCESS)
            .user_data(SEND | i as u64)
    }
}

/// Queues `entry`, submitting what is queued first if the submission queue is full.
fn push(
    sq: &mut io_uring::SubmissionQueue<'_>,
    submitter: &io_uring::Submitter<'_>,
    counts: &mut Counts,
    entry: &squeue::Entry,
) -> io::Result<()> {
    // The buffers and the request the entries point to outlive the ring.
    while unsafe { sq.push(entry) }.is_err() {
        sq.sync();
        submitter.submit()?;
        counts.syscalls += 1;
        sq.sync();
    }
    Ok(())
}

fn run_uring(
    conns: &[TcpStream],
    request: &[u8],
    deadline: Instant,
    bufring: bool,
    defer: bool,
    fixed: bool,
) -> io::Result<Counts> {
    let n = conns.len();
    let entries = (2 * n).next_power_of_two().max(8) as u32;
    // Declared before the ring, so dropped after it: the kernel writes into them until then.
    let mut provided = if bufring {
        Some(Provided::new()?)
    } else {
        None
    };
    let mut own_bufs = if bufring {
        Vec::new()
    } else {
        vec![0u8; n * BUF_SIZE]
    };
    let mut builder = IoUring::<squeue::Entry, cqueue::Entry>::builder();
    builder.setup_cqsize(entries * 4);
    if defer {
        builder
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun();
    }
    let mut ring = builder.build(entries)?;
    let ops = Ops {
        fds: conns.iter().map(|c| c.as_raw_fd()).collect(),
        fixed,
        request,
    };
    if let Some(p) = &provided {
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(p.ring as u64, RING_BUFS, GROUP, 0)?
        };
    }
    if fixed {
        ring.submitter().register_files(&ops.fds)?;
    }
    let mut responses: Vec<Response> = conns.iter().map(|_| Response::default()).collect();
    let mut counts = Counts::default();
    let (submitter, mut sq, mut cq) = ring.split();
    for i in 0..n {
        push(&mut sq, &submitter, &mut counts, &ops.send(i))?;
        let recv = if bufring {
            ops.recv_multi(i)
        } else {
            ops.recv(i, own_bufs[i * BUF_SIZE..].as_mut_ptr(), true)
        };
        push(&mut sq, &submitter, &mut counts, &recv)?;
    }
    loop {
        sq.sync();
        match submitter.submit_and_wait(1) {
            Ok(_) => {}
            // EINTR: a signal; EBUSY: completions to reap first. Both: reap what is there.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY)) => {}
            Err(e) => return Err(e),
        }
        counts.syscalls += 1;
        cq.sync();
        for cqe in &mut cq {
            let (data, res, flags) = (cqe.user_data(), cqe.result(), cqe.flags());
            let i = (data & 0xffff_ffff) as usize;
            if data & SEND != 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            if res == -libc::ENOBUFS && bufring {
                // The ring ran dry and ended the multishot recv; buffers are back by the next
                // entry.
                push(&mut sq, &submitter, &mut counts, &ops.recv_multi(i))?;
                continue;
            }
            if res < 0 {
                return Err(io::Error::from_raw_os_error(-res));
            }
            if res == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            let fed = match &mut provided {
                Some(p) => {
                    let bid = cqueue::buffer_select(flags)
                        .ok_or_else(|| io::Error::other("recv completion without a buffer"))?;
                    let fed = responses[i].feed(p.buffer(bid, res as usize));
                    p.give_back(bid);
                    fed?
                }
                None => {
                    let start = i * BUF_SIZE;
                    responses[i].feed(&own_bufs[start..start + res as usize])?
                }
            };
            let complete = matches!(fed, Fed::Complete { .. });
            if let Fed::Complete { ok } = fed {
                counts.complete(ok);
                push(&mut sq, &submitter, &mut counts, &ops.send(i))?;
            }
            if bufring {
                if !cqueue::more(flags) {
                    push(&mut sq, &submitter, &mut counts, &ops.recv_multi(i))?;
                }
            } else {
                let buf = own_bufs[i * BUF_SIZE..].as_mut_ptr();
                push(
                    &mut sq,
                    &submitter,
                    &mut counts,
                    &ops.recv(i, buf, complete),
                )?;
            }
        }
        if let Some(p) = &provided {
            p.publish();
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    Ok(counts)
}

/// This process's user and system CPU seconds so far.
fn cpu_seconds() -> (f64, f64) {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("uring_probe: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("uring_probe: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> io::Result<()> {
    let request = format!("GET {} HTTP/1.1\r\nHost: x\r\n\r\n", args.path).into_bytes();
    let conns = (0..args.connections)
        .map(|_| {
            let conn = TcpStream::connect(args.addr)?;
            conn.set_nodelay(true)?;
            conn.set_nonblocking(true)?;
            Ok(conn)
        })
        .collect::<io::Result<Vec<_>>>()?;
    let (user0, sys0) = cpu_seconds();
    let start = Instant::now();
    let deadline = start + args.duration;
    let counts = match args.mode {
        Mode::Epoll => run_epoll(&conns, &request, deadline)?,
        Mode::Uring { bufring, defer } => {
            run_uring(&conns, &request, deadline, bufring, defer, args.fixed_files)?
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let (user1, sys1) = cpu_seconds();
    let (user, sys) = (user1 - user0, sys1 - sys0);
    let per_req = |x: f64| x / counts.requests.max(1) as f64;
    println!(
        "mode={} fixed_files={} connections={} requests={} non_2xx={} seconds={:.3} \
         cpu_user_s={:.3} cpu_sys_s={:.3} us_per_req={:.3} syscalls={} syscalls_per_req={:.3}",
        args.mode_name,
        args.fixed_files as u8,
        args.connections,
        counts.requests,
        counts.non_2xx,
        seconds,
        user,
        sys,
        per_req((user + sys) * 1e6),
        counts.syscalls,
        per_req(counts.syscalls as f64),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RESPONSE: &[u8] =
        b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Length: 12\r\n\r\nHello World!";

    #[test]
    fn whole_response_in_one_piece() {
        let mut r = Response::default();
        assert_eq!(r.feed(RESPONSE).unwrap(), Fed::Complete { ok: true });
        assert_eq!(r.feed(RESPONSE).unwrap(), Fed::Complete { ok: true });
    }

    #[test]
    fn response_byte_by_byte() {
        for split in 1..RESPONSE.len() {
            let mut r = Response::default();
            assert_eq!(r.feed(&RESPONSE[..split]).unwrap(), Fed::Partial, "{split}");
            assert_eq!(
                r.feed(&RESPONSE[split..]).unwrap(),
                Fed::Complete { ok: true },
                "{split}"
            );
        }
        let mut r = Response::default();
        for (at, b) in RESPONSE.iter().enumerate() {
            let fed = r.feed(std::slice::from_ref(b)).unwrap();
            let want = if at + 1 == RESPONSE.len() {
                Fed::Complete { ok: true }
            } else {
                Fed::Partial
            };
            assert_eq!(fed, want, "{at}");
        }
    }

    #[test]
    fn status_and_errors() {
        let mut r = Response::default();
        let not_found = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(r.feed(not_found).unwrap(), Fed::Complete { ok: false });
        let mut extra = RESPONSE.to_vec();
        extra.push(b'x');
        assert!(Response::default().feed(&extra).is_err());
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(Response::default().feed(chunked).is_err());
    }
}
