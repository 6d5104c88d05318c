//! The intervals the joiner still fills: each one's histograms of the probed phases and, when
//! the metrics endpoint watches (`--metrics-addr`), the traced requests that stand for each
//! phase's values: per phase, the newest joined request with a trace id in each quarter
//! octave of that phase's value. They go to the endpoint with the interval's phases, as its
//! exemplars: each of the server's phase buckets then names a request that fell in it, as
//! the client's buckets do. The series (and so the record) keeps the phases only.
//!
//! Quarter octaves are at most 19% wide, so a phase spread over three decades keeps some 40
//! requests an interval, and the endpoint's buckets (R20: 12% wide) mostly find one.

use crate::recorder::exemplar::{bucket, Exemplar};
use crate::recorder::{hist, IntervalSnapshot};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// One interval's phases and the requests that stand for them.
struct Open {
    hists: Vec<Histogram<u64>>,
    /// By (probed phase index, the quarter octave of its value): the newest traced request.
    exemplars: BTreeMap<(usize, usize), Exemplar>,
}

/// The intervals open, by index.
pub(super) struct Intervals {
    open: BTreeMap<u64, Open>,
    /// Probed phases.
    n: usize,
    /// Whether the traced requests are kept (someone watches).
    traced: bool,
}

impl Intervals {
    /// Intervals of `n` probed phases; `traced`: keep the traced requests for each phase.
    pub(super) fn new(n: usize, traced: bool) -> Intervals {
        Intervals {
            open: BTreeMap::new(),
            n,
            traced,
        }
    }

    /// Request `kept` (its server phases joined, `probed` by index) in interval `index`.
    pub(super) fn record(&mut self, index: u64, probed: &[Option<u64>], kept: &Exemplar) {
        let n = self.n;
        let open = self.open.entry(index).or_insert_with(|| Open {
            hists: (0..n).map(|_| hist::new_interval_hist()).collect(),
            exemplars: BTreeMap::new(),
        });
        for (h, ns) in open.hists.iter_mut().zip(probed) {
            if let Some(ns) = *ns {
                hist::record(h, ns);
            }
        }
        if !self.traced || kept.trace.is_none() {
            return;
        }
        for i in 0..n {
            if let Some(ns) = kept.probed(i) {
                open.exemplars.insert((i, bucket(ns)), *kept);
            }
        }
    }

    /// The snapshots of the intervals done (every one but the last open; all of them with
    /// `all`), of the phases `names` (name, what): those with no value left out, each request once among
    /// the exemplars.
    pub(super) fn take_done(
        &mut self,
        all: bool,
        names: &[(String, String)],
    ) -> Vec<IntervalSnapshot> {
        let keep = if all {
            None
        } else {
            self.open.keys().next_back().copied()
        };
        let done: Vec<u64> = self
            .open
            .keys()
            .copied()
            .filter(|i| Some(*i) != keep)
            .collect();
        done.into_iter()
            .filter_map(|index| {
                let open = self.open.remove(&index)?;
                snapshot(index, names, open)
            })
            .collect()
    }
}

/// The snapshot of interval `index`'s probed phases, or none when it has no value.
fn snapshot(index: u64, names: &[(String, String)], open: Open) -> Option<IntervalSnapshot> {
    let server: Vec<(String, Vec<u8>)> = names
        .iter()
        .zip(&open.hists)
        .filter(|(_, h)| !h.is_empty())
        .map(|((name, _), h)| {
            (
                format!("{}{name}", crate::recorder::probes::PREFIX),
                hist::encode_bytes(h),
            )
        })
        .collect();
    if server.is_empty() {
        return None;
    }
    let mut exemplars: Vec<Exemplar> = Vec::new();
    for e in open.exemplars.into_values() {
        if !exemplars.contains(&e) {
            exemplars.push(e);
        }
    }
    Some(IntervalSnapshot {
        exemplars,
        ..crate::recorder::probes::snapshot(index, server)
    })
}
