//! Which request to send next: a [`Mix`] of requests chosen per send, either at random by
//! integer weight (a scenario's phase) or in turn (a targets file, as vegeta does).
//!
//! Weighted choice: with weights `w₁…w_k` and `W = Σ wᵢ`, draw `r` uniform in `0..W` (exactly,
//! see [`GenState::below`]) and take the first request whose cumulative weight
//! `cᵢ = w₁ + … + wᵢ` exceeds `r`: request `i` is chosen for the `wᵢ` values of `r` in
//! `c_{i−1}..cᵢ`, so with probability exactly `wᵢ/W`. The cumulative table is searched by
//! bisection, `O(log k)` for k requests (a handful in practice, a few nanoseconds); the alias
//! method would be O(1) but is exact only with rational arithmetic, and k is small.
//!
//! In turn: the `k`-th pick of worker `w` of `W` is request `(k·W + w) mod k_requests`, so the
//! workers together go through the list in order, as one vegeta attacker would.

use super::gen::GenState;

/// How requests are picked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Order {
    /// At random, by weight: cumulative weights.
    Weighted { cumulative: Box<[u64]>, total: u64 },
    /// In turn.
    RoundRobin,
}

/// A choice of the next request among several (indices into the caller's list of requests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mix {
    requests: Box<[usize]>,
    weights: Box<[u64]>,
    order: Order,
}

impl Mix {
    /// Requests chosen at random in proportion to their weights: `(request index, weight)`.
    /// Every weight must be a positive integer and there must be at least one request.
    pub fn weighted(entries: &[(usize, u64)]) -> Result<Mix, String> {
        if entries.is_empty() {
            return Err("a mix needs at least one request".into());
        }
        let mut cumulative = Vec::with_capacity(entries.len());
        let mut total: u64 = 0;
        for &(i, w) in entries {
            if w == 0 {
                return Err(format!(
                    "request {i} has weight 0: weights are positive integers (leave the request out instead)"
                ));
            }
            total = total
                .checked_add(w)
                .ok_or("the weights add up to more than 2^64")?;
            cumulative.push(total);
        }
        Ok(Mix {
            requests: entries.iter().map(|&(i, _)| i).collect(),
            weights: entries.iter().map(|&(_, w)| w).collect(),
            order: Order::Weighted {
                cumulative: cumulative.into(),
                total,
            },
        })
    }

    /// The requests `0..count` in turn (at least one).
    pub fn round_robin(count: usize) -> Mix {
        let count = count.max(1);
        Mix {
            requests: (0..count).collect(),
            weights: vec![1; count].into(),
            order: Order::RoundRobin,
        }
    }

    /// The index of the request to send next.
    pub fn pick(&self, state: &mut GenState) -> usize {
        if self.requests.len() == 1 {
            return self.requests[0];
        }
        match &self.order {
            Order::Weighted { cumulative, total } => {
                let r = state.below(*total);
                self.requests[cumulative.partition_point(|&c| c <= r)]
            }
            Order::RoundRobin => {
                let g = state.next_pick();
                self.requests[(g % self.requests.len() as u64) as usize]
            }
        }
    }

    /// `(request index, weight)` of each request in the mix, in order.
    pub fn entries(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.requests
            .iter()
            .copied()
            .zip(self.weights.iter().copied())
    }

    /// Whether requests are taken in turn rather than at random.
    pub fn is_round_robin(&self) -> bool {
        self.order == Order::RoundRobin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportions_follow_the_weights() {
        // (weights by request index, draws): each request's share within 4.5 binomial
        // standard deviations of weight/total
        let rows: &[(&[(usize, u64)], u64)] = &[
            (&[(0, 3), (1, 1)], 100_000),          // the kv read phase: 75/25
            (&[(2, 1), (0, 1), (1, 1)], 90_000),   // equal weights, indices out of order
            (&[(0, 98), (1, 1), (2, 1)], 200_000), // rare requests still come
            (&[(5, 1_000_000), (6, 1)], 100_000),  // a tiny share is rarely or never drawn
        ];
        for &(entries, draws) in rows {
            let mix = Mix::weighted(entries).unwrap();
            let mut state = GenState::new(21, 0, 1);
            let mut counts = [0u64; 8];
            for _ in 0..draws {
                counts[mix.pick(&mut state)] += 1;
            }
            let total: u64 = entries.iter().map(|e| e.1).sum();
            for &(i, w) in entries {
                let p = w as f64 / total as f64;
                let want = p * draws as f64;
                let tol = 4.5 * (draws as f64 * p * (1.0 - p)).sqrt() + 1.0;
                assert!(
                    (counts[i] as f64 - want).abs() <= tol,
                    "{entries:?}: request {i} drawn {} times, expected {want:.0} ± {tol:.0}",
                    counts[i]
                );
            }
            let others: u64 = (0..8)
                .filter(|i| !entries.iter().any(|e| e.0 == *i))
                .map(|i| counts[i])
                .sum();
            assert_eq!(others, 0, "only the mix's requests are drawn");
        }
    }

    #[test]
    fn bad_mixes_are_refused() {
        // (entries, words of the message)
        let rows: &[(&[(usize, u64)], &str)] = &[
            (&[], "at least one request"),
            (&[(0, 1), (1, 0)], "weight 0"),
            (&[(0, u64::MAX), (1, 1)], "more than 2^64"),
        ];
        for &(entries, words) in rows {
            let e = Mix::weighted(entries).unwrap_err();
            assert!(e.contains(words), "{entries:?}: {e}");
        }
    }

    #[test]
    fn round_robin_goes_through_the_list_across_workers() {
        // 3 workers, 4 requests: together, the workers' k-th picks are the requests in turn
        let mix = Mix::round_robin(4);
        let mut states: Vec<_> = (0..3).map(|w| GenState::new(0, w, 3)).collect();
        let mut seen = Vec::new();
        for _ in 0..4 {
            for s in states.iter_mut() {
                seen.push(mix.pick(s));
            }
        }
        assert_eq!(seen, [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3]);
        assert!(mix.is_round_robin());
    }

    #[test]
    fn one_request_needs_no_draw() {
        let mix = Mix::weighted(&[(4, 9)]).unwrap();
        let mut a = GenState::new(1, 0, 1);
        assert_eq!(mix.pick(&mut a), 4);
        // the random stream was not used
        assert_eq!(a.next_u64(), GenState::new(1, 0, 1).next_u64());
    }
}
