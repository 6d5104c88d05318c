//! Where an expression's figures come from: the [`Figures`] of a finished run's record, or of
//! the part of a run measured so far ([`PartialRun`]).

use super::Scope;
use crate::analysis::precision;
use crate::model::Phase;
use crate::recorder::hist::Ci;
use crate::recorder::record::RunRecord;
use crate::recorder::{hist, Counters, IntervalSnapshot};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// Where figures come from: a finished run's record, or the part of a run measured so far
/// ([`PartialRun`], for `--abort-on-fail`).
pub trait Figures {
    /// A histogram by its record name (`total`, `server_timing.db`, `request.get.total`), in
    /// nanoseconds.
    fn histogram(&self, key: &str) -> Option<Histogram<u64>>;
    /// (requests, errors, non-2xx/3xx responses); the last `None` when not known.
    fn counts(&self) -> (u64, u64, Option<u64>);
    /// Requests completed per second.
    fn rps(&self) -> f64;
    /// The names available of a scope kind, for messages.
    fn available(&self, scope: &Scope) -> Vec<String>;
    /// The 95% interval (µs) of quantile `p` of the histogram named `key`: order statistics on
    /// it, unless the figures know better (a record: the wider of that and batch means over
    /// its intervals, as `analysis::precision` writes it).
    fn interval(&self, key: &str, p: f64) -> Option<Ci> {
        Some(precision::order_interval(&self.histogram(key)?, p))
    }
}

impl Figures for RunRecord {
    fn histogram(&self, key: &str) -> Option<Histogram<u64>> {
        RunRecord::histogram(self, key).ok()
    }

    fn counts(&self) -> (u64, u64, Option<u64>) {
        let r = &self.summary.requests;
        (r.total, r.errors, Some(r.non_2xx_3xx))
    }

    fn rps(&self) -> f64 {
        self.summary.throughput_rps
    }

    fn interval(&self, key: &str, p: f64) -> Option<Ci> {
        let whole = Figures::histogram(self, key)?;
        let parts: Vec<Histogram<u64>> = self
            .intervals
            .iter()
            .map(|i| {
                i.histograms
                    .get(key)
                    .and_then(|t| hist::decode(t).ok())
                    .unwrap_or_else(hist::new_interval_hist)
            })
            .collect();
        Some(precision::wider(&whole, &parts, p).0)
    }

    fn available(&self, scope: &Scope) -> Vec<String> {
        match scope {
            Scope::Server(_) => self.summary.server_timing_order.clone(),
            Scope::Request(_) => self.summary.by_request.keys().cloned().collect(),
            _ => Phase::ALL.iter().map(|p| p.name().to_string()).collect(),
        }
    }
}

/// The figures of a run measured so far, from the merged intervals the run's collector sends as
/// each is final (a late part of one is added as it comes).
#[derive(Default)]
pub struct PartialRun {
    counters: Counters,
    pub(super) hists: BTreeMap<String, Histogram<u64>>,
    /// The intervals seen (their indices) and the interval's length.
    intervals: std::collections::BTreeSet<u64>,
    interval_s: f64,
}

impl PartialRun {
    /// Nothing measured yet, of a run whose intervals are `interval` long.
    pub fn new(interval: std::time::Duration) -> Self {
        PartialRun {
            interval_s: interval.as_secs_f64(),
            ..Default::default()
        }
    }

    /// Adds an interval (or a late part of one).
    pub fn add(&mut self, snap: &IntervalSnapshot) {
        self.counters.merge(&snap.counters);
        self.intervals.insert(snap.index);
        let named = snap
            .hists
            .iter()
            .map(|(p, b)| (p.name().to_string(), b))
            .chain(
                snap.server
                    .iter()
                    .map(|(n, b)| (format!("server_timing.{n}"), b)),
            );
        for (name, bytes) in named {
            if let Ok(h) = hist::decode_bytes(bytes) {
                let into = self.hists.entry(name).or_insert_with(hist::new_hist);
                let _ = into.add(&h);
            }
        }
    }

    /// Intervals seen so far.
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }
}

impl Figures for PartialRun {
    fn histogram(&self, key: &str) -> Option<Histogram<u64>> {
        self.hists.get(key).cloned()
    }

    fn counts(&self) -> (u64, u64, Option<u64>) {
        (self.counters.requests, self.counters.error_total(), None)
    }

    fn rps(&self) -> f64 {
        let secs = self.intervals.len() as f64 * self.interval_s;
        if secs > 0.0 {
            self.counters.requests as f64 / secs
        } else {
            0.0
        }
    }

    fn available(&self, scope: &Scope) -> Vec<String> {
        let prefix = match scope {
            Scope::Server(_) => "server_timing.",
            _ => "",
        };
        self.hists
            .keys()
            .filter_map(|k| k.strip_prefix(prefix))
            .filter(|k| !prefix.is_empty() || !k.contains('.'))
            .map(str::to_string)
            .collect()
    }
}
