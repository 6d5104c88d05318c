//! What the join came to, in counts, and why a request has none of the server's phases.

use std::collections::BTreeMap;

/// Why a request has no server phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unjoined {
    /// It failed before its response: nothing of the server's to join.
    Failed,
    /// Its connection is not a TCP connection of this client's the probes could see
    /// (HTTP/3, a WebSocket over HTTP/2, a request that never had a connection).
    NoConnection,
    /// The probes never saw its connection: opened before they were attached, or not
    /// reqlife's own.
    NotSeen,
    /// Not drawn (`--server-sample N`).
    NotSampled,
    /// Its bytes' arrival in the server's socket was not seen.
    NoArrival,
    /// The server's read of it was not seen (a read the kernel's probes do not see:
    /// io_uring, or a process not probed).
    NoRead,
    /// The server's write of its response was not seen.
    NoWrite,
    /// Its events were let go before it came (a request joined too late).
    Late,
    /// Its connection is of the half left untraced (`--server-probes-cost`).
    Untraced,
    /// Probed on another host: neither kept nor logged, so its server events stayed there.
    NotKept,
    /// Probed on another host: its server events had left the agent's ring (`--ring`).
    LeftRing,
    /// Probed on another host: the agent did not answer for it (gone, or its clock had not
    /// passed the request by the run's end).
    NotPulled,
}

impl Unjoined {
    /// The reason's key in the record.
    pub fn name(self) -> &'static str {
        match self {
            Unjoined::Failed => "failed",
            Unjoined::NoConnection => "no_connection",
            Unjoined::NotSeen => "connection_not_seen",
            Unjoined::NotSampled => "not_sampled",
            Unjoined::NoArrival => "no_arrival",
            Unjoined::NoRead => "no_read",
            Unjoined::NoWrite => "no_write",
            Unjoined::Late => "late",
            Unjoined::Untraced => "untraced",
            Unjoined::NotKept => "not_kept",
            Unjoined::LeftRing => "left_ring",
            Unjoined::NotPulled => "not_pulled",
        }
    }
}

/// What the join came to, in counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JoinCounts {
    /// Requests the workers handed over.
    pub requests: u64,
    /// Requests the workers could not hand over (the joiner was behind).
    pub dropped: u64,
    /// Requests joined (their server phases measured).
    pub joined: u64,
    /// Requests not joined, by why.
    pub unjoined: BTreeMap<&'static str, u64>,
    /// Joined requests whose read carried other requests too (pipelining, HTTP/2).
    pub shared_read: u64,
    /// Joined requests whose response took several writes.
    pub several_writes: u64,
    /// Of those, the ones whose last write reached the client more than 1 ms after it was
    /// written (held back in the server's send queue), and the sum of those delays, ns.
    pub held_back: u64,
    /// The held-back delays' sum, ns.
    pub held_back_ns: u64,
    /// Per function phase (by probed index): joined requests where it ended after the
    /// response's first write had begun.
    pub after_write: BTreeMap<usize, u64>,
    /// Events the kernel dropped.
    pub lost_events: u64,
    /// Arrivals and reads missing from the probes' output: one began past the end of the
    /// last of its connection seen.
    pub missed_events: u64,
    /// Events of connections not reqlife's (the server's own to itself or others' on the
    /// port): counted apart by the probes, never joined.
    pub others: u64,
    /// Function hits on threads that read none of reqlife's connections.
    pub stray_hits: u64,
    /// The kernel's events seen, by kind (arrivals, reads, writes, deliveries, functions).
    pub events: [u64; 5],
    /// `--server-upstream`: the server's writes to the client that carried the reply of a
    /// call upstream (the kernel's `U` events).
    pub upstream_events: u64,
    /// Joined requests whose response carried the reply of a call upstream (timed).
    pub upstream_calls: u64,
    /// Calls whose reply a request's response carried but that did not lie inside its read
    /// → that write (another request's, on the same thread): not counted as its.
    pub upstream_misplaced: u64,
}
