//! A bounded uniform sample of the run's raw requests, for the latency scatter of the HTML
//! report: each worker thread keeps a [`Reservoir`] of at most [`DEFAULT_CAPACITY`] pairs
//! (time since the start of recording in µs, total latency in ns), and the threads' reservoirs
//! are merged at the end by weighted sampling ([`merge_uniform`]), so that the result is a
//! uniform sample of the whole run. Memory is bounded whatever the run's length.
//!
//! Per thread: Li's Algorithm L ("Reservoir-sampling algorithms of time complexity
//! O(n(1 + log(N/n)))", ACM TOMS 1994). With capacity k, the first k items fill the
//! reservoir; then, with u, u′, u″ independent uniform in (0, 1],
//!
//! W ← exp(ln(u)/k),  skip ← ⌊ln(u′) / ln(1 − W)⌋
//!
//! items are passed over, the next one replaces a uniformly chosen slot, and
//! W ← W·exp(ln(u″)/k) before the next skip is drawn. After n ≥ k items every k-subset is
//! equally likely, and a request that is not kept costs one decrement (the item is not even
//! built: [`Reservoir::offer`] takes a closure). The random draws happen only when an item is
//! kept: about k·(1 + ln(n/k)) times in a run of n requests.
//!
//! Merging parts i with populations nᵢ (requests seen) and uniform samples of kᵢ = min(nᵢ, k)
//! items: the union's sample of size m = min(k, Σnᵢ) takes its items one at a time, from part
//! i with probability rᵢ / Σⱼ rⱼ (rᵢ: the part's population not yet drawn, decremented at each
//! draw), each time a random item of the part not taken yet. The counts drawn per part then
//! follow the multivariate hypergeometric law of a uniform m-subset of the union, and within a
//! part a uniform subset of a uniform sample is a uniform subset of the part's population.

pub use crate::util::rng::SplitMix64;

/// Samples kept per thread and after the merge.
pub const DEFAULT_CAPACITY: usize = 20_000;

/// One kept request: (time since the start of recording in µs, total latency in ns).
pub type Item = (u64, u64);

/// A bounded uniform sample of the items offered to it (Algorithm L).
#[derive(Debug, Clone)]
pub struct Reservoir {
    capacity: usize,
    /// Items offered so far (the population the sample is of).
    seen: u64,
    items: Vec<Item>,
    /// Items still to pass over before the next one is kept.
    skip: u64,
    /// Algorithm L's W: the largest of the kept items' random keys.
    w: f64,
    rng: SplitMix64,
    /// A merged reservoir is final: it keeps nothing more.
    sealed: bool,
}

impl Reservoir {
    /// An empty reservoir of at most `capacity` items (0 keeps nothing), random from `seed`.
    pub fn new(capacity: usize, seed: u64) -> Self {
        Reservoir {
            capacity,
            seen: 0,
            items: Vec::new(),
            skip: 0,
            w: 1.0,
            rng: SplitMix64(seed),
            sealed: false,
        }
    }

    /// A reservoir of [`DEFAULT_CAPACITY`] seeded from the clock and a process-wide counter
    /// (the scatter need not be reproducible; its uniformity is what matters).
    pub fn per_thread() -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Reservoir::new(
            DEFAULT_CAPACITY,
            clock ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        )
    }

    /// Offers the next item; `make` builds it only if it is kept. Most calls only decrement a
    /// counter.
    #[inline]
    pub fn offer(&mut self, make: impl FnOnce() -> Item) {
        if self.sealed || self.capacity == 0 {
            return;
        }
        self.seen += 1;
        if self.skip > 0 {
            self.skip -= 1;
            return;
        }
        self.keep(make());
    }

    /// Keeps `item`: fills the reservoir, or replaces a random slot, then draws the next skip.
    #[cold]
    fn keep(&mut self, item: Item) {
        let k = self.capacity;
        if self.items.len() < k {
            if self.items.capacity() == 0 {
                // One allocation for the whole run, never a growth on the hot path.
                self.items.reserve_exact(k);
            }
            self.items.push(item);
            if self.items.len() < k {
                return;
            }
            self.w = (self.rng.unit_open().ln() / k as f64).exp();
        } else {
            let slot = self.rng.below(k as u64) as usize;
            self.items[slot] = item;
            self.w *= (self.rng.unit_open().ln() / k as f64).exp();
        }
        // ⌊ln(u)/ln(1 − W)⌋; W = 1 (or rounding) gives ln(0) = −∞ and a skip of 0.
        let skip = (self.rng.unit_open().ln() / (1.0 - self.w).ln()).floor();
        self.skip = if skip.is_finite() && skip > 0.0 {
            skip as u64 // saturates for astronomically long skips
        } else {
            0
        };
    }

    /// Items offered so far.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// The kept items (at most the capacity), in no particular order.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The most items the reservoir keeps.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Merges the threads' reservoirs into one uniform sample of everything they saw (see the
    /// module's doc), of at most `capacity` items. The result is final: it keeps nothing more.
    pub fn merge(parts: Vec<Reservoir>, capacity: usize, seed: u64) -> Reservoir {
        let seen = parts.iter().map(|p| p.seen).sum();
        let mut rng = SplitMix64(seed);
        let items = merge_uniform(
            parts.into_iter().map(|p| (p.seen, p.items)).collect(),
            capacity,
            &mut rng,
        );
        Reservoir {
            capacity,
            seen,
            items,
            skip: 0,
            w: 1.0,
            rng,
            sealed: true,
        }
    }
}

/// A uniform sample of at most `capacity` items of the union of `parts`, each a population
/// size and a uniform sample of min(size, capacity) or more of its items (see the module's
/// doc for why the result is uniform).
pub fn merge_uniform<T>(
    parts: Vec<(u64, Vec<T>)>,
    capacity: usize,
    rng: &mut SplitMix64,
) -> Vec<T> {
    let total: u64 = parts.iter().map(|(n, _)| *n).sum();
    let want = (capacity as u64).min(total) as usize;
    // Per part: its population not yet drawn, and its items (the drawn ones swapped to the end).
    let mut left: Vec<u64> = parts.iter().map(|(n, _)| *n).collect();
    let mut pools: Vec<Vec<T>> = parts.into_iter().map(|(_, items)| items).collect();
    let mut remaining = total;
    let mut out = Vec::with_capacity(want);
    while out.len() < want && remaining > 0 {
        let mut r = rng.below(remaining);
        let i = left
            .iter()
            .position(|&n| {
                if r < n {
                    true
                } else {
                    r -= n;
                    false
                }
            })
            .expect("r < the sum of the parts' populations");
        left[i] -= 1;
        remaining -= 1;
        let pool = &mut pools[i];
        if pool.is_empty() {
            // A part whose sample is smaller than its share (not made by a Reservoir of this
            // capacity): it has nothing more to give, and its population is dropped.
            remaining -= left[i];
            left[i] = 0;
            continue;
        }
        let j = rng.below(pool.len() as u64) as usize;
        out.push(pool.swap_remove(j));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::chi_square;

    /// χ² critical value at p = 0.001 for 99 degrees of freedom: a uniform sampler exceeds it
    /// once in a thousand seeds; a biased one (favouring early or late items) by far.
    const CHI2_99_P001: f64 = 148.23;

    /// How often each of `n` sequence numbers is kept, over `runs` seeded reservoirs of
    /// capacity `k` (merging `split` parts of the population when `split` is not empty).
    fn kept_counts(n: u64, k: usize, runs: u64, split: &[u64]) -> Vec<u64> {
        let mut counts = vec![0u64; n as usize];
        for seed in 0..runs {
            let kept: Vec<Item> = if split.is_empty() {
                let mut r = Reservoir::new(k, seed);
                for seq in 0..n {
                    r.offer(|| (seq, 0));
                }
                assert_eq!(r.seen(), n);
                r.items().to_vec()
            } else {
                let mut parts = Vec::new();
                let mut seq = 0;
                for (p, &size) in split.iter().enumerate() {
                    let mut r = Reservoir::new(k, seed * 31 + p as u64);
                    for _ in 0..size {
                        r.offer(|| (seq, 0));
                        seq += 1;
                    }
                    parts.push(r);
                }
                let m = Reservoir::merge(parts, k, seed ^ 0xABCD);
                assert_eq!(m.seen(), n);
                m.items().to_vec()
            };
            assert_eq!(kept.len(), k.min(n as usize));
            let mut distinct: Vec<u64> = kept.iter().map(|i| i.0).collect();
            distinct.sort_unstable();
            distinct.dedup();
            assert_eq!(distinct.len(), kept.len(), "an item was kept twice");
            for (seq, _) in kept {
                counts[seq as usize] += 1;
            }
        }
        counts
    }

    #[test]
    fn every_sequence_number_is_equally_likely_to_be_kept() {
        // 100 items, 10 kept, 4000 seeds: each item expected 400 times.
        let counts = kept_counts(100, 10, 4000, &[]);
        let chi2 = chi_square(&counts);
        eprintln!("χ² = {chi2:.1} (99 degrees of freedom)");
        assert!(chi2 < CHI2_99_P001, "χ² = {chi2:.1}: {counts:?}");
        // The first items (the initial fill) and the last are not favoured.
        let (first, last) = (
            counts[..10].iter().sum::<u64>(),
            counts[90..].iter().sum::<u64>(),
        );
        assert!((3600..4400).contains(&first), "{first}");
        assert!((3600..4400).contains(&last), "{last}");
    }

    #[test]
    fn a_long_stream_keeps_a_uniform_sample_with_few_draws() {
        // 100,000 items into 100 slots: the kept sequence numbers are spread evenly over
        // ten deciles (expected 10 each per run, 200 runs → 2000 per decile).
        let mut deciles = vec![0u64; 10];
        for seed in 0..200 {
            let mut r = Reservoir::new(100, seed);
            let mut built = 0u64;
            for seq in 0..100_000u64 {
                r.offer(|| {
                    built += 1;
                    (seq, 0)
                });
            }
            // Algorithm L builds about k·(1 + ln(n/k)) ≈ 790 items, not 100,000.
            assert!(built < 2_000, "built {built} items");
            for (seq, _) in r.items() {
                deciles[(*seq / 10_000) as usize] += 1;
            }
        }
        let chi2 = chi_square(&deciles);
        eprintln!("χ² = {chi2:.1} (9 degrees of freedom): {deciles:?}");
        // χ² critical value at p = 0.001 for 9 degrees of freedom.
        assert!(chi2 < 27.88, "χ² = {chi2:.1}: {deciles:?}");
    }

    #[test]
    fn merged_reservoirs_stay_uniform_over_the_whole_population() {
        // Parts of unequal sizes (a busy thread and two quiet ones), 10 kept in all: an
        // unweighted merge would keep the quiet threads' items far more often.
        let counts = kept_counts(100, 10, 4000, &[70, 20, 10]);
        let chi2 = chi_square(&counts);
        eprintln!("χ² = {chi2:.1} (99 degrees of freedom)");
        assert!(chi2 < CHI2_99_P001, "χ² = {chi2:.1}: {counts:?}");
        let quiet: u64 = counts[90..].iter().sum(); // the part of 10 items
        assert!((3600..4400).contains(&quiet), "{quiet}");
    }

    #[test]
    fn small_populations_are_kept_whole_and_capacity_zero_keeps_nothing() {
        // (capacity, items offered per part, kept after the merge)
        for (k, parts, kept) in [
            (10, vec![3, 4], 7),    // fewer than the capacity: everything
            (10, vec![10, 10], 10), // exactly full parts: capacity
            (0, vec![5], 0),        // disabled
            (10, vec![], 0),        // no thread
        ] {
            let rs: Vec<Reservoir> = parts
                .iter()
                .enumerate()
                .map(|(p, &n)| {
                    let mut r = Reservoir::new(k, p as u64);
                    for s in 0..n {
                        r.offer(|| (s, s));
                    }
                    r
                })
                .collect();
            let m = Reservoir::merge(rs, k, 7);
            assert_eq!(m.items().len(), kept, "k={k} parts={parts:?}");
        }
    }

    #[test]
    fn a_merged_reservoir_keeps_nothing_more() {
        let mut m = Reservoir::merge(vec![Reservoir::new(4, 1)], 4, 2);
        m.offer(|| (1, 1));
        assert_eq!((m.seen(), m.items().len()), (0, 0));
    }

    #[test]
    fn below_is_in_range() {
        let mut rng = SplitMix64(3);
        for n in [1u64, 2, 7, 1 << 40, u64::MAX] {
            for _ in 0..1000 {
                assert!(rng.below(n) < n);
            }
        }
    }
}
