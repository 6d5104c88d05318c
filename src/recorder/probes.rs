//! The server's side of a request's life as probes measured it (`run --server-probes`): one
//! histogram per probed phase of the server (the kernel's: in the server's socket, its read to
//! its write, its write to the client; and those between the server's functions the user
//! named), their interval series, the probes' hits and what they cost.
//!
//! The probes aggregate in the kernel: a phase's duration `d` (ns) is counted under a
//! log-linear bucket key ([`bucket_key`]: exact below 32 ns, then 32 buckets per power of
//! two, 1/32 = 3.1% wide), and the keys' counts come out every tick. [`bucket_value`] turns a
//! key back into its bucket's middle, which is within 1.6% of every duration counted in it;
//! the histograms here hold those middles, so their percentiles are within 1.6% (plus
//! HdrHistogram's 0.1%) of the durations measured.

use super::{hist, IntervalSnapshot, Series};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Bits of a bucket key below the power of two: 32 buckets per octave.
pub const SUB_BITS: u32 = 5;

/// The prefix that marks a probed phase among an interval snapshot's named server histograms
/// (whose other names are `Server-Timing` metric names: HTTP tokens, which cannot hold `:`).
pub const PREFIX: &str = "probe:";

/// The bucket key of a duration of `ns` nanoseconds, as the probes compute it in the kernel:
/// `ns` itself below 2^SUB_BITS, else `e << SUB_BITS | m` where `e` is the position of the
/// highest bit and `m` the SUB_BITS bits below it.
pub fn bucket_key(ns: u64) -> u64 {
    if ns < 1 << SUB_BITS {
        return ns;
    }
    let e = 63 - u64::from(ns.leading_zeros());
    (e << SUB_BITS) | ((ns >> (e - u64::from(SUB_BITS))) & ((1 << SUB_BITS) - 1))
}

/// The middle of the bucket of `key` (ns); `None` for a key no duration has.
pub fn bucket_value(key: u64) -> Option<u64> {
    if key < 1 << SUB_BITS {
        return Some(key);
    }
    let e = key >> SUB_BITS;
    if !(u64::from(SUB_BITS)..64).contains(&e) {
        return None;
    }
    let m = key & ((1 << SUB_BITS) - 1);
    let shift = e - u64::from(SUB_BITS);
    let low = ((1 << SUB_BITS) | m) << shift;
    Some(low + ((1u64 << shift) >> 1))
}

/// The interval snapshot of the probed phases `server` (named with [`PREFIX`]) in interval
/// `index`: no request counted in it, only the server's histograms.
pub(crate) fn snapshot(index: u64, server: Vec<(String, Vec<u8>)>) -> IntervalSnapshot {
    IntervalSnapshot {
        index,
        counters: Default::default(),
        hists: Vec::new(),
        server,
        busy_max: None,
        spilled: None,
        status: Vec::new(),
        by_request: Vec::new(),
        exemplars: Vec::new(),
    }
}

/// One probed phase of the server.
#[derive(Debug, Clone)]
pub struct ProbedPhase {
    /// Its key in the record (`socket`, `handle`, `return`, `fn:A->B`).
    pub name: String,
    /// What it is, in words, for the report.
    pub what: String,
    /// The run's durations, ns.
    pub hist: Histogram<u64>,
}

/// What the probes cost, measured at the start of the run on this machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProbeCost {
    /// CPU time of one uprobe hit (the trap and the probe's program) on an instruction the
    /// kernel emulates (a `push`, how most functions begin), ns.
    pub uprobe_hit_ns: Option<f64>,
    /// The same on an instruction the kernel must single-step (a second trap), ns.
    pub uprobe_stepped_hit_ns: Option<f64>,
    /// CPU time of one tracepoint hit, ns.
    pub tracepoint_hit_ns: Option<f64>,
    /// The lowest and highest of the calibration's rounds of a uprobe hit, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uprobe_hit_range_ns: Option<[f64; 2]>,
    /// The same of a tracepoint hit, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracepoint_hit_range_ns: Option<[f64; 2]>,
    /// The server's processes' CPU time while the run was recorded (their whole trees),
    /// seconds.
    pub server_cpu_s: Option<f64>,
    /// bpftrace's own CPU time (reading the events out of the kernel) while the run was
    /// recorded, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpftrace_cpu_s: Option<f64>,
    /// reqlife's own programs: their runs while the run was recorded, as the kernel counted
    /// them (with `tracepoint_hit_ns` their mean run time): the probes' CPU time is then
    /// theirs, counted, not hits × a calibrated cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_runs: Option<u64>,
    /// Their run time then, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_cpu_s: Option<f64>,
    /// The kernel counted them over the window's first this many seconds (its count costs
    /// the server two clock readings a run); the figures above are the window's, by its
    /// events against the sample's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_sample_s: Option<f64>,
}

impl ProbeCost {
    /// reqlife's own programs ran `runs` times for `ns` in all while the run was recorded,
    /// as the kernel counted them over its first `sample_s` (nothing counted: none).
    pub fn count_runs(&mut self, runs: u64, ns: u64, sample_s: f64) {
        if runs > 0 && ns > 0 {
            self.program_runs = Some(runs);
            self.programs_cpu_s = Some(ns as f64 / 1e9);
            self.tracepoint_hit_ns = Some(ns as f64 / runs as f64);
            self.programs_sample_s = Some(sample_s);
        }
    }
}

/// What the probes measured in one run (or one level of a sweep).
#[derive(Debug, Clone)]
pub struct ProbeAcc {
    /// The server's processes, and the name of the first.
    pub pids: Vec<u32>,
    /// The name of the first of the server's processes.
    pub process: String,
    /// One request in this many is timed (1: every one).
    pub sample: u64,
    /// The phases in the order a request lives them (the kernel's, then the functions').
    pub phases: Vec<ProbedPhase>,
    /// The interval series of the phases (named [`PREFIX`] + name among `server`).
    pub series: Series,
    /// Each probe (`kernel:…`, `uprobe:…`) and its hits.
    pub hits: Vec<(String, u64)>,
    /// Whether the probes are uprobes (true) or tracepoints (false), by `hits`' index.
    pub uprobe: Vec<bool>,
    /// Things the report must say (the server exited, probes that never fired).
    pub notes: Vec<String>,
    /// What the probes cost the server.
    pub cost: ProbeCost,
    /// Probed on another host (`reqlife probe` there, `run --server-probes-from`): where,
    /// and the clocks' offset.
    pub remote: Option<RemoteClock>,
    /// Events of the port's connections not the client's (the server's to itself, or
    /// others'), counted apart.
    pub others: u64,
    /// Events the kernel dropped (bpftrace's buffers full).
    pub lost_events: u64,
    /// The event maps were read by reqlife from the kernel ([`crate::probe`]'s `maps`), not
    /// printed by bpftrace.
    pub maps_read: bool,
    /// The kernel's events came from reqlife's own programs, through their ring
    /// ([`crate::probe`]'s `own`), not from bpftrace's.
    pub own_programs: bool,
    /// Ticks whose event map was full when reqlife took it (events past it were lost).
    pub maps_full: u64,
    /// Per request: the server's side joined to each (a run here; from an agent, the
    /// requests kept or logged only, its phases staying per read and write; `None` on the
    /// agent itself).
    pub joined: Option<Box<super::join::Joined>>,
}

/// The probes' agent on the server's host and its clock against the generator's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteClock {
    /// The agent's address (`HOST:PORT`).
    pub agent: String,
    /// Its CLOCK_MONOTONIC minus the generator's, µs (measured as NTP does: the middle of the
    /// fastest of several exchanges).
    pub offset_us: f64,
    /// That exchange's round trip, µs: the offset is within half of it.
    pub rtt_us: f64,
    /// Per request: the requests kept or logged, their server events pulled from the agent,
    /// and the clocks' offset their four stamps give.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<super::join::remote::PerRequest>,
}

/// What the probes measured, as the agent of another host sends it (`reqlife probe`): the
/// histograms V2+DEFLATE in base64, the series by interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireAcc {
    /// The server's processes.
    pub pids: Vec<u32>,
    /// The name of the first of them.
    pub process: String,
    /// One request in this many is timed (1: every one).
    pub sample: u64,
    /// (name, what, histogram)
    pub phases: Vec<(String, String, String)>,
    /// (interval index, [(name with [`PREFIX`], histogram)])
    pub series: Vec<(u64, Vec<(String, String)>)>,
    /// (probe, hits, whether it is a uprobe).
    pub hits: Vec<(String, u64, bool)>,
    /// Things the report must say (the server exited, probes that never fired).
    pub notes: Vec<String>,
    /// What the probes cost the server.
    pub cost: ProbeCost,
}

impl WireAcc {
    /// `acc` for the wire.
    pub fn of(acc: &ProbeAcc) -> WireAcc {
        let mut series = acc.series.clone();
        series.settle();
        use base64::Engine as _;
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        WireAcc {
            pids: acc.pids.clone(),
            process: acc.process.clone(),
            sample: acc.sample,
            phases: acc
                .phases
                .iter()
                .map(|p| (p.name.clone(), p.what.clone(), hist::encode(&p.hist)))
                .collect(),
            series: series
                .entries
                .iter()
                .map(|e| {
                    let e = series.load(e);
                    let named = e.server.iter().map(|(n, b)| (n.clone(), b64(b))).collect();
                    (e.index * series.span, named)
                })
                .collect(),
            hits: acc
                .hits
                .iter()
                .zip(&acc.uprobe)
                .map(|((n, c), u)| (n.clone(), *c, *u))
                .collect(),
            notes: acc.notes.clone(),
            cost: acc.cost.clone(),
        }
    }

    /// Back into an accumulator; `None` when a histogram does not decode.
    pub fn into_acc(self, remote: Option<RemoteClock>) -> Option<ProbeAcc> {
        use base64::Engine as _;
        let phases = self
            .phases
            .iter()
            .map(|(name, what, h)| {
                Some(ProbedPhase {
                    name: name.clone(),
                    what: what.clone(),
                    hist: hist::decode(h).ok()?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let mut series = Series::default();
        for (index, named) in self.series {
            let server = named
                .into_iter()
                .map(|(n, b)| {
                    let bytes = base64::engine::general_purpose::STANDARD.decode(b).ok()?;
                    Some((n, bytes))
                })
                .collect::<Option<Vec<_>>>()?;
            series.push(snapshot(index, server));
        }
        Some(ProbeAcc {
            pids: self.pids,
            process: self.process,
            sample: self.sample,
            phases,
            series,
            uprobe: self.hits.iter().map(|h| h.2).collect(),
            hits: self.hits.into_iter().map(|(n, c, _)| (n, c)).collect(),
            notes: self.notes,
            cost: self.cost,
            remote,
            others: 0,
            lost_events: 0,
            maps_read: false,
            own_programs: false,
            maps_full: 0,
            joined: None,
        })
    }
}

impl ProbeAcc {
    /// An empty accumulator for the phases `phases` (name, what) and the probes `probes`
    /// (name, is a uprobe).
    pub fn new(
        pids: Vec<u32>,
        process: String,
        sample: u64,
        phases: &[(String, String)],
        probes: &[(String, bool)],
    ) -> ProbeAcc {
        ProbeAcc {
            pids,
            process,
            sample: sample.max(1),
            phases: phases
                .iter()
                .map(|(name, what)| ProbedPhase {
                    name: name.clone(),
                    what: what.clone(),
                    hist: hist::new_interval_hist(),
                })
                .collect(),
            series: Series::default(),
            hits: probes.iter().map(|(n, _)| (n.clone(), 0)).collect(),
            uprobe: probes.iter().map(|(_, u)| *u).collect(),
            notes: Vec::new(),
            cost: ProbeCost::default(),
            remote: None,
            others: 0,
            lost_events: 0,
            maps_read: false,
            own_programs: false,
            maps_full: 0,
            joined: None,
        }
    }

    /// Folds in one tick's counts, `(phase index, bucket key, count)`, as interval `index`
    /// of the series (`None`: outside the recorded window, counted in no interval nor in the
    /// run's figures). Keys no duration has are skipped. Gives the tick's snapshot (for the
    /// metrics endpoint), when it had durations.
    pub fn add_tick(
        &mut self,
        index: Option<u64>,
        counts: &[(usize, u64, u64)],
    ) -> Option<IntervalSnapshot> {
        let index = index?;
        let mut per_phase: Vec<Option<Histogram<u64>>> = vec![None; self.phases.len()];
        for &(phase, key, n) in counts {
            let (Some(slot), Some(ns)) = (per_phase.get_mut(phase), bucket_value(key)) else {
                continue;
            };
            let h = slot.get_or_insert_with(hist::new_interval_hist);
            let _ = h.record_n(ns.min(hist::MAX_NS), n);
        }
        let mut server = Vec::new();
        for (p, h) in self.phases.iter_mut().zip(per_phase) {
            if let Some(h) = h {
                let _ = p.hist.add(&h);
                server.push((format!("{PREFIX}{}", p.name), hist::encode_bytes(&h)));
            }
        }
        if server.is_empty() {
            return None;
        }
        let snap = snapshot(index, server);
        self.series.push(snap.clone());
        Some(snap)
    }

    /// The phases, their series and the join's figures of a run here (the server's side of
    /// each request, joined by its bytes) in place of the agent's per-read ones.
    pub fn use_joined(&mut self, mut joined: super::join::Joined) {
        self.phases = std::mem::take(&mut joined.phases)
            .into_iter()
            .map(|(name, what, hist)| ProbedPhase { name, what, hist })
            .collect();
        self.series = std::mem::take(&mut joined.series);
        self.joined = Some(Box::new(joined));
    }

    /// Per request, probed on another host: the joined requests (those kept or logged)
    /// with their counts, and the clocks their stamps give, said in the notes; the phases and
    /// their series stay the agent's (every request's, per read and write).
    pub fn use_remote_joined(&mut self, mut joined: super::join::Joined) {
        if let (Some(r), Some(mut per)) = (&mut self.remote, joined.remote.take()) {
            per.finish_bytes = r.per_request.as_ref().map_or(0, |p| p.finish_bytes);
            self.notes.extend(remote_notes(&per));
            r.per_request = Some(per);
        }
        self.joined = Some(Box::new(joined));
    }

    /// Probed CPU time, seconds: each probe's hits at its kind's measured cost (a uprobe's at
    /// the cost on an emulated instruction), the calibration's own left out; `None` when a
    /// kind that was hit has no cost measured (below the machine's noise).
    pub fn probe_cpu_s(&self) -> Option<f64> {
        if let Some(counted) = self.cost.programs_cpu_s {
            return Some(counted);
        }
        let mut total = 0.0;
        let probes = self.hits.iter().zip(&self.uprobe);
        for ((_, n), &up) in
            probes.filter(|((name, n), _)| *n > 0 && !name.starts_with("calibration"))
        {
            let each = if up {
                self.cost.uprobe_hit_ns?
            } else {
                self.cost.tracepoint_hit_ns?
            };
            total += *n as f64 * each / 1e9;
        }
        Some(total)
    }
}

/// What the report must say of a run probed on another host: the requests whose events had
/// left the agent's ring (the clocks per request are in the report's line of the agent).
pub fn remote_notes(per: &super::join::remote::PerRequest) -> Vec<String> {
    let mut out = Vec::new();
    if per.left_ring > 0 {
        out.push(format!(
            "{} of {} kept or logged requests' server events had left the agent's ring before \
             they were asked for: they have no server phases; give `reqlife probe` a bigger \
             --ring EVENTS (default {})",
            per.left_ring,
            per.asked,
            super::join::remote::RING_DEFAULT
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_key_comes_back_within_its_width() {
        // Exact below 32 ns; then within half a bucket (1/64 of the value) of every duration.
        for ns in [
            0u64,
            1,
            31,
            32,
            33,
            63,
            64,
            100,
            1_000,
            4_567,
            50_000,
            200_000,
            1 << 40,
        ] {
            let back = bucket_value(bucket_key(ns)).unwrap();
            let err = back.abs_diff(ns) as f64;
            assert!(err <= ns as f64 / 64.0 + 0.5, "{ns} came back as {back}");
        }
        assert_eq!(bucket_key(31), 31);
        // 1000 = 0b1111101000: highest bit 9, the five below it 11110.
        assert_eq!(bucket_key(1000), (9 << 5) | 0b11110);
        assert_eq!(bucket_value(2000 << 5), None);
    }

    #[test]
    fn keys_are_monotonic() {
        let mut last = 0;
        for ns in (0..200_000u64).step_by(7) {
            let k = bucket_key(ns);
            assert!(k >= last, "{ns}");
            last = k;
        }
    }

    #[test]
    fn an_accumulator_crosses_the_wire_unchanged() {
        let phases = [("socket".to_string(), "in its socket".to_string())];
        let probes = [("kernel:a".to_string(), false), ("fn:f".to_string(), true)];
        let mut acc = ProbeAcc::new(vec![3, 4], "srv".into(), 10, &phases, &probes);
        acc.add_tick(Some(1), &[(0, bucket_key(7_000), 5)]);
        acc.add_tick(Some(4), &[(0, bucket_key(9_000), 2)]);
        acc.hits = vec![("kernel:a".into(), 70), ("fn:f".into(), 7)];
        acc.notes.push("a note".into());
        acc.cost.tracepoint_hit_ns = Some(700.0);
        let text = serde_json::to_string(&WireAcc::of(&acc)).unwrap();
        let back: WireAcc = serde_json::from_str(&text).unwrap();
        let clock = RemoteClock {
            agent: "h:1".into(),
            offset_us: 5.0,
            rtt_us: 80.0,
            per_request: None,
        };
        let b = back.into_acc(Some(clock.clone())).unwrap();
        assert_eq!(
            (b.pids, b.process.as_str(), b.sample),
            (vec![3, 4], "srv", 10)
        );
        assert_eq!(b.phases[0].hist, acc.phases[0].hist);
        assert_eq!((b.hits, b.uprobe), (acc.hits.clone(), acc.uprobe.clone()));
        assert_eq!(
            (b.notes, b.cost, b.remote),
            (acc.notes.clone(), acc.cost.clone(), Some(clock))
        );
        let indices: Vec<u64> = b.series.entries.iter().map(|e| e.index).collect();
        assert_eq!(indices, vec![1, 4]);
    }

    #[test]
    fn ticks_fold_into_the_run_and_its_intervals() {
        let phases = [("socket".to_string(), "in the socket".to_string())];
        let mut acc = ProbeAcc::new(vec![1], "srv".into(), 1, &phases, &[]);
        let k = bucket_key(50_000);
        acc.add_tick(Some(0), &[(0, k, 3)]);
        acc.add_tick(Some(0), &[(0, k, 2), (7, k, 9)]);
        acc.add_tick(None, &[(0, k, 100)]);
        acc.add_tick(Some(2), &[(0, bucket_key(1_000), 1)]);
        assert_eq!(acc.phases[0].hist.len(), 6);
        let p50 = acc.phases[0].hist.value_at_quantile(0.5) as f64;
        assert!((p50 - 50_000.0).abs() / 50_000.0 < 0.02, "{p50}");
        let mut s = acc.series.clone();
        s.settle();
        assert_eq!(s.entries.len(), 2);
        let first = hist::decode_bytes(&s.entries[0].server[0].1).unwrap();
        assert_eq!(
            (s.entries[0].server[0].0.as_str(), first.len()),
            ("probe:socket", 5)
        );
    }
}
