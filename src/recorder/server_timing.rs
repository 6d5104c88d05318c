//! The server's side of a request's life: one histogram per `Server-Timing` metric name (in
//! the order the server lists them), counts per (name, desc) for metrics used as labels
//! (`level;desc="L1"`), the count of malformed metrics, and the network-and-client overhead
//! `write + wait − server total` of each response. A name or label is allocated once, when first
//! seen; after that, ingesting a response allocates nothing.

use super::hist;
use crate::engine::server_timing;
use hdrhistogram::Histogram;
use std::time::Duration;

/// Most distinct (name, desc) labels kept; later ones are counted under `(other)`.
pub const MAX_LABELS: usize = 256;
/// Most distinct metric names kept; later ones are ignored (and counted as such).
pub const MAX_NAMES: usize = 64;

/// One metric name's figures.
#[derive(Debug, Clone)]
pub struct MetricAcc {
    /// The metric's name as the server gives it.
    pub name: String,
    /// Durations (nanoseconds) of the responses that gave one.
    pub hist: Histogram<u64>,
    /// Responses that listed the metric, with or without a duration.
    pub seen: u64,
    /// Sum of the metric's positions in the header (its mean position orders the table).
    pub position_sum: u64,
}

/// What a thread (or a merge of threads) gathered from `Server-Timing`.
#[derive(Debug, Clone)]
pub struct ServerTimingAcc {
    total_name: String,
    /// Each metric name's figures, in the order first seen.
    pub metrics: Vec<MetricAcc>,
    /// (name index, desc, count).
    pub labels: Vec<(usize, Vec<u8>, u64)>,
    /// Malformed metrics.
    pub invalid: u64,
    /// Metrics dropped past [`MAX_NAMES`].
    pub dropped: u64,
    /// Responses that carried the header.
    pub responses: u64,
    /// write + wait − server total, per response that had both (nanoseconds).
    pub overhead: Histogram<u64>,
}

impl ServerTimingAcc {
    /// `total_name`: the metric that is the server's own total (`--server-total`); a response
    /// without it counts the sum of its durations instead.
    pub fn new(total_name: &str) -> Self {
        ServerTimingAcc {
            total_name: total_name.to_string(),
            metrics: Vec::new(),
            labels: Vec::new(),
            invalid: 0,
            dropped: 0,
            responses: 0,
            overhead: hist::new_interval_hist(),
        }
    }

    fn index_of(&mut self, name: &str) -> Option<usize> {
        if let Some(i) = self.metrics.iter().position(|m| m.name == name) {
            return Some(i);
        }
        if self.metrics.len() >= MAX_NAMES {
            return None;
        }
        self.metrics.push(MetricAcc {
            name: name.to_string(),
            hist: hist::new_interval_hist(),
            seen: 0,
            position_sum: 0,
        });
        Some(self.metrics.len() - 1)
    }

    fn count_label(&mut self, index: usize, desc: server_timing::Desc<'_>) {
        if let Some(l) = self
            .labels
            .iter_mut()
            .find(|(i, d, _)| *i == index && desc.eq_bytes(d))
        {
            l.2 += 1;
            return;
        }
        if self.labels.len() < MAX_LABELS {
            self.labels.push((index, desc.to_vec(), 1));
        } else if let Some(l) = self
            .labels
            .iter_mut()
            .find(|(i, d, _)| *i == index && d == b"(other)")
        {
            l.2 += 1;
        } else {
            self.labels.push((index, b"(other)".to_vec(), 1));
        }
    }

    /// Folds in one response's `Server-Timing` values; `to_first_byte` is the time from the
    /// start of its write to its first byte.
    pub fn ingest(&mut self, value: &[u8], to_first_byte: Option<Duration>) {
        Self::ingest_all(&mut [self], value, to_first_byte);
    }

    /// Folds one response into several accumulators (the run's and the interval's), parsing
    /// the header once.
    pub fn ingest_all(
        accs: &mut [&mut ServerTimingAcc],
        value: &[u8],
        to_first_byte: Option<Duration>,
    ) {
        if value.is_empty() || accs.is_empty() {
            return;
        }
        // Taken out while the accumulators fold (none reads its own), put back below: no copy
        // per response.
        let total_name = std::mem::take(&mut accs[0].total_name);
        let mut total_ms: Option<f64> = None;
        let mut sum_ms = 0.0;
        let mut any_dur = false;
        let mut position = 0u64;
        let mut negative = 0u32;
        let invalid = server_timing::parse(value, |m| {
            for acc in accs.iter_mut() {
                acc.apply(&m, position);
            }
            position += 1;
            negative += u32::from(m.dur_ms.is_some_and(|d| d < 0.0));
            if let Some(d) = m.dur_ms.filter(|d| *d >= 0.0) {
                sum_ms += d;
                any_dur = true;
                if m.name == total_name {
                    total_ms = Some(d);
                }
            }
        });
        accs[0].total_name = total_name;
        let server_total = total_ms.or(any_dur.then_some(sum_ms));
        for acc in accs.iter_mut() {
            acc.responses += 1;
            acc.invalid += u64::from(invalid + negative);
            if let (Some(span), Some(total)) = (to_first_byte, server_total) {
                let overhead = span.as_nanos() as f64 - total * 1e6;
                hist::record(&mut acc.overhead, overhead.max(0.0) as u64);
            }
        }
    }

    /// One metric of a response, at `position` in its header. A metric without a duration
    /// (or with a negative one, counted as malformed by the caller) is seen, never a 0 ms
    /// sample; an empty `desc` is no label.
    fn apply(&mut self, m: &server_timing::Metric<'_>, position: u64) {
        let Some(i) = self.index_of(m.name) else {
            self.dropped += 1;
            return;
        };
        let acc = &mut self.metrics[i];
        acc.seen += 1;
        acc.position_sum += position;
        if let Some(d) = m.dur_ms.filter(|d| *d >= 0.0) {
            hist::record(&mut acc.hist, (d * 1e6).round() as u64);
        }
        if let Some(desc) = m.desc.filter(|d| !d.is_empty()) {
            self.count_label(i, desc);
        }
    }

    /// The metric taken as the server's own total (`--server-total`).
    pub fn total_name(&self) -> &str {
        &self.total_name
    }

    /// Empties the figures, keeping the names seen and every allocation (an interval's
    /// accumulator, reused from interval to interval).
    pub fn reset(&mut self) {
        for m in &mut self.metrics {
            if !m.hist.is_empty() {
                m.hist.reset();
            }
            m.seen = 0;
            m.position_sum = 0;
        }
        for l in &mut self.labels {
            l.2 = 0;
        }
        self.invalid = 0;
        self.dropped = 0;
        self.responses = 0;
        if !self.overhead.is_empty() {
            self.overhead.reset();
        }
    }

    /// A fresh accumulator with the same `--server-total`.
    pub fn empty_like(&self) -> Self {
        ServerTimingAcc::new(&self.total_name)
    }

    /// Each metric's histogram, compressed (for an interval snapshot).
    pub fn encoded(&self) -> Vec<(String, Vec<u8>)> {
        self.metrics
            .iter()
            .filter(|m| !m.hist.is_empty())
            .map(|m| {
                let mut b = hist::encode_bytes(&m.hist);
                b.shrink_to_fit();
                (m.name.clone(), b)
            })
            .collect()
    }

    /// Adds another thread's figures (metrics and labels matched by name).
    pub fn merge(&mut self, other: &ServerTimingAcc) {
        self.invalid += other.invalid;
        self.dropped += other.dropped;
        self.responses += other.responses;
        let _ = self.overhead.add(&other.overhead);
        for m in &other.metrics {
            let Some(i) = self.index_of(&m.name) else {
                self.dropped += m.seen;
                continue;
            };
            let acc = &mut self.metrics[i];
            let _ = acc.hist.add(&m.hist);
            acc.seen += m.seen;
            acc.position_sum += m.position_sum;
        }
        for (i, desc, n) in &other.labels {
            let name = &other.metrics[*i].name;
            if let Some(j) = self.index_of(name) {
                if let Some(l) = self
                    .labels
                    .iter_mut()
                    .find(|(k, d, _)| *k == j && d == desc)
                {
                    l.2 += n;
                } else {
                    self.labels.push((j, desc.clone(), *n));
                }
            }
        }
    }

    /// Metric indices in the order the server lists them (mean position in the header).
    pub fn order(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.metrics.len()).collect();
        let mean = |i: usize| {
            let m = &self.metrics[i];
            m.position_sum as f64 / m.seen.max(1) as f64
        };
        idx.sort_by(|a, b| mean(*a).total_cmp(&mean(*b)));
        idx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_labels_and_overhead() {
        let mut acc = ServerTimingAcc::new("total");
        let wait = Some(Duration::from_micros(100));
        acc.ingest(b"parse;dur=0.003, handler;dur=0.018, total;dur=0.060", wait);
        acc.ingest(b"parse;dur=0.005, handler;dur=0.020, total;dur=0.070", wait);
        acc.ingest(b"level;desc=\"L1\", total;dur=0.05, bad;dur=x", wait);
        acc.ingest(b"level;desc=L2", None);
        acc.ingest(b"", wait); // no header: not a response with Server-Timing
        assert_eq!(acc.responses, 4);
        assert_eq!(acc.invalid, 1);
        let names: Vec<&str> = acc
            .order()
            .iter()
            .map(|&i| acc.metrics[i].name.as_str())
            .collect();
        // `bad;dur=x`: a metric without a duration (and malformed)
        assert_eq!(names, vec!["parse", "level", "handler", "total", "bad"]);
        let total = &acc.metrics.iter().find(|m| m.name == "total").unwrap().hist;
        assert_eq!(total.len(), 3);
        assert!(total.equivalent(total.min(), 50_000)); // 0.05 ms
                                                        // wait − total: 100 − 60, 100 − 70, 100 − 50 µs.
        assert_eq!(acc.overhead.len(), 3);
        assert!(
            (acc.overhead.mean() / 1000.0 - 40.0).abs() < 0.1,
            "{}",
            acc.overhead.mean()
        );
        let labels: Vec<(String, u64)> = acc
            .labels
            .iter()
            .map(|(_, d, n)| (String::from_utf8_lossy(d).into_owned(), *n))
            .collect();
        assert_eq!(labels, vec![("L1".into(), 1), ("L2".into(), 1)]);
    }

    #[test]
    fn without_the_total_metric_the_sum_counts() {
        let mut acc = ServerTimingAcc::new("total");
        acc.ingest(
            b"db;dur=0.030, app;dur=0.020",
            Some(Duration::from_micros(80)),
        );
        // 80 µs − (30 + 20) µs
        assert!((acc.overhead.mean() / 1000.0 - 30.0).abs() < 0.1);
        let mut other = ServerTimingAcc::new("app");
        other.ingest(
            b"db;dur=0.030, app;dur=0.020",
            Some(Duration::from_micros(80)),
        );
        // --server-total app: 80 − 20 µs
        assert!((other.overhead.mean() / 1000.0 - 60.0).abs() < 0.1);
    }

    #[test]
    fn merge_matches_names_and_labels() {
        let mut a = ServerTimingAcc::new("total");
        let mut b = ServerTimingAcc::new("total");
        a.ingest(b"x;dur=1, level;desc=L1", None);
        b.ingest(b"level;desc=L1, y;dur=2", None);
        b.ingest(b"level;desc=L2", None);
        a.merge(&b);
        assert_eq!(a.responses, 3);
        assert_eq!(a.metrics.len(), 3);
        let l1 = a.labels.iter().find(|(_, d, _)| d == b"L1").unwrap();
        assert_eq!(l1.2, 2);
    }

    #[test]
    fn negative_durations_and_escaped_labels() {
        let mut acc = ServerTimingAcc::new("total");
        acc.ingest(
            b"db;dur=-2, app;dur=3, cache;desc=\"a \\\"b\\\"\", x;desc=\"\"",
            Some(Duration::from_millis(5)),
        );
        let db = acc.metrics.iter().find(|m| m.name == "db").unwrap();
        assert_eq!((db.seen, db.hist.len()), (1, 0));
        assert_eq!(acc.invalid, 1);
        // the sum leaves the negative one out: 5 - 3 ms
        assert!((acc.overhead.mean() / 1e6 - 2.0).abs() < 0.01);
        let labels: Vec<&[u8]> = acc.labels.iter().map(|(_, d, _)| &d[..]).collect();
        assert_eq!(labels, vec![&b"a \"b\""[..]]);
    }

    #[test]
    fn labels_are_bounded() {
        let mut acc = ServerTimingAcc::new("total");
        for i in 0..(MAX_LABELS + 10) {
            acc.ingest(format!("k;desc=v{i}").as_bytes(), None);
        }
        assert_eq!(acc.labels.len(), MAX_LABELS + 1);
        assert_eq!(acc.labels.last().unwrap().2, 10);
    }
}
