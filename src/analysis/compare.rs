//! `reqlife compare A.json B.json`: for throughput and for p50, p90, p99 and p99.9 of the total,
//! of each client phase and of each server metric both runs have: A, B, the change, a 95%
//! confidence interval of the change, and a verdict.
//!
//! - Runs repeated (`--repeat N`, both records with two runs or more) or interleaved
//!   (`compare --run A B --rounds N`): each run is one observation. One rule decides
//!   ([`stats::verdict_of_runs`]): a change is called only when the exact rank test across
//!   runs (a permutation test of the rank-sum on mid-ranks, whose p is printed) gives
//!   p < 0.05 *and* the 95% bootstrap interval of the ratio of the medians lies wholly beyond
//!   the noise band. When the design cannot reach p < 0.05 (3 against 3: the smallest exact
//!   p is 0.1) the row says "too few runs" instead of a verdict.
//! - Single runs: the runs' interval series are resampled by blocks ([`stats::block_bootstrap`]'s
//!   scheme) and each replicate's figure is computed from the merged counts of its intervals, so
//!   the interval respects the autocorrelation of latencies in time. Per interval, each
//!   histogram is kept as counts in log buckets 1% wide (a replicate's quantile is within 1% of
//!   the exact one; the A and B columns are the records' exact figures). A change is called
//!   when the interval lies wholly beyond the noise band. Resampling blocks of one run sees the
//!   noise inside that run, not the run-to-run variance of the machine: the output says so,
//!   with each row's minimum detectable effect.
//!
//! Every row also gives its minimum detectable effect (MDE, 5% two-sided, 80% power): the
//! smallest change these data could have shown.

mod text;

use super::significance::{self as stats, Estimate, Verdict};
use crate::model::Phase;
use crate::recorder::hist;
use crate::recorder::record::{Interval, RunRecord, Summary};
use crate::util::rng::SplitMix64;
use serde::Serialize;
pub use text::render;

/// Bootstrap replicates.
pub const ITERATIONS: usize = 1000;
/// Fewest intervals per run for the single-run method.
pub const MIN_INTERVALS: usize = 8;
const CONFIDENCE: f64 = 0.95;
/// Relative width of a log bucket.
const BUCKET: f64 = 1.01;
const QUANTILES: [(&str, f64); 4] = [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// One compared figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `throughput`, `total p99`, `wait p50`, `server db p90`.
    pub figure: String,
    /// req/s for throughput, else µs.
    pub a: f64,
    /// The figure in B, in the same unit.
    pub b: f64,
    /// B/A − 1, and its interval.
    pub change: Estimate,
    /// The rank test's two-sided p-value (runs only): exact by permutation, or Mann-Whitney's
    /// normal approximation beyond 50 runs.
    pub p_value: Option<f64>,
    /// What the change means: faster, slower, no significant change, too few runs.
    pub verdict: Verdict,
    /// Why no change was called, when none was (the p, the noise band, too few runs).
    pub note: Option<String>,
    /// The minimum detectable relative change (5% two-sided, 80% power) of these data.
    pub mde: Option<f64>,
}

/// The comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// `runs` (repetitions), `interleaved` (`compare --run`: rounds of A and B in turn) or
    /// `intervals` (block bootstrap of single runs).
    pub method: String,
    /// Runs (or intervals) on each side.
    pub n_a: usize,
    /// Runs (or intervals) on B's side.
    pub n_b: usize,
    /// The noise band: a relative change within ±noise is not called a change.
    pub noise: f64,
    /// How a verdict is reached, in words.
    pub rule: String,
    /// What this design cannot see (single runs: the run-to-run variance).
    pub caveat: Option<String>,
    /// One row per compared figure.
    pub rows: Vec<Row>,
}

/// The rule across runs, in words.
pub fn rule_of_runs(noise: f64) -> String {
    format!(
        "a change is called when the exact rank test across runs gives p < {} and the 95% interval lies wholly beyond ±{:.0}%; \
         {} runs or more a side can reach p < {}",
        stats::ALPHA,
        noise * 100.0,
        stats::runs_needed(),
        stats::ALPHA
    )
}

/// The rule of single runs, in words.
pub fn rule_of_intervals(noise: f64) -> String {
    format!(
        "a change is called when the 95% interval lies wholly beyond ±{:.0}%",
        noise * 100.0
    )
}

/// The latency histogram a figure reads: the total, a client phase, a `Server-Timing` metric
/// or a phase of the server the probes measured (`--server-probes`).
#[derive(Debug, Clone, PartialEq)]
enum Hist {
    Total,
    Phase(Phase),
    Server(String),
    Probed(String),
}

impl Hist {
    /// Its name among an interval's histograms in the record.
    fn record_name(&self) -> String {
        match self {
            Hist::Total => "total".into(),
            Hist::Phase(p) => p.name().into(),
            Hist::Server(m) => format!("server_timing.{m}"),
            Hist::Probed(p) => format!("server_probe.{p}"),
        }
    }

    /// Its name in the comparison's rows.
    fn label(&self) -> String {
        match self {
            Hist::Total => "total".into(),
            Hist::Phase(p) => p.name().into(),
            Hist::Server(m) => format!("server {m}"),
            Hist::Probed(p) => format!("probed {p}"),
        }
    }

    fn stats<'a>(&self, s: &'a Summary) -> Option<&'a crate::recorder::hist::Stats> {
        match self {
            Hist::Total => Some(&s.latency.total),
            Hist::Phase(p) => s.latency.phases.get(p),
            Hist::Server(m) => s.server_timing.get(m),
            Hist::Probed(p) => s.server_probes.as_ref()?.phases.get(p),
        }
    }
}

/// A figure of a summary: throughput, or a latency statistic of a phase or server metric, in µs.
#[derive(Debug, Clone)]
struct Figure {
    label: String,
    /// The histogram of a latency figure; `None` for throughput.
    key: Option<Hist>,
    q: f64,
}

impl Figure {
    fn stats<'a>(&self, s: &'a Summary) -> Option<&'a crate::recorder::hist::Stats> {
        self.key.as_ref()?.stats(s)
    }

    /// Throughput, or the total's median: the figures whose smallest detectable change the
    /// caveat of single runs quotes.
    fn is_headline(&self) -> bool {
        match &self.key {
            None => true,
            Some(h) => *h == Hist::Total && self.q == 0.5,
        }
    }

    /// Whether `s` has enough values for this figure to mean something: at least 10 above
    /// the quantile (20 for p50, 1000 for p99, 10000 for p99.9).
    fn enough(&self, s: &Summary) -> bool {
        match self.stats(s) {
            None => self.key.is_none(),
            Some(st) => st.count as f64 >= (10.0 / (1.0 - self.q)).ceil(),
        }
    }

    fn of(&self, s: &Summary) -> Option<f64> {
        let Some(st) = self.stats(s) else {
            return self.key.is_none().then_some(s.throughput_rps);
        };
        match self.q {
            0.5 => st.p50_us,
            0.9 => st.p90_us,
            0.99 => st.p99_us,
            _ => st.p999_us,
        }
    }

    fn higher_is_better(&self) -> bool {
        self.key.is_none()
    }
}

/// The figures both summaries have, each with enough values on both sides (see
/// [`Figure::enough`]): a tail quantile of a few values is not compared.
fn figures(a: &Summary, b: &Summary) -> Vec<Figure> {
    let phases = Phase::CLIENT.iter().copied().map(Hist::Phase);
    let servers = a.server_timing_order.iter().cloned().map(Hist::Server);
    let probed = a
        .server_probes
        .iter()
        .flat_map(|p| p.order.iter().cloned().map(Hist::Probed));
    let keys: Vec<Hist> = std::iter::once(Hist::Total)
        .chain(phases.chain(servers).chain(probed).filter(|h| {
            let has = |s: &Summary| h.stats(s).is_some_and(|st| st.count > 0);
            has(a) && has(b)
        }))
        .collect();
    let mut out = vec![Figure {
        label: "throughput".into(),
        key: None,
        q: 0.0,
    }];
    for key in keys {
        for (qname, q) in QUANTILES {
            out.push(Figure {
                label: format!("{} {qname}", key.label()),
                key: Some(key.clone()),
                q,
            });
        }
    }
    out.retain(|f| f.enough(a) && f.enough(b));
    out
}

/// Two records that cannot be compared (one has no complete response, or too few intervals
/// to resample): bad input, exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CompareError(pub String);

crate::util::exit::exit_code!(crate::util::exit::EXIT_USAGE => CompareError);

/// Compares `a` with `b`; `noise` is the relative change below which nothing is called a
/// change (e.g. 0.02).
pub fn compare(
    a: &RunRecord,
    b: &RunRecord,
    noise: f64,
    seed: u64,
) -> Result<Comparison, CompareError> {
    let figs = figures(&a.summary, &b.summary);
    for (r, name) in [(a, "A"), (b, "B")] {
        if r.summary.requests.ok == 0 {
            return Err(CompareError(format!(
                "{name} has no complete response to compare"
            )));
        }
    }
    if a.repetitions.len() >= 2 && b.repetitions.len() >= 2 {
        return Ok(across_runs(a, b, &figs, noise, seed));
    }
    for (r, name) in [(a, "A"), (b, "B")] {
        let n = r.intervals.iter().filter(|i| i.requests > 0).count();
        if n < MIN_INTERVALS {
            return Err(CompareError(format!(
                "{name} has {n} intervals with requests: a single run needs at least {MIN_INTERVALS} to resample \
                 (run longer, or with a shorter --interval, or repeat it with --repeat N)"
            )));
        }
    }
    Ok(across_intervals(a, b, &figs, noise, seed))
}

fn relative(e: Estimate) -> Estimate {
    Estimate {
        point: e.point - 1.0,
        lo: e.lo - 1.0,
        hi: e.hi - 1.0,
    }
}

fn across_runs(a: &RunRecord, b: &RunRecord, figs: &[Figure], noise: f64, seed: u64) -> Comparison {
    let rows = figs
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let va: Vec<f64> = a
                .repetitions
                .iter()
                .filter_map(|l| f.of(&l.summary))
                .collect();
            let vb: Vec<f64> = b
                .repetitions
                .iter()
                .filter_map(|l| f.of(&l.summary))
                .collect();
            // A figure that is zero (a closed loop's queue) has no relative change.
            if va.len() < 2 || vb.len() < 2 || va.iter().chain(&vb).all(|v| *v <= 0.0) {
                return None;
            }
            let change = relative(stats::bootstrap_median_ratio(
                &va,
                &vb,
                ITERATIONS,
                CONFIDENCE,
                seed ^ i as u64,
            ));
            if !(change.point.is_finite() && change.lo.is_finite() && change.hi.is_finite()) {
                return None;
            }
            let p = stats::rank_permutation_p(&va, &vb)
                .unwrap_or_else(|| stats::mann_whitney(&va, &vb).p_two_sided);
            let (verdict, note) =
                stats::verdict_of_runs(change, p, va.len(), vb.len(), noise, f.higher_is_better());
            Some(Row {
                figure: f.label.clone(),
                a: stats::median(&mut va.clone()),
                b: stats::median(&mut vb.clone()),
                change,
                p_value: Some(p),
                verdict,
                note,
                mde: stats::mde_of_runs(&va, &vb),
            })
        })
        .collect();
    Comparison {
        method: "runs".into(),
        n_a: a.repetitions.len(),
        n_b: b.repetitions.len(),
        noise,
        rule: rule_of_runs(noise),
        caveat: None,
        rows,
    }
}

/// One interval in resampling form: its requests, length, and per histogram key its counts in
/// log buckets.
struct Slice {
    requests: u64,
    duration_s: f64,
    buckets: Vec<Vec<(u32, u64)>>,
}

fn bucket_of(ns: u64) -> u32 {
    ((ns.max(1) as f64).ln() / BUCKET.ln()) as u32
}

fn value_of(bucket: u32) -> f64 {
    BUCKET.powf(bucket as f64 + 0.5)
}

fn slices(intervals: &[Interval], keys: &[Hist]) -> Vec<Slice> {
    // The keys' names in the record, made once rather than per interval.
    let names: Vec<String> = keys.iter().map(Hist::record_name).collect();
    intervals
        .iter()
        .map(|i| Slice {
            requests: i.requests,
            duration_s: i.duration_s,
            buckets: names
                .iter()
                .map(|name| {
                    let Some(h) = i.histograms.get(name).and_then(|t| hist::decode(t).ok()) else {
                        return Vec::new();
                    };
                    let mut out: Vec<(u32, u64)> = Vec::new();
                    for v in h.iter_recorded() {
                        let b = bucket_of(v.value_iterated_to());
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

/// The figures of one replicate (the slices `drawn`), in the order of `figs`.
fn replicate(drawn: &[&Slice], figs: &[Figure], keys: &[Hist], dense: &mut Vec<u64>) -> Vec<f64> {
    let requests: u64 = drawn.iter().map(|s| s.requests).sum();
    let secs: f64 = drawn.iter().map(|s| s.duration_s).sum();
    figs.iter()
        .map(|f| {
            let Some(key) = &f.key else {
                return if secs > 0.0 {
                    requests as f64 / secs
                } else {
                    0.0
                };
            };
            let k = keys.iter().position(|x| x == key).unwrap_or(0);
            dense.iter_mut().for_each(|c| *c = 0);
            let mut total = 0u64;
            for s in drawn {
                for &(b, n) in &s.buckets[k] {
                    if b as usize >= dense.len() {
                        dense.resize(b as usize + 1, 0);
                    }
                    dense[b as usize] += n;
                    total += n;
                }
            }
            if total == 0 {
                return f64::NAN;
            }
            let rank = ((f.q * total as f64).ceil() as u64).max(1);
            let mut seen = 0;
            for (b, &n) in dense.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return value_of(b as u32) / 1000.0;
                }
            }
            f64::NAN
        })
        .collect()
}

fn across_intervals(
    a: &RunRecord,
    b: &RunRecord,
    figs: &[Figure],
    noise: f64,
    seed: u64,
) -> Comparison {
    let mut keys: Vec<Hist> = figs.iter().filter_map(|f| f.key.clone()).collect();
    keys.dedup();
    // Intervals before the first and after the last request are the run's edges, not data.
    let trim = |r: &RunRecord| -> Vec<Interval> {
        r.intervals
            .iter()
            .filter(|i| i.requests > 0)
            .cloned()
            .collect()
    };
    let (ia, ib) = (trim(a), trim(b));
    let (sa, sb) = (slices(&ia, &keys), slices(&ib, &keys));
    let mut ratios = bootstrap_ratios(&sa, &sb, figs, &keys, seed);
    let rows: Vec<(&Figure, Row)> = figs
        .iter()
        .zip(ratios.iter_mut())
        .filter_map(|(f, reps)| Some((f, interval_row(f, &a.summary, &b.summary, reps, noise)?)))
        .collect();
    let largest = rows
        .iter()
        .filter(|(f, _)| f.is_headline())
        .filter_map(|(_, r)| r.mde)
        .fold(0.0, f64::max);
    let rows: Vec<Row> = rows.into_iter().map(|(_, r)| r).collect();
    Comparison {
        method: "intervals".into(),
        n_a: sa.len(),
        n_b: sb.len(),
        noise,
        rule: rule_of_intervals(noise),
        caveat: Some(format!(
            "single runs: the intervals see the noise inside each run, not the run-to-run \
             variance of the machine (often a few percent on a shared one); within each run the \
             smallest detectable change of throughput and p50 is {:.1}% (MDE column), and a \
             change of a few percent cannot be told from drift between the two runs. Compare \
             interleaved runs (`compare --run URL_A URL_B --rounds 6`) or {}+ repeated runs a \
             side (`run --repeat N`)",
            largest * 100.0,
            stats::runs_needed()
        )),
        rows,
    }
}

/// The block bootstrap of B/A: for each figure, the ratios of [`ITERATIONS`] replicates, each
/// drawn from both runs' slices in blocks (see [`stats::block_len`]); ratios that are not
/// finite are left out.
fn bootstrap_ratios(
    sa: &[Slice],
    sb: &[Slice],
    figs: &[Figure],
    keys: &[Hist],
    seed: u64,
) -> Vec<Vec<f64>> {
    let (la, lb) = (stats::block_len(sa.len()), stats::block_len(sb.len()));
    let mut rng = SplitMix64(seed);
    let mut dense = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::with_capacity(ITERATIONS); figs.len()];
    for _ in 0..ITERATIONS {
        let da: Vec<&Slice> = draw_blocks(sa.len(), la, &mut rng)
            .into_iter()
            .map(|i| &sa[i])
            .collect();
        let db: Vec<&Slice> = draw_blocks(sb.len(), lb, &mut rng)
            .into_iter()
            .map(|i| &sb[i])
            .collect();
        let fa = replicate(&da, figs, keys, &mut dense);
        let fb = replicate(&db, figs, keys, &mut dense);
        for (k, (x, y)) in fa.iter().zip(&fb).enumerate() {
            let r = y / x;
            if r.is_finite() {
                ratios[k].push(r);
            }
        }
    }
    ratios
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

/// A figure's row from the two summaries and its bootstrap ratios: the change with its
/// interval, the verdict against `noise` and the smallest detectable change; none when the
/// figure is missing or zero in A, or had no finite ratio.
fn interval_row(f: &Figure, a: &Summary, b: &Summary, reps: &mut [f64], noise: f64) -> Option<Row> {
    let (va, vb) = (f.of(a)?, f.of(b)?);
    if va <= 0.0 || reps.is_empty() {
        return None;
    }
    let mde = stats::mde_of_replicates(reps);
    let (lo, hi) = stats::percentile_interval(reps, CONFIDENCE);
    let change = relative(Estimate {
        point: vb / va,
        lo,
        hi,
    });
    let verdict = stats::verdict(change, noise, f.higher_is_better());
    Some(Row {
        figure: f.label.clone(),
        a: va,
        b: vb,
        change,
        p_value: None,
        verdict,
        note: (verdict == Verdict::NoSignificantChange)
            .then(|| format!("the interval reaches the ±{:.0}% noise band", noise * 100.0)),
        mde,
    })
}

#[cfg(test)]
mod tests;
