//! Summary statistics as an analyst wants them: R's `summary()` (Min, 1st Qu., Median, Mean,
//! 3rd Qu., Max), the quantiles 50, 90, 99, 99.9, 99.99, and a log2 histogram drawn like
//! bpftrace's. From raw values (`reqlife stats`) the quantiles are exact and equal R's default
//! `quantile()` (type 7):
//!
//! for sorted values x₀ … xₙ₋₁ and probability p, h = (n − 1)·p, and
//! Q(p) = x⌊h⌋ + (h − ⌊h⌋)·(x⌊h⌋+1 − x⌊h⌋).
//!
//! From an HdrHistogram (a run's phases) they are HdrHistogram's, within its 0.1% precision.

use hdrhistogram::Histogram;
use std::fmt::Write as _;

/// The quantiles listed after the summary.
pub const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// R's `summary()` plus the quantiles of [`QUANTILES`].
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min: f64,
    pub q1: f64,
    pub median: f64,
    pub mean: f64,
    pub q3: f64,
    pub max: f64,
    /// (p, value) for each of [`QUANTILES`].
    pub quantiles: Vec<(f64, f64)>,
}

/// R's type-7 quantile of sorted values (not empty).
pub fn quantile_type7(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

impl Summary {
    /// Exact statistics of raw values; `None` when there are none.
    pub fn of_values(values: &mut [f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let q = |p| quantile_type7(values, p);
        Some(Summary {
            count: values.len() as u64,
            min: values[0],
            q1: q(0.25),
            median: q(0.5),
            // Summed in order of size: less rounding error than in input order.
            mean: values.iter().sum::<f64>() / values.len() as f64,
            q3: q(0.75),
            max: values[values.len() - 1],
            quantiles: QUANTILES.iter().map(|&p| (p, q(p))).collect(),
        })
    }

    /// Statistics of a histogram, in its unit scaled by `scale` (e.g. 1e-3: ns → µs).
    pub fn of_hist(h: &Histogram<u64>, scale: f64) -> Option<Summary> {
        if h.is_empty() {
            return None;
        }
        let q = |p| h.value_at_quantile(p) as f64 * scale;
        Some(Summary {
            count: h.len(),
            min: h.min() as f64 * scale,
            q1: q(0.25),
            median: q(0.5),
            mean: h.mean() * scale,
            q3: q(0.75),
            max: h.max() as f64 * scale,
            quantiles: QUANTILES.iter().map(|&p| (p, q(p))).collect(),
        })
    }

    /// Renders like R: the summary row, then the quantiles.
    pub fn render(&self, out: &mut String, unit: &str) {
        let _ = writeln!(
            out,
            "  {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max."
        );
        let _ = writeln!(
            out,
            "  {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}   ({} values{unit})",
            num(self.min),
            num(self.q1),
            num(self.median),
            num(self.mean),
            num(self.q3),
            num(self.max),
            self.count
        );
        let heads: Vec<String> = self
            .quantiles
            .iter()
            .map(|(p, _)| format!("{:>12}", format!("{}%", p * 100.0)))
            .collect();
        let vals: Vec<String> = self
            .quantiles
            .iter()
            .map(|(_, v)| format!("{:>12}", num(*v)))
            .collect();
        let _ = writeln!(out, "  {}", heads.join(" "));
        let _ = writeln!(out, "  {}", vals.join(" "));
    }
}

/// A number with up to 7 significant digits, without trailing zeros.
pub fn num(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let digits = (7 - 1 - v.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A log2 histogram: counts per power-of-two bucket [2ᵏ, 2ᵏ⁺¹), with one bucket for values
/// ≤ 0.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Log2Hist {
    /// Values ≤ 0.
    pub nonpositive: u64,
    /// (k, count) in increasing k, for [2ᵏ, 2ᵏ⁺¹).
    pub buckets: Vec<(i32, u64)>,
}

impl Log2Hist {
    fn add(&mut self, v: f64, n: u64) {
        if n == 0 {
            return;
        }
        if v <= 0.0 || !v.is_finite() {
            self.nonpositive += n;
            return;
        }
        let k = v.log2().floor() as i32;
        match self.buckets.binary_search_by_key(&k, |(b, _)| *b) {
            Ok(i) => self.buckets[i].1 += n,
            Err(i) => self.buckets.insert(i, (k, n)),
        }
    }

    /// The histogram of raw values.
    pub fn of_values(values: &[f64]) -> Self {
        let mut h = Log2Hist::default();
        for &v in values {
            h.add(v, 1);
        }
        h
    }

    /// The histogram of an HdrHistogram's recorded values.
    pub fn of_hist(h: &Histogram<u64>) -> Self {
        let mut out = Log2Hist::default();
        for v in h.iter_recorded() {
            out.add(v.value_iterated_to() as f64, v.count_at_value());
        }
        out
    }

    /// Draws it as bpftrace does: `[32K, 64K)   792482 |@@@@@@@@@@   |`, bars scaled to
    /// the largest bucket, every bucket between the first and the last shown.
    pub fn render(&self, out: &mut String) {
        const WIDTH: u64 = 52;
        let max = self
            .buckets
            .iter()
            .map(|(_, n)| *n)
            .chain([self.nonpositive])
            .max()
            .unwrap_or(0)
            .max(1);
        let bar = |n: u64| {
            let at = (n * WIDTH).div_ceil(max) as usize;
            format!("|{}{}|", "@".repeat(at), " ".repeat(WIDTH as usize - at))
        };
        if self.nonpositive > 0 {
            let _ = writeln!(
                out,
                "  {:<20} {:>10} {}",
                "(..., 0]",
                self.nonpositive,
                bar(self.nonpositive)
            );
        }
        let (Some(first), Some(last)) = (self.buckets.first(), self.buckets.last()) else {
            return;
        };
        let mut i = 0;
        for k in first.0..=last.0 {
            let n = if self.buckets.get(i).is_some_and(|(b, _)| *b == k) {
                i += 1;
                self.buckets[i - 1].1
            } else {
                0
            };
            let range = format!("[{}, {})", bound(k), bound(k + 1));
            let _ = writeln!(out, "  {range:<20} {n:>10} {}", bar(n));
        }
    }
}

/// 2ᵏ as bpftrace writes bounds: 1, 2, 4 … 512, 1K, 2K … 1M … (powers of 1024), and
/// fractions for negative k.
fn bound(k: i32) -> String {
    if k < 0 {
        return num(2f64.powi(k));
    }
    let v = 1u64 << k.min(62);
    match k {
        0..=9 => v.to_string(),
        10..=19 => format!("{}K", v >> 10),
        20..=29 => format!("{}M", v >> 20),
        30..=39 => format!("{}G", v >> 30),
        40..=49 => format!("{}T", v >> 40),
        _ => format!("{}P", v >> 50),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn type7_against_independent_values() {
        // (values, min, q1, median, mean, q3, max, [p50, p90, p99, p99.9, p99.99]) computed
        // with numpy.percentile (its default, "linear", is R's type 7).
        let rows: Vec<(Vec<f64>, [f64; 6], [f64; 5])> = vec![
            (
                vec![2.0, 4.0, 4.0, 5.0, 7.0, 9.0, 10.0, 12.0, 15.0, 100.0],
                [2.0, 4.25, 8.0, 16.8, 11.5, 100.0],
                [8.0, 23.499_999_999_999_97, 92.35, 99.235, 99.9235],
            ),
            (
                vec![0.5, 1.25, 3.0, 3.0, 8.75, 0.01, 42.0],
                [0.01, 0.875, 3.0, 8.358_571_428_571_429, 5.875, 42.0],
                [3.0, 22.05, 40.005, 41.8005, 41.98005],
            ),
            (vec![5.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0], [5.0; 5]),
        ];
        for (mut values, s, q) in rows {
            let got = Summary::of_values(&mut values).unwrap();
            let have = [got.min, got.q1, got.median, got.mean, got.q3, got.max];
            for (a, b) in have.iter().zip(s) {
                assert!(close(*a, b), "{have:?} vs {s:?}");
            }
            for ((_, a), b) in got.quantiles.iter().zip(q) {
                assert!(close(*a, b), "{:?} vs {q:?}", got.quantiles);
            }
        }
        assert_eq!(Summary::of_values(&mut []), None);
    }

    #[test]
    fn log2_buckets_like_bpftrace() {
        let h = Log2Hist::of_values(&[0.0, 1.0, 1.5, 2.0, 3.0, 1024.0, 40_000.0, 0.25]);
        assert_eq!(h.nonpositive, 1);
        assert_eq!(h.buckets, vec![(-2, 1), (0, 2), (1, 2), (10, 1), (15, 1)]);
        let mut out = String::new();
        h.render(&mut out);
        assert!(out.contains("[1, 2)"), "{out}");
        assert!(out.contains("[1K, 2K)"), "{out}");
        assert!(out.contains("[32K, 64K)"), "{out}");
        assert!(out.contains("[0.25, 0.5)"), "{out}");
        // every bucket between the first and the last is drawn, empty ones too
        let empty = out.lines().find(|l| l.starts_with("  [512, 1K)")).unwrap();
        assert_eq!(empty.split_whitespace().nth(2), Some("0"), "{out}");
        let full = out.lines().find(|l| l.starts_with("  [1, 2)")).unwrap();
        assert!(full.ends_with(&format!("|{}|", "@".repeat(52))), "{full}");
    }

    #[test]
    fn numbers_print_short() {
        for (v, s) in [
            (4.25, "4.25"),
            (100.0, "100"),
            (0.000123, "0.000123"),
            (16.8, "16.8"),
        ] {
            assert_eq!(num(v), s);
        }
    }
}
