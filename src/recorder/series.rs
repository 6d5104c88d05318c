//! The interval series kept for the whole run, bounded: at most [`MAX_INTERVALS`] entries
//! however long the run, and about [`MAX_BYTES`] of compressed histograms in memory (the older
//! ones wait in a [`spill`](super::spill) file, read back when the record is built). Each entry
//! is an [`IntervalSnapshot`] covering `span` consecutive base intervals (`--interval`); when a
//! new interval would land past the cap, neighbouring entries are merged in pairs and `span`
//! doubles. Merges are exact: counters summed, histograms added.
//! The collector widens a step at a time ([`Series::compact`], a few pairs between the
//! intervals it takes in), so that a widening never holds the workers up.

use super::spill::SpillFile;
use super::{hist, Counters, IntervalSnapshot};
use crate::model::Phase;
use hdrhistogram::Histogram;
use std::collections::VecDeque;
use std::sync::Arc;

/// Most entries (slots) a series holds.
pub const MAX_INTERVALS: usize = 2000;
/// The bytes of entries kept in memory (1 MiB); past them the oldest entries' histograms go to
/// the spill file (a busy run's interval takes a few KiB: 9 KiB at 5,000 requests).
pub const MAX_BYTES: u64 = 1 << 20;

/// Compressed intervals, each `span` base intervals wide; `entries[k].index` is the slot
/// (base interval `index * span` to `(index + 1) * span`), ascending, gaps for empty slots.
#[derive(Debug, Clone)]
pub struct Series {
    /// Base intervals per entry: a power of two.
    pub span: u64,
    /// The entries, oldest first; each covers `span` base intervals.
    pub entries: Vec<IntervalSnapshot>,
    cap: u64,
    /// Bytes of the entries in memory (narrow ones included), and the most kept there.
    bytes: u64,
    max_bytes: u64,
    /// Where histograms past `max_bytes` wait (made when first needed).
    spill: Option<Arc<SpillFile>>,
    /// A widening under way: entries of half the span (slots of `span / 2`), still to be
    /// merged in pairs into `entries`.
    narrow: VecDeque<IntervalSnapshot>,
}

impl Default for Series {
    fn default() -> Self {
        Series::with_cap(MAX_INTERVALS)
    }
}

impl Series {
    /// An empty series holding at most `cap` slots (at least 2) and about [`MAX_BYTES`].
    pub fn with_cap(cap: usize) -> Self {
        Series::with_limits(cap, MAX_BYTES)
    }

    /// An empty series holding at most `cap` slots (at least 2) and about `max_bytes`.
    pub fn with_limits(cap: usize, max_bytes: u64) -> Self {
        Series {
            span: 1,
            entries: Vec::new(),
            cap: cap.max(2) as u64,
            bytes: 0,
            max_bytes,
            spill: None,
            narrow: VecDeque::new(),
        }
    }

    /// Starts a widening: the entries so far become narrow ones, to merge in pairs.
    fn begin_widening(&mut self) {
        self.settle();
        self.narrow = std::mem::take(&mut self.entries).into();
        self.span = self.span.saturating_mul(2);
    }

    /// Adds the figures of base interval `snap.index` (merged into its slot's entry if the
    /// slot has one already). A slot past the cap starts a widening: the entries so far are
    /// merged in pairs by [`Series::compact`], a few at a time.
    pub fn push(&mut self, mut snap: IntervalSnapshot) {
        let base = snap.index;
        while base / self.span >= self.cap {
            self.begin_widening();
        }
        // A late part of a slot still waiting to be merged goes there.
        if !self.narrow.is_empty() {
            let half = base / (self.span / 2);
            if let Ok(at) = self.narrow.binary_search_by_key(&half, |e| e.index) {
                let old = std::mem::replace(&mut self.narrow[at], IntervalSnapshot::empty(half));
                self.bytes = self.bytes.saturating_sub(old.footprint());
                let merged = merge_snapshots(half, vec![self.load(&old), snap]);
                self.bytes += merged.footprint();
                self.narrow[at] = merged;
                return;
            }
        }
        snap.index = base / self.span;
        self.insert(snap);
        self.trim();
    }

    /// Puts an entry of the current span in its slot, merged with the one there.
    fn insert(&mut self, snap: IntervalSnapshot) {
        match self.entries.binary_search_by_key(&snap.index, |e| e.index) {
            Ok(at) => {
                let old =
                    std::mem::replace(&mut self.entries[at], IntervalSnapshot::empty(snap.index));
                self.bytes = self.bytes.saturating_sub(old.footprint());
                let merged = merge_snapshots(snap.index, vec![self.load(&old), snap]);
                self.bytes += merged.footprint();
                self.entries[at] = merged;
            }
            Err(at) => {
                self.bytes += snap.footprint();
                self.entries.insert(at, snap);
            }
        }
    }

    /// Whether a widening is under way.
    pub fn compacting(&self) -> bool {
        !self.narrow.is_empty()
    }

    /// Merges up to `pairs` pairs of a widening under way.
    pub fn compact(&mut self, pairs: usize) {
        for _ in 0..pairs {
            let Some(first) = self.narrow.pop_front() else {
                return;
            };
            let slot = first.index / 2;
            let mut group = vec![first];
            if self.narrow.front().is_some_and(|e| e.index / 2 == slot) {
                group.extend(self.narrow.pop_front());
            }
            let gone: u64 = group.iter().map(IntervalSnapshot::footprint).sum();
            self.bytes = self.bytes.saturating_sub(gone);
            let group = group.iter().map(|e| self.load(e)).collect();
            self.insert(merge_snapshots(slot, group));
        }
        self.trim();
    }

    /// Moves the oldest entries' histograms to the spill file until those in memory take half
    /// of `max_bytes` (nothing moves if the file cannot be made or written).
    fn trim(&mut self) {
        if self.bytes <= self.max_bytes {
            return;
        }
        if self.spill.is_none() {
            self.spill = SpillFile::create().map(Arc::new);
        }
        let Some(spill) = self.spill.clone() else {
            return;
        };
        for e in self.entries.iter_mut().filter(|e| e.spilled.is_none()) {
            if self.bytes <= self.max_bytes / 2 {
                break;
            }
            let before = e.footprint();
            let blobs = (std::mem::take(&mut e.hists), std::mem::take(&mut e.server));
            match spill.write(&blobs) {
                Some(at) => e.spilled = Some(at),
                None => (e.hists, e.server) = blobs,
            }
            self.bytes = (self.bytes + e.footprint()).saturating_sub(before);
        }
    }

    /// `e` with its histograms, read back from the spill file if they are there (none if
    /// they cannot be read: its counts stay).
    pub fn load(&self, e: &IntervalSnapshot) -> IntervalSnapshot {
        let mut out = e.clone();
        if let Some(at) = out.spilled.take() {
            let blobs = self.spill.as_ref().and_then(|f| f.read(at));
            (out.hists, out.server) = blobs.unwrap_or_default();
        }
        out
    }

    /// Finishes a widening under way.
    pub fn settle(&mut self) {
        while self.compacting() {
            self.compact(usize::MAX);
        }
    }

    /// Merges neighbouring entries in pairs (slots 2k and 2k+1 become slot k): `span` doubles.
    pub fn widen(&mut self) {
        self.begin_widening();
        self.settle();
    }

    /// Adds another series (another thread's, or another part of the same run) exactly.
    pub fn merge(&mut self, mut other: Series) {
        self.settle();
        other.settle();
        while self.span < other.span {
            self.widen();
        }
        for e in &other.entries {
            let mut e = other.load(e);
            let base = e.index.saturating_mul(other.span);
            while base / self.span >= self.cap {
                self.widen();
            }
            e.index = base / self.span;
            self.insert(e);
        }
    }

    /// A copy widened (a widening under way finished) until `slots` slots fit under the cap.
    pub fn fitting(&self, slots: u64) -> Series {
        let mut s = self.clone();
        s.settle();
        while slots.div_ceil(s.span) > s.cap {
            s.widen();
        }
        s
    }

    /// Bytes the entries take (see [`IntervalSnapshot::footprint`]).
    pub fn footprint(&self) -> u64 {
        self.bytes
    }
}

/// Several snapshots as one (slot `index`): counters summed, histograms added and compressed
/// again, the busiest worker's share kept. One snapshot is moved, not re-encoded.
pub fn merge_snapshots(index: u64, mut snaps: Vec<IntervalSnapshot>) -> IntervalSnapshot {
    if snaps.len() == 1 {
        let mut one = snaps.remove(0);
        one.index = index;
        return one;
    }
    let mut counters = Counters::default();
    let mut hists: Vec<(Phase, Histogram<u64>)> = Vec::new();
    let mut server: Vec<(String, Histogram<u64>)> = Vec::new();
    let mut busy_max: Option<f64> = None;
    let mut status: Vec<(u16, u64)> = Vec::new();
    for snap in &snaps {
        counters.merge(&snap.counters);
        for &(code, n) in &snap.status {
            match status.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => status.push((code, n)),
            }
        }
        busy_max = max_busy(busy_max, snap.busy_max);
        for (phase, bytes) in &snap.hists {
            add_decoded(&mut hists, *phase, bytes);
        }
        for (name, bytes) in &snap.server {
            add_decoded(&mut server, name.clone(), bytes);
        }
    }
    hists.sort_by_key(|(p, _)| p.index());
    let encode = |h: &Histogram<u64>| {
        let mut b = hist::encode_bytes(h);
        b.shrink_to_fit();
        b
    };
    IntervalSnapshot {
        index,
        counters,
        hists: hists.iter().map(|(p, h)| (*p, encode(h))).collect(),
        server: server.iter().map(|(n, h)| (n.clone(), encode(h))).collect(),
        busy_max,
        spilled: None,
        status: {
            status.sort_unstable();
            status
        },
        by_request: Vec::new(),
        exemplars: super::exemplar::slowest_of(snaps.iter().flat_map(|s| &s.exemplars)),
    }
}

/// Adds the histogram encoded in `bytes` to the one of `key` (the first one decoded is the
/// sum so far: nothing is allocated for the keys absent).
fn add_decoded<K: PartialEq>(sums: &mut Vec<(K, Histogram<u64>)>, key: K, bytes: &[u8]) {
    let Ok(mut h) = hist::decode_bytes(bytes) else {
        return;
    };
    h.auto(true);
    match sums.iter_mut().find(|(k, _)| *k == key) {
        Some((_, into)) => {
            let _ = into.add(&h);
        }
        None => sums.push((key, h)),
    }
}

/// The larger of two CPU shares, either possibly unknown.
pub fn max_busy(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::PhaseHists;

    /// A snapshot of base interval `index` with `n` requests of `ns` each (total phase), the
    /// worker `busy`.
    fn snap(index: u64, n: u64, ns: u64, busy: Option<f64>) -> IntervalSnapshot {
        let mut h = PhaseHists::new(hist::new_interval_hist);
        for _ in 0..n {
            hist::record(&mut h.0[Phase::Total.index()], ns);
        }
        let counters = Counters {
            requests: n,
            ok: n,
            ..Counters::default()
        };
        let mut s = super::super::snapshot(index, counters, &h, Vec::new());
        s.busy_max = busy;
        s
    }

    fn total(s: &IntervalSnapshot) -> Histogram<u64> {
        let bytes = &s.hists.iter().find(|(p, _)| *p == Phase::Total).unwrap().1;
        hist::decode_bytes(bytes).unwrap()
    }

    /// (slot, requests) of each entry.
    fn shape(s: &Series) -> Vec<(u64, u64)> {
        s.entries
            .iter()
            .map(|e| (e.index, e.counters.requests))
            .collect()
    }

    /// (cap, base intervals pushed as (index, requests), expected span, expected entries as
    /// (slot, requests)).
    type Row = (usize, &'static [(u64, u64)], u64, &'static [(u64, u64)]);

    #[test]
    fn neighbours_merge_exactly_as_the_cap_is_reached() {
        let table: &[Row] = &[
            // Under the cap: kept as pushed, gaps stay gaps.
            (4, &[(0, 1), (1, 2), (3, 4)], 1, &[(0, 1), (1, 2), (3, 4)]),
            // Slot 4 is past a cap of 4: pairs merge (0+1, 2+3), then 4 lands in slot 2.
            (
                4,
                &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)],
                2,
                &[(0, 3), (1, 7), (2, 5)],
            ),
            // A lone entry of a pair keeps its figures (3 alone in slot 1).
            (4, &[(0, 1), (3, 4), (5, 6)], 2, &[(0, 1), (1, 4), (2, 6)]),
            // Far past the cap: widened until it fits (span 4: slots 0..3 of 4 intervals).
            (4, &[(0, 1), (1, 1), (15, 9)], 4, &[(0, 2), (3, 9)]),
            // A late part of an interval already merged into a wide slot adds to that slot.
            (
                2,
                &[(0, 1), (1, 1), (2, 1), (3, 1), (1, 5)],
                2,
                &[(0, 7), (1, 2)],
            ),
            // The same base interval twice (two threads' parts): one entry, counts summed.
            (8, &[(2, 3), (2, 4)], 1, &[(2, 7)]),
        ];
        for (cap, pushes, span, want) in table {
            let mut s = Series::with_cap(*cap);
            for &(i, n) in pushes.iter() {
                s.push(snap(i, n, 1000 * (i + 1), None));
            }
            s.settle();
            assert_eq!(s.span, *span, "{pushes:?}");
            assert_eq!(shape(&s), want.to_vec(), "{pushes:?}");
        }
    }

    #[test]
    fn merged_histograms_are_exact_sums() {
        let mut s = Series::with_cap(2);
        let mut want = hist::new_interval_hist();
        for i in 0..8u64 {
            s.push(snap(i, i + 1, 1000 * (i + 1), Some(0.1 * i as f64)));
            for _ in 0..=i {
                hist::record(&mut want, 1000 * (i + 1));
            }
        }
        s.settle();
        assert_eq!(s.span, 4);
        let mut got = hist::new_interval_hist();
        for e in &s.entries {
            got.add(total(e)).unwrap();
        }
        assert_eq!(got, want);
        assert_eq!(
            s.entries.iter().map(|e| e.counters.requests).sum::<u64>(),
            36
        );
        // The busiest share of each slot: intervals 0..3 and 4..7.
        let busy: Vec<f64> = s.entries.iter().map(|e| e.busy_max.unwrap()).collect();
        assert!(
            (busy[0] - 0.3).abs() < 1e-9 && (busy[1] - 0.7).abs() < 1e-9,
            "{busy:?}"
        );
    }

    #[test]
    fn series_of_different_spans_merge_on_the_wider() {
        let mut a = Series::with_cap(4);
        let mut b = Series::with_cap(4);
        for i in 0..4 {
            a.push(snap(i, 1, 1000, None));
        }
        for i in 0..8 {
            b.push(snap(i, 2, 1000, None));
        }
        b.settle();
        assert_eq!((a.span, b.span), (1, 2));
        a.merge(b);
        assert_eq!(a.span, 2);
        assert_eq!(shape(&a), vec![(0, 6), (1, 6), (2, 4), (3, 4)]);
    }

    #[test]
    fn a_widening_goes_step_by_step_and_takes_late_parts() {
        let mut s = Series::with_cap(4);
        for i in 0..4 {
            s.push(snap(i, 1, 1000, None));
        }
        s.push(snap(4, 1, 1000, None)); // past the cap: a widening starts
        assert!(s.compacting());
        assert_eq!(shape(&s), vec![(2, 1)]);
        s.compact(1); // intervals 0 and 1
        s.push(snap(3, 10, 1000, None)); // a late part of a pair not merged yet
        s.compact(1);
        assert!(!s.compacting());
        assert_eq!(shape(&s), vec![(0, 2), (1, 12), (2, 1)]);
    }

    #[test]
    fn histograms_past_the_bytes_wait_on_disk_and_come_back() {
        let one = snap(0, 1, 1000, None).footprint();
        let mut s = Series::with_limits(100, 4 * one);
        for i in 0..10 {
            s.push(snap(i, i + 1, 1000 * (i + 1), None));
        }
        // The oldest went to disk; the memory holds what is left and their counts.
        assert!(s.entries[0].spilled.is_some() && s.entries[0].hists.is_empty());
        let kept: u64 = s.entries.iter().map(IntervalSnapshot::footprint).sum();
        assert_eq!(s.footprint(), kept);
        assert!(kept < 10 * one, "{kept}");
        for (i, e) in s.entries.iter().enumerate() {
            assert_eq!(total(&s.load(e)).len(), i as u64 + 1);
        }
        // A late part of a spilled interval, a widening and a copy: all exact.
        s.push(snap(0, 5, 1000, None));
        s.widen();
        let copy = s.clone();
        let want = [1 + 5 + 2, 3 + 4, 5 + 6, 7 + 8, 9 + 10];
        for (e, n) in copy.entries.iter().zip(want) {
            assert_eq!(total(&copy.load(e)).len(), n);
            assert_eq!(e.counters.requests, n);
        }
    }

    #[test]
    fn fitting_widens_a_copy() {
        let mut s = Series::with_cap(4);
        s.push(snap(3, 1, 1000, None));
        let f = s.fitting(9); // 9 slots of span 1 do not fit under 4: span 4 (3 slots)
        assert_eq!((s.span, f.span), (1, 4));
        assert_eq!(shape(&f), vec![(0, 1)]);
    }
}
