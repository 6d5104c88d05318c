//! What one or more threads measured: the [`Measured`] of a run, and its exact merge across
//! threads (counters summed, histograms added, intervals of the same index combined).

use super::{
    hist, reservoir, server_timing, BurstHists, Counters, Counts, PhaseHists, RequestAcc, Series,
};

/// What one or more threads measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Counters, status counts, the first error of each kind and the protocols' tallies: the
    /// recorders' own, merged by [`Counts::merge`].
    pub counts: Counts,
    /// The histogram of each phase.
    pub hists: PhaseHists,
    /// The interval series, bounded (merged across threads by the collector, or by
    /// [`Measured::merge`]).
    pub series: Series,
    /// Per worker thread: the share of the run it was on a CPU (0..1).
    pub thread_busy: Vec<f64>,
    /// Open loop, per worker thread: the share of the run its pacer spun to send on time.
    pub pacer_spin: Vec<f64>,
    /// Bytes of compressed interval snapshots the threads kept during the run (what the
    /// memory of a long run legitimately grows by).
    pub snapshot_bytes: u64,
    /// Per stage: its counters and phase histograms.
    pub segments: Vec<(Counters, PhaseHists)>,
    /// Bursts, when the load was bursts.
    pub bursts: Option<BurstHists>,
    /// `Server-Timing` figures.
    pub server: server_timing::ServerTimingAcc,
    /// Per request name, when the run sent named requests.
    pub by_request: Vec<RequestAcc>,
    /// A bounded uniform sample of the responses: (end time since the start of recording in
    /// µs, total latency in ns).
    pub samples: reservoir::Reservoir,
    /// The earliest send instants of each thread (`sends`), for the arrival test.
    pub sends: super::sends::Sends,
    /// The server's phases from probes (`--server-probes`), when asked for: gathered beside
    /// the threads, not by them.
    pub probes: Option<super::probes::ProbeAcc>,
    /// The slow requests kept whole (the collector's, the intervals' added up).
    pub exemplars: super::exemplar::Exemplars,
    /// `--log-requests`: what the per-request log became.
    pub request_log: Option<super::request_log::LogOutcome>,
    /// `--server-probes` here: the server's side joined to each request.
    pub joined: Option<Box<super::join::Joined>>,
}

impl Measured {
    /// Nothing measured yet: what [`Measured::merge`] adds the parts to.
    fn empty() -> Measured {
        Measured {
            counts: Counts::default(),
            hists: PhaseHists::new(hist::new_hist),
            series: Series::default(),
            thread_busy: Vec::new(),
            pacer_spin: Vec::new(),
            snapshot_bytes: 0,
            segments: Vec::new(),
            bursts: None,
            server: server_timing::ServerTimingAcc::new("total"),
            by_request: Vec::new(),
            samples: reservoir::Reservoir::new(0, 0),
            sends: super::sends::Sends::default(),
            probes: None,
            exemplars: super::exemplar::Exemplars::new(),
            request_log: None,
            joined: None,
        }
    }

    /// Merges the measurements of several threads exactly: counters summed, histograms
    /// added, intervals of the same index combined.
    pub fn merge(parts: Vec<Measured>) -> Measured {
        let mut out = Measured::empty();
        let mut samples = Vec::with_capacity(parts.len());
        let mut sends = Vec::with_capacity(parts.len());
        for part in parts {
            out.counts.merge(&part.counts);
            out.hists.merge(&part.hists);
            out.thread_busy.extend_from_slice(&part.thread_busy);
            out.pacer_spin.extend_from_slice(&part.pacer_spin);
            out.snapshot_bytes += part.snapshot_bytes;
            out.server.merge(&part.server);
            if let Some(b) = &part.bursts {
                match &mut out.bursts {
                    None => out.bursts = Some(b.clone()),
                    Some(o) => {
                        let _ = o.dispatch.add(&b.dispatch);
                        let _ = o.wait.add(&b.wait);
                    }
                }
            }
            for (i, (c, h)) in part.segments.iter().enumerate() {
                if out.segments.len() <= i {
                    out.segments.push((
                        Counters::default(),
                        PhaseHists::new(hist::new_interval_hist),
                    ));
                }
                out.segments[i].0.merge(c);
                out.segments[i].1.merge(h);
            }
            for (i, acc) in part.by_request.iter().enumerate() {
                if out.by_request.len() <= i {
                    out.by_request.push(RequestAcc::new());
                }
                out.by_request[i].merge(acc);
            }
            out.series.merge(part.series);
            out.exemplars.merge(&part.exemplars);
            samples.push(part.samples);
            sends.push(part.sends);
            if out.probes.is_none() {
                out.probes = part.probes;
            }
        }
        let seed = samples
            .iter()
            .map(|r| r.seen())
            .fold(0x5EED_u64, |a, n| a.wrapping_mul(31).wrapping_add(n));
        out.sends = super::sends::Sends::merge(sends);
        out.samples = reservoir::Reservoir::merge(samples, reservoir::DEFAULT_CAPACITY, seed);
        out
    }
}
