//! The single-run method of `compare`: both runs' interval series resampled by blocks
//! ([`stats::block_len`]'s scheme), each replicate's figure computed from the merged counts
//! of its intervals, so that the spread respects the autocorrelation of latencies in time.
//!
//! Per interval, each histogram is kept as counts in log buckets 1% wide; each bucket stands
//! for the mean of the values both runs recorded in it (a `Server-Timing` duration rounded to
//! 100 ns stays 600 ns, not the bucket's middle). A quantile is the mid-quantile of those
//! counts ([`stats::mid_quantile`]): tied and rounded values move it smoothly instead of in
//! jumps of a whole rounding step. The A and B figures are the same statistic of every
//! interval at once, so the change is B/A − 1 of the figures shown.
//!
//! The change is estimated on the log scale: `d = ln(B/A)`, its standard error `se` the
//! standard deviation of `ln(B*/A*)` over the replicates. With few intervals, few blocks are
//! independent, so the interval and the p use Student's t with `(n_A/L_A − 1) + (n_B/L_B − 1)`
//! degrees of freedom (n intervals in blocks of L a side), as the batch-means method does:
//! `d ± t(0.975, df) · se`, which always holds its estimate. One run cannot see another's
//! machine, so `se` also takes in each run's own drift ([`drift`]): what moved between its
//! quarters beyond sampling, and at least what its median total latency moved (the machine's
//! load): a rerun on a machine that moves may land as far away.

use super::{Figure, Hist, ITERATIONS};
use crate::analysis::significance as stats;
use crate::recorder::hist;
use crate::recorder::record::Interval;
use crate::util::rng::SplitMix64;

/// Relative width of a log bucket.
const BUCKET: f64 = 1.01;

/// One interval in resampling form: its requests, length, and per histogram key its counts
/// in log buckets.
pub(super) struct Slice {
    requests: u64,
    duration_s: f64,
    buckets: Vec<Vec<(u32, u64)>>,
}

pub(super) fn bucket_of(ns: u64) -> u32 {
    ((ns.max(1) as f64).ln() / BUCKET.ln()) as u32
}

/// The value each bucket stands for, per key: the mean of the values recorded in it, in ns
/// (both runs' together, so that a bucket means the same in A and in B). Once both runs are
/// read, [`Values::compact`] numbers each key's occupied buckets in order, and the slices
/// count by those numbers.
#[derive(Default)]
pub(super) struct Values {
    /// Per key, per bucket: the sum of the values and their number.
    sums: Vec<Vec<(f64, u64)>>,
    /// Per key, per occupied bucket in order: its value.
    of: Vec<Vec<f64>>,
}

impl Values {
    fn add(&mut self, key: usize, bucket: u32, ns: f64, n: u64) {
        if self.sums.len() <= key {
            self.sums.resize(key + 1, Vec::new());
        }
        let v = &mut self.sums[key];
        if v.len() <= bucket as usize {
            v.resize(bucket as usize + 1, (0.0, 0));
        }
        v[bucket as usize].0 += ns * n as f64;
        v[bucket as usize].1 += n;
    }

    /// Numbers each key's occupied buckets and renumbers the slices of both runs by them.
    pub(super) fn compact(&mut self, runs: [&mut [Slice]; 2]) {
        let index: Vec<Vec<u32>> = self
            .sums
            .iter()
            .map(|sums| {
                let mut next = 0;
                sums.iter()
                    .map(|&(_, n)| {
                        next += u32::from(n > 0);
                        next.wrapping_sub(1)
                    })
                    .collect()
            })
            .collect();
        self.of = self
            .sums
            .iter()
            .map(|sums| {
                let kept = sums.iter().filter(|s| s.1 > 0);
                kept.map(|&(sum, n)| sum / n as f64).collect()
            })
            .collect();
        for run in runs {
            for slice in run.iter_mut() {
                for (k, counts) in slice.buckets.iter_mut().enumerate() {
                    for c in counts.iter_mut() {
                        c.0 = index[k][c.0 as usize];
                    }
                }
            }
        }
    }
}

/// The intervals as slices, the values of their buckets added to `values`.
pub(super) fn slices(intervals: &[Interval], keys: &[Hist], values: &mut Values) -> Vec<Slice> {
    // The keys' names in the record, made once rather than per interval.
    let names: Vec<String> = keys.iter().map(Hist::record_name).collect();
    intervals
        .iter()
        .map(|i| Slice {
            requests: i.requests,
            duration_s: i.duration_s,
            buckets: names
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    let Some(h) = i.histograms.get(name).and_then(|t| hist::decode(t).ok()) else {
                        return Vec::new();
                    };
                    let mut out: Vec<(u32, u64)> = Vec::new();
                    for v in h.iter_recorded() {
                        let ns = v.value_iterated_to();
                        let b = bucket_of(ns);
                        values.add(k, b, ns as f64, v.count_at_value());
                        match out.last_mut() {
                            Some((last, n)) if *last == b => *n += v.count_at_value(),
                            _ => out.push((b, v.count_at_value())),
                        }
                    }
                    out
                })
                .collect(),
        })
        .collect()
}

/// The figures of the slices `drawn` taken together, in the order of `figs` (latency in µs);
/// `dense`, `points`: buffers.
fn replicate(
    drawn: &[&Slice],
    figs: &[Figure],
    keys: &[Hist],
    values: &Values,
    (dense, points): &mut (Vec<u64>, Vec<(f64, u64)>),
) -> Vec<f64> {
    let requests: u64 = drawn.iter().map(|s| s.requests).sum();
    let secs: f64 = drawn.iter().map(|s| s.duration_s).sum();
    let mut out: Vec<f64> = figs
        .iter()
        .map(|_| {
            if secs > 0.0 {
                requests as f64 / secs
            } else {
                0.0
            }
        })
        .collect();
    for (k, key) in keys.iter().enumerate() {
        let of = values.of.get(k).map_or(&[][..], |v| &v[..]);
        dense.clear();
        dense.resize(of.len(), 0);
        for s in drawn {
            for &(i, n) in &s.buckets[k] {
                dense[i as usize] += n;
            }
        }
        points.clear();
        let counted = dense.iter().zip(of).filter(|(n, _)| **n > 0);
        points.extend(counted.map(|(n, v)| (*v, *n)));
        for (i, f) in figs.iter().enumerate() {
            if f.key.as_ref() == Some(key) {
                out[i] = stats::mid_quantile(points, f.q) / 1000.0;
            }
        }
    }
    out
}

/// What resampling found for one figure: A's and B's figure (all intervals), and the standard
/// error of ln(B/A) with its degrees of freedom.
#[derive(Debug, Clone, Copy)]
pub(super) struct Spread {
    pub a: f64,
    pub b: f64,
    pub se: f64,
    pub df: f64,
}

/// The figures of both runs and the block bootstrap of ln(B/A): per figure, its [`Spread`]
/// (replicates whose ratio is not finite are left out; NaN `se` when fewer than two are left).
pub(super) fn spreads(
    sa: &[Slice],
    sb: &[Slice],
    figs: &[Figure],
    keys: &[Hist],
    values: &Values,
    seed: u64,
) -> Vec<Spread> {
    let mut buffers = (Vec::new(), Vec::new());
    let all = |s: &[Slice]| -> Vec<f64> {
        let every: Vec<&Slice> = s.iter().collect();
        replicate(&every, figs, keys, values, &mut (Vec::new(), Vec::new()))
    };
    let (fa, fb) = (all(sa), all(sb));
    let (la, lb) = (stats::block_len(sa.len()), stats::block_len(sb.len()));
    let df = (sa.len() as f64 / la as f64 - 1.0 + sb.len() as f64 / lb as f64 - 1.0).max(1.0);
    let mut rng = SplitMix64(seed);
    let mut logs: Vec<Vec<f64>> = vec![Vec::with_capacity(ITERATIONS); figs.len()];
    let mut side_a: Vec<Vec<f64>> = vec![Vec::with_capacity(ITERATIONS); figs.len()];
    let mut side_b: Vec<Vec<f64>> = vec![Vec::with_capacity(ITERATIONS); figs.len()];
    for _ in 0..ITERATIONS {
        let da: Vec<&Slice> = draw_blocks(sa.len(), la, &mut rng)
            .into_iter()
            .map(|i| &sa[i])
            .collect();
        let db: Vec<&Slice> = draw_blocks(sb.len(), lb, &mut rng)
            .into_iter()
            .map(|i| &sb[i])
            .collect();
        let ra = replicate(&da, figs, keys, values, &mut buffers);
        let rb = replicate(&db, figs, keys, values, &mut buffers);
        for (k, (x, y)) in ra.iter().zip(&rb).enumerate() {
            let r = (y / x).ln();
            if r.is_finite() {
                logs[k].push(r);
                side_a[k].push(x.ln());
                side_b[k].push(y.ln());
            }
        }
    }
    let da = drift(sa, figs, keys, values, &side_a);
    let db = drift(sb, figs, keys, values, &side_b);
    logs.iter()
        .enumerate()
        .map(|(k, l)| Spread {
            a: fa[k],
            b: fb[k],
            se: (sd(l).powi(2) + da[k] + db[k]).sqrt(),
            df,
        })
        .collect()
}

/// Batches a run is cut into to see its drift.
const BATCHES: usize = 4;

/// Per figure, the variance of ln(figure) that a run's drift adds beyond sampling: the
/// variance between its [`BATCHES`] batches of consecutive intervals, less what sampling
/// alone gives a batch (BATCHES times the run's own, `reps` its bootstrap replicates;
/// DerSimonian and Laird's between-study variance, the batches as the studies), and never
/// below the machine's: the variance between the batches of the run's median total latency
/// (a shared machine's load moves every figure at once; a rerun may land as far away).
fn drift(
    s: &[Slice],
    figs: &[Figure],
    keys: &[Hist],
    values: &Values,
    reps: &[Vec<f64>],
) -> Vec<f64> {
    let per = s.len() / BATCHES;
    if per == 0 {
        return vec![0.0; figs.len()];
    }
    let batches: Vec<Vec<f64>> = (0..BATCHES)
        .map(|b| {
            let end = if b + 1 == BATCHES {
                s.len()
            } else {
                (b + 1) * per
            };
            let drawn: Vec<&Slice> = s[b * per..end].iter().collect();
            replicate(&drawn, figs, keys, values, &mut (Vec::new(), Vec::new()))
        })
        .collect();
    let between = |k: usize| {
        let logs: Vec<f64> = batches
            .iter()
            .map(|f| f[k].ln())
            .filter(|v| v.is_finite())
            .collect();
        sd(&logs).powi(2)
    };
    // The machine's own drift: how far the run's median latency moved between its quarters.
    let machine = figs
        .iter()
        .position(|f| f.key == Some(Hist::Total) && f.q == 0.5)
        .map(between)
        .filter(|v| v.is_finite())
        .unwrap_or(0.0);
    (0..figs.len())
        .map(|k| {
            let excess = between(k) - BATCHES as f64 * sd(&reps[k]).powi(2);
            if excess.is_finite() {
                excess.max(machine)
            } else {
                machine
            }
        })
        .collect()
}

/// The standard deviation of `v` (n − 1); NaN under two values.
fn sd(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return f64::NAN;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// `n` indices into `n` slices, drawn as blocks of `l` consecutive ones from random starts.
fn draw_blocks(n: usize, l: usize, rng: &mut SplitMix64) -> Vec<usize> {
    let starts = (n - l + 1) as u64;
    let mut idx = Vec::with_capacity(n + l);
    while idx.len() < n {
        let s = (rng.next_u64() % starts) as usize;
        idx.extend(s..s + l);
    }
    idx.truncate(n);
    idx
}
