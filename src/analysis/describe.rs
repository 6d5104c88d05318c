//! Descriptive statistics as an analyst wants them: R's `summary()` (Min, 1st Qu., Median, Mean,
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
pub struct Description {
    /// The number of values.
    pub count: u64,
    /// The smallest value.
    pub min: f64,
    /// The first quartile.
    pub q1: f64,
    /// The median.
    pub median: f64,
    /// The mean.
    pub mean: f64,
    /// The third quartile.
    pub q3: f64,
    /// The largest value.
    pub max: f64,
    /// (p, value) for each of [`QUANTILES`].
    pub quantiles: Vec<(f64, f64)>,
}

/// R's type-7 quantile of sorted values (not empty), computed as R's `quantile.default`
/// does (`index = 1 + (n − 1)·p`, and `(1 − h)·x[lo] + h·x[hi]` only where `h > 0` and the two
/// differ, so that infinite values give R's results).
pub fn quantile_type7(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let index = 1.0 + (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = index.floor();
    let hi = index.ceil();
    let (a, b) = (sorted[lo as usize - 1], sorted[(hi as usize).min(n) - 1]);
    let h = index - lo;
    if h > 0.0 && b != a {
        (1.0 - h) * a + h * b
    } else {
        a
    }
}

/// The mean as R's `mean()` computes it: the sum over n, then corrected by the mean of the
/// residuals (a second pass), when finite.
pub fn mean(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let m = values.iter().sum::<f64>() / n;
    if !m.is_finite() {
        return m;
    }
    m + values.iter().map(|x| x - m).sum::<f64>() / n
}

/// The standard deviation with the n − 1 denominator, as R's `sd()`; `None` (R's `NA`) for
/// fewer than two values.
pub fn sd(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
    Some((ss / (values.len() - 1) as f64).sqrt())
}

impl Description {
    /// Exact statistics of raw values; `None` when there are none.
    pub fn of_values(values: &mut [f64]) -> Option<Description> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let q = |p| quantile_type7(values, p);
        Some(Description {
            count: values.len() as u64,
            min: values[0],
            q1: q(0.25),
            median: q(0.5),
            // Summed in order of size: less rounding error than in input order.
            mean: mean(values),
            q3: q(0.75),
            max: values[values.len() - 1],
            quantiles: QUANTILES.iter().map(|&p| (p, q(p))).collect(),
        })
    }

    /// Statistics of a histogram, in its unit scaled by `scale` (e.g. 1e-3: ns → µs).
    pub fn of_hist(h: &Histogram<u64>, scale: f64) -> Option<Description> {
        if h.is_empty() {
            return None;
        }
        let q = |p| h.value_at_quantile(p) as f64 * scale;
        Some(Description {
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
            "  {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}   ({}{unit})",
            num(self.min),
            num(self.q1),
            num(self.median),
            num(self.mean),
            num(self.q3),
            num(self.max),
            crate::util::units::counted(self.count, "value")
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

/// A number as R prints it (`print(x)`, `format(x, digits = 7)`): at most 7 significant
/// digits, trailing zeros dropped, and in fixed notation unless scientific is narrower
/// (`1.234567e-09`, `3.3e-15`, `1e+05`, `0.000123`); `Inf`, `-Inf`, `NaN` as R writes them.
pub fn num(v: f64) -> String {
    r_format(v, 7)
}

/// [`num`] with `digits` significant digits (1..=15): R's `formatReal` for one value.
pub fn r_format(v: f64, digits: usize) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let digits = digits.clamp(1, 15);
    // The value rounded to `digits` significant digits: mantissa digits and exponent.
    let sci = format!("{:.*e}", digits - 1, v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let kp: i32 = exp.parse().unwrap_or(0);
    let nsig = mantissa.replace('.', "").trim_end_matches('0').len().max(1) as i32;
    let neg = i32::from(v < 0.0);
    // Fixed: the digits left of the point, and the nsig significant ones in all.
    let rgt = (nsig - kp - 1).max(0);
    let fixed_width = neg + kp.max(0) + 1 + if rgt > 0 { rgt + 1 } else { 0 };
    // Scientific: d[.ddd]e+XX (three exponent digits past 99).
    let sci_width = neg + if nsig > 1 { nsig + 1 } else { 1 } + if kp.abs() >= 100 { 5 } else { 4 };
    if fixed_width <= sci_width {
        format!("{v:.*}", rgt as usize)
    } else {
        let m = format!("{:.*e}", (nsig - 1) as usize, v);
        let (m, _) = m.split_once('e').unwrap_or((&m, ""));
        format!("{m}e{}{:02}", if kp < 0 { '-' } else { '+' }, kp.abs())
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
    /// Values that are +∞ (raw values only: `reqlife stats` reads `Inf` as R's `scan()` does).
    pub infinite: u64,
}

impl Log2Hist {
    fn add(&mut self, v: f64, n: u64) {
        if n == 0 {
            return;
        }
        if v == f64::INFINITY {
            self.infinite += n;
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
            .chain([self.nonpositive, self.infinite])
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
                "  {:<22} {:>10} {}",
                "(..., 0]",
                self.nonpositive,
                bar(self.nonpositive)
            );
        }
        if let (Some(first), Some(last)) = (self.buckets.first(), self.buckets.last()) {
            self.render_buckets(out, first.0, last.0, &bar);
        }
        if self.infinite > 0 {
            let _ = writeln!(
                out,
                "  {:<22} {:>10} {}",
                "Inf",
                self.infinite,
                bar(self.infinite)
            );
        }
    }

    fn render_buckets(&self, out: &mut String, first: i32, last: i32, bar: &dyn Fn(u64) -> String) {
        let mut i = 0;
        for k in first..=last {
            let n = if self.buckets.get(i).is_some_and(|(b, _)| *b == k) {
                i += 1;
                self.buckets[i - 1].1
            } else {
                0
            };
            let range = format!("[{}, {})", bound(k), bound(k + 1));
            let _ = writeln!(out, "  {range:<22} {n:>10} {}", bar(n));
        }
    }
}

/// 2ᵏ as bpftrace writes bounds: 1, 2, 4 … 512, 1K, 2K … 1M … (powers of 1024), and
/// fractions for negative k.
fn bound(k: i32) -> String {
    if k < 0 {
        // 0.5, 0.25 … then 4 significant digits as R writes them (9.537e-07), so that the
        // labels stay short.
        return r_format(2f64.powi(k), 4);
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
    fn one_value_is_one_value() {
        // `stats` of one number said "(1 values)" (issue 46).
        for (mut values, words) in [(vec![5.0], "(1 value)"), (vec![1.0, 2.0], "(2 values)")] {
            let mut text = String::new();
            Description::of_values(&mut values)
                .unwrap()
                .render(&mut text, "");
            assert!(text.contains(words), "{text}");
        }
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
            let got = Description::of_values(&mut values).unwrap();
            let have = [got.min, got.q1, got.median, got.mean, got.q3, got.max];
            for (a, b) in have.iter().zip(s) {
                assert!(close(*a, b), "{have:?} vs {s:?}");
            }
            for ((_, a), b) in got.quantiles.iter().zip(q) {
                assert!(close(*a, b), "{:?} vs {q:?}", got.quantiles);
            }
        }
        assert_eq!(Description::of_values(&mut []), None);
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
    fn numbers_print_as_r_prints_them() {
        // (value, R 4.2.2's format(value, digits = 7))
        for (v, s) in [
            (4.25, "4.25"),
            (100.0, "100"),
            (0.000123, "0.000123"),
            (16.8, "16.8"),
            (1.234567e-9, "1.234567e-09"),
            (3.3e-15, "3.3e-15"),
            (1e5, "1e+05"),
            (123456.0, "123456"),
            (-0.5, "-0.5"),
            (1e-4, "1e-04"),
            (1e100, "1e+100"),
            (0.1 + 0.2, "0.3"),
            (1234567.8, "1234568"),
            (-1.5e-300, "-1.5e-300"),
            (99999999.0, "1e+08"),
            (f64::INFINITY, "Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(num(v), s, "{v:e}");
        }
    }

    #[test]
    fn quantiles_with_infinities_as_r() {
        // R: quantile(c(-Inf, 1, 2, 3, 4, Inf)) is -Inf 1.25 2.5 3.75 Inf; mean NaN
        let mut v = vec![1.0, 2.0, f64::INFINITY, 3.0, f64::NEG_INFINITY, 4.0];
        let s = Description::of_values(&mut v).unwrap();
        assert_eq!(
            [s.min, s.q1, s.median, s.q3, s.max],
            [f64::NEG_INFINITY, 1.25, 2.5, 3.75, f64::INFINITY]
        );
        assert!(s.mean.is_nan());
        // sd: R's sd(c(2, 4, 4, 4, 5, 5, 7, 9)) = 2.13808993529939
        assert!(
            (sd(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap() - 2.138_089_935_299_39).abs()
                < 1e-13
        );
        assert_eq!(sd(&[1.0]), None);
    }
}
