//! One connection's kernel events, waiting for the requests they belong to: its arrivals in
//! the server's socket, the server's reads and writes, its arrivals in the client's socket,
//! the function hits of the threads that read it and the calls upstream its writes carried
//! the replies of, each in the order the kernel saw them. A resolved request lets go of the events only it and those before it could use
//! ([`Conn::forget_before`]); a connection that has seen nothing for a while is dropped whole.

use std::collections::VecDeque;

/// Bytes arrived in a socket: where the bytes it held ended before (`prev`) and after
/// (`off`), and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct At {
    pub prev: u64,
    pub off: u64,
    pub ns: u64,
}

/// One read of the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Read {
    /// Its number on this connection (from 0).
    pub seq: u64,
    /// Where the read began and ended.
    pub start: u64,
    pub off: u64,
    pub ns: u64,
    pub pid: u32,
    /// The requests it completed that were resolved so far (several: a shared read).
    pub users: u32,
}

/// One write of the server's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Write {
    pub start: u64,
    pub end: u64,
    pub ns: u64,
    pub pid: u32,
}

/// A function hit, after read `seq` of the thread that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hit {
    pub seq: u64,
    pub index: u16,
    pub ns: u64,
}

/// A call upstream whose reply a write to the client carried (`--server-upstream`): the
/// write's bytes, when the call's write began and when its reply arrived; with the upstream
/// on this host, when the call arrived there, was read and answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Call {
    pub start: u64,
    pub end: u64,
    pub sent_ns: u64,
    pub arrived_ns: u64,
    pub backend: Option<[u64; 3]>,
}

/// One connection's events.
#[derive(Debug, Default)]
pub(super) struct Conn {
    pub arrivals: VecDeque<At>,
    pub reads: VecDeque<Read>,
    pub writes: VecDeque<Write>,
    pub delivered: VecDeque<At>,
    pub hits: VecDeque<Hit>,
    pub calls: VecDeque<Call>,
    /// The next read's number.
    pub next_read: u64,
    /// Where the last arrival and the last read seen ended (`None` before the first).
    pub arrived_to: Option<u64>,
    pub read_to: Option<u64>,
    /// The last time the kernel said anything of it.
    pub last_ns: u64,
}

/// Drops the front of `q` while `old` holds for it.
fn drop_front<T>(q: &mut VecDeque<T>, old: impl Fn(&T) -> bool) {
    while q.front().is_some_and(&old) {
        q.pop_front();
    }
}

impl Conn {
    /// Whether an event that began at `from` leaves a hole after the last one of its kind
    /// that ended at `to` (an event between them missing from the probes' output).
    pub fn gap(to: Option<u64>, from: u64) -> bool {
        to.is_some_and(|to| from > to)
    }

    /// A read of the server's: its number.
    pub fn read(&mut self, start: u64, off: u64, ns: u64, pid: u32) -> u64 {
        self.read_to = Some(off);
        let seq = self.next_read;
        self.next_read += 1;
        self.reads.push_back(Read {
            seq,
            start,
            off,
            ns,
            pid,
            users: 0,
        });
        self.last_ns = ns;
        seq
    }

    /// The arrival that brought byte `off - 1` (the last byte of a request ending at `off`):
    /// the first whose bytes reach `off`, if it began before (else that arrival was not seen).
    pub fn arrival_by(&self, off: u64) -> Option<At> {
        let a = self.arrivals.iter().find(|a| a.off >= off)?;
        (a.prev < off).then_some(*a)
    }

    /// The read that took byte `off - 1`: the first that ended at or past `off`, if it began
    /// before.
    pub fn read_by(&mut self, off: u64) -> Option<&mut Read> {
        let r = self.reads.iter_mut().find(|r| r.off >= off)?;
        (r.start < off).then_some(r)
    }

    /// The write that holds byte `off` (exact offsets).
    pub fn write_holding(&self, off: u64) -> Option<Write> {
        let w = self.writes.iter().find(|w| w.end > off)?;
        (w.start <= off).then_some(*w)
    }

    /// The first write that begins at or past `off` and at or after `not_before` (a TLS
    /// response, whose first byte is known to be at or past `off` only).
    pub fn write_from(&self, off: u64, not_before: u64) -> Option<Write> {
        self.writes
            .iter()
            .find(|w| w.start >= off && w.ns >= not_before)
            .copied()
    }

    /// The writes from `first` on that hold bytes before `end`: the response's writes.
    pub fn writes_until(&self, first: &Write, end: u64) -> (u32, Option<Write>) {
        let mut n = 0;
        let mut last = None;
        for w in self.writes.iter().filter(|w| w.start >= first.start) {
            if w.start >= end {
                break;
            }
            n += 1;
            last = Some(*w);
        }
        (n, last)
    }

    /// The arrival in the client's socket that brought byte `off`.
    pub fn delivered_holding(&self, off: u64) -> Option<At> {
        let a = self.delivered.iter().find(|a| a.off > off)?;
        (a.prev <= off).then_some(*a)
    }

    /// The upstream's own stamps of the call of the write that begins at `start`.
    pub fn backend(&mut self, start: u64, stamps: [u64; 3]) {
        if let Some(c) = self.calls.iter_mut().rev().find(|c| c.start == start) {
            c.backend = Some(stamps);
        }
    }

    /// The call upstream whose reply the write that begins at `start` carried.
    pub fn call_of(&self, start: u64) -> Option<Call> {
        self.calls.iter().find(|c| c.start == start).copied()
    }

    /// The function hits after read `seq` (in the order the kernel saw them).
    pub fn hits_of(&self, seq: u64) -> impl Iterator<Item = &Hit> {
        self.hits.iter().filter(move |h| h.seq == seq)
    }

    /// Lets go of what no request after one that ended at `tx_end` (and whose response began
    /// at `rx_first`) can use: arrivals and reads before `tx_end`, writes and client
    /// arrivals before `rx_first`, and the hits of reads let go. Gives the reads let go
    /// (for their users' count).
    pub fn forget_before(&mut self, tx_end: u64, rx_first: u64) -> Vec<Read> {
        drop_front(&mut self.arrivals, |a| a.off < tx_end);
        let mut gone = Vec::new();
        while self.reads.front().is_some_and(|r| r.off < tx_end) {
            gone.extend(self.reads.pop_front());
        }
        let first_read = self.reads.front().map_or(self.next_read, |r| r.seq);
        drop_front(&mut self.hits, |h| h.seq < first_read);
        drop_front(&mut self.writes, |w| w.end <= rx_first);
        drop_front(&mut self.calls, |c| c.end <= rx_first);
        drop_front(&mut self.delivered, |a| a.off <= rx_first);
        gone
    }

    /// Events held.
    pub fn held(&self) -> usize {
        self.arrivals.len()
            + self.reads.len()
            + self.writes.len()
            + self.delivered.len()
            + self.hits.len()
            + self.calls.len()
    }
}
