//! Quantiles of data with ties: Parzen's mid-quantile (Ma, Genton & Parzen 2011).
//!
//! Latencies are recorded on a grid (a `Server-Timing` duration in tenths of a microsecond,
//! a histogram's bucket): the 99th percentile of values that are all 600 ns or 700 ns jumps
//! from one to the other when 1.0% or 1.1% of them are 700 ns, a 17% "change" from a 0.1%
//! shift of the distribution, and a bootstrap of such a quantile has zero width. The
//! mid-quantile interpolates instead: each distinct value `v` with `c` of the `n` values
//! stands at the middle of its step of the distribution function, `F_mid(v) = (values below
//! v + c/2) / n`, and the quantile at `q` is read off the straight lines between those
//! points (the smallest value below the first, the largest above the last). It moves
//! smoothly with the shares of the values, and equals the usual quantile where values do not
//! repeat.

/// The mid-quantile at `q` (0..=1) of values given as `(value, count)` in increasing order of
/// value (counts of 0 are skipped); NaN when there is no value.
pub fn mid_quantile(points: &[(f64, u64)], q: f64) -> f64 {
    let total: u64 = points.iter().map(|p| p.1).sum();
    if total == 0 {
        return f64::NAN;
    }
    let target = q.clamp(0.0, 1.0) * total as f64;
    let mut below = 0u64;
    let mut prev: Option<(f64, f64)> = None;
    for &(v, c) in points.iter().filter(|p| p.1 > 0) {
        let mid = below as f64 + c as f64 / 2.0;
        if mid >= target {
            return match prev {
                None => v,
                Some((pv, pm)) => pv + (v - pv) * (target - pm) / (mid - pm),
            };
        }
        prev = Some((v, mid));
        below += c;
    }
    prev.map_or(f64::NAN, |p| p.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mid_quantiles_move_with_the_shares_of_tied_values() {
        // (values with counts, q, mid-quantile): worked by hand from F_mid.
        type Points = &'static [(f64, u64)];
        let rows: [(Points, f64, f64); 6] = [
            // 600 ns for 98.9%, 700 ns for 1.1%: F_mid(600) = 0.4945, F_mid(700) = 0.9945;
            // q = 0.99 lies 0.4955/0.5 of the way: 699.1.
            (&[(600.0, 989), (700.0, 11)], 0.99, 699.1),
            // 0.9% at 700: F_mid(700) = 0.9955, F_mid(600) = 0.4955: 698.9, not 600.
            (&[(600.0, 991), (700.0, 9)], 0.99, 698.9),
            // One value: it, whatever q.
            (&[(5.0, 3)], 0.5, 5.0),
            // 1, 2, 3, 4 once each: F_mid = 1/8, 3/8, 5/8, 7/8; the median halfway 2 to 3.
            (&[(1.0, 1), (2.0, 1), (3.0, 1), (4.0, 1)], 0.5, 2.5),
            // Below the first midpoint and above the last: the extremes.
            (&[(1.0, 1), (2.0, 1)], 0.1, 1.0),
            (&[(1.0, 1), (2.0, 1), (9.0, 0)], 0.9, 2.0),
        ];
        for (points, q, want) in rows {
            let got = mid_quantile(points, q);
            assert!(
                (got - want).abs() < 1e-9,
                "{points:?} at {q}: {got}, not {want}"
            );
        }
        assert!(mid_quantile(&[], 0.5).is_nan());
    }
}
