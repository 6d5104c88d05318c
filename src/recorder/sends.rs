//! The first send instants of a run, kept for the arrival test (`analysis::validity`): each
//! worker thread keeps the [`CAPACITY`] earliest instants at which a connection took a recorded
//! request (its `dispatched` stamp, the `start_ns` of the per-request log), as nanoseconds from
//! the start of recording. Requests end out of order, so the thread keeps the earliest ones
//! seen, not the first ones ended: once full, a later instant costs one comparison with the
//! latest kept (no allocation, no conversion), and an earlier one (a request sent before the
//! latest kept but ended after it: a few, near the cut) replaces it and the latest is sought
//! again among the kept.
//!
//! At the end the threads' instants are merged in time order over the span every thread covers
//! (up to the earliest last instant of a thread that filled up: beyond it, that thread's sends
//! are missing), and the first [`GAPS`] gaps between consecutive instants are the sample the
//! arrival test judges.

use std::time::Instant;

/// Send instants kept per thread.
pub const CAPACITY: usize = 1001;
/// Gaps of the merged sample, at most: the first ones of the run's sends.
pub const GAPS: usize = 1000;

/// One thread's earliest send instants.
#[derive(Debug, Clone, Default)]
pub struct Sends {
    /// Nanoseconds from the start of recording, unordered.
    kept: Vec<u64>,
    /// The latest kept, as an instant (compared without conversion once full).
    latest: Option<Instant>,
    /// The threads merged into this one, each its instants in order (after [`Sends::merge`]).
    parts: Vec<Vec<u64>>,
}

impl Sends {
    /// Offers the send instant `at` of a request recorded from `from`.
    #[inline]
    pub fn offer(&mut self, at: Instant, from: Instant) {
        if self.kept.len() == CAPACITY && self.latest.is_some_and(|l| at >= l) {
            return;
        }
        self.keep(at, from);
    }

    #[cold]
    fn keep(&mut self, at: Instant, from: Instant) {
        let ns = at.saturating_duration_since(from).as_nanos() as u64;
        if self.kept.len() < CAPACITY {
            if self.kept.capacity() == 0 {
                self.kept.reserve_exact(CAPACITY);
            }
            self.kept.push(ns);
            if self.latest.is_none_or(|l| at > l) {
                self.latest = Some(at);
            }
            return;
        }
        // Full, and `at` is earlier than the latest kept: it takes the latest's place.
        let Some((i, &top)) = self.kept.iter().enumerate().max_by_key(|(_, v)| **v) else {
            return;
        };
        self.kept[i] = ns;
        let new_top = self.kept.iter().copied().max().unwrap_or(ns);
        if let Some(l) = self.latest {
            // The instant of the new latest, from the old one's (both from `from`).
            self.latest = Some(l - std::time::Duration::from_nanos(top - new_top));
        }
    }

    /// The sends of several threads, each kept apart until [`Sends::gaps`].
    pub fn merge(parts: Vec<Sends>) -> Sends {
        let mut out = Sends::default();
        for p in parts {
            out.parts.extend(p.into_parts());
        }
        out
    }

    /// This thread's instants in order (or those of the threads merged into it).
    fn into_parts(self) -> Vec<Vec<u64>> {
        if !self.parts.is_empty() || self.kept.is_empty() {
            return self.parts;
        }
        let mut kept = self.kept;
        kept.sort_unstable();
        vec![kept]
    }

    /// The first [`GAPS`] gaps (ns) between consecutive sends of all the threads, over the span
    /// they all cover; empty when fewer than two sends were kept.
    pub fn gaps(&self) -> Vec<u64> {
        let parts = self.clone().into_parts();
        // A thread that filled up kept nothing after its last instant.
        let until = parts
            .iter()
            .filter(|p| p.len() == CAPACITY)
            .filter_map(|p| p.last().copied())
            .min()
            .unwrap_or(u64::MAX);
        let mut all: Vec<u64> = parts
            .into_iter()
            .flatten()
            .filter(|&t| t <= until)
            .collect();
        all.sort_unstable();
        all.windows(2).take(GAPS).map(|w| w[1] - w[0]).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_earliest_instants_are_kept_whatever_the_order_they_end_in() {
        let from = Instant::now();
        let mut s = Sends::default();
        // Sent every 10 µs, ended out of order: each pair of neighbours swapped.
        let n = CAPACITY as u64 + 500;
        for i in 0..n {
            let j = if i % 2 == 0 { i + 1 } else { i - 1 };
            s.offer(from + Duration::from_micros(10 * j), from);
        }
        let gaps = Sends::merge(vec![s]).gaps();
        assert_eq!(gaps.len(), GAPS);
        assert!(gaps.iter().all(|&g| g == 10_000), "{:?}", &gaps[..10]);
    }

    #[test]
    fn threads_merge_in_time_order() {
        let from = Instant::now();
        let (mut a, mut b) = (Sends::default(), Sends::default());
        // a sends at even microseconds, b at odd ones: together one every microsecond.
        for i in 0..3000u64 {
            a.offer(from + Duration::from_micros(2 * i), from);
            b.offer(from + Duration::from_micros(2 * i + 1), from);
        }
        let gaps = Sends::merge(vec![a, b]).gaps();
        assert_eq!(gaps.len(), GAPS);
        assert!(gaps.iter().all(|&g| g == 1000), "{gaps:?}");
    }
}
