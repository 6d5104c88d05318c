//! The server's side of each request, joined to the request by its bytes (`run
//! --server-probes`): the kernel's events on the server's sockets (from the probes) and each
//! request's place on its connection (from the client) meet here, off the workers' hot path.
//!
//! What each side knows:
//! - The client knows, per request, its connection's local port and where its bytes lay in
//!   that connection's two streams ([`crate::model::Wire`]): the offset just past its last
//!   byte written, and the offsets of its response's first and last bytes received.
//! - The kernel knows, per event on one of the client's connections, the same connection
//!   (its client port) and an offset read from the socket's TCP counters: where the bytes
//!   that arrived in the server's socket end, where the server's read ended, where its write
//!   began and ended, where the bytes that arrived in the client's socket end
//!   ([`KernelEvent`]).
//!
//! The join ([`Joiner`]): a request's bytes arrived when the server's socket first held its
//! last byte; the server read it with the first read that ended at or past it; the response
//! began with the write whose bytes hold the response's first byte, and reached the client
//! when the client's socket first held that write's first byte. Neither thread nor process
//! nor order decides it: keep-alive, pipelining, HTTP/2 streams and WebSocket messages are
//! joined alike, whichever of the server's processes reads and writes.
//!
//! What comes out, per request ([`Joined`]): `send` (the client's write to its last byte in
//! the server's socket), `socket` (arrival → the read), `handle` (the read → the response's
//! write), `return` (that write → the client's socket), `last_return` (a response in several
//! writes: its last write → the client's socket), and the phases between the server's
//! functions (those hit on the thread, or goroutine, that made the request's read), and
//! `upstream` (`--server-upstream`: the server's call to another service whose reply the
//! response's first write carried, from its write there to the reply's arrival). These go
//! into per-request histograms and their interval series, into the slow requests kept whole,
//! into the per-request log, and into the tail's shares ([`tail`]); with the metrics endpoint
//! watching, the traced ones stand as its server phases' exemplars (`open`).

mod chain;
mod conn;
mod counts;
pub mod fields;
pub mod halves;
mod joiner;
mod open;
pub mod remote;
pub mod sink;
pub mod tail;
mod thread;

#[cfg(test)]
mod tests;

pub use joiner::{JoinCounts, Joined, Joiner, Unjoined};
pub use sink::{EventSink, TrailSink, TrailSource};
pub use thread::{JoinInput, JoinMsg, JoinThread};

use super::exemplar::Exemplar;
use crate::model::Wire;

/// One event of the kernel's on one of the client's connections (its client port), or the
/// probes' own (a tick, lost events). Times are CLOCK_MONOTONIC nanoseconds (bpftrace's
/// `nsecs`); offsets count the connection's TCP payload bytes from its first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelEvent {
    /// One of the client's connections was established (its first event).
    Opened {
        /// The client's port.
        port: u16,
        /// When.
        ns: u64,
    },
    /// Bytes arrived in the server's socket: `off` is where the bytes it holds end (`prev`
    /// before them).
    Arrived {
        /// The client's port.
        port: u16,
        /// The end of the bytes received before.
        prev: u64,
        /// The end of the bytes received so far.
        off: u64,
        /// When.
        ns: u64,
    },
    /// The server read bytes `start..off` from the socket.
    Read {
        /// The client's port.
        port: u16,
        /// Where its read began.
        start: u64,
        /// The end of what the server has read.
        off: u64,
        /// When the read returned.
        ns: u64,
        /// The process that read.
        pid: u32,
        /// The thread that read (a Go server: its goroutine).
        key: u64,
    },
    /// The server wrote bytes `start..end` of its stream to the client.
    Wrote {
        /// The client's port.
        port: u16,
        /// The offset of the write's first byte.
        start: u64,
        /// The offset just past its last byte.
        end: u64,
        /// When the write began (the send's start where the kernel says; else its return).
        ns: u64,
        /// The process that wrote.
        pid: u32,
    },
    /// Bytes arrived in the client's socket: `off` is where the bytes it holds end (`prev`
    /// before them).
    Delivered {
        /// The client's port.
        port: u16,
        /// The end of the bytes received before.
        prev: u64,
        /// The end of the bytes received so far.
        off: u64,
        /// When.
        ns: u64,
    },
    /// The server's function `index` (of `--server-fn`'s list) was entered (or returned, for
    /// a `%return` probe) on thread (goroutine) `key`.
    Function {
        /// Its index in the list.
        index: u16,
        /// The thread (a Go server: its goroutine).
        key: u64,
        /// When.
        ns: u64,
    },
    /// The server's write `start..end` to the client carried the reply of its call upstream
    /// (`--server-upstream`): its write there began at `sent_ns`, the reply's first bytes
    /// arrived at `arrived_ns`.
    Upstream {
        /// The client's port.
        port: u16,
        /// The offset of the client write's first byte.
        start: u64,
        /// The offset just past its last byte.
        end: u64,
        /// When the server's write upstream began.
        sent_ns: u64,
        /// When the reply's first bytes arrived in the server's upstream socket.
        arrived_ns: u64,
    },
    /// The upstream on this host (`--server-upstream`): the call whose reply the server's
    /// write from `start` carried arrived in its socket at `arrived_ns`, was read at
    /// `read_ns`, answered from `wrote_ns`.
    Backend {
        /// The client's port.
        port: u16,
        /// The offset of the client write's first byte.
        start: u64,
        /// When the call's bytes arrived in the upstream's socket.
        arrived_ns: u64,
        /// When the upstream read them.
        read_ns: u64,
        /// When its reply's write began.
        wrote_ns: u64,
    },
    /// The probes' clock reached `ns`: every event before it has been read.
    Tick {
        /// When.
        ns: u64,
    },
    /// The kernel dropped `n` events (bpftrace's buffers were full).
    Lost {
        /// How many.
        n: u64,
    },
}

/// What a worker hands the joiner of one recorded request: the request kept whole (its
/// client phases) and where its bytes lay.
#[derive(Debug, Clone, Copy)]
pub struct Trail {
    /// The request, as a kept request has it (its probed phases empty).
    pub kept: Exemplar,
    /// Where its bytes lay on its connection.
    pub wire: Wire,
    /// The interval it is recorded in.
    pub interval: u64,
    /// When a connection took it, ns from the start of recording (the log's `start_ns`).
    pub start_ns: u64,
    /// Response bytes read.
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// When its write began, CLOCK_MONOTONIC ns.
    pub write_ns: u64,
    /// When it ended, CLOCK_MONOTONIC ns: its server events are all before it.
    pub done_ns: u64,
}

/// The probed phases of a request, by index in the kept request's `probed` array.
pub mod slot {
    /// The client's write → its last byte in the server's socket.
    pub const SEND: usize = 0;
    /// Its last byte in the server's socket → the server's read that completed it.
    pub const SOCKET: usize = 1;
    /// That read → the server's write that carried the response's first byte.
    pub const HANDLE: usize = 2;
    /// That write → its first bytes in the client's socket.
    pub const RETURN: usize = 3;
    /// A response in several writes: its last write → its bytes in the client's socket.
    pub const LAST_RETURN: usize = 4;
    /// The first phase between the server's functions.
    pub const FUNCTIONS: usize = 5;
}

/// The names and words of the probed phases before the functions', by [`slot`].
pub const KERNEL: [(&str, &str); 5] = [
    ("send", "the client's write → the server's socket"),
    ("socket", "in its socket (arrival → read)"),
    ("handle", "its read → its write"),
    ("return", "its write → the client's socket"),
    (
        "last_return",
        "its last write → the client's socket (a response in several writes)",
    ),
];

/// The phases of a call upstream (`--server-upstream`), the last three probed: the call,
/// then, with the upstream on this host, its own socket and read → write.
pub const UPSTREAM: [(&str, &str); 3] = [
    (
        "upstream",
        "its call upstream: the server's write there → the reply's arrival",
    ),
    (
        "upstream_socket",
        "the upstream's socket (the call's arrival → its read)",
    ),
    ("upstream_handle", "the upstream's read → its write"),
];

/// The probed phases of a run: the kernel's ([`KERNEL`]), then one per pair of consecutive
/// functions of `functions` and, with three or more, their total, then the call upstream's
/// (`upstream`: `--server-upstream`): (name, what).
pub fn phases(functions: &[String], upstream: bool) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = KERNEL
        .iter()
        .map(|(n, w)| (n.to_string(), w.to_string()))
        .collect();
    for pair in functions.windows(2) {
        out.push((
            format!("fn:{}->{}", pair[0], pair[1]),
            format!("{} → {}", pair[0], pair[1]),
        ));
    }
    if functions.len() > 2 {
        let (a, b) = (&functions[0], &functions[functions.len() - 1]);
        out.push((
            format!("fn:{a}->{b}"),
            format!("{a} → {b} (the functions' total)"),
        ));
    }
    if upstream {
        out.extend(UPSTREAM.iter().map(|(n, w)| (n.to_string(), w.to_string())));
    }
    out
}

/// The names of [`phases`], by probed index.
pub fn phase_names(functions: &[String], upstream: bool) -> Vec<String> {
    phases(functions, upstream)
        .into_iter()
        .map(|(n, _)| n)
        .collect()
}

/// What the joiner is given at the start of a run.
#[derive(Debug, Clone)]
pub struct JoinSpec {
    /// The functions probed, in the order a request passes them (`--server-fn`'s labels).
    pub functions: Vec<String>,
    /// One request in this many is followed (drawn in the kernel).
    pub sample: u64,
    /// `--server-probes-cost`: only the connections whose port
    /// [`halves::traced`] picks are followed; the latency of the requests on
    /// the others is compared with theirs ([`halves`]).
    pub split: bool,
    /// `--server-upstream`: the server's calls upstream are timed (the last probed phase).
    pub upstream: bool,
    /// The run's interval.
    pub interval: std::time::Duration,
    /// How often the probes' clock ticks.
    pub tick: std::time::Duration,
}
