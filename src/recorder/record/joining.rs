//! How the server's side was joined to the requests (`summary.server_probes.joining`): the
//! requests joined and why the others were not, and what the report must say of it.

use super::probes::round3;
use crate::recorder::join::Joined;
use crate::recorder::probes::ProbeAcc;
use crate::util::units::human_ns;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the server's side was joined to the requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Joining {
    /// Recorded requests handed to the joiner.
    pub requests: u64,
    /// Of those, the requests joined (their server phases measured).
    pub joined: u64,
    /// The others, by why (`failed`, `not_sampled`, `connection_not_seen`, `no_arrival`,
    /// `no_read`, `no_write`, `late`, `no_connection`, `untraced`: of the half of the
    /// connections `--server-probes-cost` leaves untraced).
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
    /// The probes' event maps were read by reqlife from the kernel, in batches (false:
    /// printed by bpftrace as JSON: where the maps were not found).
    #[serde(default)]
    pub maps_read: bool,
    /// The kernel's events came from reqlife's own programs through their ring buffer (the
    /// default plan where the kernel has what they need), not from bpftrace's.
    #[serde(default)]
    pub own_programs: bool,
    /// Ticks whose event map reqlife found full (`BPFTRACE_MAP_KEYS_MAX` events): the
    /// probes' stores past it failed, their events lost.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub maps_full: u64,
    /// Arrivals and reads missing from the probes' output (one began past the end of the
    /// last of its connection seen: bpftrace's reader fell behind).
    #[serde(default)]
    pub missed_events: u64,
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
    /// `--server-upstream`: how the server's calls upstream were tied to the requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upstream: Option<UpstreamJoin>,
}

/// How the server's calls upstream (`--server-upstream`) were tied to the requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct UpstreamJoin {
    /// The server's writes to the client that carried the reply of a call upstream.
    pub events: u64,
    /// Joined requests whose response carried one: their `upstream` phase timed.
    pub calls: u64,
    /// Calls a request's response carried that did not lie inside its read → its write (a
    /// thread that wrote another client's response after reading the reply): not counted.
    pub misplaced: u64,
}

/// Whether requests without server phases for `why` are as the run asked (failed, not
/// drawn, of the untraced half, or on another host neither kept nor logged): no warning.
fn expected(why: &str) -> bool {
    matches!(why, "failed" | "not_sampled" | "untraced" | "not_kept")
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
            .filter(|(why, _)| !expected(why))
            .map(|(_, n)| n)
            .sum();
        if self.requests > 0 && missing * 20 > self.requests {
            let why: Vec<String> = self
                .unjoined
                .iter()
                .filter(|(w, _)| !expected(w))
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
        out.extend(self.events_warnings());
        if self.other_events > 0 {
            out.push(format!(
                "server probes: the port also carried connections that are not reqlife's ({} \
                 events: the server's own to itself, or other clients'): counted apart, in no \
                 request's phases",
                self.other_events
            ));
        }
        out.extend(self.upstream_warning());
        if self.dropped > 0 {
            out.push(format!(
                "server probes: {} requests could not be joined (the joiner fell behind the load){}",
                self.dropped,
                if sample > 1 { "" } else { ": --server-sample N follows one in N" }
            ));
        }
        out
    }

    /// The kernel's events lost on their way: dropped by the kernel, past a full map, or
    /// missing when read.
    fn events_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.lost_events > 0 {
            out.push(format!(
                "server probes: the kernel dropped {} events (bpftrace's buffers were full): --server-sample N follows one request in N",
                self.lost_events
            ));
        }
        if self.maps_full > 0 {
            out.push(format!(
                "server probes: in {} ticks the probes' event map was full when read: the events \
                 past its size were lost and their requests have no server phases; \
                 --server-sample N follows one request in N",
                self.maps_full
            ));
        }
        if self.missed_events > 0 {
            out.push(format!(
                "server probes: {} of the kernel's arrivals and reads were missing from \
                 the probes' output (their reader fell behind); the requests they carried have no \
                 server phases",
                self.missed_events
            ));
        }
        out
    }

    /// `--server-upstream`: the joined requests whose response carried no call, when more
    /// than 5% of them.
    fn upstream_warning(&self) -> Option<String> {
        let u = self.upstream.as_ref()?;
        if self.joined == 0 || u.calls * 20 >= self.joined * 19 {
            return None;
        }
        let misplaced = match u.misplaced {
            0 => String::new(),
            n => {
                format!("; {n} calls lay outside their request's read → write and were not counted")
            }
        };
        Some(format!(
            "server probes: {} of {} joined requests show no call upstream (--server-upstream): \
             their responses carried no reply read from that port on the thread that wrote them \
             (not proxied, an upstream down, or a server that hands the reply to another \
             thread: see docs/server-side.md){misplaced}",
            self.joined - u.calls,
            self.joined,
        ))
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

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// How the join went, for the record.
pub(super) fn joining(acc: &ProbeAcc, j: &Joined) -> Joining {
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
        maps_read: acc.maps_read,
        own_programs: acc.own_programs,
        maps_full: acc.maps_full,
        missed_events: c.missed_events,
        other_events: c.others.max(acc.others),
        stray_hits: c.stray_hits,
        served_by: j.pids.iter().copied().collect(),
        events: c.events,
        upstream: j.upstream.then_some(UpstreamJoin {
            events: c.upstream_events,
            calls: c.upstream_calls,
            misplaced: c.upstream_misplaced,
        }),
    }
}

/// Microseconds in human units (`1.23us`).
fn human_us(us: f64) -> String {
    human_ns(us * 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_joins_warnings_name_each_cause_in_one_sentence() {
        let mut j = Joining {
            requests: 100,
            joined: 80,
            held_back: 3,
            held_back_mean_us: Some(40_000.0),
            lost_events: 7,
            dropped: 2,
            other_events: 40,
            maps_full: 2,
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
        assert!(has("not reqlife's (40 events"), "{w:?}");
        assert!(has("in 2 ticks the probes' event map was full"), "{w:?}");
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
