//! The interval collector: the one place a run's intervals are merged, compressed and kept,
//! off the workers' hot path. A worker records each interval into an [`IntervalSet`]
//! (counters, phase histograms, `Server-Timing` figures) made before the run; when the
//! interval closes it swaps in a spare set and hands the full one over (HdrHistogram's
//! `Recorder` pattern): no allocation and no compression on the worker. The collector merges
//! the threads' sets by interval index, resets them (capacity kept) and sends them back.
//!
//! An interval is final once every thread has moved past it (or finished), or its end plus a
//! grace has passed in wall time, or too many are open; a final interval is compressed, kept
//! in the bounded [`Series`], and given to the sinks (`--hdr-log`, `--every`,
//! `--abort-on-fail`). A part that arrives after its interval was final (a thread idle past
//! the grace) is merged into the series exactly all the same, and given to the sinks as a
//! part of its own.

mod thread;

use super::exemplar::Exemplars;
use super::priority::Priority;
use super::series::{max_busy, Series};
use super::server_timing::ServerTimingAcc;
use super::{hist, snapshot, Counters, Durations, IntervalSnapshot, PhaseHists};
use crate::model::Phase;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};
pub use thread::{most_sets, Collected, CollectorThread, IntervalSink, Live, Sinks, Start};

/// Sets made per worker before the run: one recording, the others on their way back.
pub const POOL: usize = 3;
/// Most intervals waiting for their threads at once; past this the oldest is final.
const MAX_OPEN: usize = 32;
/// Pairs of intervals a widening of the series merges between two messages.
const PAIRS_PER_STEP: usize = 2;

/// One worker's figures of one interval, uncompressed; reused from interval to interval.
#[derive(Debug)]
pub struct IntervalSet {
    /// The worker thread it belongs to (where it goes back).
    pub thread: usize,
    /// Interval number from the start of recording.
    pub index: u64,
    /// The interval's counters so far.
    pub counters: Counters,
    /// The phases recorded so far; while [`IntervalSet::on_time`] counts, the phases its
    /// requests imply are left out (see `IntervalSet::record`).
    pub hists: PhaseHists,
    /// `Some(n)`: every request of the set so far was dispatched and released at its intended
    /// time (a closed loop's): their `Queue` and `Lag` (0) and their `Uncorrected` (equal to
    /// `Total`) are implied, not recorded, and the collector adds them (`Open::add`): three
    /// histogram records saved per request, one of them a cache miss. `None`: every phase is
    /// in `hists`.
    pub on_time: Option<u64>,
    /// The interval's `Server-Timing` figures.
    pub server: ServerTimingAcc,
    /// The share of the time the worker was on a CPU since its previous close (0..1).
    pub busy: Option<f64>,
    /// Responses by status code (codes seen stay, at 0, when the set is reset: no allocation
    /// once a set has seen the run's codes).
    pub status: Vec<(u16, u64)>,
    /// Per request name (by `Sample::request`, when the run keeps names apart): counters and
    /// phase histograms, grown to the names seen and kept across resets.
    pub by_request: Vec<(Counters, PhaseHists)>,
    /// The interval's slow requests kept whole.
    pub exemplars: Exemplars,
}

impl IntervalSet {
    /// An empty set of `thread` (`server_total`: the run's `--server-total`; `phases`: those
    /// the run records besides [`Phase::EVERY_REQUEST`], whose histograms start full-size).
    pub fn new(thread: usize, server_total: &str, phases: &[Phase]) -> Box<Self> {
        Box::new(IntervalSet {
            thread,
            index: 0,
            counters: Counters::default(),
            hists: PhaseHists::sized(hist::new_interval_hist, phases),
            on_time: Some(0),
            server: ServerTimingAcc::new(server_total),
            busy: None,
            status: Vec::new(),
            by_request: Vec::new(),
            exemplars: Exemplars::new(),
        })
    }

    /// Empties the set, keeping every allocation.
    pub fn reset(&mut self) {
        self.counters = Counters::default();
        for h in &mut self.hists.0 {
            if !h.is_empty() {
                h.reset();
            }
        }
        self.on_time = Some(0);
        self.server.reset();
        self.busy = None;
        for (_, n) in &mut self.status {
            *n = 0;
        }
        for (c, h) in &mut self.by_request {
            *c = Counters::default();
            h.reset();
        }
        self.exemplars.clear();
    }

    /// Records the phases `d` of one request; `on_time`: it was dispatched and released at its
    /// intended time. The first request that was not spells out the implied phases of those
    /// before it (once per set at most: a closed loop never does, an open loop at its first).
    #[inline]
    pub(crate) fn record(&mut self, d: &Durations, on_time: bool) {
        match (&mut self.on_time, on_time) {
            (Some(n), true) => {
                *n += 1;
                let mut d = *d;
                for p in IMPLIED {
                    d[p.index()] = None;
                }
                self.hists.record(&d);
            }
            (Some(_), false) => {
                self.spell_out();
                self.hists.record(d);
            }
            (None, _) => self.hists.record(d),
        }
    }

    /// Records the phases the on-time requests imply, which then stop being implied.
    fn spell_out(&mut self) {
        if let Some(n) = self.on_time.take().filter(|n| *n > 0) {
            let total = self.hists.get(Phase::Total).clone();
            add_implied(&mut self.hists, &total, n);
        }
    }

    /// The figures of request name `slot` (made the first time this set sees it).
    #[inline]
    pub(crate) fn request(&mut self, slot: usize) -> &mut (Counters, PhaseHists) {
        if self.by_request.len() <= slot {
            self.by_request.resize_with(slot + 1, || {
                (
                    Counters::default(),
                    PhaseHists::new(hist::new_interval_hist),
                )
            });
        }
        &mut self.by_request[slot]
    }

    /// Counts one response of status `code`.
    #[inline]
    pub fn count_status(&mut self, code: u16) {
        add_status(&mut self.status, code, 1);
    }
}

/// The phases an on-time request implies (see [`IntervalSet::on_time`]): these are 0, and
/// `Uncorrected` equals `Total`.
const IMPLIED_ZERO: [Phase; 2] = [Phase::Queue, Phase::Lag];
const IMPLIED: [Phase; 3] = [IMPLIED_ZERO[0], IMPLIED_ZERO[1], Phase::Uncorrected];

/// Adds to `into` the implied phases of `n` on-time requests whose totals are `total`: a
/// queue and a lag of 0 each, and an uncorrected time equal to the total.
fn add_implied(into: &mut PhaseHists, total: &Histogram<u64>, n: u64) {
    if n == 0 {
        return;
    }
    for p in IMPLIED_ZERO {
        let _ = into.0[p.index()].record_n(0, n);
    }
    if !total.is_empty() {
        let _ = into.0[Phase::Uncorrected.index()].add(total);
    }
}

/// Adds `n` responses of `code` to `status`.
#[inline]
fn add_status(status: &mut Vec<(u16, u64)>, code: u16, n: u64) {
    match status.iter_mut().find(|(c, _)| *c == code) {
        Some((_, m)) => *m += n,
        None => status.push((code, n)),
    }
}

/// What a worker tells the collector.
pub enum Msg {
    /// A closed interval; the worker now records interval `now_at` (`u64::MAX`: none more).
    Closed {
        /// The worker's figures of the interval.
        set: Box<IntervalSet>,
        /// The interval the worker records now.
        now_at: u64,
    },
}

/// One interval being merged: the threads' parts so far.
struct Open {
    counters: Counters,
    hists: PhaseHists,
    server: Vec<(String, Histogram<u64>)>,
    busy: Option<f64>,
    status: Vec<(u16, u64)>,
    by_request: Vec<(Counters, PhaseHists)>,
    exemplars: Exemplars,
}

impl Open {
    fn new() -> Self {
        Open {
            counters: Counters::default(),
            hists: PhaseHists::new(hist::new_interval_hist),
            server: Vec::new(),
            busy: None,
            status: Vec::new(),
            by_request: Vec::new(),
            exemplars: Exemplars::new(),
        }
    }

    fn add(&mut self, set: &IntervalSet) {
        self.counters.merge(&set.counters);
        self.exemplars.merge(&set.exemplars);
        for (into, h) in self.hists.0.iter_mut().zip(&set.hists.0) {
            if !h.is_empty() {
                let _ = into.add(h);
            }
        }
        if let Some(n) = set.on_time {
            add_implied(&mut self.hists, set.hists.get(Phase::Total), n);
        }
        for m in set.server.metrics.iter().filter(|m| !m.hist.is_empty()) {
            match self.server.iter_mut().find(|(n, _)| *n == m.name) {
                Some((_, into)) => {
                    let _ = into.add(&m.hist);
                }
                None => self.server.push((m.name.clone(), m.hist.clone())),
            }
        }
        self.busy = max_busy(self.busy, set.busy);
        for &(code, n) in set.status.iter().filter(|(_, n)| *n > 0) {
            add_status(&mut self.status, code, n);
        }
        if self.by_request.len() < set.by_request.len() {
            self.by_request.resize_with(set.by_request.len(), || {
                (
                    Counters::default(),
                    PhaseHists::new(hist::new_interval_hist),
                )
            });
        }
        for ((c, h), (sc, sh)) in self.by_request.iter_mut().zip(&set.by_request) {
            if sc.requests > 0 {
                c.merge(sc);
                for (into, from) in h.0.iter_mut().zip(&sh.0) {
                    if !from.is_empty() {
                        let _ = into.add(from);
                    }
                }
            }
        }
    }

    /// The compressed snapshot of interval `index`; the open interval is emptied for reuse.
    fn take(&mut self, index: u64) -> IntervalSnapshot {
        let server = self
            .server
            .iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(n, h)| (n.clone(), hist::encode_bytes(h)))
            .collect();
        let counters = std::mem::take(&mut self.counters);
        let mut snap = snapshot(index, counters, &self.hists, server);
        snap.exemplars = (self.exemplars.slowest.iter())
            .chain(self.exemplars.per_bucket())
            .copied()
            .collect();
        self.exemplars.clear();
        snap.busy_max = self.busy.take();
        snap.status = std::mem::take(&mut self.status);
        snap.status.sort_unstable();
        for (slot, (c, h)) in self.by_request.iter_mut().enumerate() {
            if c.requests > 0 {
                let part = snapshot(index, std::mem::take(c), h, Vec::new());
                snap.by_request
                    .push((slot as u16, part.counters, part.hists));
                h.reset();
            }
        }
        for h in self
            .hists
            .0
            .iter_mut()
            .chain(self.server.iter_mut().map(|(_, h)| h))
        {
            if !h.is_empty() {
                h.reset();
            }
        }
        snap
    }
}

/// `snap` as the series keeps it: the per-request figures go to the sinks only (the record
/// has its own per-name totals).
fn without_requests(snap: &IntervalSnapshot) -> IntervalSnapshot {
    let by_request = Vec::new();
    let mut kept = IntervalSnapshot {
        by_request,
        exemplars: super::exemplar::slowest_of(&snap.exemplars),
        ..snap.clone()
    };
    kept.by_request.shrink_to_fit();
    kept
}

/// The collector's state: the threads' progress, the open intervals and the series.
pub struct Collector {
    record_from: Instant,
    interval: Duration,
    grace: Duration,
    /// Per thread: the interval it records now (`u64::MAX` once done), if it said.
    at: Vec<Option<u64>>,
    open: BTreeMap<u64, Open>,
    free: Vec<Open>,
    /// Every interval below this one is final.
    final_below: u64,
    series: Series,
    /// The run's phase histograms: every interval of every thread added up (the workers
    /// record a request's phases into their interval only).
    totals: PhaseHists,
    /// Parts that came after their interval was final.
    pub late: u64,
    /// The run's slow requests kept whole: every interval's added up.
    pub exemplars: Exemplars,
}

impl Collector {
    /// Cuts the intervals from `record_from` (known once the load starts).
    pub fn begin(&mut self, record_from: Instant) {
        self.record_from = record_from;
    }

    /// The collector of `threads` workers cutting intervals of `interval` from `record_from`.
    pub fn new(threads: usize, record_from: Instant, interval: Duration) -> Self {
        Collector {
            record_from,
            interval,
            grace: interval.clamp(Duration::from_millis(100), Duration::from_secs(1)),
            at: vec![None; threads.max(1)],
            open: BTreeMap::new(),
            free: Vec::new(),
            final_below: 0,
            series: Series::default(),
            totals: PhaseHists::new(hist::new_hist),
            late: 0,
            exemplars: Exemplars::new(),
        }
    }

    /// Merges one thread's closed interval. A part of an interval already final comes back
    /// as a snapshot of its own (for the sinks; it is in the series already).
    pub fn add(&mut self, set: &IntervalSet, now_at: u64) -> Option<IntervalSnapshot> {
        if let Some(at) = self.at.get_mut(set.thread) {
            *at = Some(now_at);
        }
        if set.counters.requests == 0 && set.hists.0.iter().all(|h| h.is_empty()) {
            return None;
        }
        if set.index < self.final_below {
            self.late += 1;
            let mut part = Open::new();
            part.add(set);
            let snap = self.close(&mut part, set.index);
            self.series.push(without_requests(&snap));
            return Some(snap);
        }
        let free = &mut self.free;
        self.open
            .entry(set.index)
            .or_insert_with(|| free.pop().unwrap_or_else(Open::new))
            .add(set);
        None
    }

    /// The intervals final at `now` (every open one with `all`), oldest first, compressed;
    /// each is in the series too.
    pub fn ready(&mut self, now: Instant, all: bool) -> Vec<IntervalSnapshot> {
        let mut out = Vec::new();
        while let Some((&index, _)) = self.open.first_key_value() {
            if !(all || self.open.len() > MAX_OPEN || self.is_final(index, now)) {
                break;
            }
            if let Some(mut open) = self.open.remove(&index) {
                let snap = self.close(&mut open, index);
                self.free.push(open);
                self.final_below = self.final_below.max(index + 1);
                self.series.push(without_requests(&snap));
                out.push(snap);
            }
        }
        out
    }

    /// Interval `index` (or a late part of it), its threads' parts merged in `open`: added to
    /// the run's histograms (once per interval, not once per thread's part) and compressed.
    fn close(&mut self, open: &mut Open, index: u64) -> IntervalSnapshot {
        self.totals.merge(&open.hists);
        self.exemplars.merge(&open.exemplars);
        open.take(index)
    }

    /// Whether every thread is past interval `index`, or its grace is over.
    fn is_final(&self, index: u64, now: Instant) -> bool {
        self.at.iter().all(|a| a.is_some_and(|a| a > index)) || now >= self.deadline(index)
    }

    /// When interval `index` is final at the latest.
    fn deadline(&self, index: u64) -> Instant {
        let end = self
            .interval
            .saturating_mul(u32::try_from(index.saturating_add(1)).unwrap_or(u32::MAX));
        let far = Duration::from_secs(100 * 365 * 86_400);
        (self.record_from.checked_add(end.saturating_add(self.grace)))
            .or_else(|| self.record_from.checked_add(far))
            .unwrap_or(self.record_from)
    }

    /// Every interval below the index this gives is final at `now`: each thread has moved
    /// past it, or its grace is over, and no part of it waits here unmerged. Intervals in which
    /// nothing was recorded count too, so a watcher can tell an interval with no requests from
    /// one whose parts have not come yet (a collector kept off the CPU).
    pub fn final_below(&self, now: Instant) -> u64 {
        let past = self.at.iter().map(|a| a.unwrap_or(0)).min().unwrap_or(0);
        let waited = now
            .checked_duration_since(self.record_from + self.grace)
            .map_or(0, |d| {
                (d.as_nanos() / self.interval.as_nanos().max(1)) as u64
            });
        let below = past.max(waited);
        match self.open.keys().next() {
            Some(&oldest) => below.min(oldest),
            None => below,
        }
    }

    /// When the oldest open interval is final at the latest, if one is open.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.open.keys().next().map(|&i| self.deadline(i))
    }

    /// Goes on with a widening of the series under way, a few pairs; whether some is left.
    pub fn compact(&mut self) -> bool {
        self.series.compact(PAIRS_PER_STEP);
        self.series.compacting()
    }

    /// The series kept, and the run's phase histograms (the sum of its intervals).
    pub fn finish(mut self) -> (Series, PhaseHists, Exemplars) {
        self.ready(Instant::now(), true);
        self.series.settle();
        (self.series, self.totals, self.exemplars)
    }
}

/// A worker's end of the collector: where its closed intervals go and its spare sets come
/// from.
pub struct WorkerLink {
    /// The worker thread's number (where its spare sets come back).
    pub thread: usize,
    tx: SyncSender<Msg>,
    spares: Receiver<Box<IntervalSet>>,
    priority: Arc<Priority>,
    /// The phases the run records besides [`Phase::EVERY_REQUEST`].
    phases: Arc<[Phase]>,
}

impl WorkerLink {
    /// A spare set, reset, if one is back; else a new one, and the collector, a pool of
    /// intervals behind (other work keeps an idle thread off the CPU), runs normally until it
    /// has caught up: the watchers (`--every`, `--metrics-addr`, `--abort-on-fail`) wait for
    /// it, and a new set is fresh memory on this thread.
    pub fn spare(&self, server_total: &str) -> Box<IntervalSet> {
        self.spares.try_recv().unwrap_or_else(|_| {
            self.priority.raise();
            IntervalSet::new(self.thread, server_total, &self.phases)
        })
    }

    /// Hands a closed interval over (waits only if the collector is far behind).
    pub fn send(&self, msg: Msg) {
        if let Err(TrySendError::Full(msg)) = self.tx.try_send(msg) {
            // The collector fell behind: it runs normally until it has caught up.
            self.priority.raise();
            let _ = self.tx.send(msg);
        }
    }
}

#[cfg(test)]
mod tests;
