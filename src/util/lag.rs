//! The lag-1 autocorrelation of a series: how much each value follows the one before it.
//! Batch means widen their batches while it is high (the percentiles' intervals in
//! `analysis::precision`, the probes' cost in `recorder::join::halves`).

/// The lag-1 autocorrelation of `q` (0 when it does not vary).
pub fn lag1(q: &[f64]) -> f64 {
    let k = q.len() as f64;
    let mean = q.iter().sum::<f64>() / k;
    let den: f64 = q.iter().map(|x| (x - mean).powi(2)).sum();
    if den == 0.0 {
        return 0.0;
    }
    let num: f64 = q.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    num / den
}
