//! How precise a run's percentiles are: a 95% interval on each printed percentile (p50 to
//! p99.99) of the total and of every phase, written beside the figure in the record
//! (`p99_us` and `p99_ci_us: [low, high]`).
//!
//! Two ways, and the wider is kept, its method named:
//! - **Order statistics**, free of any distribution: the ranks of the sorted values that hold
//!   the quantile with 95% probability come from Binomial(n, p) (scipy's
//!   `quantile_test(...).confidence_interval()`: the low rank `ppf(0.025) − 1`, the high
//!   `isf(0.025)`, 0-based), each mapped to its value in the run's histogram (the highest value
//!   of its bucket, as the percentiles are: within 0.1% of the exact sorted value). A bound
//!   with no rank (too few values beyond the percentile) is null: the run cannot bound it.
//! - **Batch means** over the run's own intervals, because the latencies of one run are not
//!   independent (a stall spans many requests). Of each batch of intervals, the share of its
//!   values at or below the run's percentile; the run's share (all batches' values together) ±
//!   t(0.975, k − 1) times its batch-means standard error (the ratio estimator's, so that a
//!   batch of few requests weighs as little as it holds), on the log-odds scale, gives a band
//!   of quantiles around `p`, read off the run's histogram. Batches are widened (twice as
//!   many intervals each) while the shares' lag-1 correlation is over [`LAG1_MAX`], as long as [`MIN_BATCHES`] remain; the
//!   run must hold [`BEYOND_MIN`] values beyond the percentile per batch of the fewest. The
//!   shares, not each batch's own percentile, which rests on a batch's few slowest values:
//!   5 s runs at 2,000 req/s against nginx (bench/precision.py, side by side) had p99
//!   intervals of a median ±40% that way, ±19% this way, and a 30 s run ±44% that way, ±7%
//!   this way.
//!
//! Computed after the run from the record's histograms (the whole run's and each interval's):
//! nothing on the hot path.

use crate::analysis::significance::t_quantile;
use crate::model::until::Until;
use crate::model::{Phase, StopReason};
use crate::recorder::hist::{self, Ci, CiBatches, Stats};
use crate::recorder::record::{self, Interval, Level, RunRecord, Summary, UntilTarget};
use crate::util::lag::lag1;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The intervals' confidence.
pub const LEVEL: f64 = 0.95;
/// The fewest batches batch means is computed over.
pub const MIN_BATCHES: usize = 5;
/// The lag-1 correlation of the batches' shares above which they are widened.
pub const LAG1_MAX: f64 = 0.2;
/// The fewest values beyond a percentile for it to count as more than rough: for batch means,
/// per batch of the fewest ([`MIN_BATCHES`]) in the whole run.
pub const BEYOND_MIN: f64 = 10.0;

/// The printed percentiles: their names and quantiles.
pub use crate::model::until::PERCENTILES;

/// Fills the intervals of every percentile of `record`'s summaries: the run's, each level's and
/// each repetition's.
/// With `--until`, each summary also says how precise it got and whether that ended it.
pub fn annotate(record: &mut RunRecord) {
    let targets: Vec<Until> = record
        .config
        .until
        .iter()
        .filter_map(|t| Until::parse(t).ok())
        .collect();
    annotate_summary(&mut record.summary, &record.histograms, &record.intervals);
    until(&mut record.summary, &targets, &record.stop_reason);
    for level in record
        .levels
        .iter_mut()
        .chain(record.repetitions.iter_mut())
    {
        annotate_level(level, &targets);
    }
}

fn annotate_level(level: &mut Level, targets: &[Until]) {
    annotate_summary(&mut level.summary, &level.histograms, &level.intervals);
    until(&mut level.summary, targets, &level.stop_reason);
}

/// `--until`'s outcome in `summary`, from its intervals and how the run ended (`stop`): none
/// without targets, or for a whole made of runs that each had their own (a knee search's,
/// `compare --run`'s rounds).
fn until(summary: &mut Summary, targets: &[Until], stop: &StopReason) {
    if targets.is_empty() || matches!(stop, StopReason::KneeSearch | StopReason::Interleaved) {
        summary.until = None;
        return;
    }
    let converged = *stop == StopReason::Precise;
    let targets = targets
        .iter()
        .map(|t| {
            let l = &summary.latency;
            let st = match t.phase {
                Phase::Total => Some(&l.total),
                p => l.phases.get(&p),
            };
            let half = st.and_then(|st| match st.named(t.percentile)? {
                (Some(v), Some([Some(lo), Some(hi)])) if v > 0.0 => {
                    Some((hi - lo) / 2.0 / v * 100.0)
                }
                _ => None,
            });
            UntilTarget {
                target: t.to_string(),
                half_width_pct: half.map(|h| (h * 100.0).round() / 100.0),
                met: half.is_some_and(|h| h <= t.share * 100.0 + 1e-9),
            }
        })
        .collect();
    summary.until = Some(record::Until {
        converged,
        after_s: converged.then_some(summary.duration_s),
        targets,
    });
}

/// The intervals of `summary`'s latency (total, uncorrected, lag, every phase) and
/// `Server-Timing` metrics, from the histograms of the whole (`histograms`, by name) and of each
/// interval.
fn annotate_summary(
    summary: &mut Summary,
    histograms: &BTreeMap<String, String>,
    intervals: &[Interval],
) {
    let l = &mut summary.latency;
    let mut named: Vec<(String, &mut Stats)> = vec![
        (Phase::Total.name().to_string(), &mut l.total),
        (Phase::Uncorrected.name().to_string(), &mut l.uncorrected),
        (Phase::Lag.name().to_string(), &mut l.schedule_lag),
    ];
    for (phase, st) in l.phases.iter_mut() {
        // `events` holds counts per response, not times.
        if *phase != Phase::Events {
            named.push((phase.name().to_string(), st));
        }
    }
    for (metric, st) in summary.server_timing.iter_mut() {
        named.push((format!("server_timing.{metric}"), st));
    }
    for (name, st) in named {
        let Some(whole) = histograms.get(&name).and_then(|t| hist::decode(t).ok()) else {
            continue;
        };
        let parts: Vec<Histogram<u64>> = intervals
            .iter()
            .map(|i| {
                i.histograms
                    .get(&name)
                    .and_then(|t| hist::decode(t).ok())
                    .unwrap_or_else(hist::new_interval_hist)
            })
            .collect();
        fill(st, &whole, &parts);
    }
}

/// Sets `st`'s intervals from the whole run's histogram and its intervals' (`parts`, in order).
pub fn fill(st: &mut Stats, whole: &Histogram<u64>, parts: &[Histogram<u64>]) {
    if whole.is_empty() {
        return;
    }
    let mut widened = Vec::new();
    let mut shape = None;
    for (name, p) in PERCENTILES {
        let (ci, batched) = wider(whole, parts, p);
        if let Some(b) = batched {
            widened.push(name.to_string());
            shape = Some((b.batches, b.intervals_each, b.lag1));
        }
        *slot(st, name) = Some(ci);
    }
    st.ci_batches = shape.map(|(batches, intervals_each, lag1)| CiBatches {
        batches: batches as u64,
        intervals_each: intervals_each as u64,
        lag1: (lag1 * 1000.0).round() / 1000.0,
        percentiles: widened,
    });
}

/// The 95% interval of quantile `p` (µs) as the record gives it: the wider of order statistics
/// on the whole run's histogram (`whole`) and batch means over its intervals' (`parts`, in
/// order), with the batches when theirs is the wider.
pub fn wider(whole: &Histogram<u64>, parts: &[Histogram<u64>], p: f64) -> (Ci, Option<Batched>) {
    let order = order_interval(whole, p);
    match batch_means(whole, parts, p) {
        Some(b) if width(&b.ci) > width(&order) => (b.ci, Some(b)),
        _ => (order, None),
    }
}

/// The half-width of quantile `p`'s interval, a share of the percentile, from the histogram of
/// the run so far (`whole`) and its intervals' (`parts`, in order), as the record will give it
/// (the wider of the two ways); `None` while batch means cannot be computed yet (fewer than
/// [`MIN_BATCHES`] batches or too few values beyond `p`, or the batches' lag-1 correlation
/// still over [`LAG1_MAX`]) or a bound is missing: `--until` stops a run only once its own intervals vouch
/// for it.
pub fn half_share(whole: &Histogram<u64>, parts: &[Histogram<u64>], p: f64) -> Option<f64> {
    if whole.is_empty() {
        return None;
    }
    // Batches that still look dependent (a trend, a drift) vouch for nothing yet.
    let batched = batch_means(whole, parts, p).filter(|b| b.lag1 <= LAG1_MAX)?;
    let order = order_interval(whole, p);
    let ci = if width(&batched.ci) > width(&order) {
        batched.ci
    } else {
        order
    };
    let v = whole.value_at_quantile(p) as f64 / 1000.0;
    match ci {
        [Some(lo), Some(hi)] if v > 0.0 => Some((hi - lo) / 2.0 / v),
        _ => None,
    }
}

/// The interval field of the percentile named `name`.
fn slot<'a>(st: &'a mut Stats, name: &str) -> &'a mut Option<Ci> {
    match name {
        "p50" => &mut st.p50_ci_us,
        "p90" => &mut st.p90_ci_us,
        "p99" => &mut st.p99_ci_us,
        "p99.9" => &mut st.p999_ci_us,
        _ => &mut st.p9999_ci_us,
    }
}

/// An interval's width; unbounded where a bound is null.
fn width(ci: &Ci) -> f64 {
    match ci {
        [Some(lo), Some(hi)] => hi - lo,
        _ => f64::INFINITY,
    }
}

/// The 0-based ranks of the sorted values that bound quantile `p` of `n` values at `level`,
/// scipy's `quantile_test(...).confidence_interval()`: `(ppf(α) − 1, isf(α))` of
/// Binomial(n, p), α = (1 − level) / 2; `None` where the rank falls outside the values.
pub fn order_ranks(n: u64, p: f64, level: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 {
        return (None, None);
    }
    let alpha = (1.0 - level) / 2.0;
    let b = Binomial::new(n, p);
    let low = b.ppf(alpha).checked_sub(1);
    let high = b.isf(alpha);
    (low, (high < n).then_some(high))
}

/// The order-statistics interval of quantile `p` of `h`'s values, in µs.
pub fn order_interval(h: &Histogram<u64>, p: f64) -> Ci {
    let (low, high) = order_ranks(h.len(), p, LEVEL);
    [low.map(|i| at_rank(h, i)), high.map(|i| at_rank(h, i))]
}

/// The `i`-th smallest value of `h` (0-based), µs: the highest value of its bucket, as
/// HdrHistogram gives percentiles.
fn at_rank(h: &Histogram<u64>, i: u64) -> f64 {
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_since_last_iteration();
        if seen > i {
            return h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
        }
    }
    h.highest_equivalent(h.max()) as f64 / 1000.0
}

/// A batch-means interval: its bounds, and the batches it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Batched {
    /// The interval, µs.
    pub ci: Ci,
    /// Batches.
    pub batches: usize,
    /// Intervals in each batch (the last may hold a few more).
    pub intervals_each: usize,
    /// The lag-1 correlation of the batches' shares at or below the percentile.
    pub lag1: f64,
}

/// The batch-means interval of quantile `p` of the run (`whole`) over `parts` (its intervals
/// in order), or `None` with fewer than [`MIN_BATCHES`] non-empty batches or fewer than
/// [`BEYOND_MIN`] values beyond `p` per batch of the fewest.
pub fn batch_means(whole: &Histogram<u64>, parts: &[Histogram<u64>], p: f64) -> Option<Batched> {
    let n = whole.len();
    if (n as f64) * (1.0 - p) < BEYOND_MIN * MIN_BATCHES as f64 {
        return None;
    }
    // The values at or below the run's percentile: those in its bucket and below.
    let q = whole.highest_equivalent(whole.value_at_quantile(p));
    let mut each = 1;
    loop {
        // Each batch: its values and those of them at or below `q`.
        let batches: Vec<(f64, f64)> = batch(parts, each)
            .iter()
            .filter(|b| !b.is_empty())
            .map(|b| (b.len() as f64, b.count_between(0, q) as f64))
            .collect();
        if batches.len() < MIN_BATCHES {
            return None;
        }
        let shares: Vec<f64> = batches.iter().map(|(m, below)| below / m).collect();
        let r1 = lag1(&shares);
        if r1 > LAG1_MAX && batch(parts, each * 2).len() >= MIN_BATCHES {
            each *= 2;
            continue;
        }
        // The ratio estimator of the share and its batch-means variance.
        let k = batches.len() as f64;
        let (all, below): (f64, f64) = batches
            .iter()
            .fold((0.0, 0.0), |(a, b), (m, l)| (a + m, b + l));
        let (share, mean_len) = (below / all, all / k);
        let var = batches
            .iter()
            .zip(&shares)
            .map(|((m, _), f)| (m / mean_len).powi(2) * (f - share).powi(2))
            .sum::<f64>()
            / (k * (k - 1.0));
        // The band p ± h on the log-odds scale (the delta method: a share's standard error
        // over p(1 − p)), so that near 1 it narrows as shares do, rather than running past 1
        // and leaving no high bound (5 s runs, p99: the same coverage and median width).
        let h = t_quantile(0.5 + LEVEL / 2.0, k - 1.0) * var.sqrt() / (p * (1.0 - p));
        let logit = (p / (1.0 - p)).ln();
        let expit = |x: f64| 1.0 / (1.0 + (-x).exp());
        let (p_low, p_high) = (expit(logit - h), expit(logit + h));
        // The band of quantiles, read off the run's histogram at their ranks (0-based); no
        // high bound where the band reaches past the run's last value.
        let rank = |x: f64| ((x * n as f64).ceil() as u64).max(1) - 1;
        let low = at_rank(whole, rank(p_low));
        let high = (rank(p_high) < n - 1).then(|| at_rank(whole, rank(p_high)));
        return Some(Batched {
            ci: [Some(low), high],
            batches: batches.len(),
            intervals_each: each,
            lag1: r1,
        });
    }
}

/// `parts` merged `each` at a time, in order; what is left over goes into the last batch.
fn batch(parts: &[Histogram<u64>], each: usize) -> Vec<Histogram<u64>> {
    let k = parts.len() / each;
    let mut out: Vec<Histogram<u64>> = Vec::with_capacity(k);
    for (i, part) in parts.iter().enumerate() {
        let at = (i / each).min(k.saturating_sub(1));
        if out.len() <= at {
            out.push(hist::new_interval_hist());
        }
        // Cannot fail: interval histograms grow as values arrive.
        let _ = out[at].add(part);
    }
    out
}

/// Binomial(n, p), its mass held around its mode: every term within 1e-30 of the largest is
/// kept (beyond, the tails are below 1e-28 of the whole, far under the 2.5% sought), each
/// relative to the mode's by the ratio of neighbouring terms, and the sum normalizes them (no
/// Γ function needed, for any n).
struct Binomial {
    /// The first value kept.
    start: u64,
    /// P(X = start + i) for each i.
    pmf: Vec<f64>,
}

impl Binomial {
    fn new(n: u64, p: f64) -> Binomial {
        let p = p.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON);
        let odds = p / (1.0 - p);
        let mode = (((n + 1) as f64 * p).floor() as u64).min(n);
        let mut up = Vec::new();
        let mut w = 1.0f64;
        let mut k = mode;
        while k < n {
            w *= (n - k) as f64 / (k + 1) as f64 * odds;
            if w < 1e-30 {
                break;
            }
            up.push(w);
            k += 1;
        }
        let mut down = Vec::new();
        let (mut w, mut k) = (1.0f64, mode);
        while k > 0 {
            w *= k as f64 / (n - k + 1) as f64 / odds;
            if w < 1e-30 {
                break;
            }
            down.push(w);
            k -= 1;
        }
        let start = mode - down.len() as u64;
        let mut pmf: Vec<f64> = down.into_iter().rev().collect();
        pmf.push(1.0);
        pmf.extend(up);
        let sum: f64 = pmf.iter().sum();
        pmf.iter_mut().for_each(|x| *x /= sum);
        Binomial { start, pmf }
    }

    /// The smallest k with P(X ≤ k) ≥ q.
    fn ppf(&self, q: f64) -> u64 {
        let mut cdf = 0.0;
        for (i, m) in self.pmf.iter().enumerate() {
            cdf += m;
            if cdf >= q {
                return self.start + i as u64;
            }
        }
        self.start + self.pmf.len() as u64 - 1
    }

    /// The smallest k with P(X > k) ≤ q.
    fn isf(&self, q: f64) -> u64 {
        // Down from the top, the survival summed as it goes, so that small tails are not lost
        // to rounding: `sf` is P(X > k).
        let mut k = self.start + self.pmf.len() as u64 - 1;
        let mut sf = 0.0;
        for m in self.pmf.iter().rev() {
            let below = sf + m;
            if below > q || k == 0 {
                return k;
            }
            sf = below;
            k -= 1;
        }
        k
    }
}

#[cfg(test)]
mod tests;
