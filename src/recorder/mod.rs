//! Recording: one [`Recorder`] per worker thread folds [`Sample`]s into an HdrHistogram per
//! phase, counters per status and error kind, and the current interval's [`IntervalSet`].
//! No lock and no allocation per sample, nor at an interval's close: the full set goes to the
//! run's [`collector`], which merges the threads' intervals, compresses them and keeps the
//! bounded [`series::Series`]. At the end the threads' recorders are merged exactly
//! ([`Measured::merge`]) and become a [`record::RunRecord`].

mod accumulators;
pub mod codes;
pub mod collector;
mod counts;
mod error;
pub mod exemplar;
pub mod hdrlog;
pub mod hist;
mod interval;
pub mod join;
pub mod knee;
mod measured;
pub mod merge;
pub mod priority;
pub mod probes;
pub mod record;
pub mod request_log;
pub mod reservoir;
pub mod sends;
pub mod series;
pub mod server_timing;
pub mod spill;
pub mod summary;
mod thread_cpu;

pub use accumulators::{Counters, PhaseHists, RequestAcc};
pub use collector::{IntervalSet, WorkerLink};
pub use counts::Counts;
pub use error::RecordError;
pub(crate) use interval::snapshot;
pub use interval::{EncodedHists, IntervalSnapshot};
pub use measured::Measured;
pub use series::Series;
pub(crate) use thread_cpu::{busy_share, thread_cpu};

use crate::engine::extras::Extras;
use crate::model::{ErrorKind, Phase, Sample};
use accumulators::{durations, Durations};
use hdrhistogram::Histogram;
use std::time::{Duration, Instant};

/// The per-thread recorder.
pub struct Recorder {
    record_from: Instant,
    /// The window's end (shared with the scheduler in a run: it may move earlier).
    record_until: std::sync::Arc<crate::model::WindowEnd>,
    interval: Duration,
    /// Counters, status counts, first errors and tallies: handed over whole in the
    /// [`Measured`].
    counts: Counts,
    /// The connections opened ahead of the load (see [`Recorder::record_connection`]): the
    /// requests' phases are recorded into the current interval only, and the run's histograms
    /// are the sum of the intervals, added up by the collector (one record per phase and
    /// request on the worker, not two).
    hists: PhaseHists,
    /// The interval being recorded.
    current: Option<Box<IntervalSet>>,
    /// Where closed intervals go.
    link: Link,
    /// This thread's CPU time and the wall time at the last close (a worker's only).
    cpu_mark: (Duration, Instant),
    /// Stages: the end of each stage (by intended time) and its own figures.
    segments: Vec<(Instant, Counters, PhaseHists)>,
    /// Bursts: per burst, the time to dispatch all and the time waiting for the answers.
    bursts: Option<BurstHists>,
    /// What the server said of its own time (`Server-Timing`).
    server: server_timing::ServerTimingAcc,
    /// Per request name (`Sample::request`), when the run sends named requests.
    by_request: Vec<RequestAcc>,
    /// A bounded uniform sample of the responses (end time, total latency).
    samples: reservoir::Reservoir,
    /// The earliest send instants, for the arrival test.
    sends: sends::Sends,
    /// Requests sent whose outcome has not come back yet.
    in_flight: u64,
    /// `--log-requests`: this thread's end of the per-request log.
    log: Option<request_log::LogWorker>,
    /// `--server-probes`: where each recorded request goes to meet the server's side (the
    /// joiner writes the per-request log then), and the clocks' reading for its times.
    trails: Option<(join::TrailSink, crate::util::clock::MonoBase)>,
}

/// Where a recorder's closed intervals go.
enum Link {
    /// Merged on the recording thread itself (one-thread tools and tests).
    Inline {
        collector: Box<collector::Collector>,
        spare: Option<Box<IntervalSet>>,
    },
    /// Handed to the run's collector thread.
    Thread(WorkerLink),
}

/// Per-burst histograms: dispatch all, then wait for all (nanoseconds).
#[derive(Debug, Clone)]
pub struct BurstHists {
    /// From the burst's start to its last request written.
    pub dispatch: Histogram<u64>,
    /// From its last request written to its last answer.
    pub wait: Histogram<u64>,
}

impl Recorder {
    /// A recorder that ignores requests intended before `record_from` (the warm-up) and
    /// cuts the series every `interval` from then.
    pub fn new(record_from: Instant, interval: Duration) -> Self {
        Recorder {
            record_from,
            record_until: std::sync::Arc::new(crate::model::WindowEnd::open()),
            interval,
            counts: Counts::default(),
            hists: PhaseHists::new(hist::new_interval_hist),
            current: None,
            link: Link::Inline {
                collector: Box::new(collector::Collector::new(1, record_from, interval)),
                spare: None,
            },
            cpu_mark: (thread_cpu(), Instant::now()),
            segments: Vec::new(),
            bursts: None,
            server: server_timing::ServerTimingAcc::new("total"),
            by_request: Vec::new(),
            samples: reservoir::Reservoir::per_thread(),
            sends: sends::Sends::default(),
            in_flight: 0,
            log: None,
            trails: None,
        }
    }

    /// Hands each recorded request to the joiner of the server's probed phases (which writes
    /// the per-request log then).
    pub fn trails(mut self, sink: Option<join::TrailSink>) -> Self {
        self.trails = sink.map(|s| (s, crate::util::clock::MonoBase::now()));
        self
    }

    /// Writes a row per recorded request to the per-request log (`--log-requests`).
    pub fn request_log(mut self, log: Option<request_log::LogWorker>) -> Self {
        self.log = log;
        self
    }

    /// Keeps the figures of `names` request names apart too (by `Sample::request`).
    pub fn with_requests(mut self, names: usize) -> Self {
        self.by_request = (0..names).map(|_| RequestAcc::new()).collect();
        self
    }

    /// Hands closed intervals to the run's collector thread (instead of merging them here).
    pub fn collector(mut self, link: WorkerLink) -> Self {
        self.link = Link::Thread(link);
        self.cpu_mark = (thread_cpu(), Instant::now());
        self
    }

    /// The `Server-Timing` metric that is the server's own total (`--server-total`).
    pub fn server_total(mut self, name: &str) -> Self {
        self.server = server_timing::ServerTimingAcc::new(name);
        self
    }

    /// Folds one sample in with its response's `Server-Timing` values.
    #[inline]
    pub fn record_with_timing(&mut self, s: &Sample, timing: &[u8]) {
        self.record_response(s, timing, &[]);
    }

    /// Folds one sample in with its response's `Server-Timing` values and, for a streamed
    /// response, the gaps between its events (nanoseconds; `event_gap`, one sample each).
    #[inline]
    pub fn record_response(&mut self, s: &Sample, timing: &[u8], gaps: &[u64]) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let recorded = self.record_timed(s, timing);
        if recorded && s.error.is_none() && !gaps.is_empty() {
            self.record_values(s, Phase::EventGap, gaps);
        }
        if recorded && s.error.is_none() && !timing.is_empty() {
            if let Some(set) = self.current.as_mut() {
                server_timing::ServerTimingAcc::ingest_all(
                    &mut [&mut self.server, &mut set.server],
                    timing,
                    s.stamps.to_first_byte(),
                );
            }
        }
    }

    /// Records one burst's dispatch and wait times.
    pub fn record_burst(&mut self, dispatch: Duration, wait: Duration) {
        let b = self.bursts.get_or_insert_with(|| BurstHists {
            dispatch: hist::new_interval_hist(),
            wait: hist::new_interval_hist(),
        });
        hist::record(&mut b.dispatch, dispatch.as_nanos() as u64);
        hist::record(&mut b.wait, wait.as_nanos() as u64);
    }

    /// Keeps the figures of each stage apart too: a request belongs to the first stage
    /// whose end is after its intended time.
    pub fn with_segments(mut self, ends: &[Instant]) -> Self {
        self.segments = ends
            .iter()
            .map(|&end| {
                (
                    end,
                    Counters::default(),
                    PhaseHists::new(hist::new_interval_hist),
                )
            })
            .collect();
        self
    }

    /// Counts requests that end after the window's `end` as drained: the scheduler's end,
    /// read as each request is recorded (it moves earlier when `--until` ends the run).
    pub fn sharing_end(mut self, end: std::sync::Arc<crate::model::WindowEnd>) -> Self {
        self.record_until = end;
        self
    }

    /// Moves the recorded window to start at `record_from` and end at `until` (an open loop's
    /// window is known once its connections are open).
    pub fn begin(&mut self, record_from: Instant, until: Option<Instant>) {
        // The stages' ends move with the start.
        let shift = record_from.saturating_duration_since(self.record_from);
        for (end, _, _) in &mut self.segments {
            *end += shift;
        }
        self.record_from = record_from;
        self.record_until.set(until);
    }

    /// Records a connection opened ahead of the load (see [`crate::load`]): its connect and
    /// TLS times, and the connection count. It carried no request.
    pub fn record_connection(&mut self, stamps: &crate::model::Timestamps) {
        if !stamps.opened() {
            return;
        }
        self.counts.counters.connections_opened += 1;
        let d = stamps.durations();
        for phase in Phase::OPENING {
            if let Some(ns) = d[phase.index()] {
                hist::record(&mut self.hists.0[phase.index()], ns);
            }
        }
    }

    /// Folds one sample in; false when it falls outside the recorded window.
    #[inline]
    pub fn record(&mut self, s: &Sample) -> bool {
        self.record_timed(s, &[])
    }

    /// Folds one sample in, its response's `Server-Timing` `timing` kept with it if it is one
    /// of the slow requests kept whole.
    #[inline]
    fn record_timed(&mut self, s: &Sample, timing: &[u8]) -> bool {
        if s.stamps.intended < self.record_from {
            return false;
        }
        self.sends.offer(s.stamps.dispatched, self.record_from);
        let end = s.stamps.done.unwrap_or_else(Instant::now);
        let ended = end;
        let drained = self.record_until.get().filter(|until| end > *until);
        let ns = |from: Instant| end.saturating_duration_since(from).as_nanos() as u64;
        self.counts
            .counters
            .ended(s, ns(self.record_from), drained.map(ns));
        // The series and the sample of responses cover the window: a request drained after it
        // counts in its last moment (so the intervals still add up to the run exactly).
        let end = drained.map_or(end, |until| until - Duration::from_nanos(1));
        let d = durations(s);
        if let Some(code) = s.status {
            self.counts.count_status(code);
        }
        if let Some(acc) = self.by_request.get_mut(s.request as usize) {
            acc.add(s, &d);
        }
        if let Some((_, c, h)) = self
            .segments
            .iter_mut()
            .find(|(end, _, _)| s.stamps.intended < *end)
        {
            c.add(s);
            h.record(&d);
        }
        if let Some(total_ns) = d[Phase::Total.index()] {
            let from = self.record_from;
            self.samples.offer(|| {
                let at_us = end.saturating_duration_since(from).as_micros() as u64;
                (at_us, total_ns)
            });
        }
        let index = (end.saturating_duration_since(self.record_from).as_nanos()
            / self.interval.as_nanos().max(1)) as u64;
        if self.current.as_ref().is_none_or(|set| set.index != index) {
            self.roll(index);
        }
        self.trail_or_row(s, &d, timing, index, ended);
        if let Some(set) = self.current.as_mut() {
            set.exemplars.offer(s, &d, timing, self.record_from);
            set.counters.add(s);
            let st = &s.stamps;
            set.record(
                &d,
                st.dispatched == st.intended && st.released == st.intended,
            );
            if let Some(code) = s.status {
                set.count_status(code);
            }
            if !self.by_request.is_empty() && (s.request as usize) < self.by_request.len() {
                let (c, h) = set.request(s.request as usize);
                c.add(s);
                h.record(&d);
            }
        }
        true
    }

    /// Hands the request to the joiner of the server's side (`--server-probes`), which writes
    /// its row of the per-request log; else writes the row here.
    fn trail_or_row(
        &mut self,
        s: &Sample,
        d: &Durations,
        timing: &[u8],
        index: u64,
        ended: Instant,
    ) {
        if let Some((trails, clock)) = &mut self.trails {
            let from = self.record_from;
            trails.push(join::Trail {
                kept: exemplar::Exemplar::of(s, d, timing, from),
                wire: s.wire,
                interval: index,
                start_ns: s
                    .stamps
                    .dispatched
                    .saturating_duration_since(from)
                    .as_nanos() as u64,
                bytes_read: s.bytes_read,
                bytes_written: s.bytes_written,
                write_ns: clock.ns(s.stamps.write_started()),
                done_ns: clock.ns(ended),
            });
        } else if let Some(log) = &mut self.log {
            log.row(s, d, index, self.record_from);
        }
    }

    /// Folds in what a request's protocol told besides its sample ([`Extras`]), after
    /// [`Recorder::record_response`]: its events into the tallies (a warm-up request's too:
    /// its connection's end counts), its protocol's status (a failed one's detail kept as its
    /// kind's first), and its values of a phase if the sample is recorded (a failed
    /// request's too: they are its connection's). Nothing here names a protocol.
    #[inline]
    pub fn fold(&mut self, s: &Sample, extras: &Extras) {
        for e in extras.events.iter() {
            self.counts.tallies.add(e);
        }
        if let Some(status) = &extras.status {
            self.counts.tallies.add_status(status);
            if let Some(kind) = status.failed.filter(|k| !self.counts.has_error(*k)) {
                self.counts.note_error(kind, &status.detail());
            }
        }
        if let Some((phase, values)) = extras.values {
            if s.stamps.intended >= self.record_from {
                self.record_values(s, phase, values);
            }
        }
    }

    /// Records values of `phase` that are not one request's (event gaps, ping round trips) of
    /// a recorded sample wherever its phases went: its request name, its stage and the
    /// current interval (whence the run's).
    fn record_values(&mut self, s: &Sample, phase: Phase, values: &[u64]) {
        let i = phase.index();
        let mut into: [Option<&mut Histogram<u64>>; 3] = [
            self.by_request
                .get_mut(s.request as usize)
                .map(|acc| &mut acc.hists.0[i]),
            self.segments
                .iter_mut()
                .find(|(end, _, _)| s.stamps.intended < *end)
                .map(|(_, _, h)| &mut h.0[i]),
            self.current.as_mut().map(|set| &mut set.hists.0[i]),
        ];
        for h in into.iter_mut().flatten() {
            for &ns in values {
                hist::record(h, ns);
            }
        }
    }

    /// Keeps the first detail seen of each error kind (for the report's explanation).
    pub fn note_error(&mut self, kind: ErrorKind, detail: &str) {
        self.counts.note_error(kind, detail);
    }

    /// `n` requests are being sent (each outcome comes back through
    /// [`Recorder::record_with_timing`]); those still out at the end are counted.
    pub fn sending(&mut self, n: u64) {
        self.in_flight += n;
    }

    /// Counts requests due in the window that were never sent.
    pub fn not_sent(&mut self, n: u64) {
        self.counts.counters.not_sent += n;
    }

    /// Requests recorded so far.
    pub fn requests(&self) -> u64 {
        self.counts.counters.requests
    }

    /// Errors recorded so far.
    pub fn errors(&self) -> u64 {
        self.counts.counters.error_total()
    }

    /// Closes the current interval (if any) and opens `index` in a spare set: a swap, no
    /// allocation once the pool is warm.
    fn roll(&mut self, index: u64) {
        if let Some((trails, _)) = &mut self.trails {
            trails.flush();
        }
        let mut next = self.spare_set();
        next.index = index;
        if let Some(full) = self.current.replace(next) {
            self.hand_over(full, index);
        }
    }

    /// A reset set: one back from the collector, or a new one if none is back yet.
    fn spare_set(&mut self) -> Box<IntervalSet> {
        let total = self.server.total_name();
        match &mut self.link {
            // Without a plan's phases every histogram starts full-size.
            Link::Inline { spare, .. } => spare
                .take()
                .unwrap_or_else(|| IntervalSet::new(0, total, &Phase::ALL)),
            Link::Thread(link) => link.spare(total),
        }
    }

    /// Gives a closed interval to the collector; this thread now records `now_at`.
    fn hand_over(&mut self, mut set: Box<IntervalSet>, now_at: u64) {
        if let Link::Thread(_) = self.link {
            set.busy = Some(self.busy_since_close());
        }
        match &mut self.link {
            Link::Inline { collector, spare } => {
                collector.add(&set, now_at);
                collector.ready(Instant::now(), false);
                set.reset();
                *spare = Some(set);
            }
            Link::Thread(link) => link.send(collector::Msg::Closed { set, now_at }),
        }
    }

    /// This thread's share of the time on a CPU since the last close (two clock reads).
    fn busy_since_close(&mut self) -> f64 {
        let now = (thread_cpu(), Instant::now());
        let (cpu0, wall0) = std::mem::replace(&mut self.cpu_mark, now);
        busy_share(cpu0, now.0, now.1.saturating_duration_since(wall0))
    }

    /// Ends recording: what this thread measured (its series, when merged here).
    pub fn finish(mut self) -> Measured {
        self.counts.counters.in_flight_at_end += self.in_flight;
        // The last interval, or an empty set: either says the thread is done.
        let last = match self.current.take() {
            Some(set) => set,
            None => self.spare_set(),
        };
        self.hand_over(last, u64::MAX);
        // The run's histograms: the intervals' sum (the collector's), with the connections'.
        let (series, hists, exemplars) = match self.link {
            Link::Inline { collector, .. } => {
                let (series, mut totals, exemplars) = collector.finish();
                totals.merge(&self.hists);
                (series, totals, exemplars)
            }
            Link::Thread(_) => (Series::default(), self.hists, Default::default()),
        };
        let snapshot_bytes = series.footprint();
        Measured {
            counts: self.counts,
            hists,
            series,
            thread_busy: Vec::new(),
            pacer_spin: Vec::new(),
            snapshot_bytes,
            segments: self.segments.into_iter().map(|(_, c, h)| (c, h)).collect(),
            bursts: self.bursts,
            server: self.server,
            by_request: self.by_request,
            samples: self.samples,
            sends: self.sends,
            probes: None,
            exemplars,
            request_log: None,
            joined: None,
        }
    }
}

#[cfg(test)]
mod tests;
