//! The record's figures of the server's side as probes measured it (`summary.server_probes`):
//! each probed phase's statistics, how much of the client's time from the start of its write
//! to the first byte they account for, the probes' hits and what they cost.

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
/// (with `send` before them, per request; `last_return` is a response's last write's).
pub const KERNEL_PHASES: [&str; 5] = ["send", "socket", "handle", "return", "last_return"];

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

/// How the server's side was joined to the requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Joining {
    /// Recorded requests handed to the joiner.
    pub requests: u64,
    /// Of those, the requests joined (their server phases measured).
    pub joined: u64,
    /// The others, by why (`failed`, `not_sampled`, `connection_not_seen`, `no_arrival`,
    /// `no_read`, `no_write`, `late`, `no_connection`).
    pub unjoined: BTreeMap<String, u64>,
    /// Requests the joiner could not take (it fell behind the workers).
    pub dropped: u64,
    /// Joined requests whose server read carried other requests too (pipelining, HTTP/2).
    pub shared_read: u64,
    /// Joined requests whose response took several writes.
    pub several_writes: u64,
    /// Of those, the ones whose last write reached the client more than 1 ms after it was
    /// written (held in the server's send queue: Nagle's algorithm until the client's
    /// delayed ACK), and their mean delay, µs.
    pub held_back: u64,
    /// Their mean delay, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_back_mean_us: Option<f64>,
    /// Function phase → joined requests where it ended after the response's first write
    /// began (the function runs after the response was sent).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub after_write: BTreeMap<String, u64>,
    /// Events the kernel dropped (bpftrace's buffers were full).
    pub lost_events: u64,
    /// Events of the port's connections that are not reqlife's (the server's own to itself,
    /// others'), counted apart.
    pub other_events: u64,
    /// Function hits on threads that read none of reqlife's connections.
    pub stray_hits: u64,
    /// The server's processes that read or wrote reqlife's connections.
    pub served_by: Vec<u32>,
    /// The kernel's events seen: arrivals, reads, writes, the client's arrivals, function
    /// hits.
    pub events: [u64; 5],
}

impl Joining {
    /// What the report must say of the join: the requests left without server phases and
    /// why, responses held back in the server's send queue, functions that ran after the
    /// response went, events dropped or left out.
    pub fn warnings(&self, sample: u64) -> Vec<String> {
        let mut out = Vec::new();
        let missing: u64 = self
            .unjoined
            .iter()
            .filter(|(why, _)| !matches!(why.as_str(), "failed" | "not_sampled"))
            .map(|(_, n)| n)
            .sum();
        if self.requests > 0 && missing * 20 > self.requests {
            let why: Vec<String> = self
                .unjoined
                .iter()
                .filter(|(w, _)| !matches!(w.as_str(), "failed" | "not_sampled"))
                .map(|(w, n)| format!("{n} {}", w.replace('_', " ")))
                .collect();
            out.push(format!(
                "server probes: {missing} of {} requests have no server phases ({})",
                self.requests,
                why.join(", ")
            ));
        }
        if self.events[0] > 0 && self.events[1] == 0 {
            out.push(
                "server probes: reqlife's requests arrived in the server's sockets but no read of them was seen: the connections are served by reads the kernel's probes do not see (io_uring, or a splice)"
                    .into(),
            );
        }
        if self.held_back > 0 {
            out.push(format!(
                "server probes: {} responses came in several writes and their last write reached the client {} after it was written (mean): held in the server's send queue (Nagle's algorithm, until the client's delayed ACK); the client's read is that wait",
                self.held_back,
                human_us(self.held_back_mean_us.unwrap_or(0.0))
            ));
        }
        for (phase, n) in &self.after_write {
            if self.joined > 0 && *n * 2 > self.joined {
                out.push(format!(
                    "server probes: {phase} ended after the response's write began in {n} of {} requests: that function runs after the response was sent, outside the client's wait",
                    self.joined
                ));
            }
        }
        if self.lost_events > 0 {
            out.push(format!(
                "server probes: the kernel dropped {} events (bpftrace's buffers were full): --server-sample N follows one request in N",
                self.lost_events
            ));
        }
        if self.dropped > 0 {
            out.push(format!(
                "server probes: {} requests could not be joined (the joiner fell behind the load){}",
                self.dropped,
                if sample > 1 { "" } else { ": --server-sample N follows one in N" }
            ));
        }
        out
    }

    /// The share of the requests joined (0 when none was handed over).
    pub fn share(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.joined as f64 / self.requests as f64
        }
    }
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
    /// Hits × their cost, seconds of CPU.
    pub probe_cpu_s: Option<f64>,
    /// The server's processes' CPU time during the run, seconds.
    pub server_cpu_s: Option<f64>,
    /// probe_cpu_s / server_cpu_s.
    pub share_of_server_cpu: Option<f64>,
}

fn round3(v: f64) -> f64 {
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
                probe_cpu_s: probe_cpu_s.map(|v| round3(v * 1000.0) / 1000.0),
                server_cpu_s: server_cpu_s.map(|v| round3(v * 1000.0) / 1000.0),
                share_of_server_cpu: share,
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
            out.push(format!(
                "the server's probes took about {:.1}% of its CPU: its latency measured here \
                 includes them (--server-sample N probes one request in N)",
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
        let drawn = match self.sample {
            1 => String::new(),
            n => format!(" (one request in {n} followed)"),
        };
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
                " on {} (reqlife probe; its clock {:+.1} µs from ours, within {:.1} µs)",
                r.agent,
                r.offset_us,
                r.rtt_us / 2.0
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
        for name in &self.order {
            if let (Some(st), Some(what)) = (self.phases.get(name), self.what.get(name)) {
                if st.count == 0 {
                    continue;
                }
                match KERNEL_PHASES.contains(&name.as_str()) {
                    true => kernel.push((format!("server: {what}"), st)),
                    false => functions.push((format!("server fn: {what}"), st)),
                }
            }
        }
        (kernel, functions)
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
        let each = match (
            c.uprobe_hit_ns,
            c.uprobe_stepped_hit_ns,
            c.tracepoint_hit_ns,
        ) {
            (Some(u), Some(s), Some(t)) => format!(
                " (measured here: a uprobe hit {u:.0} ns, {s:.0} ns where the kernel \
                 single-steps; a tracepoint hit {t:.0} ns)"
            ),
            _ => String::new(),
        };
        let share = match (c.probe_cpu_s, c.server_cpu_s, c.share_of_server_cpu) {
            (Some(pc), Some(sc), Some(sh)) => format!(
                ": {pc:.3} s of CPU, {:.1}% of the server's {sc:.2} s",
                sh * 100.0
            ),
            _ => String::new(),
        };
        let mut out = vec![format!("probes: {hits} hits{each}{share}")];
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

/// How the join went, for the record.
fn joining(acc: &ProbeAcc, j: &Joined) -> Joining {
    let c = &j.counts;
    let name = |i: usize| acc.phases.get(i).map_or(i.to_string(), |p| p.name.clone());
    Joining {
        requests: c.requests,
        joined: c.joined,
        unjoined: c
            .unjoined
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        dropped: c.dropped,
        shared_read: c.shared_read,
        several_writes: c.several_writes,
        held_back: c.held_back,
        held_back_mean_us: (c.held_back > 0)
            .then(|| round3(c.held_back_ns as f64 / c.held_back as f64 / 1e3)),
        after_write: c.after_write.iter().map(|(i, n)| (name(*i), *n)).collect(),
        lost_events: c.lost_events.max(acc.lost_events),
        other_events: c.others.max(acc.others),
        stray_hits: c.stray_hits,
        served_by: j.pids.iter().copied().collect(),
        events: c.events,
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
    let server: f64 = ["server: socket", "server: handle", "server: return"]
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
        assert!(w[0].contains("6.0% of its CPU"));
        assert_eq!(f.explained, None);
    }

    #[test]
    fn the_joins_warnings_name_each_cause_in_one_sentence() {
        let mut j = Joining {
            requests: 100,
            joined: 80,
            held_back: 3,
            held_back_mean_us: Some(40_000.0),
            lost_events: 7,
            dropped: 2,
            events: [100, 0, 100, 100, 0],
            ..Joining::default()
        };
        j.unjoined.insert("no_read".into(), 15);
        j.unjoined.insert("not_sampled".into(), 5);
        j.after_write.insert("fn:a->b".into(), 70);
        let w = j.warnings(1);
        let has = |s: &str| w.iter().any(|l| l.contains(s));
        assert!(
            has("15 of 100 requests have no server phases (15 no read)"),
            "{w:?}"
        );
        assert!(has("no read of them was seen"), "{w:?}");
        assert!(has("3 responses came in several writes"), "{w:?}");
        assert!(
            has("fn:a->b ended after the response's write began in 70 of 80"),
            "{w:?}"
        );
        assert!(has("dropped 7 events"), "{w:?}");
        assert!(has("2 requests could not be joined"), "{w:?}");
        // Words apart by one space: no line's wrapping left in a sentence.
        for l in &w {
            assert!(!l.contains("  "), "{l:?}");
        }
        // Under the bars: no warning.
        let quiet = Joining {
            requests: 100,
            joined: 96,
            events: [100, 100, 100, 100, 0],
            ..Joining::default()
        };
        assert_eq!(quiet.warnings(1), Vec::<String>::new());
    }
}
