//! One thread's finished interval, as it leaves the recorder for the collector, and its
//! compression ([`snapshot`]).

use super::{exemplar, hist, Counters, PhaseHists};
use crate::model::Phase;

/// One finished interval of one thread: counters and its phase histograms compressed.
#[derive(Debug, Clone)]
pub struct IntervalSnapshot {
    /// Interval number from the start of recording.
    pub index: u64,
    /// The interval's counters, all threads together.
    pub counters: Counters,
    /// V2+DEFLATE histograms per phase (empty phases left out).
    pub hists: Vec<(Phase, Vec<u8>)>,
    /// V2+DEFLATE histograms per `Server-Timing` metric.
    pub server: Vec<(String, Vec<u8>)>,
    /// The busiest worker's share of the time on a CPU (0..1), when measured.
    pub busy_max: Option<f64>,
    /// Where `hists` and `server` wait in the series' spill file (they are empty here then).
    pub spilled: Option<(u64, u32)>,
    /// Responses by status code, by code.
    pub status: Vec<(u16, u64)>,
    /// Per request name slot (runs that keep names apart): its counters and compressed phase
    /// histograms. Given to the sinks only; the series keeps none.
    pub by_request: Vec<(u16, Counters, EncodedHists)>,
    /// The interval's slowest requests (by total, slowest first) and one per latency bucket
    /// (fastest first), kept whole. The series keeps the slowest only.
    pub exemplars: Vec<exemplar::Exemplar>,
}

/// Compressed (V2+DEFLATE) histograms by phase.
pub type EncodedHists = Vec<(Phase, Vec<u8>)>;

impl IntervalSnapshot {
    /// Interval `index` with nothing in it.
    pub fn empty(index: u64) -> IntervalSnapshot {
        IntervalSnapshot {
            index,
            counters: Counters::default(),
            hists: Vec::new(),
            server: Vec::new(),
            busy_max: None,
            spilled: None,
            status: Vec::new(),
            by_request: Vec::new(),
            exemplars: Vec::new(),
        }
    }

    /// The memory the snapshot takes: its compressed histograms, metric names and the
    /// vectors that hold them (allocator overhead aside). Its slowest requests are left out:
    /// they stay in memory (the series keeps at most 5 an entry, about 2.4 KiB), while this
    /// figure decides which histograms wait in the spill file.
    pub fn footprint(&self) -> u64 {
        use std::mem::size_of;
        let hists: usize = self.hists.iter().map(|(_, b)| b.len()).sum();
        let server: usize = self.server.iter().map(|(n, b)| n.len() + b.len()).sum();
        (size_of::<IntervalSnapshot>()
            + self.hists.len() * size_of::<(Phase, Vec<u8>)>()
            + self.server.len() * size_of::<(String, Vec<u8>)>()
            + self.status.len() * size_of::<(u16, u64)>()
            + hists
            + server) as u64
    }
}

/// The compressed snapshot of one interval's counters and histograms.
pub(crate) fn snapshot(
    index: u64,
    counters: Counters,
    hists: &PhaseHists,
    mut server: Vec<(String, Vec<u8>)>,
) -> IntervalSnapshot {
    // Kept for the whole run: no spare capacity anywhere.
    let mut hists: Vec<(Phase, Vec<u8>)> = Phase::ALL
        .iter()
        .filter(|p| !hists.get(**p).is_empty())
        .map(|&p| {
            let mut b = hist::encode_bytes(hists.get(p));
            b.shrink_to_fit();
            (p, b)
        })
        .collect();
    hists.shrink_to_fit();
    server.shrink_to_fit();
    IntervalSnapshot {
        index,
        counters,
        hists,
        server,
        busy_max: None,
        spilled: None,
        status: Vec::new(),
        by_request: Vec::new(),
        exemplars: Vec::new(),
    }
}
