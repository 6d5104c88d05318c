//! The record's figures of the server's side as probes measured it (`summary.server_probes`):
//! each probed phase's statistics, how much of the client's time from the start of its write
//! to the first byte they account for, the probes' hits and what they cost.

use super::joining::joining;
pub use super::joining::Joining;
use crate::model::Phase;
use crate::recorder::hist::Stats;
pub use crate::recorder::join::tail::TailShares;
use crate::recorder::join::Joined;
use crate::recorder::probes::{ProbeAcc, RemoteClock};
use crate::util::units::human_ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The probes' share of the server's CPU above which the report warns (their cost is then
/// part of what the client measured).
pub const COST_WARN_SHARE: f64 = 0.03;

/// The kernel's phases, which follow a request from the client's write to the response's
/// arrival at the client: `socket`, `handle` and `return` span the client's write + wait
/// (with `send` before them, per request; `last_return` is a response's last write's;
/// `upstream`, `--server-upstream`'s, lies inside `handle`, and the upstream's own
/// `upstream_socket` and `upstream_handle` inside it).
pub const KERNEL_PHASES: [&str; 8] = [
    "send",
    "socket",
    "handle",
    "upstream",
    "upstream_socket",
    "upstream_handle",
    "return",
    "last_return",
];

/// The phases that add up to the server's share of the client's write + wait.
const EXPLAINING: [&str; 3] = ["socket", "handle", "return"];

/// What the server-side probes measured, as the record keeps it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ServerProbes {
    /// The server's processes and the name of the first.
    pub pids: Vec<u32>,
    /// The name of the first of the server's processes.
    pub process: String,
    /// One request in this many was timed.
    pub sample: u64,
    /// Phase name → its statistics (same keys as the client's phases); histograms in the
    /// record's `histograms` as `server_probe.NAME`.
    pub phases: BTreeMap<String, Stats>,
    /// The phases in the order a request lives them.
    pub order: Vec<String>,
    /// Phase name → what it is, in words.
    pub what: BTreeMap<String, String>,
    /// How much of the client's write + wait the kernel's phases account for (by means,
    /// which add up where percentiles do not); absent when either side saw nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explained: Option<Explained>,
    /// Probe → times it fired during the run.
    pub hits: BTreeMap<String, u64>,
    /// What the probes cost.
    pub cost: Cost,
    /// What the report must say: the server exited, probes that never fired.
    pub notes: Vec<String>,
    /// Probed on the server's host by `reqlife probe` (`run --server-probes-from`): the agent
    /// and the clocks' offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<RemoteClock>,
    /// How the server's side was joined to each request by its bytes (a run here; absent
    /// for the agent's, whose phases are per read and write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joining: Option<Joining>,
    /// Why the tail is slow: each part's share of the time of the joined requests around the
    /// median, above p99 and above p99.9.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tail: Vec<TailShares>,
}

/// The client's write + wait, and the part of it the server's side accounts for.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Explained {
    /// Mean of the client's write + wait (start of its write → the first byte), µs.
    pub client_mean_us: f64,
    /// Sum of the means of the kernel's phases (socket + handle + return), µs.
    pub server_mean_us: f64,
    /// server / client (1.0: all of it).
    pub share: f64,
    /// client − server, µs: the client's own send, the scheduler, the unknown.
    pub left_us: f64,
}

/// What the probes cost.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cost {
    /// A uprobe hit (on a `push`, how most functions begin; on an instruction the kernel
    /// must single-step) and a tracepoint hit, ns, measured at the start of the run. The CPU
    /// below counts each uprobe hit at the first.
    pub uprobe_hit_ns: Option<f64>,
    /// A uprobe hit on an instruction the kernel must single-step, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uprobe_stepped_hit_ns: Option<f64>,
    /// A tracepoint hit, ns.
    pub tracepoint_hit_ns: Option<f64>,
    /// The lowest and highest of the calibration's rounds of a uprobe hit, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uprobe_hit_range_ns: Option<[f64; 2]>,
    /// The same of a tracepoint hit, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracepoint_hit_range_ns: Option<[f64; 2]>,
    /// bpftrace's own CPU (reading the kernel's events out), seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpftrace_cpu_s: Option<f64>,
    /// reqlife's own programs' runs, as the kernel counted them (a tracepoint hit is then
    /// their mean run time, and the CPU below their run time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_runs: Option<u64>,
    /// Counted over the run's first this many seconds (the rest by its events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub programs_sample_s: Option<f64>,
    /// Hits × their cost, seconds of CPU.
    pub probe_cpu_s: Option<f64>,
    /// The server's processes' CPU time during the run, seconds.
    pub server_cpu_s: Option<f64>,
    /// probe_cpu_s / server_cpu_s.
    pub share_of_server_cpu: Option<f64>,
    /// `--server-probes-cost`: the requests of the connections the probes followed against
    /// those of the others, at the same load: what the probes cost the requests they measure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<crate::recorder::join::halves::MeasuredCost>,
}

pub(super) fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

impl ServerProbes {
    /// The figures of `acc`, beside the client's `phases` (for the share explained).
    pub fn of(acc: &ProbeAcc, client: &BTreeMap<Phase, Stats>) -> ServerProbes {
        // A joined run's phases that no request had (`last_return` where every response
        // took one write) are left out.
        let shown =
            |p: &&crate::recorder::probes::ProbedPhase| acc.joined.is_none() || !p.hist.is_empty();
        let phases: BTreeMap<String, Stats> = acc
            .phases
            .iter()
            .filter(shown)
            .map(|p| (p.name.clone(), Stats::of(&p.hist)))
            .collect();
        let joined = acc.joined.as_deref();
        let explained = match joined {
            Some(j) => explained_per_request(j),
            None => explained(&phases, client),
        };
        let probe_cpu_s = acc.probe_cpu_s();
        let server_cpu_s = acc.cost.server_cpu_s;
        let share = match (probe_cpu_s, server_cpu_s) {
            (Some(p), Some(s)) if s > 0.0 => Some(round3(p / s * 1000.0) / 1000.0),
            _ => None,
        };
        ServerProbes {
            pids: acc.pids.clone(),
            process: acc.process.clone(),
            sample: acc.sample,
            order: acc
                .phases
                .iter()
                .filter(shown)
                .map(|p| p.name.clone())
                .collect(),
            what: acc
                .phases
                .iter()
                .filter(shown)
                .map(|p| (p.name.clone(), p.what.clone()))
                .collect(),
            phases,
            explained,
            hits: acc.hits.iter().cloned().collect(),
            cost: Cost {
                uprobe_hit_ns: acc.cost.uprobe_hit_ns.map(round3),
                uprobe_hit_range_ns: acc.cost.uprobe_hit_range_ns.map(|r| r.map(round3)),
                tracepoint_hit_range_ns: acc.cost.tracepoint_hit_range_ns.map(|r| r.map(round3)),
                bpftrace_cpu_s: acc.cost.bpftrace_cpu_s.map(|v| round3(v * 1000.0) / 1000.0),
                uprobe_stepped_hit_ns: acc.cost.uprobe_stepped_hit_ns.map(round3),
                tracepoint_hit_ns: acc.cost.tracepoint_hit_ns.map(round3),
                program_runs: acc.cost.program_runs,
                programs_sample_s: acc.cost.programs_sample_s.map(round3),
                probe_cpu_s: probe_cpu_s.map(|v| round3(v * 1000.0) / 1000.0),
                server_cpu_s: server_cpu_s.map(|v| round3(v * 1000.0) / 1000.0),
                share_of_server_cpu: share,
                measured: joined.and_then(|j| j.cost.clone()),
            },
            notes: acc.notes.clone(),
            remote: acc.remote.clone(),
            joining: joined.map(|j| joining(acc, j)),
            tail: joined.map_or(Vec::new(), |j| j.tail.table()),
        }
    }

    /// The warnings these figures call for: probes that cost the server more than
    /// [`COST_WARN_SHARE`] of its CPU, and each note.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(share) = self
            .cost
            .share_of_server_cpu
            .filter(|s| *s > COST_WARN_SHARE)
        {
            // A ratio, not a share of the server's own time: with the client on this host,
            // some hits run on its side (loopback delivers on the sender's core: the server
            // socket's arrivals in the client's sends).
            let here = if self.remote.is_none() {
                " (with the client on this host, some of it on the client's side)"
            } else {
                ""
            };
            out.push(format!(
                "the server's probes cost CPU time about {:.1}% of the server's own{here}: its \
                 latency measured here includes them (--server-sample N probes one request in N)",
                share * 100.0
            ));
        }
        out.extend(self.notes.iter().map(|n| format!("server probes: {n}")));
        if let Some(j) = &self.joining {
            out.extend(j.warnings(self.sample));
        }
        out
    }
}

/// The clocks by the kept requests' four stamps and what their events took, for the report's
/// line of the agent.
fn per_request(p: &crate::recorder::join::remote::PerRequest) -> String {
    let Some((m, lo, hi)) = p
        .offset_median_us
        .zip(p.offset_p10_us)
        .zip(p.offset_p90_us)
        .map(|((m, lo), hi)| (m, lo, hi))
    else {
        return String::new();
    };
    format!(
        "; by the four stamps of {} kept requests {m:+.1} µs (p10 {lo:+.1}, p90 {hi:+.1}), \
         their events {} bytes in {} pulls",
        p.count, p.events_bytes, p.pulls
    )
}

/// Microseconds in human units (`1.23us`).
fn human_us(us: f64) -> String {
    human_ns(us * 1000.0)
}

/// The rows a report shows: the client's write and wait and the kernel's phases, then the
/// phases between the server's functions; (name, figures).
pub type ProbeRows<'a> = (Vec<(String, &'a Stats)>, Vec<(String, &'a Stats)>);

impl ServerProbes {
    /// The table's title: the server, and how many requests were timed.
    pub fn title(&self) -> String {
        let served: &[u32] = match &self.joining {
            Some(j) if !j.served_by.is_empty() => &j.served_by,
            _ => &self.pids,
        };
        let pids: Vec<String> = served.iter().map(u32::to_string).collect();
        let mut drawn = match self.sample {
            1 => String::new(),
            n => format!(" (one request in {n} followed)"),
        };
        if self.cost.measured.is_some() {
            drawn.push_str(" (half of the connections followed: --server-probes-cost)");
        }
        if self
            .remote
            .as_ref()
            .is_some_and(|r| r.per_request.is_some())
        {
            drawn.push_str(" (those kept or logged), the table per read and write");
        }
        let sampled = match (&self.joining, self.sample) {
            (Some(j), _) => format!(
                "{} of {} requests joined by their bytes{drawn}",
                j.joined, j.requests
            ),
            (None, 1) => "per read and write (every request)".to_string(),
            (None, n) => format!("per read and write (one request in {n})"),
        };
        let host = match &self.remote {
            Some(r) => format!(
                " on {} (reqlife probe; its clock {:+.1} µs from ours, within {:.1} µs{})",
                r.agent,
                r.offset_us,
                r.rtt_us / 2.0,
                r.per_request.as_ref().map_or(String::new(), per_request)
            ),
            None => String::new(),
        };
        format!(
            "The server's side, probed: {} (pid {}){host}, {sampled}",
            self.process,
            pids.join(", ")
        )
    }

    /// The rows of the table, beside the client's phases `client`.
    pub fn rows<'a>(&'a self, client: &'a BTreeMap<Phase, Stats>) -> ProbeRows<'a> {
        let mut kernel: Vec<(String, &Stats)> = Vec::new();
        for (phase, name) in [(Phase::Write, "client write"), (Phase::Wait, "client wait")] {
            if let Some(st) = client.get(&phase) {
                kernel.push((name.to_string(), st));
            }
        }
        let mut functions = Vec::new();
        // The kernel's in a request's order (the call upstream inside the read → write).
        let mut order: Vec<&String> = self.order.iter().collect();
        order.sort_by_key(|n| KERNEL_PHASES.iter().position(|k| k == n));
        for name in order {
            if let (Some(st), Some(what)) = (self.phases.get(name), self.what.get(name)) {
                if st.count == 0 {
                    continue;
                }
                match KERNEL_PHASES.contains(&name.as_str()) {
                    true => kernel.push((format!("server: {what}"), st)),
                    false => functions.push((format!("server fn: {what}{}", self.after(name)), st)),
                }
            }
        }
        (kernel, functions)
    }

    /// A function phase's mark when it ended after the response's write had begun in most
    /// of the joined requests (it runs after the response was sent: not within the client's
    /// wait), else nothing.
    fn after(&self, name: &str) -> &'static str {
        match &self.joining {
            Some(j) if j.after_write.get(name).is_some_and(|n| n * 2 > j.joined) => {
                " (ends after the response's write)"
            }
            _ => "",
        }
    }

    /// How much of the client's write + wait the kernel's phases account for, in words.
    pub fn explained_line(&self) -> String {
        match &self.explained {
            Some(e) => format!(
                "the server's side accounts for {:.1}% of the client's write+wait (means: {} of {}); \
                 left {}: the client's own send, the scheduler, the unknown",
                e.share * 100.0,
                human_us(e.server_mean_us),
                human_us(e.client_mean_us),
                human_us(e.left_us)
            ),
            None => "the server's side accounts for no share of the client's write+wait: one of \
                     them saw no request"
                .into(),
        }
    }

    /// What the probes cost, in words: their hits, a hit's cost, their CPU against the
    /// server's; and, with function phases, that each holds about one hit.
    pub fn cost_lines(&self) -> Vec<String> {
        let hits: u64 = self
            .hits
            .iter()
            .filter(|(n, _)| !n.starts_with("calibration"))
            .map(|(_, n)| n)
            .sum();
        let c = &self.cost;
        let ns = |v: Option<f64>| match v {
            Some(v) => format!("{v:.0} ns"),
            None => "below this machine's noise".to_string(),
        };
        let measured = c.uprobe_hit_ns.is_some()
            || c.uprobe_stepped_hit_ns.is_some()
            || c.tracepoint_hit_ns.is_some()
            || c.tracepoint_hit_range_ns.is_some();
        let each = if let (Some(runs), Some(each)) = (c.program_runs, c.tracepoint_hit_ns) {
            format!(
                " (reqlife's own programs: about {runs} runs, {each:.0} ns each on average, as \
                 the kernel counted them over the first {:.1} s)",
                c.programs_sample_s.unwrap_or(0.0)
            )
        } else if measured {
            format!(
                " (measured here: a uprobe hit {}, {} where the kernel single-steps; a \
                 tracepoint hit {})",
                ns(c.uprobe_hit_ns),
                ns(c.uprobe_stepped_hit_ns),
                ns(c.tracepoint_hit_ns)
            )
        } else {
            String::new()
        };
        let share = match (c.probe_cpu_s, c.server_cpu_s, c.share_of_server_cpu) {
            (Some(pc), Some(sc), Some(sh)) => format!(
                ": {pc:.3} s of CPU, {:.1}% of the server's {sc:.2} s",
                sh * 100.0
            ),
            _ if measured && hits > 0 => {
                ": their CPU not known (a hit's cost did not stand out of this machine's \
                 noise; run again on a quieter machine)"
                    .to_string()
            }
            _ => String::new(),
        };
        let mut out = vec![format!("probes: {hits} hits{each}{share}")];
        out.extend(
            c.measured
                .as_ref()
                .map(crate::recorder::join::halves::MeasuredCost::line),
        );
        if self
            .order
            .iter()
            .any(|n| !KERNEL_PHASES.contains(&n.as_str()))
        {
            out.push(
                "(a function phase holds about one uprobe hit of its own: the trap's cost lands \
                 between the two stamps)"
                    .into(),
            );
        }
        out
    }
}

/// The server's share of the client's write + wait, per request: over the joined requests,
/// the sum of their socket, handle and return against the sum of their write + wait (the
/// same requests on both sides).
fn explained_per_request(j: &Joined) -> Option<Explained> {
    let (n, sums) = j.tail.sums();
    if n == 0 {
        return None;
    }
    let names = crate::recorder::join::tail::part_names();
    let part = |name: &str| {
        names
            .iter()
            .position(|p| p == name)
            .map_or(0.0, |i| sums[i])
    };
    let server: f64 = [
        "server: socket",
        "server: handle",
        "server: upstream",
        "server: return",
    ]
    .iter()
    .map(|p| part(p))
    .sum();
    let client = server + part("send") + part("wait left");
    if client <= 0.0 {
        return None;
    }
    let per = |ns: f64| ns / n as f64 / 1e3;
    Some(Explained {
        client_mean_us: round3(per(client)),
        server_mean_us: round3(per(server)),
        share: round3(server / client * 1000.0) / 1000.0,
        left_us: round3(per(client - server)),
    })
}

/// The kernel's phases against the client's write + wait, by means.
fn explained(
    phases: &BTreeMap<String, Stats>,
    client: &BTreeMap<Phase, Stats>,
) -> Option<Explained> {
    let mean = |p: Phase| client.get(&p).filter(|s| s.count > 0)?.mean_us;
    let client_mean_us = mean(Phase::Write)? + mean(Phase::Wait)?;
    // The server's socket and its read to write; the way back to the client when the
    // client's socket is on the server's host (a generator elsewhere: the network's, left).
    let mut server_mean_us = 0.0;
    for name in EXPLAINING {
        match phases
            .get(name)
            .filter(|s| s.count > 0)
            .and_then(|s| s.mean_us)
        {
            Some(mean) => server_mean_us += mean,
            None if name == "return" => {}
            None => return None,
        }
    }
    if client_mean_us <= 0.0 {
        return None;
    }
    Some(Explained {
        client_mean_us: round3(client_mean_us),
        server_mean_us: round3(server_mean_us),
        share: round3(server_mean_us / client_mean_us * 1000.0) / 1000.0,
        left_us: round3(client_mean_us - server_mean_us),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::probes::bucket_key;

    fn stats(mean: f64, count: u64) -> Stats {
        Stats {
            count,
            mean_us: Some(mean),
            ..Stats::default()
        }
    }

    #[test]
    fn the_kernels_phases_explain_a_share_of_write_and_wait() {
        let mut server = BTreeMap::new();
        for (name, mean) in [("socket", 10.0), ("handle", 70.0), ("return", 10.0)] {
            server.insert(name.to_string(), stats(mean, 5));
        }
        let client = BTreeMap::from([(Phase::Write, stats(5.0, 5)), (Phase::Wait, stats(95.0, 5))]);
        let e = explained(&server, &client).unwrap();
        assert_eq!(
            (e.client_mean_us, e.server_mean_us, e.share, e.left_us),
            (100.0, 90.0, 0.9, 10.0)
        );
        // The way back unseen (a client on another host): the rest explains what it can.
        server.insert("return".into(), stats(0.0, 0));
        assert_eq!(explained(&server, &client).unwrap().server_mean_us, 80.0);
        // The server's socket unseen: nothing is explained.
        server.insert("socket".into(), stats(0.0, 0));
        assert_eq!(explained(&server, &client), None);
    }

    #[test]
    fn costs_over_the_bar_and_notes_are_warned() {
        let phases = [("socket".to_string(), "in the socket".to_string())];
        let probes = [("kernel:a".to_string(), false), ("fn:f".to_string(), true)];
        let mut acc = ProbeAcc::new(vec![7], "srv".into(), 1, &phases, &probes);
        acc.add_tick(Some(0), &[(0, bucket_key(20_000), 4)]);
        acc.hits = vec![("kernel:a".into(), 1_000_000), ("fn:f".into(), 100_000)];
        acc.cost.uprobe_hit_ns = Some(2_000.0);
        acc.cost.tracepoint_hit_ns = Some(100.0);
        acc.cost.server_cpu_s = Some(5.0);
        acc.notes
            .push("the server (pid 7) exited 1.00 s into the run".into());
        let f = ServerProbes::of(&acc, &BTreeMap::new());
        // 1e6 × 100 ns + 1e5 × 2 µs = 0.3 s of 5 s: 6%.
        assert_eq!(f.cost.probe_cpu_s, Some(0.3));
        assert_eq!(f.cost.share_of_server_cpu, Some(0.06));
        assert_eq!(f.phases["socket"].count, 4);
        let w = f.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("6.0% of the server's own"), "{w:?}");
        assert!(w[0].contains("some of it on the client's side"), "{w:?}");
        assert_eq!(f.explained, None);
    }
}
