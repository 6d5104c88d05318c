//! What a recorder accumulates of a run or an interval: the [`Counters`], one histogram per
//! phase ([`PhaseHists`]), a request name's own ([`RequestAcc`]), and the phases a sample
//! reached.

use super::hist;
use crate::model::{ErrorKind, Phase, Sample, Traffic};
use hdrhistogram::Histogram;

/// Counters of a run or of one interval.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Requests that ended (a response or an error).
    pub requests: u64,
    /// Requests that got a complete response (any status).
    pub ok: u64,
    /// Errors per [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::ALL.len()],
    /// Response bytes read.
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// Header and body bytes of the responses, as received and decoded.
    pub traffic: Traffic,
    /// Connections opened (successful connects).
    pub connections_opened: u64,
    /// Responses after which the server closed the connection (`Connection: close`).
    pub server_closes: u64,
    /// Requests that ended after the recorded window, while the run drained its requests in
    /// flight (counted in `requests` too).
    pub drained: u64,
    /// Of the drained requests, those that timed out.
    pub drain_timeouts: u64,
    /// How long after the window the last drained request ended, ns (merged by maximum).
    pub drain_ns: u64,
    /// Requests sent and still in flight when the run ended (after the drain, or at a stop):
    /// not in `requests`.
    pub in_flight_at_end: u64,
    /// Open loop: requests due in the window that were never sent (every connection busy
    /// until the end): not in `requests`.
    pub not_sent: u64,
    /// Of the drained requests, those that got a complete response.
    pub drained_ok: u64,
    /// When the last complete response ended, ns from the start of the window (merged by
    /// maximum); 0 before one.
    pub last_ok_ns: u64,
    /// Requests that failed after the last complete response (each thread's after its own,
    /// summed): a server that stopped answering.
    pub failed_since_ok: u64,
}

impl Counters {
    /// Total errors of every kind.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub(super) fn add(&mut self, s: &Sample) {
        self.requests += 1;
        self.bytes_read += s.bytes_read;
        self.bytes_written += s.bytes_written;
        self.traffic.add(&s.traffic);
        if s.stamps.opened() {
            self.connections_opened += 1;
        }
        match s.error {
            Some(kind) => self.errors[kind.index()] += 1,
            None => {
                self.ok += 1;
                if s.server_closed {
                    self.server_closes += 1;
                }
            }
        }
    }

    /// Adds another thread's or interval's counters.
    pub fn merge(&mut self, o: &Counters) {
        self.requests += o.requests;
        self.ok += o.ok;
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a += b;
        }
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
        self.traffic.add(&o.traffic);
        self.connections_opened += o.connections_opened;
        self.server_closes += o.server_closes;
        self.drained += o.drained;
        self.drain_timeouts += o.drain_timeouts;
        self.drain_ns = self.drain_ns.max(o.drain_ns);
        self.in_flight_at_end += o.in_flight_at_end;
        self.not_sent += o.not_sent;
        self.drained_ok += o.drained_ok;
        self.last_ok_ns = self.last_ok_ns.max(o.last_ok_ns);
        self.failed_since_ok += o.failed_since_ok;
    }

    /// Counts a recorded request that ended `at_ns` into the window, and `drained_ns` after
    /// its end when it ended in the drain: when the answers stopped (a complete response, or
    /// a failure after the last one), and what the drain took.
    pub(super) fn ended(&mut self, s: &Sample, at_ns: u64, drained_ns: Option<u64>) {
        self.add(s);
        let ok = s.error.is_none();
        if ok {
            self.last_ok_ns = self.last_ok_ns.max(at_ns);
            self.failed_since_ok = 0;
        } else {
            self.failed_since_ok += 1;
        }
        if let Some(after) = drained_ns {
            self.drained += 1;
            self.drained_ok += u64::from(ok);
            self.drain_ns = self.drain_ns.max(after);
            self.drain_timeouts += u64::from(s.error == Some(ErrorKind::Timeout));
        }
    }
}

/// The duration in nanoseconds of each phase of a sample (by [`Phase::index`]).
pub(super) type Durations = [Option<u64>; Phase::ALL.len()];

/// The phases `s` reached, derived once for every histogram set it goes into. A failed
/// request still has its schedule lag, queue, connect, TLS and WebSocket upgrade times; its
/// later phases are not latency of a response.
#[inline]
pub(super) fn durations(s: &Sample) -> Durations {
    let mut out = s.stamps.durations();
    // A gRPC call that ended with a status other than OK is a complete response: timed whole.
    if !matches!(s.error, None | Some(ErrorKind::Grpc)) {
        for (p, d) in Phase::ALL.iter().zip(out.iter_mut()) {
            if !matches!(
                p,
                Phase::Lag
                    | Phase::Queue
                    | Phase::Connect
                    | Phase::Tls
                    | Phase::WsUpgrade
                    | Phase::StreamWait
            ) {
                *d = None;
            }
        }
    }
    out
}

/// One histogram per phase.
#[derive(Debug, Clone)]
pub struct PhaseHists(pub Vec<Histogram<u64>>);

impl PhaseHists {
    /// Histograms made by `make` for the phases every request has; the others start at their
    /// smallest and grow as values arrive (most runs have few or none of them: a thread keeps
    /// several sets: a plain HTTP/1.1 run's 8 unused phases at 16 KiB instead of ~90 KiB each
    /// took the peak RSS of `-t 8 -c 400` from ~107 to ~73 MiB).
    pub(crate) fn new(make: fn() -> Histogram<u64>) -> Self {
        Self::sized(make, &[])
    }

    /// As [`PhaseHists::new`], with `also` made by `make` too: the phases a run will record
    /// (its connections' opening, its bodies'), so that none grows while the run is timed (a
    /// growth costs ~50 µs of fresh memory).
    pub(crate) fn sized(make: fn() -> Histogram<u64>, also: &[Phase]) -> Self {
        let hist = |p: &Phase| {
            if Phase::EVERY_REQUEST.contains(p) || also.contains(p) {
                make()
            } else {
                hist::new_growing_hist()
            }
        };
        PhaseHists(Phase::ALL.iter().map(hist).collect())
    }

    /// Empties every histogram, keeping its allocation.
    pub(crate) fn reset(&mut self) {
        for h in &mut self.0 {
            if !h.is_empty() {
                h.reset();
            }
        }
    }

    /// The histogram of `phase`.
    pub fn get(&self, phase: Phase) -> &Histogram<u64> {
        &self.0[phase.index()]
    }

    /// Records the phase durations of one sample (see [`durations`]).
    #[inline]
    pub(super) fn record(&mut self, d: &Durations) {
        for (h, ns) in self.0.iter_mut().zip(d.iter()) {
            if let Some(ns) = *ns {
                hist::record(h, ns);
            }
        }
    }

    /// Adds `o`'s histograms (its empty ones cost nothing).
    pub(crate) fn merge(&mut self, o: &PhaseHists) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            if !b.is_empty() {
                a.add(b).expect("phase histograms share bounds");
            }
        }
    }
}

/// One request name's own figures (`--scenario`, `--targets`): counters, phase histograms
/// (small, growing ones) and status counts.
#[derive(Debug, Clone)]
pub struct RequestAcc {
    /// Counts of requests, errors and bytes.
    pub counters: Counters,
    /// The histogram of each phase.
    pub hists: PhaseHists,
    /// (status code, responses).
    pub status: Vec<(u16, u64)>,
}

impl RequestAcc {
    pub(super) fn new() -> Self {
        RequestAcc {
            counters: Counters::default(),
            hists: PhaseHists::new(hist::new_interval_hist),
            status: Vec::new(),
        }
    }

    #[inline]
    pub(super) fn add(&mut self, s: &Sample, d: &Durations) {
        self.counters.add(s);
        self.hists.record(d);
        if let Some(code) = s.status {
            match self.status.iter_mut().find(|(c, _)| *c == code) {
                Some((_, n)) => *n += 1,
                None => self.status.push((code, 1)),
            }
        }
    }

    pub(super) fn merge(&mut self, o: &RequestAcc) {
        self.counters.merge(&o.counters);
        self.hists.merge(&o.hists);
        for (code, n) in &o.status {
            match self.status.iter_mut().find(|(c, _)| c == code) {
                Some((_, m)) => *m += n,
                None => self.status.push((*code, *n)),
            }
        }
    }
}
