//! `reqlife compare A.json B.json`: for throughput and for p50, p90, p99 and p99.9 of the total,
//! of each client phase and of each server metric both runs have: A, B, the change, a 95%
//! confidence interval of the change, a p, and a verdict.
//!
//! - Runs repeated (`--repeat N`, both records with two runs or more) or interleaved
//!   (`compare --run A B --rounds N`): each run is one observation. A change is called only
//!   when the exact rank test across runs (a permutation test of the rank-sum on mid-ranks)
//!   gives p < 0.05 once adjusted for the many rows (below) *and* the 95% bootstrap interval
//!   of the ratio of the medians lies wholly beyond the noise band. When the design cannot
//!   reach p < 0.05 (3 against 3: the smallest exact p is 0.1) the row says "too few runs"
//!   instead of a verdict.
//! - Single runs: the runs' interval series are resampled by blocks (`resample`); the
//!   change's interval is `ln(B/A) ± t · se` and its p that the change lies beyond the noise
//!   band ([`stats::band_p`]); a change is called when that p, adjusted for the many rows, is
//!   below 0.05 (so the interval lies wholly beyond the band too). Resampling blocks of one
//!   run sees the noise inside that run, not the run-to-run variance of the machine: the
//!   output says so, with each row's minimum detectable effect.
//!
//! Many rows: the p-values of all the rows of a comparison are adjusted together by
//! Benjamini-Hochberg ([`stats::benjamini_hochberg`]), so that comparing a run with a rerun
//! of itself calls a change in no more than one row in 20 (`tests/compare.rs` counts them
//! over repeated pairs). Every quantile, of a run or of a replicate, is a mid-quantile
//! ([`stats::mid_quantile`]): values rounded to a grid (100 ns) or tied do not make it jump.
//! Every interval holds its estimate. Every row also gives its minimum detectable effect
//! (MDE, 5% two-sided, 80% power, before the adjustment): the smallest change these data
//! could have shown in that row.
//!
//! Runs probed with `--server-probes` also have, beside the rows, how the tail's shares moved
//! ([`tail`]): descriptive figures, with no interval.

mod agree;
mod intervals;
mod resample;
pub mod tail;

use super::significance::{self as stats, Estimate, Verdict};
use crate::model::Phase;
use crate::recorder::hist;
use crate::recorder::record::{Level, RunRecord, Summary};
use serde::Serialize;

/// Bootstrap replicates.
pub const ITERATIONS: usize = 1000;
/// Fewest intervals per run for the single-run method.
pub const MIN_INTERVALS: usize = 8;
const CONFIDENCE: f64 = 0.95;
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
    /// The row's two-sided p-value: across runs, the rank test's (exact by permutation, or
    /// Mann-Whitney's normal approximation beyond 50 runs); of single runs, that the change
    /// lies beyond the noise band ([`stats::band_p`]).
    pub p_value: Option<f64>,
    /// `p_value` adjusted for the comparison's many rows (Benjamini-Hochberg): what the
    /// verdict asks to be below 0.05.
    pub p_adjusted: Option<f64>,
    /// What the change means: faster, slower, no significant change, too few runs.
    pub verdict: Verdict,
    /// Why no change was called, when none was (the p, the noise band, too few runs).
    pub note: Option<String>,
    /// The minimum detectable relative change (5% two-sided, 80% power) of these data.
    pub mde: Option<f64>,
    /// A percentile row's 95% interval in A as A's record gives it (`analysis::precision`),
    /// µs; absent for throughput and for records without intervals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub a_ci: Option<crate::recorder::hist::Ci>,
    /// The same in B.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_ci: Option<crate::recorder::hist::Ci>,
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
    /// How the rows' p-values are adjusted for their number (`benjamini-hochberg`).
    pub adjustment: String,
    /// How a verdict is reached, in words.
    pub rule: String,
    /// What this design cannot see (single runs: the run-to-run variance).
    pub caveat: Option<String>,
    /// One row per compared figure.
    pub rows: Vec<Row>,
    /// How the tail's shares moved (runs with `--server-probes`); absent when neither record
    /// has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tail: Option<tail::TailMoves>,
}

/// The rule across runs, in words.
pub fn rule_of_runs(noise: f64) -> String {
    format!(
        "a change is called when the exact rank test across runs gives p < {} (adjusted for \
         the many rows by Benjamini-Hochberg) and the 95% interval lies wholly beyond ±{:.0}%; \
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
        "a change is called when p < {} that it lies beyond ±{:.0}% (so its 95% interval does), \
         adjusted for the many rows by Benjamini-Hochberg",
        stats::ALPHA,
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
        let c = across_runs(a, b, &figs, noise, seed);
        return Ok(Comparison {
            tail: tail::moves(a, b),
            ..with_intervals(c, &figs, a, b)
        });
    }
    for (r, name) in [(a, "A"), (b, "B")] {
        let n = r.intervals.iter().filter(|i| i.requests > 0).count();
        if n < MIN_INTERVALS {
            return Err(CompareError(format!(
                "{name} has {} with requests: a single run needs at least {MIN_INTERVALS} to resample \
                 (run longer, or with a shorter --interval, or repeat it with --repeat N)",
                crate::util::units::counted(n as u64, "interval")
            )));
        }
    }
    let c = intervals::across_intervals(a, b, &figs, noise, seed);
    Ok(Comparison {
        tail: tail::moves(a, b),
        ..with_intervals(c, &figs, a, b)
    })
}

/// `c`'s percentile rows with A's and B's own intervals ([`agree`]).
fn with_intervals(mut c: Comparison, figs: &[Figure], a: &RunRecord, b: &RunRecord) -> Comparison {
    for row in c.rows.iter_mut() {
        let Some(f) = figs
            .iter()
            .find(|f| f.label == row.figure && f.key.is_some())
        else {
            continue;
        };
        let q = QUANTILES
            .iter()
            .find(|(_, q)| *q == f.q)
            .map_or("p50", |(n, _)| n);
        agree::agree(row, [f.stats(&a.summary), f.stats(&b.summary)], q);
    }
    c
}

fn relative(e: Estimate) -> Estimate {
    Estimate {
        point: e.point - 1.0,
        lo: e.lo - 1.0,
        hi: e.hi - 1.0,
    }
}

/// `e` with its interval reaching its point: a percentile bootstrap of few runs can leave
/// the point just outside.
fn holding(e: Estimate) -> Estimate {
    Estimate {
        point: e.point,
        lo: e.lo.min(e.point),
        hi: e.hi.max(e.point),
    }
}

/// A row before its verdict: the figures, the change and its p.
struct Measured {
    figure: String,
    higher_is_better: bool,
    a: f64,
    b: f64,
    change: Estimate,
    p: f64,
    mde: Option<f64>,
    /// Runs a side (across runs), for "too few runs".
    runs: Option<(usize, usize)>,
}

/// The rows with their verdicts: every p adjusted together ([`stats::benjamini_hochberg`]).
fn decide(measured: Vec<Measured>, noise: f64) -> Vec<Row> {
    let p: Vec<f64> = measured.iter().map(|m| m.p).collect();
    let adjusted = stats::benjamini_hochberg(&p);
    measured
        .into_iter()
        .zip(adjusted)
        .map(|(m, q)| {
            let (verdict, note) = match m.runs {
                Some((n1, n2)) => {
                    stats::verdict_of_runs(m.change, (m.p, q), n1, n2, noise, m.higher_is_better)
                }
                None => {
                    let by_interval = stats::verdict(m.change, noise, m.higher_is_better);
                    if q < stats::ALPHA && by_interval != Verdict::NoSignificantChange {
                        (by_interval, None)
                    } else if m.p < stats::ALPHA {
                        (Verdict::NoSignificantChange, Some(stats::not_below(m.p, q)))
                    } else {
                        let band =
                            format!("the interval reaches the ±{:.0}% noise band", noise * 100.0);
                        (Verdict::NoSignificantChange, Some(band))
                    }
                }
            };
            Row {
                figure: m.figure,
                a: m.a,
                b: m.b,
                change: m.change,
                p_value: Some(m.p),
                p_adjusted: Some(q),
                verdict,
                note,
                mde: m.mde,
                a_ci: None,
                b_ci: None,
            }
        })
        .collect()
}

/// A run's figure (a repetition's, or an interleaved round's): its throughput, or the
/// mid-quantile of its histogram in µs (the summary's figure in a record without it).
fn of_run(f: &Figure, run: &Level) -> Option<f64> {
    let Some(key) = &f.key else {
        return Some(run.summary.throughput_rps);
    };
    let Some(h) = run
        .histograms
        .get(&key.record_name())
        .and_then(|t| hist::decode(t).ok())
    else {
        return f.of(&run.summary);
    };
    let points: Vec<(f64, u64)> = h
        .iter_recorded()
        .map(|v| (v.value_iterated_to() as f64, v.count_at_value()))
        .collect();
    Some(stats::mid_quantile(&points, f.q) / 1000.0).filter(|v| v.is_finite())
}

fn across_runs(a: &RunRecord, b: &RunRecord, figs: &[Figure], noise: f64, seed: u64) -> Comparison {
    let measured = figs
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let va: Vec<f64> = a.repetitions.iter().filter_map(|l| of_run(f, l)).collect();
            let vb: Vec<f64> = b.repetitions.iter().filter_map(|l| of_run(f, l)).collect();
            // A figure that is zero (a closed loop's queue) has no relative change.
            if va.len() < 2 || vb.len() < 2 || va.iter().chain(&vb).all(|v| *v <= 0.0) {
                return None;
            }
            let change = holding(relative(stats::bootstrap_median_ratio(
                &va,
                &vb,
                ITERATIONS,
                CONFIDENCE,
                seed ^ i as u64,
            )));
            if !(change.point.is_finite() && change.lo.is_finite() && change.hi.is_finite()) {
                return None;
            }
            let p = stats::rank_permutation_p(&va, &vb)
                .unwrap_or_else(|| stats::mann_whitney(&va, &vb).p_two_sided);
            Some(Measured {
                figure: f.label.clone(),
                higher_is_better: f.higher_is_better(),
                a: stats::median(&mut va.clone()),
                b: stats::median(&mut vb.clone()),
                change,
                p,
                mde: stats::mde_of_runs(&va, &vb),
                runs: Some((va.len(), vb.len())),
            })
        })
        .collect();
    Comparison {
        method: "runs".into(),
        n_a: a.repetitions.len(),
        n_b: b.repetitions.len(),
        noise,
        adjustment: ADJUSTMENT.into(),
        rule: rule_of_runs(noise),
        caveat: None,
        rows: decide(measured, noise),
        tail: None,
    }
}

/// How the rows' p-values are adjusted, as the JSON names it.
pub const ADJUSTMENT: &str = "benjamini-hochberg";

#[cfg(test)]
mod tests;
