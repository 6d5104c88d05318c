//! Many rows, one verdict each: the Benjamini-Hochberg step-up adjustment of p-values, so
//! that a comparison of 30 figures does not call one changed in 20 by chance alone.
//!
//! For p-values p₍₁₎ ≤ … ≤ p₍ₘ₎ of m tests, the adjusted value of the i-th smallest is
//! `min over j ≥ i of (m / j) · p₍ⱼ₎`, capped at 1; calling every row whose adjusted value is
//! below α keeps the false discovery rate (the expected share of wrong calls among the calls)
//! at most α when the tests are independent or positively dependent (Benjamini & Hochberg
//! 1995; Benjamini & Yekutieli 2001), which the rows of one comparison are: a slower machine
//! moves the total, its phases and its percentiles the same way. When nothing changed, every
//! call is wrong, and the chance of any call at all is then at most α too.

/// The Benjamini-Hochberg adjusted p-values of `p`, in the same order. A NaN counts as 1.
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let clean = |x: f64| if x.is_nan() { 1.0 } else { x.clamp(0.0, 1.0) };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| clean(p[i]).total_cmp(&clean(p[j])));
    let mut out = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        running = running.min(clean(p[i]) * m as f64 / (rank + 1) as f64);
        out[i] = running.min(1.0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjusted_as_r_p_adjust_bh() {
        // From the definition, computed apart (Python, min over j ≥ i of m/j · p₍ⱼ₎):
        // 0.025, 0.05, 0.05, 0.025, 0.5 (R's p.adjust(p, "BH") is the same definition)
        let got = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005, 0.5]);
        for (g, w) in got.iter().zip([0.025, 0.05, 0.05, 0.025, 0.5]) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
        // One small p among 32: 0.01 × 32 = 0.32, no longer below 0.05.
        let mut p = vec![0.6; 32];
        p[7] = 0.01;
        assert!((benjamini_hochberg(&p)[7] - 0.32).abs() < 1e-12);
        // Every row at 0.01: each stays 0.01 (a change that moves everything is still seen).
        assert!(benjamini_hochberg(&[0.01; 32])
            .iter()
            .all(|q| (q - 0.01).abs() < 1e-12));
        assert_eq!(benjamini_hochberg(&[f64::NAN, 0.5]), vec![1.0, 1.0]);
        assert!(benjamini_hochberg(&[]).is_empty());
    }
}
