//! The slow requests kept whole (exemplars): for each interval, the slowest requests by total
//! and by every phase, and one request per latency bucket (so that each printed percentile has
//! a request near it), each with all its phases, its status, connection, name, `Server-Timing`
//! and trace id. They ride the interval sets to the collector like the histograms do: made
//! before the run, filled without allocation (a request is copied only when it is kept), merged
//! per interval and into the run's.

use super::Durations;
use crate::model::trace::TraceId;
use crate::model::{ErrorKind, Phase, Sample};
use std::time::Instant;

/// Requests kept per list (the slowest by total; the slowest by each phase).
pub const KEEP: usize = 5;
/// Bytes of a kept request's `Server-Timing` kept (longer values are cut).
const TIMING_BYTES: usize = 120;
/// Latency buckets (quarter powers of two of the total, from 256 ns up).
const BUCKETS: usize = 128;
/// The server's probed phases a kept request holds (`--server-probes`: the kernel's five and
/// up to 16 between the server's functions; see [`super::join::slot`]).
pub const PROBED: usize = 21;
/// A probed phase that was not measured for this request.
const NOT_PROBED: u64 = u64::MAX;

/// One request kept whole.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exemplar {
    /// When it was due, ns after the start of recording.
    pub due_ns: u64,
    /// Its phases, ns (by [`Phase::index`]).
    pub phases: Durations,
    /// The status of its complete response.
    pub status: Option<u16>,
    /// Why it failed, if it did.
    pub error: Option<ErrorKind>,
    /// Its name slot (`Sample::request`).
    pub request: u16,
    /// The connection slot that carried it.
    pub connection: u32,
    /// Its trace context, when the run sent one.
    pub trace: Option<TraceId>,
    timing_len: u8,
    timing: [u8; TIMING_BYTES],
    /// The server's phases of it, by the run's probed phase index (`--server-probes`, joined
    /// by its bytes; [`NOT_PROBED`] where not measured).
    probed: [u64; PROBED],
}

impl Exemplar {
    /// Request `s` with phases `d` and `Server-Timing` `timing`, recorded from `from`.
    pub fn of(s: &Sample, d: &Durations, timing: &[u8], from: Instant) -> Self {
        let n = timing.len().min(TIMING_BYTES);
        let mut kept = [0; TIMING_BYTES];
        kept[..n].copy_from_slice(&timing[..n]);
        Exemplar {
            due_ns: s.stamps.intended.saturating_duration_since(from).as_nanos() as u64,
            phases: *d,
            status: s.status,
            error: s.error,
            request: s.request,
            connection: s.connection,
            trace: s.trace,
            timing_len: n as u8,
            timing: kept,
            probed: [NOT_PROBED; PROBED],
        }
    }

    /// Its server phase of index `i` (`--server-probes`), ns, if measured.
    pub fn probed(&self, i: usize) -> Option<u64> {
        self.probed.get(i).copied().filter(|&ns| ns != NOT_PROBED)
    }

    /// Sets its server phase of index `i` (past [`PROBED`]: dropped).
    pub fn set_probed(&mut self, i: usize, ns: Option<u64>) {
        if let Some(slot) = self.probed.get_mut(i) {
            *slot = ns.map_or(NOT_PROBED, |ns| ns.min(NOT_PROBED - 1));
        }
    }

    /// Whether any of its server phases was measured.
    pub fn is_probed(&self) -> bool {
        self.probed.iter().any(|&ns| ns != NOT_PROBED)
    }

    /// Its total, ns.
    pub fn total(&self) -> u64 {
        self.phases[Phase::Total.index()].unwrap_or(0)
    }

    /// The `Server-Timing` values of its response (cut at 120 bytes), as text.
    pub fn server_timing(&self) -> String {
        String::from_utf8_lossy(&self.timing[..self.timing_len as usize]).into_owned()
    }
}

/// The [`KEEP`] requests of largest key seen (a phase's duration), largest first.
#[derive(Debug, Clone, Default)]
pub struct Slowest {
    items: Vec<(u64, Exemplar)>,
}

impl Slowest {
    /// An empty list, its room made now.
    pub fn new() -> Self {
        Slowest {
            items: Vec::with_capacity(KEEP + 1),
        }
    }

    /// Whether a request of `key` would be kept.
    #[inline]
    pub fn beats(&self, key: u64) -> bool {
        self.items.len() < KEEP || self.items.last().is_some_and(|(k, _)| key > *k)
    }

    /// Keeps `e` (of `key`) if it beats the kept ones.
    pub fn push(&mut self, key: u64, e: Exemplar) {
        if !self.beats(key) {
            return;
        }
        let at = self.items.partition_point(|(k, _)| *k >= key);
        self.items.insert(at, (key, e));
        self.items.truncate(KEEP);
    }

    /// Adds another list's.
    pub fn merge(&mut self, o: &Slowest) {
        for (k, e) in &o.items {
            self.push(*k, *e);
        }
    }

    /// Forgets every request (room kept).
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// The kept requests, largest key first.
    pub fn iter(&self) -> impl Iterator<Item = &Exemplar> {
        self.items.iter().map(|(_, e)| e)
    }

    /// How many are kept.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// The [`KEEP`] slowest by total of `all`, slowest first, without repeats (what the series
/// keeps of an interval's requests).
pub fn slowest_of<'a>(all: impl IntoIterator<Item = &'a Exemplar>) -> Vec<Exemplar> {
    let mut list = Slowest::new();
    for e in all {
        if !list.iter().any(|k| k == e) {
            list.push(e.total(), *e);
        }
    }
    let mut out: Vec<Exemplar> = list.iter().copied().collect();
    out.shrink_to_fit();
    out
}

/// The bucket of a total (or of a phase): quarter powers of two from 256 ns, the last
/// open-ended.
#[inline]
pub fn bucket(ns: u64) -> usize {
    let ns = ns.max(256);
    let octave = 63 - ns.leading_zeros() as usize;
    let quarter = ((ns >> (octave - 2)) & 3) as usize;
    ((octave - 8) * 4 + quarter).min(BUCKETS - 1)
}

/// What one interval (or the run) keeps of its requests: the slowest by total and by each
/// phase, and the first request of each latency bucket.
#[derive(Debug, Clone)]
pub struct Exemplars {
    /// The slowest by total.
    pub slowest: Slowest,
    /// By [`Phase::index`].
    pub by_phase: Vec<Slowest>,
    /// By probed phase index (`--server-probes`; empty without).
    pub by_probed: Vec<Slowest>,
    buckets: Vec<Option<Exemplar>>,
}

impl Default for Exemplars {
    fn default() -> Self {
        Exemplars::new()
    }
}

impl Exemplars {
    /// Empty lists, their room made now (no allocation while recording).
    pub fn new() -> Self {
        Exemplars {
            slowest: Slowest::new(),
            by_phase: Phase::ALL.iter().map(|_| Slowest::new()).collect(),
            by_probed: Vec::new(),
            buckets: vec![None; BUCKETS],
        }
    }

    /// Empty lists that keep the slowest by each of `probed` server phases too.
    pub fn with_probed(probed: usize) -> Self {
        Exemplars {
            by_probed: (0..probed.min(PROBED)).map(|_| Slowest::new()).collect(),
            ..Exemplars::new()
        }
    }

    /// Whether [`Exemplars::offer_kept`] would keep `e` by its client phases (its total,
    /// a client phase, or its bucket's first): the requests whose server events a run probed
    /// on another host asks its agent for.
    pub fn would_keep(&self, e: &Exemplar) -> bool {
        let Some(total) = e.phases[Phase::Total.index()] else {
            return false;
        };
        self.slowest.beats(total)
            || self.buckets[bucket(total)].is_none()
            || self
                .by_phase
                .iter()
                .zip(&e.phases)
                .any(|(list, ns)| ns.is_some_and(|ns| ns > 0 && list.beats(ns)))
    }

    /// Keeps request `e` (already made whole, its server phases joined) where it beats the
    /// kept ones, by its total, each client phase and each probed phase.
    pub fn offer_kept(&mut self, e: &Exemplar) {
        let total = e.total();
        if e.phases[Phase::Total.index()].is_none() {
            return;
        }
        if self.slowest.beats(total) {
            self.slowest.push(total, *e);
        }
        for (list, ns) in self.by_phase.iter_mut().zip(&e.phases) {
            if let Some(ns) = *ns {
                if ns > 0 && list.beats(ns) {
                    list.push(ns, *e);
                }
            }
        }
        for (i, list) in self.by_probed.iter_mut().enumerate() {
            if let Some(ns) = e.probed(i).filter(|&ns| ns > 0) {
                if list.beats(ns) {
                    list.push(ns, *e);
                }
            }
        }
        let b = &mut self.buckets[bucket(total)];
        if b.is_none() {
            *b = Some(*e);
        }
    }

    /// Keeps request `s` (phases `d`, `Server-Timing` `timing`) where it beats the kept ones;
    /// copied once at most, and only when kept.
    #[inline]
    pub fn offer(&mut self, s: &Sample, d: &Durations, timing: &[u8], from: Instant) {
        let Some(total) = d[Phase::Total.index()] else {
            return;
        };
        let mut made = None;
        let mut get = || *made.get_or_insert_with(|| Exemplar::of(s, d, timing, from));
        if self.slowest.beats(total) {
            self.slowest.push(total, get());
        }
        for (list, ns) in self.by_phase.iter_mut().zip(d) {
            if let Some(ns) = *ns {
                if ns > 0 && list.beats(ns) {
                    list.push(ns, get());
                }
            }
        }
        let b = &mut self.buckets[bucket(total)];
        if b.is_none() {
            *b = Some(get());
        }
    }

    /// Adds another set's (a later interval's: a bucket takes its request, so that the run's
    /// are of its last intervals, not of its first moments).
    pub fn merge(&mut self, o: &Exemplars) {
        self.slowest.merge(&o.slowest);
        for (into, from) in self.by_phase.iter_mut().zip(&o.by_phase) {
            into.merge(from);
        }
        if self.by_probed.len() < o.by_probed.len() {
            self.by_probed.resize_with(o.by_probed.len(), Slowest::new);
        }
        for (into, from) in self.by_probed.iter_mut().zip(&o.by_probed) {
            into.merge(from);
        }
        for (into, from) in self.buckets.iter_mut().zip(&o.buckets) {
            if from.is_some() {
                *into = *from;
            }
        }
    }

    /// Forgets every request (room kept).
    pub fn clear(&mut self) {
        self.slowest.clear();
        self.by_phase.iter_mut().for_each(Slowest::clear);
        self.by_probed.iter_mut().for_each(Slowest::clear);
        self.buckets.iter_mut().for_each(|b| *b = None);
    }

    /// The one request per latency bucket, fastest first.
    pub fn per_bucket(&self) -> impl Iterator<Item = &Exemplar> {
        self.buckets.iter().flatten()
    }

    /// The kept request whose total is nearest `ns` (of the slowest and the buckets' ones).
    pub fn nearest(&self, ns: u64) -> Option<&Exemplar> {
        self.per_bucket()
            .chain(self.slowest.iter())
            .min_by_key(|e| e.total().abs_diff(ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamps;
    use std::time::Duration;

    fn sample(base: Instant, total_us: u64, conn: u32) -> (Sample, Durations) {
        let mut stamps = Timestamps::new(base, base);
        stamps.written = Some(base);
        stamps.first_byte = Some(base + Duration::from_micros(total_us));
        stamps.done = stamps.first_byte;
        let s = Sample {
            stamps,
            status: Some(200),
            error: None,
            bytes_read: 0,
            bytes_written: 0,
            traffic: Default::default(),
            server_closed: false,
            request: 0,
            connection: conn,
            trace: None,
            wire: Default::default(),
        };
        let d = super::super::durations(&s);
        (s, d)
    }

    #[test]
    fn the_slowest_are_kept_largest_first_and_merge_exactly() {
        let base = Instant::now();
        let (mut a, mut b) = (Exemplars::new(), Exemplars::new());
        for (i, us) in [5u64, 90, 10, 70, 3, 200, 40, 60, 80, 1].iter().enumerate() {
            let (s, d) = sample(base, *us, i as u32);
            let into = if i % 2 == 0 { &mut a } else { &mut b };
            into.offer(&s, &d, b"db;dur=1", base);
        }
        a.merge(&b);
        let totals: Vec<u64> = a.slowest.iter().map(|e| e.total() / 1000).collect();
        assert_eq!(totals, vec![200, 90, 80, 70, 60]);
        let wait = &a.by_phase[Phase::Wait.index()];
        assert_eq!(wait.iter().next().map(|e| e.connection), Some(5));
        assert_eq!(a.slowest.iter().next().unwrap().server_timing(), "db;dur=1");
        // The nearest kept request to 45 µs is the one of 40 µs (its bucket's).
        assert_eq!(a.nearest(45_000).map(|e| e.total()), Some(40_000));
    }

    #[test]
    fn buckets_are_quarter_octaves() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(256), 0);
        assert_eq!(bucket(320), 1);
        assert_eq!(bucket(512), 4);
        assert!(bucket(u64::MAX) == BUCKETS - 1);
        for ns in [1_000u64, 10_000, 1_000_000] {
            assert!(bucket(ns) < bucket(ns * 2));
        }
    }
}
