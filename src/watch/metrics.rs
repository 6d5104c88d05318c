//! `--metrics-addr`: the run's figures for Prometheus while it runs, in the OpenMetrics text
//! format, on a tiny HTTP server of its own thread (`GET /metrics`).
//!
//! The exporter reads only what the run's collector gives as each interval is final (the
//! merged [`IntervalSnapshot`]s, sent over a channel that never blocks): never the workers.
//! From them it keeps counters over the whole run (requests, responses by status, errors by
//! kind, bytes), gauges of the last interval (achieved and offered rate, schedule lag p99,
//! the busiest worker's CPU) and, per phase, a cumulative histogram in fixed log buckets
//! ([`BOUNDS_NS`]: the Renard R20 series, 20 per decade from 1 µs to 100 s, each bucket at
//! most 14.3% wider than the one below), filled from the interval's HdrHistograms. A
//! `histogram_quantile` over them lands in the same bucket as the exact quantile, so it is
//! within one bucket's width (≤ 14.3%, a few % with linear interpolation in practice).

mod buckets;
mod exporter;
mod exposition;

use crate::model::{ErrorKind, LoadModel, Phase, Schedule, Segment};
use crate::plan::RunPlan;
use crate::recorder::probes::PREFIX as PROBE_PREFIX;
use crate::recorder::{hist, IntervalSnapshot};
use buckets::Buckets;
pub use buckets::{seconds, BOUNDS_NS, BUCKETS};
pub use exporter::Exporter;
use exposition::{escape, Exposition};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// What one level of the run offers (a sweep or a scenario has several, one after another).
#[derive(Debug, Clone)]
struct Level {
    interval: Duration,
    /// An open loop's schedule (the whole plan's), and this process's share of it.
    schedule: Option<Schedule>,
    share: f64,
    connections: usize,
    /// The request names of a scenario or target list (by slot).
    names: Vec<String>,
}

impl Level {
    fn of(plan: &RunPlan) -> Level {
        let schedule = match &plan.load {
            LoadModel::Open { schedule, .. } => Some(schedule.clone()),
            _ => None,
        };
        Level {
            interval: plan.interval,
            schedule,
            share: 1.0 / plan.segment.count.max(1) as f64,
            connections: plan.local_connections(),
            names: plan
                .workload
                .as_ref()
                .map(|w| w.names.clone())
                .unwrap_or_default(),
        }
    }

    /// The offered rate (req/s, this process's share) in the middle of interval `index`.
    fn offered(&self, index: u64) -> Option<f64> {
        let t = self.interval.as_secs_f64() * (index as f64 + 0.5);
        let rate = match self.schedule.as_ref()? {
            Schedule::Constant { rate } => *rate,
            Schedule::Stages(stages) => {
                let mut from = 0.0;
                let mut rate = 0.0;
                for s in stages {
                    let d = s.duration.as_secs_f64();
                    if t < from + d {
                        let f = if d > 0.0 { (t - from) / d } else { 1.0 };
                        rate = s.from_rps + (s.to_rps - s.from_rps) * f;
                        break;
                    }
                    from += d;
                }
                rate
            }
        };
        Some(rate * self.share)
    }
}

/// The gauges of the last interval.
#[derive(Debug, Clone, Default)]
struct Last {
    index: u64,
    achieved: f64,
    offered: Option<f64>,
    lag_p99_ns: Option<u64>,
    busy: Option<f64>,
}

/// What the exporter knows: the run so far.
#[derive(Debug, Clone)]
pub struct Metrics {
    /// Labels on every series (`segment="2/3"`), possibly empty.
    labels: String,
    requests: u64,
    ok: u64,
    errors: [u64; ErrorKind::ALL.len()],
    status: BTreeMap<u16, u64>,
    bytes_read: u64,
    bytes_written: u64,
    connections_opened: u64,
    phases: Vec<Option<Buckets>>,
    /// Per request name: requests, errors, and the total's buckets.
    by_request: BTreeMap<String, (u64, u64, Buckets)>,
    level: Option<Level>,
    last: Option<Last>,
    intervals: u64,
    running: bool,
    /// The server's phases from probes (`--server-probes`), by name, in the order first seen.
    probed: Vec<(String, Buckets)>,
}

impl Metrics {
    /// Nothing measured yet; `segment`: this process's part of a segmented run.
    pub fn new(segment: Option<Segment>) -> Self {
        let labels = match segment {
            Some(s) if s.count > 1 => format!("segment=\"{}/{}\"", s.index + 1, s.count),
            _ => String::new(),
        };
        Metrics {
            labels,
            requests: 0,
            ok: 0,
            errors: [0; ErrorKind::ALL.len()],
            status: BTreeMap::new(),
            bytes_read: 0,
            bytes_written: 0,
            connections_opened: 0,
            phases: Phase::ALL.iter().map(|_| None).collect(),
            by_request: BTreeMap::new(),
            level: None,
            last: None,
            intervals: 0,
            running: false,
            probed: Vec::new(),
        }
    }

    /// A level of the run starts (its gauges replace the previous level's).
    pub fn begin(&mut self, plan: &RunPlan) {
        self.level = Some(Level::of(plan));
        self.last = None;
        self.running = true;
    }

    /// The load has ended.
    pub fn end(&mut self) {
        self.running = false;
    }

    /// Folds in one final interval (or a late part of one) from the collector.
    pub fn add(&mut self, snap: &IntervalSnapshot) {
        let c = &snap.counters;
        self.intervals += 1;
        self.requests += c.requests;
        self.ok += c.ok;
        for (a, b) in self.errors.iter_mut().zip(c.errors.iter()) {
            *a += b;
        }
        for &(code, n) in &snap.status {
            *self.status.entry(code).or_default() += n;
        }
        self.bytes_read += c.bytes_read;
        self.bytes_written += c.bytes_written;
        self.connections_opened += c.connections_opened;
        let mut lag_p99_ns = None;
        for (phase, bytes) in &snap.hists {
            let Ok(h) = hist::decode_bytes(bytes) else {
                continue;
            };
            if *phase == Phase::Lag && !h.is_empty() {
                lag_p99_ns = Some(h.value_at_quantile(0.99));
            }
            let b = self.phases[phase.index()].get_or_insert_with(Buckets::new);
            b.add(&h);
            if *phase == Phase::Total {
                b.add_exemplars(&snap.exemplars, |e| Some(e.total()));
            }
        }
        let names = self.level.as_ref().map(|l| &l.names[..]).unwrap_or(&[]);
        for (slot, counters, hists) in &snap.by_request {
            let Some(name) = names.get(*slot as usize) else {
                continue;
            };
            let (requests, errors, buckets) = self
                .by_request
                .entry(name.clone())
                .or_insert_with(|| (0, 0, Buckets::new()));
            *requests += counters.requests;
            *errors += counters.error_total();
            let total = hists.iter().find(|(p, _)| *p == Phase::Total);
            if let Some(Ok(h)) = total.map(|(_, b)| hist::decode_bytes(b)) {
                buckets.add(&h);
            }
        }
        // The gauges follow the newest interval (a late part of an older one only counts).
        if self.last.as_ref().is_some_and(|l| l.index > snap.index) {
            return;
        }
        let Some(level) = &self.level else { return };
        let secs = level.interval.as_secs_f64().max(1e-9);
        self.last = Some(Last {
            index: snap.index,
            achieved: c.requests as f64 / secs,
            offered: level.offered(snap.index),
            lag_p99_ns,
            busy: snap.busy_max,
        });
    }

    /// Folds in one tick of the server's probes (`--server-probes`): their phases, by name.
    pub fn add_probed(&mut self, snap: &IntervalSnapshot) {
        for (name, bytes) in &snap.server {
            let (Some(phase), Ok(h)) = (name.strip_prefix(PROBE_PREFIX), hist::decode_bytes(bytes))
            else {
                continue;
            };
            match self.probed.iter_mut().find(|(n, _)| n == phase) {
                Some((_, b)) => b.add(&h),
                None => {
                    let mut b = Buckets::new();
                    b.add(&h);
                    self.probed.push((phase.to_string(), b));
                }
            }
        }
    }

    /// Folds in one interval of the server's phases joined to each request (`--server-probes`
    /// here): their histograms, and its traced requests as exemplars of each phase they were
    /// joined in, by their value in it; `names`: the phases by probed index.
    pub fn add_joined(&mut self, snap: &IntervalSnapshot, names: &[String]) {
        self.add_probed(snap);
        for (i, name) in names.iter().enumerate() {
            if let Some((_, b)) = self.probed.iter_mut().find(|(n, _)| n == name) {
                b.add_exemplars(&snap.exemplars, |e| e.probed(i));
            }
        }
    }

    /// The OpenMetrics text exposition (ends with `# EOF`): the counters, the gauges of the
    /// last interval, the latency histograms, then the series by request name.
    pub fn render(&self) -> String {
        let mut x = Exposition {
            out: String::with_capacity(16 * 1024),
            base: &self.labels,
        };
        self.render_counters(&mut x);
        self.render_gauges(&mut x);
        self.render_latency(&mut x);
        self.render_probed(&mut x);
        self.render_by_request(&mut x);
        x.out.push_str("# EOF\n");
        x.out
    }

    /// The counters over the whole run.
    fn render_counters(&self, x: &mut Exposition<'_>) {
        x.counter(
            "reqlife_requests",
            "Requests that ended (a response or an error).",
            self.requests,
        );
        x.family(
            "reqlife_responses",
            "counter",
            "Complete responses, by status code.",
        );
        for (code, n) in &self.status {
            let l = x.labels(&format!("status=\"{code}\""));
            let _ = writeln!(x.out, "reqlife_responses_total{l} {n}");
        }
        x.family(
            "reqlife_errors",
            "counter",
            "Requests that failed, by kind of error.",
        );
        for kind in ErrorKind::ALL {
            let l = x.labels(&format!("kind=\"{}\"", kind.name()));
            let _ = writeln!(
                x.out,
                "reqlife_errors_total{l} {}",
                self.errors[kind.index()]
            );
        }
        x.counter(
            "reqlife_read_bytes",
            "Bytes read from the server.",
            self.bytes_read,
        );
        x.counter(
            "reqlife_written_bytes",
            "Bytes written to the server.",
            self.bytes_written,
        );
        x.counter(
            "reqlife_connections_opened",
            "Connections opened.",
            self.connections_opened,
        );
        x.counter(
            "reqlife_intervals",
            "Intervals (and late parts of one) received from the collector.",
            self.intervals,
        );
    }

    /// The gauges: running or not, the current level's connections, the last interval's
    /// rates, lag and CPU.
    fn render_gauges(&self, x: &mut Exposition<'_>) {
        x.gauge(
            "reqlife_running",
            "1 while the load runs, 0 before and after (--metrics-linger).",
            Some(if self.running { 1.0 } else { 0.0 }),
        );
        let level = self.level.as_ref();
        let last = self.last.as_ref();
        x.gauge(
            "reqlife_connections",
            "Connections the current level holds (this process's share).",
            level.map(|l| l.connections as f64),
        );
        x.gauge(
            "reqlife_offered_rate",
            "Open loop: the rate asked for, requests per second, in the last interval.",
            last.and_then(|l| l.offered),
        );
        x.gauge(
            "reqlife_achieved_rate",
            "Requests that ended per second in the last interval.",
            last.map(|l| l.achieved),
        );
        x.gauge(
            "reqlife_schedule_lag_p99_seconds",
            "Open loop: p99 of the schedule lag (how late requests left) in the last interval.",
            last.and_then(|l| l.lag_p99_ns).map(|ns| ns as f64 / 1e9),
        );
        x.gauge(
            "reqlife_worker_busy_ratio",
            "The busiest worker thread's share of the time on a CPU in the last interval.",
            last.and_then(|l| l.busy),
        );
    }

    /// One cumulative histogram per phase that recorded something.
    fn render_latency(&self, x: &mut Exposition<'_>) {
        x.family(
            "reqlife_latency_seconds",
            "histogram",
            "Latency of each phase of a request, cumulative over the run (phase=\"total\": intended start to done).",
        );
        for phase in Phase::ALL {
            if let Some(b) = &self.phases[phase.index()] {
                let p = format!("phase=\"{}\"", phase.name());
                x.histogram("reqlife_latency_seconds", &p, b);
            }
        }
    }

    /// One cumulative histogram per phase of the server the probes measured.
    fn render_probed(&self, x: &mut Exposition<'_>) {
        if self.probed.is_empty() {
            return;
        }
        x.family(
            "reqlife_server_probe_seconds",
            "histogram",
            "The server's phases from eBPF probes (--server-probes), cumulative over the run.",
        );
        for (name, b) in &self.probed {
            let p = format!("phase=\"{}\"", escape(name));
            x.histogram("reqlife_server_probe_seconds", &p, b);
        }
    }

    /// Requests, errors and the total's histogram by request name (scenarios, target lists),
    /// when requests have names.
    fn render_by_request(&self, x: &mut Exposition<'_>) {
        if self.by_request.is_empty() {
            return;
        }
        x.family(
            "reqlife_request_requests",
            "counter",
            "Requests that ended, by request name (scenarios, target lists).",
        );
        for (name, (n, _, _)) in &self.by_request {
            let l = x.labels(&format!("request=\"{}\"", escape(name)));
            let _ = writeln!(x.out, "reqlife_request_requests_total{l} {n}");
        }
        x.family(
            "reqlife_request_errors",
            "counter",
            "Requests that failed, by request name.",
        );
        for (name, (_, e, _)) in &self.by_request {
            let l = x.labels(&format!("request=\"{}\"", escape(name)));
            let _ = writeln!(x.out, "reqlife_request_errors_total{l} {e}");
        }
        x.family(
            "reqlife_request_latency_seconds",
            "histogram",
            "Latency of the total (intended start to done) by request name, cumulative over the run.",
        );
        for (name, (_, _, b)) in &self.by_request {
            let p = format!("request=\"{}\",phase=\"total\"", escape(name));
            x.histogram("reqlife_request_latency_seconds", &p, b);
        }
    }
}

/// The series names a scrape can hold (for checking queries, e.g. the Grafana dashboard's).
pub const SERIES: &[&str] = &[
    "reqlife_requests_total",
    "reqlife_responses_total",
    "reqlife_errors_total",
    "reqlife_read_bytes_total",
    "reqlife_written_bytes_total",
    "reqlife_connections_opened_total",
    "reqlife_intervals_total",
    "reqlife_running",
    "reqlife_connections",
    "reqlife_offered_rate",
    "reqlife_achieved_rate",
    "reqlife_schedule_lag_p99_seconds",
    "reqlife_worker_busy_ratio",
    "reqlife_latency_seconds_bucket",
    "reqlife_latency_seconds_count",
    "reqlife_latency_seconds_sum",
    "reqlife_request_requests_total",
    "reqlife_request_errors_total",
    "reqlife_request_latency_seconds_bucket",
    "reqlife_request_latency_seconds_count",
    "reqlife_request_latency_seconds_sum",
];

#[cfg(test)]
mod tests;
