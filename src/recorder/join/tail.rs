//! Why the tail is slow: for the joined requests above p99 and above p99.9 of their total
//! (and those around the median), each part's share of their time, the client's phases and
//! the server's together, adding up to 100%.
//!
//! A request's total is tiled by its client phases (lag, queue, connect, TLS, …, write,
//! wait, read); its write + wait holds the server's side, so the parts here are the client's
//! phases but write and wait, then `send` (the client's write to its last byte in the
//! server's socket: the client's send and the network), the server's `socket`, `handle` and
//! `return`, and what is left of write + wait (the client's own wake-up after the bytes
//! arrived, clocks' rounding; it may be a little below 0). Every joined request adds its
//! parts to the bucket of its total (3.1% wide, [`bucket_key`]); the slowest 1% are the
//! buckets from the slowest down until they hold 1% of the requests, the last of them only
//! in part (its sums scaled by the part taken): exact sums but in that one bucket, whose
//! requests' totals are within 3.1% of each other.

use crate::model::Phase;
use crate::recorder::probes::{bucket_key, bucket_value};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The parts that are not client phases, after them. With the server's calls upstream timed
/// (`--server-upstream`), `server: handle` is its own time, without `server: upstream`.
pub const SERVER_PARTS: [&str; 6] = [
    "send",
    "server: socket",
    "server: handle",
    "server: upstream",
    "server: return",
    "wait left",
];

/// The client phases that are parts (those that tile the total, but write and wait).
fn client_parts() -> impl Iterator<Item = Phase> {
    Phase::LIFE
        .into_iter()
        .filter(|p| p.tiles() && !matches!(p, Phase::Write | Phase::Wait))
}

/// The number of parts.
fn parts() -> usize {
    client_parts().count() + SERVER_PARTS.len()
}

/// The parts' names, in order.
pub fn part_names() -> Vec<String> {
    client_parts()
        .map(|p| p.name().to_string())
        .chain(SERVER_PARTS.iter().map(|s| s.to_string()))
        .collect()
}

/// Per bucket of the total: requests, the totals' sum and each part's sum (ns).
#[derive(Debug, Clone, Default)]
pub struct TailAcc {
    buckets: BTreeMap<u64, (u64, f64, Vec<f64>)>,
}

/// A request's parts (ns), in [`part_names`]' order.
pub type Parts = Vec<f64>;

impl TailAcc {
    /// The parts of a request of client phases `d` whose server phases were `send`, `socket`,
    /// `handle`, `ret` (ns), and its call `upstream` inside `handle`, or `None` when its
    /// total or write + wait is missing.
    pub fn parts(
        d: &crate::recorder::Durations,
        [send, socket, handle, ret]: [u64; 4],
        upstream: Option<u64>,
    ) -> Option<(u64, Parts)> {
        let total = d[Phase::Total.index()]?;
        let ww = d[Phase::Write.index()]? + d[Phase::Wait.index()]?;
        let mut out: Parts = client_parts()
            .map(|p| d[p.index()].unwrap_or(0) as f64)
            .collect();
        let server = send + socket + handle + ret;
        let upstream = upstream.unwrap_or(0).min(handle);
        out.extend([
            send as f64,
            socket as f64,
            (handle - upstream) as f64,
            upstream as f64,
            ret as f64,
            ww as f64 - server as f64,
        ]);
        Some((total, out))
    }

    /// Adds one request of `total` ns and its `parts`.
    pub fn add(&mut self, total: u64, parts: &[f64]) {
        let (n, sum, each) = self
            .buckets
            .entry(bucket_key(total))
            .or_insert_with(|| (0, 0.0, vec![0.0; parts.len()]));
        *n += 1;
        *sum += total as f64;
        for (a, b) in each.iter_mut().zip(parts) {
            *a += b;
        }
    }

    /// Requests added and each part's sum over them (ns).
    pub fn sums(&self) -> (u64, Vec<f64>) {
        let mut sums = vec![0.0; parts()];
        for (_, _, each) in self.buckets.values() {
            for (a, b) in sums.iter_mut().zip(each) {
                *a += b;
            }
        }
        (self.count(), sums)
    }

    /// Requests added.
    pub fn count(&self) -> u64 {
        self.buckets.values().map(|(n, _, _)| n).sum()
    }

    /// The shares of the requests ranked from `lo` to `hi` (fractions of the count, by
    /// total, fastest first): whole buckets, and the share of a bucket the edge falls in
    /// (its sums scaled by that share).
    fn shares_between(&self, lo: f64, hi: f64, label: &str) -> Option<TailShares> {
        let n = self.count() as f64;
        let (from, to) = (lo * n, hi * n);
        let mut seen = 0.0;
        let (mut count, mut total, mut first) = (0.0, 0.0, None);
        let mut sums = vec![0.0; parts()];
        for (k, (c, t, each)) in &self.buckets {
            let (a, b) = (seen, seen + *c as f64);
            seen = b;
            let take = (b.min(to) - a.max(from)).max(0.0);
            if take <= 0.0 {
                continue;
            }
            let share = take / *c as f64;
            first.get_or_insert(*k);
            count += take;
            total += t * share;
            for (s, e) in sums.iter_mut().zip(each) {
                *s += e * share;
            }
        }
        if count <= 0.0 || total <= 0.0 {
            return None;
        }
        // A run without calls upstream timed has no `server: upstream` part.
        let shares = part_names()
            .into_iter()
            .zip(&sums)
            .filter(|(name, s)| **s != 0.0 || name != "server: upstream")
            .map(|(name, s)| (name, round4(s / total)))
            .collect();
        Some(TailShares {
            which: label.to_string(),
            requests: count.round() as u64,
            from_us: first.and_then(bucket_value).map_or(0.0, |v| v as f64 / 1e3),
            mean_us: total / count / 1e3,
            shares,
        })
    }

    /// The shares of the requests around the median (ranked p45 to p55 by their total),
    /// of the slowest 1% (above p99) and the slowest 0.1% (above p99.9).
    pub fn table(&self) -> Vec<TailShares> {
        [
            (0.45, 0.55, "p50"),
            (0.99, 1.0, "p99"),
            (0.999, 1.0, "p99.9"),
        ]
        .iter()
        .filter_map(|(lo, hi, label)| self.shares_between(*lo, *hi, label))
        .collect()
    }
}

/// A group's label in the reports' tables: `p45-p55`, `≥ p99`, `≥ p99.9`.
pub fn label(which: &str) -> String {
    match which {
        "p50" => "p45-p55".to_string(),
        w => format!("≥ {w}"),
    }
}

fn round4(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// The shares of one group of requests.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TailShares {
    /// `p50` (the requests around the median: ranked p45 to p55), `p99` (the slowest 1%),
    /// `p99.9` (the slowest 0.1%).
    pub which: String,
    /// How many requests.
    pub requests: u64,
    /// The group's lowest total (its first bucket's middle), µs.
    pub from_us: f64,
    /// Their mean total, µs.
    pub mean_us: f64,
    /// Each part's share of their time (adding up to 1), by name, in [`part_names`]' order in
    /// the report.
    pub shares: BTreeMap<String, f64>,
}
