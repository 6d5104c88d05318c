//! `--until`'s watch over a run: the intervals of each phase named, as they close, and whether
//! every percentile named is as precise as asked on what was measured so far, computed as the
//! record will compute it ([`crate::analysis::precision::half_share`]). Memory stays bounded
//! whatever the cap: past [`MOST_PARTS`] parts, neighbours are merged two by two (batch means
//! merges them so anyway).

use crate::analysis::precision::half_share;
use crate::model::until::Until;
use crate::model::Phase;
use crate::recorder::hist;
use crate::recorder::IntervalSnapshot;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The most parts kept per phase before neighbours are merged.
pub(super) const MOST_PARTS: usize = 512;

/// One phase's histograms so far: the whole and its parts (by interval index / `each`).
struct Parts {
    whole: Histogram<u64>,
    parts: BTreeMap<u64, Histogram<u64>>,
    each: u64,
}

impl Parts {
    fn new() -> Parts {
        Parts {
            whole: hist::new_hist(),
            parts: BTreeMap::new(),
            each: 1,
        }
    }

    /// Adds interval `index`'s histogram `h` (or a late part of it).
    fn add(&mut self, index: u64, h: &Histogram<u64>) {
        let _ = self.whole.add(h);
        let part = self
            .parts
            .entry(index / self.each)
            .or_insert_with(hist::new_interval_hist);
        let _ = part.add(h);
        if self.parts.len() > MOST_PARTS {
            self.each *= 2;
            let mut merged: BTreeMap<u64, Histogram<u64>> = BTreeMap::new();
            for (k, h) in std::mem::take(&mut self.parts) {
                let into = merged.entry(k / 2).or_insert_with(hist::new_interval_hist);
                let _ = into.add(&h);
            }
            self.parts = merged;
        }
    }

    /// The parts in order, an empty one for an interval with no value of this phase.
    fn in_order(&self) -> Vec<Histogram<u64>> {
        let (Some(first), Some(last)) = (self.parts.keys().next(), self.parts.keys().last()) else {
            return Vec::new();
        };
        (*first..=*last)
            .map(|k| {
                self.parts
                    .get(&k)
                    .cloned()
                    .unwrap_or_else(hist::new_interval_hist)
            })
            .collect()
    }
}

/// What `--until` watches in one run.
pub(super) struct Precise {
    targets: Vec<Until>,
    phases: BTreeMap<Phase, Parts>,
    /// Every target was met when last checked.
    reached: bool,
}

impl Precise {
    /// The watch of `targets`; `None` without any.
    pub(super) fn new(targets: &[Until]) -> Option<Precise> {
        if targets.is_empty() {
            return None;
        }
        let phases = targets.iter().map(|t| (t.phase, Parts::new())).collect();
        Some(Precise {
            targets: targets.to_vec(),
            phases,
            reached: false,
        })
    }

    /// Adds a closed interval (or a late part of one).
    pub(super) fn add(&mut self, snap: &IntervalSnapshot) {
        for (phase, bytes) in &snap.hists {
            if let (Some(parts), Ok(h)) = (self.phases.get_mut(phase), hist::decode_bytes(bytes)) {
                parts.add(snap.index, &h);
            }
        }
    }

    /// Checks every target on what was measured so far; whether all are met.
    pub(super) fn check(&mut self) -> bool {
        let mut ordered: BTreeMap<Phase, Vec<Histogram<u64>>> = BTreeMap::new();
        self.reached = self.targets.iter().all(|t| {
            let Some(parts) = self.phases.get(&t.phase) else {
                return false;
            };
            let in_order = ordered.entry(t.phase).or_insert_with(|| parts.in_order());
            half_share(&parts.whole, in_order, t.quantile).is_some_and(|h| h <= t.share)
        });
        self.reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(index: u64, values: impl Iterator<Item = u64>) -> IntervalSnapshot {
        let mut h = hist::new_interval_hist();
        for v in values {
            h.record(v).unwrap();
        }
        IntervalSnapshot {
            hists: vec![(Phase::Total, hist::encode_bytes(&h))],
            ..IntervalSnapshot::empty(index)
        }
    }

    /// 2,000 values an interval, from 100 µs to 300 µs, the same in every interval.
    fn steady(index: u64) -> IntervalSnapshot {
        snap(index, (0..2000u64).map(|i| 100_000 + i * 100))
    }

    #[test]
    fn a_steady_run_is_precise_once_it_has_enough_batches() {
        let targets = [Until::parse("p99:5%").unwrap()];
        let mut w = Precise::new(&targets).unwrap();
        for i in 0..4 {
            w.add(&steady(i));
            assert!(
                !w.check(),
                "met after {} intervals: batch means needs 5",
                i + 1
            );
        }
        w.add(&steady(4));
        assert!(w.check());
    }

    #[test]
    fn a_run_whose_tail_moves_across_the_percentile_is_not_precise() {
        let targets = [Until::parse("p99:5%").unwrap()];
        // Every other interval, 2% of the values take 3 ms: 1% of the run in all, so whether
        // p99 is 100 µs or 3 ms rests on how many such intervals a run holds.
        let mut w = Precise::new(&targets).unwrap();
        for i in 0..40u64 {
            let slow = if i % 2 == 0 { 2000 } else { 1960 };
            w.add(&snap(
                i,
                (0..2000u64).map(move |j| if j >= slow { 3_000_000 } else { 100_000 }),
            ));
        }
        assert!(!w.check());
        // Every interval's slowest 1.5% move between 300 µs and 3 ms, but beyond p99: p99 is
        // 300 µs however many there are, and the run says so (each interval's own p99 moves
        // tenfold: the batch means of those, before, called it imprecise).
        let mut w = Precise::new(&targets).unwrap();
        for i in 0..40u64 {
            let tail = if i % 2 == 0 { 1 } else { 10 };
            w.add(&snap(
                i,
                (0..2000u64).map(move |j| if j >= 1970 { 300_000 * tail } else { 100_000 }),
            ));
        }
        assert!(w.check());
    }

    #[test]
    fn parts_stay_bounded_and_keep_every_value() {
        let targets = [Until::parse("p50:5%").unwrap()];
        let mut w = Precise::new(&targets).unwrap();
        for i in 0..(3 * MOST_PARTS as u64) {
            w.add(&snap(i, std::iter::once(100_000)));
        }
        let parts = &w.phases[&Phase::Total];
        assert!(parts.parts.len() <= MOST_PARTS, "{}", parts.parts.len());
        assert_eq!(parts.each, 4);
        let kept: u64 = parts.parts.values().map(|h| h.len()).sum();
        assert_eq!(
            (kept, parts.whole.len()),
            (3 * MOST_PARTS as u64, 3 * MOST_PARTS as u64)
        );
    }
}
