//! What the probes cost the requests they measure, measured in the run
//! (`--server-probes-cost`): the probes follow half of the client's connections (those whose
//! port [`traced`] picks, decided in the kernel before anything else, by the same rule),
//! the other half runs untraced at the same load, and the requests of the two halves are
//! compared here.
//!
//! Both halves share the run's load and its changes, so each interval is a pair: the
//! difference of its two halves' p50 (and p90) is one figure per interval, and the run's
//! difference is their mean, with a 95% interval by batch means (Student's t over the
//! batches; the batches widened while the lag-1 correlation of their means is over 0.2, as
//! long as 5 remain). The run's own percentiles of each half are given beside it.

use crate::recorder::hist;
use crate::util::lag::lag1;
use crate::util::student::t_quantile;
use crate::util::units::{counted, human_ns};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Values a half must hold in an interval for that interval's pair to count.
const MIN_PER_HALF: u64 = 20;

/// Intervals (or batches) the interval needs at least.
const MIN_BATCHES: usize = 5;

/// `--server-probes-cost`: whether the connection of client port `port` is followed, as the
/// probes' script decides it in the kernel: bit 15 of the port times 40503 (2^16 over the
/// golden ratio), a bit that mixes all of the port's (Linux gives `connect` even ports: the
/// lowest bit would split nothing).
pub fn traced(port: u16) -> bool {
    ((u64::from(port) * 40503) >> 15) & 1 == 1
}

/// The two halves' requests, as they come.
#[derive(Default)]
pub struct Halves {
    /// The run's totals: [traced, untraced].
    run: [Option<Histogram<u64>>; 2],
    /// Each half's connections (their ports).
    ports: [BTreeSet<u16>; 2],
    /// The intervals still open: [traced, untraced].
    open: BTreeMap<u64, [Histogram<u64>; 2]>,
    /// Per closed interval with both halves filled: the differences of p50 and p90, ns.
    diffs: Vec<[f64; 2]>,
}

/// One half's figures.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Half {
    /// Its connections.
    pub connections: u64,
    /// Its requests (with a response).
    pub requests: u64,
    /// The run's p50 of their totals, µs.
    pub p50_us: f64,
    /// p90, µs.
    pub p90_us: f64,
    /// p99, µs.
    pub p99_us: f64,
}

/// The traced half's difference from the untraced one at one percentile.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Gap {
    /// `p50` or `p90`.
    pub percentile: String,
    /// The mean over the intervals of (traced − untraced), µs: what the probes add.
    pub diff_us: f64,
    /// Its 95% interval, µs; `None` with fewer than 5 intervals whose halves both hold 20
    /// requests.
    pub ci_us: Option<[f64; 2]>,
    /// The intervals it rests on.
    pub intervals: u64,
    /// Intervals per batch.
    pub batch: u64,
}

/// The probes' cost measured in the run: the two halves and their gaps.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct MeasuredCost {
    /// The connections the probes followed.
    pub traced: Half,
    /// The others, at the same load.
    pub untraced: Half,
    /// Traced − untraced, at p50 and p90.
    pub gaps: Vec<Gap>,
}

impl MeasuredCost {
    /// In words: each half, and what the traced one's requests took more at p50 and p90.
    pub fn line(&self) -> String {
        let gaps: Vec<String> = self
            .gaps
            .iter()
            .map(|g| {
                let ci = match g.ci_us {
                    Some([lo, hi]) => format!(" [{}, {}]", signed(lo), signed(hi)),
                    None => " (too few intervals for an interval)".into(),
                };
                format!("{} {}{ci}", g.percentile, signed(g.diff_us))
            })
            .collect();
        let half = |h: &Half| {
            format!(
                "{}, {}, p50 {}",
                counted(h.connections, "connection"),
                counted(h.requests, "request"),
                human_ns(h.p50_us * 1e3)
            )
        };
        format!(
            "probes' cost measured in the run: traced {} against untraced {}: traced − untraced \
             {} (95% intervals, paired by interval)",
            half(&self.traced),
            half(&self.untraced),
            gaps.join(", ")
        )
    }
}

/// `+1.23us` or `-1.23us`.
fn signed(us: f64) -> String {
    let sign = if us < 0.0 { "-" } else { "+" };
    format!("{sign}{}", human_ns(us.abs() * 1e3))
}

impl Halves {
    /// A request of client port `port` (`traced`: on a followed connection), of `total` ns,
    /// recorded in interval `interval`.
    pub fn record(&mut self, port: u16, traced: bool, interval: u64, total: u64) {
        let i = usize::from(!traced);
        self.ports[i].insert(port);
        hist::record(self.run[i].get_or_insert_with(hist::new_hist), total);
        let pair = self
            .open
            .entry(interval)
            .or_insert_with(|| [hist::new_interval_hist(), hist::new_interval_hist()]);
        hist::record(&mut pair[i], total);
        // Requests come about in order of their intervals: two open at most.
        while self.open.len() > 2 {
            self.close_first();
        }
    }

    /// The oldest open interval's pair, if both halves hold enough.
    fn close_first(&mut self) {
        let Some((_, [t, u])) = self.open.pop_first() else {
            return;
        };
        if t.len() >= MIN_PER_HALF && u.len() >= MIN_PER_HALF {
            let d = |q: f64| t.value_at_quantile(q) as f64 - u.value_at_quantile(q) as f64;
            self.diffs.push([d(0.5), d(0.9)]);
        }
    }

    /// The figures, every interval closed; `None` when a half had no request.
    pub fn finish(mut self) -> Option<MeasuredCost> {
        while !self.open.is_empty() {
            self.close_first();
        }
        let [Some(t), Some(u)] = &self.run else {
            return None;
        };
        let half = |h: &Histogram<u64>, ports: &BTreeSet<u16>| Half {
            connections: ports.len() as u64,
            requests: h.len(),
            p50_us: us(h.value_at_quantile(0.5) as f64),
            p90_us: us(h.value_at_quantile(0.9) as f64),
            p99_us: us(h.value_at_quantile(0.99) as f64),
        };
        let gaps = ["p50", "p90"]
            .iter()
            .enumerate()
            .map(|(k, name)| {
                let d: Vec<f64> = self.diffs.iter().map(|p| p[k]).collect();
                gap(name, &d)
            })
            .collect();
        Some(MeasuredCost {
            traced: half(t, &self.ports[0]),
            untraced: half(u, &self.ports[1]),
            gaps,
        })
    }
}

/// The mean of the intervals' differences `d` (ns), with its interval by batch means.
fn gap(name: &str, d: &[f64]) -> Gap {
    let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
    let mut batch = 1;
    let mut ci = None;
    while d.len() / batch >= MIN_BATCHES {
        let means: Vec<f64> = d
            .chunks_exact(batch)
            .map(|c| c.iter().sum::<f64>() / batch as f64)
            .collect();
        if lag1(&means) > 0.2 && d.len() / (batch * 2) >= MIN_BATCHES {
            batch *= 2;
            continue;
        }
        let k = means.len() as f64;
        let m = means.iter().sum::<f64>() / k;
        let var = means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (k - 1.0);
        let h = t_quantile(0.975, k - 1.0) * (var / k).sqrt();
        ci = Some([us(m - h), us(m + h)]);
        break;
    }
    Gap {
        percentile: name.to_string(),
        diff_us: us(mean),
        ci_us: ci,
        intervals: d.len() as u64,
        batch: batch as u64,
    }
}

/// ns → µs, to 0.001.
fn us(ns: f64) -> f64 {
    (ns / 1e3 * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The traced half 30 µs slower in every interval, both halves with the same noise:
    /// the gap is 30 µs and its interval holds it.
    #[test]
    fn a_traced_half_slower_by_a_known_amount_is_measured_so() {
        let mut h = Halves::default();
        let mut rng = crate::util::rng::SplitMix64(3);
        for interval in 0..40 {
            let load = 100_000 + 20_000 * (interval % 3); // the run's load moves both halves
            for _ in 0..200 {
                let traced = rng.below(2) == 0;
                let port = 40000 + rng.below(16) as u16 * 2 + u16::from(!traced) * 100;
                let noise = rng.below(50_000);
                let total = load + noise + if traced { 30_000 } else { 0 };
                h.record(port, traced, interval, total);
            }
        }
        let c = h.finish().unwrap();
        assert_eq!(c.traced.connections, 16);
        assert_eq!(c.traced.requests + c.untraced.requests, 8000);
        let p50 = &c.gaps[0];
        assert_eq!(p50.intervals, 40);
        let [lo, hi] = p50.ci_us.unwrap();
        assert!(lo < 30.0 && 30.0 < hi, "{p50:?}");
        assert!(hi - lo < 15.0, "{p50:?}");
        assert!((p50.diff_us - 30.0).abs() < 6.0, "{p50:?}");
    }

    /// Fewer than 5 intervals with 20 requests in each half: no interval, the mean kept; a
    /// half with no request: nothing.
    #[test]
    fn too_few_intervals_give_no_interval_and_an_empty_half_nothing() {
        let mut h = Halves::default();
        for interval in 0..4 {
            for i in 0..50 {
                h.record(40000, true, interval, 1000 + i);
                h.record(40002, false, interval, 900 + i);
            }
        }
        let c = h.finish().unwrap();
        assert_eq!(c.gaps[0].ci_us, None);
        assert_eq!(c.gaps[0].intervals, 4);
        assert!((c.gaps[0].diff_us - 0.1).abs() < 0.01, "{:?}", c.gaps[0]);
        let mut h = Halves::default();
        h.record(40000, true, 0, 1000);
        assert!(h.finish().is_none());
    }
}
