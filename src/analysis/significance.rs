//! Statistics for "is B faster than A, or is it noise?" (`reqlife compare`):
//!
//! - [`mann_whitney`]: the Mann-Whitney U test of two samples (repeated runs): U from mid-ranks;
//!   the two-sided p-value exactly (the permutation distribution of U, by counting) for small
//!   samples without ties, else by the normal approximation with the tie correction
//!   `σ² = n₁n₂/12 · ((n+1) − Σ(t³−t)/(n(n−1)))` and a continuity correction of ½.
//! - [`bootstrap_median_ratio`]: a percentile bootstrap of median(B)/median(A).
//! - [`block_bootstrap`]: a moving-block bootstrap over a time series (the intervals of one
//!   run). Latencies are autocorrelated in time, so resampling single requests (or a t-test
//!   over all requests) understates the noise; resampling blocks of consecutive intervals keeps
//!   the short-range dependence. Block length ≈ n^(1/3) ([`block_len`]), the usual order for
//!   the moving-block bootstrap of a mean-like statistic.
//! - [`rank_permutation_p`]: the exact permutation p of the rank-sum statistic on mid-ranks
//!   (every split of the pooled runs counted, ties included), and [`min_p`], the smallest p a
//!   design of n₁ against n₂ runs can reach (2/C(n₁+n₂, n₁): 0.1 for 3 against 3).
//! - [`verdict`]: a change is called when its confidence interval lies wholly beyond the noise
//!   band (which excludes zero); [`verdict_of_runs`] also asks the rank test for p < [`ALPHA`],
//!   and says "too few runs" when the design cannot reach it.
//! - [`band_p`]: the p that a change lies beyond the noise band, from its estimate on the log
//!   scale and the estimate's standard error, by Student's t ([`crate::util::student`]);
//!   [`benjamini_hochberg`] adjusts the p of many rows ([`many`]); [`mid_quantile`] reads a
//!   quantile of tied or rounded values without jumps ([`mid`]).
//!
//! Randomness comes from the seeded SplitMix64 the pacer uses, so results are reproducible.

use crate::util::rng::SplitMix64;
use serde::Serialize;

pub mod many;
pub mod mid;
pub use crate::util::student::{normal_sf, t_quantile, t_sf};
pub use many::benjamini_hochberg;
pub use mid::mid_quantile;

/// The result of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample (as scipy reports it).
    pub u: f64,
    /// The standardised U (0 for an exact test).
    pub z: f64,
    /// The two-sided p-value.
    pub p_two_sided: f64,
    /// The p-value is exact (by the U distribution), not the normal approximation.
    pub exact: bool,
}

/// The significance level of every verdict (two-sided), matching the 95% intervals.
pub const ALPHA: f64 = 0.05;

/// Largest pooled sample for [`rank_permutation_p`] (C(50, 25) ≈ 1.3e14 splits, counted
/// exactly in an f64).
const PERMUTATION_MAX: usize = 50;

/// C(n, k) as an f64.
fn choose(n: usize, k: usize) -> f64 {
    let k = k.min(n - k.min(n));
    (0..k).fold(1.0, |c, i| c * (n - i) as f64 / (i + 1) as f64)
}

/// The smallest two-sided p that an exact rank (or permutation) test of `n1` against `n2`
/// observations can give: the two most extreme splits of C(n₁+n₂, n₁). 3 against 3: 0.1;
/// 4 against 4: 0.029; 5 against 5: 0.008.
pub fn min_p(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    (2.0 / choose(n1 + n2, n1)).min(1.0)
}

/// The fewest observations per side (equal sides) whose exact two-sided p can go below
/// [`ALPHA`]: 4.
pub fn runs_needed() -> usize {
    (1..).find(|&n| min_p(n, n) < ALPHA).unwrap_or(4)
}

/// The exact two-sided permutation p of the rank-sum of `a` against `b`, on mid-ranks (ties
/// keep their exact permutation distribution): the share of the C(n₁+n₂, n₁) splits of the
/// pooled values whose rank-sum is at least as far from its mean as the observed one. `None`
/// beyond `PERMUTATION_MAX` values (use [`mann_whitney`]'s normal approximation).
pub fn rank_permutation_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let (n1, n2) = (a.len(), b.len());
    let n = n1 + n2;
    if n1 == 0 || n2 == 0 || n > PERMUTATION_MAX {
        return None;
    }
    let (r, _) = ranks(a, b);
    // Doubled mid-ranks are whole numbers.
    let twice: Vec<usize> = r.iter().map(|x| (x * 2.0).round() as usize).collect();
    let max_sum: usize = twice.iter().sum();
    // ways[k][s]: the splits that put k of the values seen so far in the first sample, with
    // doubled rank-sum s.
    let mut ways = vec![vec![0.0f64; max_sum + 1]; n1 + 1];
    ways[0][0] = 1.0;
    for &t in &twice {
        for k in (1..=n1).rev() {
            let (lower, upper) = ways.split_at_mut(k);
            for s in (t..=max_sum).rev() {
                upper[0][s] += lower[k - 1][s - t];
            }
        }
    }
    let observed: usize = twice[..n1].iter().sum();
    let mean = (n1 * (n + 1)) as f64; // doubled: n1 (n + 1) / 2 × 2
    let far = (observed as f64 - mean).abs() - 1e-9;
    let total: f64 = ways[n1].iter().sum();
    let extreme: f64 = ways[n1]
        .iter()
        .enumerate()
        .filter(|(s, _)| (*s as f64 - mean).abs() >= far)
        .map(|(_, w)| w)
        .sum();
    Some((extreme / total).min(1.0))
}

/// Largest sample size for the exact p-value.
const EXACT_MAX: usize = 20;

/// Mid-ranks of the combined samples (1-based), and the tie term Σ(t³ − t).
fn ranks(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .chain(b)
        .copied()
        .enumerate()
        .map(|(i, v)| (v, i))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out = vec![0.0; all.len()];
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let mid = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            out[all[k].1] = mid;
        }
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        i = j + 1;
    }
    (out, ties)
}

/// The number of arrangements of `n1` + `n2` distinct values giving each U (0..=n1·n2):
/// `f(i, j, u) = f(i−1, j, u−j) + f(i, j−1, u)`.
fn u_counts(n1: usize, n2: usize) -> Vec<f64> {
    let max = n1 * n2;
    // table[i][j] as vectors over u, built up in i then j.
    let mut prev: Vec<Vec<f64>> = (0..=n2).map(|_| vec![1.0]).collect(); // i = 0: U = 0
    for i in 1..=n1 {
        let mut cur: Vec<Vec<f64>> = Vec::with_capacity(n2 + 1);
        cur.push(vec![1.0]); // j = 0: U = 0
        for j in 1..=n2 {
            let mut v = vec![0.0; i * j + 1];
            for (u, &c) in prev[j].iter().enumerate() {
                v[u + j] += c; // the largest value belongs to sample 1: it beats the j others
            }
            for (u, &c) in cur[j - 1].iter().enumerate() {
                v[u] += c;
            }
            cur.push(v);
        }
        prev = cur;
    }
    let mut out = prev[n2].clone();
    out.resize(max + 1, 0.0);
    out
}

/// The Mann-Whitney U test of `a` against `b`, two-sided.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> MannWhitney {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return MannWhitney {
            u: 0.0,
            z: 0.0,
            p_two_sided: 1.0,
            exact: false,
        };
    }
    let (r, ties) = ranks(a, b);
    let r1: f64 = r[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let nn = (n1 * n2) as f64;
    if n1 <= EXACT_MAX && n2 <= EXACT_MAX && ties == 0.0 {
        let counts = u_counts(n1, n2);
        let total: f64 = counts.iter().sum();
        let u = u1.max(nn - u1) as usize;
        let tail: f64 = counts[u..].iter().sum::<f64>() / total;
        return MannWhitney {
            u: u1,
            z: 0.0,
            p_two_sided: (2.0 * tail).min(1.0),
            exact: true,
        };
    }
    let n = (n1 + n2) as f64;
    let mean = nn / 2.0;
    let var = nn / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return MannWhitney {
            u: u1,
            z: 0.0,
            p_two_sided: 1.0,
            exact: false,
        };
    }
    // Continuity: half a step toward the mean.
    let d = (u1 - mean).abs() - 0.5;
    let z = d.max(0.0) / var.sqrt();
    MannWhitney {
        u: u1,
        z: if u1 >= mean { z } else { -z },
        p_two_sided: (2.0 * normal_sf(z)).min(1.0),
        exact: false,
    }
}

/// A point estimate and its confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The estimate.
    pub point: f64,
    /// The interval's lower bound.
    pub lo: f64,
    /// The interval's upper bound.
    pub hi: f64,
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `confidence` percentile interval of `reps` (sorted in place).
pub fn percentile_interval(reps: &mut [f64], confidence: f64) -> (f64, f64) {
    reps.sort_by(f64::total_cmp);
    let n = reps.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let tail = (1.0 - confidence) / 2.0;
    let at = |q: f64| reps[((q * (n - 1) as f64).round() as usize).min(n - 1)];
    (at(tail), at(1.0 - tail))
}

/// A percentile bootstrap of median(b) / median(a): each replicate resamples both with
/// replacement.
pub fn bootstrap_median_ratio(
    a: &[f64],
    b: &[f64],
    iterations: usize,
    confidence: f64,
    seed: u64,
) -> Estimate {
    let point = median(&mut b.to_vec()) / median(&mut a.to_vec());
    let mut rng = SplitMix64(seed);
    let mut draw = |v: &[f64], buf: &mut Vec<f64>| {
        buf.clear();
        for _ in 0..v.len() {
            buf.push(v[(rng.next_u64() % v.len() as u64) as usize]);
        }
        median(buf)
    };
    let (mut ba, mut bb) = (Vec::new(), Vec::new());
    let mut reps: Vec<f64> = (0..iterations)
        .map(|_| draw(b, &mut bb) / draw(a, &mut ba))
        .filter(|r| r.is_finite())
        .collect();
    let (lo, hi) = percentile_interval(&mut reps, confidence);
    Estimate { point, lo, hi }
}

/// The block length of the moving-block bootstrap for `n` items: ⌈n^(1/3)⌉, at least 1.
pub fn block_len(n: usize) -> usize {
    ((n as f64).cbrt().ceil() as usize).max(1)
}

/// A moving-block bootstrap: each replicate draws ⌈n/L⌉ blocks of `block_len` consecutive
/// items (each block's start uniform over the n − L + 1 possible), keeps the first n items,
/// and computes `stat` of them. Returns the replicates' statistics.
pub fn block_bootstrap<T>(
    items: &[T],
    block_len: usize,
    iterations: usize,
    seed: u64,
    mut stat: impl FnMut(&[&T]) -> f64,
) -> Vec<f64> {
    let n = items.len();
    if n == 0 {
        return Vec::new();
    }
    let l = block_len.clamp(1, n);
    let starts = (n - l + 1) as u64;
    let mut rng = SplitMix64(seed);
    let mut drawn: Vec<&T> = Vec::with_capacity(n + l);
    (0..iterations)
        .map(|_| {
            drawn.clear();
            while drawn.len() < n {
                let s = (rng.next_u64() % starts) as usize;
                drawn.extend(items[s..s + l].iter());
            }
            drawn.truncate(n);
            stat(&drawn)
        })
        .collect()
}

/// What a comparison found for one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is faster: the change lies wholly beyond the noise band, the good way.
    Faster,
    /// B is slower: the change lies wholly beyond the noise band, the bad way.
    Slower,
    /// The interval reaches into the noise band: no change is called.
    NoSignificantChange,
    /// The design cannot show a change: an exact rank test of so few runs cannot reach
    /// p < [`ALPHA`] whatever the data.
    TooFewRuns,
}

impl Verdict {
    /// The verdict in words, as the report prints it.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoSignificantChange => "no significant change",
            Verdict::TooFewRuns => "too few runs: 4+ per side can show a change",
        }
    }
}

/// The verdict on a relative change (B/A − 1) with its confidence interval `[lo, hi]`: a
/// change counts when the whole interval lies beyond the noise band `±noise` (so it excludes
/// 0 too). `higher_is_better`: throughput (more is faster); latency (more is slower).
pub fn verdict(change: Estimate, noise: f64, higher_is_better: bool) -> Verdict {
    let up = change.lo > noise.max(0.0);
    let down = change.hi < -noise.max(0.0);
    match (up, down, higher_is_better) {
        (true, _, true) | (_, true, false) => Verdict::Faster,
        (true, _, false) | (_, true, true) => Verdict::Slower,
        _ => Verdict::NoSignificantChange,
    }
}

/// The verdict across runs (repeated or interleaved): [`Verdict::TooFewRuns`] when `n1`
/// against `n2` runs cannot reach p < [`ALPHA`]; a change only when the rank test's p, as
/// adjusted for the comparison's many rows (`p_adjusted`, [`benjamini_hochberg`]), is below
/// [`ALPHA`] *and* the interval lies beyond the noise band ([`verdict`]); else no significant
/// change, with the reason.
pub fn verdict_of_runs(
    change: Estimate,
    (p, p_adjusted): (f64, f64),
    n1: usize,
    n2: usize,
    noise: f64,
    higher_is_better: bool,
) -> (Verdict, Option<String>) {
    if min_p(n1, n2) >= ALPHA {
        return (
            Verdict::TooFewRuns,
            Some(format!(
                "{n1} against {n2} runs: the smallest p an exact rank test can give is {:.3}",
                min_p(n1, n2)
            )),
        );
    }
    let by_interval = verdict(change, noise, higher_is_better);
    match (p_adjusted < ALPHA, by_interval) {
        (true, v) if v != Verdict::NoSignificantChange => (v, None),
        (false, _) => (Verdict::NoSignificantChange, Some(not_below(p, p_adjusted))),
        (true, _) => (
            Verdict::NoSignificantChange,
            Some(format!(
                "the interval reaches the ±{:.0}% noise band",
                noise * 100.0
            )),
        ),
    }
}

/// Why a p did not call a change: it, and what the adjustment for many rows made of it.
pub fn not_below(p: f64, p_adjusted: f64) -> String {
    if p_adjusted > p {
        format!("p = {p:.3}, {p_adjusted:.3} adjusted for the many rows, is not below {ALPHA}")
    } else {
        format!("p = {p:.3} is not below {ALPHA}")
    }
}

/// The two-sided p that a relative change lies beyond the noise band `±noise`, from its
/// estimate `log_ratio` = ln(B/A) and that estimate's standard error `se` with `df` degrees of
/// freedom: with the band's nearer edge `e` (ln(1 + noise) above, ln(1 − noise) below),
/// `p = 2 · P(T > (|log_ratio| − |e|) / se)`, capped at 1. Its 95% interval
/// `log_ratio ± t(0.975, df) · se` lies wholly beyond the band exactly when p < 0.05.
pub fn band_p(log_ratio: f64, se: f64, df: f64, noise: f64) -> f64 {
    let edge = if log_ratio >= 0.0 {
        (1.0 + noise).ln()
    } else {
        -(1.0 - noise).ln()
    };
    let beyond = log_ratio.abs() - edge;
    if !beyond.is_finite() || !se.is_finite() {
        return 1.0;
    }
    if se <= 0.0 {
        return if beyond > 0.0 { 0.0 } else { 1.0 };
    }
    (2.0 * t_sf(beyond / se, df)).min(1.0)
}

/// The two-sided z for a 5% level and for 80% power: a minimum detectable effect is
/// `(Z_ALPHA + Z_POWER) × SE`.
pub const Z_ALPHA: f64 = 1.959_964;
/// The z for 80% power: the normal distribution's 80th percentile.
pub const Z_POWER: f64 = 0.841_621;

/// The minimum detectable relative change (5% two-sided, 80% power, normal approximation)
/// of the ratio of two sides' figures, from each side's values: `(z + z_β) ×
/// √(cv_a²/n_a + cv_b²/n_b)`, cv the coefficient of variation. `None` under two values a
/// side.
pub fn mde_of_runs(a: &[f64], b: &[f64]) -> Option<f64> {
    let cv2n = |v: &[f64]| -> Option<f64> {
        if v.len() < 2 {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        if mean <= 0.0 {
            return None;
        }
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(var / (mean * mean) / n)
    };
    Some((Z_ALPHA + Z_POWER) * (cv2n(a)? + cv2n(b)?).sqrt())
}

/// The minimum detectable relative change (5% two-sided, 80% power) of a ratio estimated on
/// the log scale with standard error `se` and `df` degrees of freedom:
/// `exp((t(0.975, df) + t(0.8, df)) × se) − 1`.
pub fn mde_of_log_se(se: f64, df: f64) -> Option<f64> {
    if !se.is_finite() {
        return None;
    }
    Some(((t_quantile(1.0 - ALPHA / 2.0, df) + t_quantile(0.8, df)) * se).exp() - 1.0)
}

#[cfg(test)]
mod tests;
