//! The join itself, without threads or I/O: kernel events and requests in, each request's
//! server phases out (see the module above for the rule).
//!
//! A request is joined once the probes' clock is past its end by [`Joiner::SLACK_NS`] (its
//! events have all been read by then). The events of a connection stay until the requests
//! after them no longer need them: [`KEEP_RESOLVED`] requests behind the last one joined, so
//! that requests of one connection joined a little out of order (HTTP/2's streams end in any
//! order) still find theirs; a connection quiet for [`QUIET_NS`] is let go whole.

use super::conn::{Conn, Hit, Write};
use calls::timed_call;
mod calls;

pub use super::counts::{JoinCounts, Unjoined};
use super::halves::{traced, Halves, MeasuredCost};
use super::open::Intervals;
use super::tail::TailAcc;
use super::{chain, slot, JoinSpec, KernelEvent, Trail};
use crate::recorder::collector::IntervalSink;
use crate::recorder::exemplar::Exemplars;
use crate::recorder::request_log::LogWorker;
use crate::recorder::{hist, Series};
use hdrhistogram::Histogram;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// Requests of a connection joined whose events stay (see the module's doc).
const KEEP_RESOLVED: usize = 64;
/// A connection the kernel said nothing of for this long is let go, ns.
const QUIET_NS: u64 = 10_000_000_000;
/// Bytes that reach the client this long after their write are held back, ns: a response's
/// last write waiting in the server's send queue (Nagle's algorithm, until the client's
/// delayed ACK).
const HELD_NS: u64 = 1_000_000;

/// What the join produced.
#[derive(Debug, Clone)]
pub struct Joined {
    /// The probed phases: (name, what, the run's histogram).
    pub phases: Vec<(String, String, Histogram<u64>)>,
    /// Their interval series (named with the probes' prefix among `server`).
    pub series: Series,
    /// The requests kept whole, their server phases with them.
    pub kept: Exemplars,
    /// The parts of the joined requests by their total's bucket.
    pub tail: TailAcc,
    /// The counts.
    pub counts: JoinCounts,
    /// The server's processes that read or wrote reqlife's connections.
    pub pids: BTreeSet<u32>,
    /// `--server-probes-cost`: the traced half of the connections against the untraced.
    pub cost: Option<MeasuredCost>,
    /// `--server-upstream`: the server's calls upstream were timed.
    pub upstream: bool,
    /// Probed on another host: the requests asked for and the clocks per request.
    pub remote: Option<super::remote::PerRequest>,
}

/// The join's state.
pub struct Joiner {
    spec: JoinSpec,
    names: Vec<(String, String)>,
    conns: HashMap<u16, Conn>,
    /// Per connection, the last requests joined: (tx_end, rx_first).
    resolved: HashMap<u16, (VecDeque<(u64, u64)>, u64)>,
    /// Per thread (goroutine): its connection and read number.
    last_read: HashMap<u64, (u16, u64)>,
    /// Requests waiting for the probes' clock to pass their end: the workers' batches as
    /// they came (in order), each with the index of its next request; `spent`: batches joined
    /// whole, for the workers' pool.
    pending: VecDeque<(Vec<Trail>, usize)>,
    spent: Vec<Vec<Trail>>,
    watermark: u64,
    hists: Vec<Histogram<u64>>,
    /// The intervals still filled (and, watched, their traced requests by phase).
    open: Intervals,
    series: Series,
    kept: Exemplars,
    tail: TailAcc,
    counts: JoinCounts,
    pids: BTreeSet<u32>,
    log: Option<LogWorker>,
    on_interval: Option<IntervalSink>,
    last_prune: u64,
    /// `--server-probes-cost`: the two halves' requests.
    halves: Option<Halves>,
    /// Probed on another host ([`Joiner::remote`]): per joined request, the clocks' offset
    /// and the round trip its four stamps give, ns.
    clocks: Option<Vec<(i64, i64)>>,
}

impl Joiner {
    /// How far past a request's end the probes' clock must be before it is joined, ns: two
    /// ticks of a 100 ms clock, so that every event before it has been read.
    pub const SLACK_NS: u64 = 200_000_000;

    /// A joiner for a run of `spec`; `log`: the per-request log's writer (the joiner writes
    /// its rows, the server's phases with them); `on_interval`: given each interval's phases.
    pub fn new(
        spec: JoinSpec,
        log: Option<LogWorker>,
        on_interval: Option<IntervalSink>,
    ) -> Joiner {
        let names = super::phases(&spec.functions, spec.upstream);
        let n = names.len();
        let halves = spec.split.then(Halves::default);
        Joiner {
            spec,
            conns: HashMap::new(),
            resolved: HashMap::new(),
            last_read: HashMap::new(),
            pending: VecDeque::new(),
            spent: Vec::new(),
            watermark: 0,
            hists: (0..n).map(|_| hist::new_hist()).collect(),
            open: Intervals::new(n, on_interval.is_some()),
            series: Series::default(),
            kept: Exemplars::with_probed(n),
            tail: TailAcc::default(),
            counts: JoinCounts::default(),
            pids: BTreeSet::new(),
            log,
            on_interval,
            last_prune: 0,
            halves,
            names,
            clocks: None,
        }
    }

    /// Joins the requests of a run probed on another host: their events come only for the
    /// requests asked (a connection's are sparse: no gap counted as missed), and each joined
    /// request's four stamps give the clocks' offset.
    pub fn remote(&mut self) {
        self.clocks = Some(Vec::new());
    }

    /// Per joined request (probed on another host): the clocks' offset and round trip, ns.
    pub fn clocks(&self) -> &[(i64, i64)] {
        self.clocks.as_deref().unwrap_or(&[])
    }

    /// The probed phases: (name, what).
    pub fn names(&self) -> &[(String, String)] {
        &self.names
    }

    /// Where the per-request log's turn stands ([`LogWorker::turn`]), when the run keeps one.
    pub fn log_turn(&self) -> Option<(u64, u64)> {
        self.log.as_ref().map(LogWorker::turn)
    }

    /// The probes' clock, ns.
    pub fn watermark(&self) -> u64 {
        self.watermark
    }

    /// An arrival in the server's socket of bytes `prev..off`.
    fn arrived(&mut self, port: u16, prev: u64, off: u64, ns: u64) {
        // Sampled, a connection's events come in episodes: holes between them.
        let whole = self.spec.sample <= 1 && self.clocks.is_none();
        let c = self.conn(port, ns);
        let missed = whole && Conn::gap(c.arrived_to, prev);
        c.arrived_to = Some(off);
        c.arrivals.push_back(super::conn::At { prev, off, ns });
        self.counts.missed_events += u64::from(missed);
    }

    /// A read of the server's of bytes `start..off`: its number on the connection.
    fn read(&mut self, port: u16, start: u64, off: u64, ns: u64, pid: u32) -> u64 {
        let whole = self.spec.sample <= 1 && self.clocks.is_none();
        let c = self.conn(port, ns);
        let missed = whole && Conn::gap(c.read_to, start);
        let seq = c.read(start, off, ns, pid);
        self.counts.missed_events += u64::from(missed);
        seq
    }

    /// A function's hit: the request its thread (goroutine) read last has it.
    fn hit(&mut self, index: u16, key: u64, ns: u64) {
        match self.last_read.get(&key).copied() {
            Some((port, seq)) => {
                if let Some(c) = self.conns.get_mut(&port) {
                    c.hits.push_back(Hit { seq, index, ns });
                }
            }
            None => self.counts.stray_hits += 1,
        }
    }

    /// One kernel event in.
    pub fn event(&mut self, e: KernelEvent) {
        use super::conn::At;
        match e {
            KernelEvent::Opened { port, ns } => {
                // A new connection on a port: whatever an old one left is not its.
                self.conns.insert(port, Conn::default());
                self.conn(port, ns);
                self.resolved.remove(&port);
            }
            KernelEvent::Arrived {
                port,
                prev,
                off,
                ns,
            } => {
                self.counts.events[0] += 1;
                self.arrived(port, prev.min(off), off, ns);
            }
            KernelEvent::Read {
                port,
                start,
                off,
                ns,
                pid,
                key,
            } => {
                self.counts.events[1] += 1;
                self.pids.insert(pid);
                let seq = self.read(port, start.min(off), off, ns, pid);
                self.last_read.insert(key, (port, seq));
            }
            KernelEvent::Wrote {
                port,
                start,
                end,
                ns,
                pid,
            } => {
                self.counts.events[2] += 1;
                self.pids.insert(pid);
                let c = self.conn(port, ns);
                c.writes.push_back(Write {
                    start,
                    end,
                    ns,
                    pid,
                });
            }
            KernelEvent::Delivered {
                port,
                prev,
                off,
                ns,
            } => {
                self.counts.events[3] += 1;
                let prev = prev.min(off);
                self.conn(port, ns)
                    .delivered
                    .push_back(At { prev, off, ns });
            }
            KernelEvent::Upstream { .. } | KernelEvent::Backend { .. } => self.call(e),
            KernelEvent::Function { index, key, ns } => {
                self.counts.events[4] += 1;
                self.hit(index, key, ns);
            }
            KernelEvent::Tick { ns } => {
                self.watermark = self.watermark.max(ns);
                self.resolve(self.watermark.saturating_sub(Self::SLACK_NS));
            }
            KernelEvent::Lost { n } => self.counts.lost_events += n,
        }
    }

    fn conn(&mut self, port: u16, ns: u64) -> &mut Conn {
        let c = self.conns.entry(port).or_default();
        c.last_ns = c.last_ns.max(ns);
        c
    }

    /// Events of connections that are not reqlife's, counted by the probes.
    pub fn others(&mut self, n: u64) {
        self.counts.others = n;
    }

    /// Requests in (`dropped`: those a worker could not hand over).
    pub fn trails(&mut self, trails: &[Trail], dropped: u64) {
        self.batch(trails.to_vec(), dropped);
    }

    /// A worker's batch of requests in, kept as it is (not copied: the join runs at the
    /// requests' rate); it comes back from [`Joiner::spent`] once joined.
    pub fn batch(&mut self, mut trails: Vec<Trail>, dropped: u64) {
        self.counts.dropped += dropped;
        if trails.len() * 2 < trails.capacity() {
            // Mostly empty (flushed at an interval's close): its requests wait in a buffer of
            // their size, its own goes back at once, so that what waits stays within twice
            // the requests however long the probes' clock keeps them. (A count alone, as a
            // run probed on another host hands over, has no buffer to give back.)
            if !trails.is_empty() {
                self.pending.push_back((trails.to_vec(), 0));
            }
            trails.clear();
            self.spent.push(trails);
        } else if !trails.is_empty() {
            self.pending.push_back((trails, 0));
        }
    }

    /// Whether batches wait to be given back ([`Joiner::spent`]).
    pub fn has_spent(&self) -> bool {
        !self.spent.is_empty()
    }

    /// The batches joined whole since the last call (emptied), for reuse.
    pub fn spent(&mut self) -> std::vec::Drain<'_, Vec<Trail>> {
        self.spent.drain(..)
    }

    /// Joins every request that ended before `until` (CLOCK_MONOTONIC ns).
    pub fn resolve(&mut self, until: u64) {
        while let Some((batch, next)) = self.pending.front_mut() {
            let Some(&t) = batch.get(*next).filter(|t| t.done_ns <= until) else {
                break;
            };
            *next += 1;
            if *next == batch.len() {
                if let Some((mut batch, _)) = self.pending.pop_front() {
                    batch.clear();
                    self.spent.push(batch);
                }
            }
            self.join(t);
        }
        if until > self.last_prune + 1_000_000_000 {
            self.last_prune = until;
            let horizon = until.saturating_sub(QUIET_NS);
            let counts = &mut self.counts;
            self.conns.retain(|_, c| {
                let keep = c.last_ns >= horizon;
                if !keep {
                    counts.shared_read += shared_of(c.reads.iter());
                }
                keep
            });
            let conns = &self.conns;
            self.last_read
                .retain(|_, (port, _)| conns.contains_key(port));
        }
        self.flush_intervals(false);
    }

    /// Joins every request left, whatever the clock: the run is over.
    pub fn resolve_all(&mut self) {
        self.resolve(u64::MAX);
        self.flush_intervals(true);
    }

    /// Events held now (for the memory's bound).
    pub fn held(&self) -> usize {
        let pending: usize = self.pending.iter().map(|(b, next)| b.len() - next).sum();
        self.conns.values().map(Conn::held).sum::<usize>() + pending
    }

    /// One request: its server phases found, recorded, logged.
    fn join(&mut self, t: Trail) {
        self.join_as(t, None);
    }

    /// One request joined now, or (`why`) recorded and logged without server phases: a run
    /// probed on another host joins the requests it asked for as their events come.
    pub fn join_as(&mut self, mut t: Trail, why: Option<Unjoined>) {
        self.counts.requests += 1;
        let n = self.names.len();
        // On the stack (the join runs at the requests' rate); a longer chain of functions than
        // a kept request holds takes the heap.
        let (mut stack, mut heap) = ([None; crate::recorder::exemplar::PROBED], Vec::new());
        let probed: &mut [Option<u64>] = if n <= stack.len() {
            &mut stack[..n]
        } else {
            heap.resize(n, None);
            &mut heap
        };
        let untraced = self.spec.split && t.wire.port != 0 && !traced(t.wire.port);
        let found = match (why, untraced) {
            (Some(why), _) => Err(why),
            (None, true) => Err(Unjoined::Untraced),
            (None, false) => self.find(&t, probed),
        };
        match found {
            Ok(()) => self.counts.joined += 1,
            Err(why) => *self.counts.unjoined.entry(why.name()).or_default() += 1,
        }
        let total = t.kept.phases[crate::model::Phase::Total.index()];
        if let (Some(halves), Some(total), Some(_)) = (&mut self.halves, total, t.kept.status) {
            let port = t.wire.port;
            halves.record(port, traced(port), t.interval, total);
        }
        for (i, ns) in probed.iter().enumerate() {
            t.kept.set_probed(i, *ns);
        }
        let upstream = self
            .spec
            .upstream
            .then(|| probed[n - super::UPSTREAM.len()])
            .flatten();
        if let [Some(send), Some(socket), Some(handle), Some(ret)] = [
            probed[slot::SEND],
            probed[slot::SOCKET],
            probed[slot::HANDLE],
            probed[slot::RETURN],
        ] {
            let server = [send, socket, handle, ret];
            if let Some((total, parts)) = TailAcc::parts(&t.kept.phases, server, upstream) {
                self.tail.add(total, &parts);
            }
        }
        for (h, ns) in self.hists.iter_mut().zip(probed.iter()) {
            if let Some(ns) = *ns {
                hist::record(h, ns);
            }
        }
        self.open.record(t.interval, probed, &t.kept);
        self.kept.offer_kept(&t.kept);
        if let Some(log) = &mut self.log {
            log.trail_row(&t, probed);
        }
    }

    /// The server phases of `t` into `probed`, or why it has none.
    fn find(&mut self, t: &Trail, probed: &mut [Option<u64>]) -> Result<(), Unjoined> {
        let w = t.wire;
        match (t.kept.status, w.port) {
            (None, _) => return Err(Unjoined::Failed),
            (_, 0) => return Err(Unjoined::NoConnection),
            _ => {}
        }
        let sampled = self.spec.sample > 1;
        let late = self
            .resolved
            .get(&w.port)
            .is_some_and(|(_, forgotten)| w.tx_end <= *forgotten);
        let missing = |why| if sampled { Unjoined::NotSampled } else { why };
        let c = self
            .conns
            .get_mut(&w.port)
            .ok_or(missing(Unjoined::NotSeen))?;
        if late {
            return Err(Unjoined::Late);
        }
        let arrival = c.arrival_by(w.tx_end).ok_or(missing(Unjoined::NoArrival))?;
        let read = c.read_by(w.tx_end).ok_or(missing(Unjoined::NoRead))?;
        read.users += 1;
        let (read_ns, read_seq, shared) = (read.ns, read.seq, read.users > 1);
        let first = if w.exact {
            c.write_holding(w.rx_first)
        } else {
            c.write_from(w.rx_first, read_ns)
        }
        .ok_or(missing(Unjoined::NoWrite))?;
        let (writes, last) = if w.exact {
            c.writes_until(&first, w.rx_end)
        } else {
            (1, Some(first))
        };
        super::remote::note_clocks(&mut self.clocks, t, arrival.ns, first.ns);
        probed[slot::SEND] = Some(arrival.ns.saturating_sub(t.write_ns));
        probed[slot::SOCKET] = Some(read_ns.saturating_sub(arrival.ns));
        probed[slot::HANDLE] = Some(first.ns.saturating_sub(read_ns));
        if self.spec.upstream {
            let at = probed.len() - super::UPSTREAM.len();
            match timed_call(c.call_of(first.start), read_ns, first.ns, &mut probed[at..]) {
                Some(true) => self.counts.upstream_calls += 1,
                Some(false) => self.counts.upstream_misplaced += 1,
                None => {}
            }
        }
        if let Some(at) = c.delivered_holding(first.start) {
            probed[slot::RETURN] = Some(at.ns.saturating_sub(first.ns));
        }
        if writes > 1 {
            self.counts.several_writes += 1;
            let held = last.and_then(|last| last_return(c, &last));
            probed[slot::LAST_RETURN] = held;
            if let Some(ns) = held.filter(|ns| *ns > HELD_NS) {
                self.counts.held_back += 1;
                self.counts.held_back_ns += ns;
            }
        }
        // The functions: the chain's pass of this request among those its read completed.
        let f = self.spec.functions.len();
        if f >= 2 {
            let nth = read_users_before(c, read_seq, shared);
            let hits = c.hits_of(read_seq).map(|h| (h.index, h.ns));
            for (k, phase) in chain::phases(hits, f, nth).into_iter().enumerate() {
                let Some((ns, end)) = phase else { continue };
                probed[slot::FUNCTIONS + k] = Some(ns);
                // It ended after the response's first write had begun.
                if end > first.ns {
                    *self
                        .counts
                        .after_write
                        .entry(slot::FUNCTIONS + k)
                        .or_default() += 1;
                }
            }
        }
        self.note_resolved(w.port, w.tx_end, w.rx_first);
        Ok(())
    }

    /// Lets go of a connection's events no request after this one needs (lagging behind by
    /// [`KEEP_RESOLVED`] requests).
    fn note_resolved(&mut self, port: u16, tx_end: u64, rx_first: u64) {
        let (ring, forgotten) = self.resolved.entry(port).or_default();
        ring.push_back((tx_end, rx_first));
        if ring.len() <= KEEP_RESOLVED {
            return;
        }
        let Some((tx, rx)) = ring.pop_front() else {
            return;
        };
        *forgotten = (*forgotten).max(tx);
        if let Some(c) = self.conns.get_mut(&port) {
            let gone = c.forget_before(tx, rx);
            self.counts.shared_read += shared_of(gone.iter());
        }
    }

    /// Gives the intervals' phases to the series and, with their traced requests as
    /// exemplars, to the on_interval: those before the last one open, or all of them at the end.
    fn flush_intervals(&mut self, all: bool) {
        for mut snap in self.open.take_done(all, &self.names) {
            if let Some(on_interval) = &self.on_interval {
                on_interval(&snap);
            }
            // The record keeps its kept requests whole elsewhere (`kept`), not these.
            snap.exemplars = Vec::new();
            self.series.push(snap);
        }
    }

    /// What the join produced (every request joined first; the log's last rows handed to
    /// its writer).
    pub fn finish(mut self) -> Joined {
        self.resolve_all();
        drop(self.log.take());
        for c in self.conns.values() {
            self.counts.shared_read += shared_of(c.reads.iter());
        }
        Joined {
            phases: self
                .names
                .iter()
                .zip(self.hists)
                .map(|((n, w), h)| (n.clone(), w.clone(), h))
                .collect(),
            series: self.series,
            kept: self.kept,
            tail: self.tail,
            counts: self.counts,
            pids: self.pids,
            cost: self.halves.and_then(Halves::finish),
            upstream: self.spec.upstream,
            remote: None,
        }
    }
}

/// A response's last write `last` → its bytes in the client's socket, ns.
fn last_return(c: &Conn, last: &Write) -> Option<u64> {
    let at = c.delivered_holding(last.end.saturating_sub(1))?;
    Some(at.ns.saturating_sub(last.ns))
}

/// Requests that shared their read with others, of `reads`.
fn shared_of<'a>(reads: impl Iterator<Item = &'a super::conn::Read>) -> u64 {
    reads
        .filter(|r| r.users > 1)
        .map(|r| u64::from(r.users))
        .sum()
}

/// How many requests this read completed before this one (its pass of the function chain).
fn read_users_before(c: &Conn, seq: u64, shared: bool) -> usize {
    if !shared {
        return 0;
    }
    c.reads
        .iter()
        .find(|r| r.seq == seq)
        .map_or(0, |r| r.users.saturating_sub(1) as usize)
}
