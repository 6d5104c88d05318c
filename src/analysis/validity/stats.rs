//! The tests the validity checks rest on: Anderson-Darling for the exponential (scipy's
//! `anderson(x, 'expon')`), Mann-Kendall with Theil-Sen's slope for a trend, MSER for the end
//! of a warm-up.

use crate::analysis::significance::normal_sf;

/// Stephens' critical values of A² for the exponential with its scale estimated, at 15%, 10%,
/// 5%, 2.5% and 1% (scipy's `_Avals_expon`).
const AVALS_EXPON: [f64; 5] = [0.916, 1.062, 1.321, 1.591, 1.959];

/// An Anderson-Darling test of exponentiality.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Anderson {
    /// The statistic A² (infinite when a value is 0: its CDF's log is −∞).
    pub a2: f64,
    /// The critical value at 5% for this many values.
    pub critical: f64,
    /// The values tested.
    pub n: usize,
}

impl Anderson {
    /// The values are not exponential at the 5% level: A² above the critical value.
    pub fn rejects(&self) -> bool {
        self.a2 > self.critical
    }
}

/// A² of `x` against the exponential whose scale is their mean, and the critical value at
/// 5%, as `scipy.stats.anderson(x, 'expon')` computes them: w = sorted x / mean,
/// A² = −n − Σᵢ (2i − 1)/n · (ln F(wᵢ) + ln(1 − F(wₙ₊₁₋ᵢ))), the critical value
/// round(1.321 / (1 + 0.6/n), 3). `None` for fewer than 2 values or a mean of 0.
pub fn anderson_expon(x: &[f64]) -> Option<Anderson> {
    let n = x.len();
    let mean = x.iter().sum::<f64>() / n as f64;
    if n < 2 || mean <= 0.0 || !mean.is_finite() {
        return None;
    }
    let mut w: Vec<f64> = x.iter().map(|v| v / mean).collect();
    w.sort_by(f64::total_cmp);
    let nf = n as f64;
    let mut sum = 0.0;
    for i in 0..n {
        // ln F(w) = ln(1 − e^−w) (scipy's expon.logcdf: log1p(−exp(−w))); ln(1 − F(w)) = −w.
        let log_cdf = (-(-w[i]).exp()).ln_1p();
        let log_sf = -w[n - 1 - i];
        sum += (2.0 * (i + 1) as f64 - 1.0) / nf * (log_cdf + log_sf);
    }
    let critical = (AVALS_EXPON[2] / (1.0 + 0.6 / nf) * 1000.0).round() / 1000.0;
    Some(Anderson {
        a2: -nf - sum,
        critical,
        n,
    })
}

/// A Mann-Kendall test for a trend, with Theil-Sen's slope for its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    /// S: the pairs that rise less those that fall.
    pub s: f64,
    /// The variance of S under no trend, ties taken out.
    pub var_s: f64,
    /// The two-sided p-value of S / √var (the normal approximation).
    pub p: f64,
    /// Theil-Sen's slope: the median of the pairs' slopes, per step.
    pub slope: f64,
    /// Theil-Sen's line at the first step: the median of xᵢ − slope·i.
    pub start: f64,
}

impl Trend {
    /// The line's change from the first step to the last, relative to its start (0.4: rose
    /// 40%); 0 when the start is not above 0.
    pub fn change(&self, n: usize) -> f64 {
        if self.start <= 0.0 {
            return 0.0;
        }
        self.slope * (n.saturating_sub(1)) as f64 / self.start
    }
}

/// Mann-Kendall on `x` in order (`None` under 3 values): S = Σᵢ<ⱼ sign(xⱼ − xᵢ),
/// var(S) = (n(n−1)(2n+5) − Σ t(t−1)(2t+5)) / 18 over the groups of t tied values, the
/// p-value from z = S/√var (no continuity correction: scipy's `kendalltau(range(n), x,
/// method='asymptotic')` gives the same p), and Theil-Sen's slope.
pub fn mann_kendall(x: &[f64]) -> Option<Trend> {
    let n = x.len();
    if n < 3 {
        return None;
    }
    let mut s = 0.0;
    let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            let d = x[j] - x[i];
            s += if d > 0.0 {
                1.0
            } else if d < 0.0 {
                -1.0
            } else {
                0.0
            };
            slopes.push(d / (j - i) as f64);
        }
    }
    let nf = n as f64;
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    for group in sorted.chunk_by(|a, b| a == b) {
        let t = group.len() as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
    }
    let var_s = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let p = match var_s > 0.0 {
        true => (2.0 * normal_sf((s / var_s.sqrt()).abs())).min(1.0),
        false => 1.0,
    };
    let slope = median(&mut slopes);
    let mut rest: Vec<f64> = x
        .iter()
        .enumerate()
        .map(|(i, v)| v - slope * i as f64)
        .collect();
    Some(Trend {
        s,
        var_s,
        p,
        slope,
        start: median(&mut rest),
    })
}

/// The median of `v` (reordered); 0 when empty.
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    match v.len() % 2 {
        1 => v[m],
        _ => (v[m - 1] + v[m]) / 2.0,
    }
}

/// MSER's truncation point of `y` (White's marginal standard error rule): the `d` in
/// `0..n/2` that minimises Σᵢ≥d (yᵢ − ȳ_d)² / (n − d)², ȳ_d the mean of what is left; the
/// earliest of equal ones. `None` under 4 values.
pub fn mser(y: &[f64]) -> Option<usize> {
    let n = y.len();
    if n < 4 {
        return None;
    }
    let mut best: Option<(f64, usize)> = None;
    for d in 0..n / 2 {
        let rest = &y[d..];
        let k = rest.len() as f64;
        let mean = rest.iter().sum::<f64>() / k;
        let ss: f64 = rest.iter().map(|v| (v - mean).powi(2)).sum();
        let m = ss / (k * k);
        // The earliest of equal ones (within rounding).
        if best.is_none_or(|(b, _)| m < b - 1e-12 * b) {
            best = Some((m, d));
        }
    }
    best.map(|(_, d)| d)
}

/// `y` in batches of `m` (their means), the last partial batch left out: MSER-m's series.
pub fn batch_means(y: &[f64], m: usize) -> Vec<f64> {
    y.chunks_exact(m.max(1))
        .map(|c| c.iter().sum::<f64>() / c.len() as f64)
        .collect()
}
