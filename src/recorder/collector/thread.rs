//! The collector's thread: where the final intervals go ([`Sinks`]), when the series starts
//! ([`Start`]), the loop that takes the workers' sets and what it gives at the end
//! ([`Collected`]).

use super::{Collector, IntervalSet, Msg, WorkerLink, POOL};
use crate::model::Phase;
use crate::recorder::exemplar::Exemplars;
use crate::recorder::priority::Priority;
use crate::recorder::series::Series;
use crate::recorder::{IntervalSnapshot, PhaseHists, RecordError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the collector's final intervals go, besides the series.
pub struct Sinks {
    /// `--every`, `--abort-on-fail`, the view.
    pub live: Option<Live>,
    /// `--hdr-log`.
    pub log: Option<crate::recorder::hdrlog::LogFile>,
    /// `--metrics-addr`: called with each (must not block).
    pub on_interval: Option<IntervalSink>,
    /// `--server-probes`: the joiner's input (the run starts its thread beside the workers'
    /// and gives it each recorded request; the collector does not use it).
    pub join: Option<crate::recorder::join::JoinInput>,
}

/// The final intervals for the run's own thread (`--every`, `--abort-on-fail`, the view),
/// and how far they are final: an `--every` line waits for that, not for the clock.
pub struct Live {
    /// Where each interval goes once final.
    pub tx: mpsc::Sender<IntervalSnapshot>,
    /// Every interval below this index is final ([`Collector::final_below`]); stored after
    /// their snapshots were sent. A run's thread that reads it first, then the channel, holds
    /// every part of those intervals that came in time.
    pub final_below: Arc<AtomicU64>,
}

/// What is given each final interval, called on the collector thread.
pub type IntervalSink = Box<dyn Fn(&IntervalSnapshot) + Send>;

/// When the series starts: once the run's gate opens (an open loop opens its connections
/// first), after the warm-up.
pub struct Start {
    /// The gate the run opens when its load starts.
    pub gate: std::sync::Arc<crate::util::start::StartGate>,
    /// How long after the gate the series starts (`--warmup`).
    pub warmup: Duration,
}

/// How often the collector looks whether the load has started.
const START_POLL: Duration = Duration::from_millis(1);

/// Waits for the load to start; messages that come first (workers that ended before it, at
/// a stop) are kept. Gives them and the start of recording (now, if every worker ended first).
fn wait_for_start(start: &Start, rx: &Receiver<Msg>) -> (Vec<Msg>, Instant) {
    let mut early = Vec::new();
    loop {
        if let Some(origin) = start.gate.origin() {
            return (early, origin + start.warmup);
        }
        match rx.recv_timeout(START_POLL) {
            Ok(msg) => early.push(msg),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return (early, Instant::now()),
        }
    }
}

/// What the collector thread gave at the end.
pub struct Collected {
    /// The run's interval series.
    pub series: Series,
    /// The run's phase histograms, the sum of the intervals (`None`: the collector failed).
    pub totals: Option<PhaseHists>,
    /// The first error writing `--hdr-log`.
    pub log_error: Option<RecordError>,
    /// Parts that came after their interval was final.
    pub late: u64,
    /// The run's slow requests kept whole.
    pub exemplars: Exemplars,
}

/// Closed intervals that may wait for the collector before a worker waits to hand one over.
fn queue_len(threads: usize) -> usize {
    threads * POOL + 2
}

/// Most sets a worker ever has: a worker makes a new one only when none is back, that is when
/// all of its sets are recording (one), queued, or being merged (one), so this many fit
/// the way back and none is ever dropped (and made again).
pub fn most_sets(threads: usize) -> usize {
    queue_len(threads.max(1)) + 2 + POOL
}

/// The run's collector thread and the channel into it.
pub struct CollectorThread {
    tx: Option<SyncSender<Msg>>,
    handle: std::thread::JoinHandle<Collected>,
    priority: Arc<Priority>,
}

impl CollectorThread {
    /// Starts the collector of `threads` workers, with [`POOL`] sets per worker made now
    /// (`phases`: those the run records besides [`Phase::EVERY_REQUEST`]); gives one link per
    /// worker.
    pub fn spawn(
        threads: usize,
        server_total: &str,
        phases: &[Phase],
        start: Start,
        interval: Duration,
        sinks: Sinks,
    ) -> std::io::Result<(CollectorThread, Vec<WorkerLink>)> {
        let threads = threads.max(1);
        let (tx, rx) = mpsc::sync_channel(queue_len(threads));
        let mut backs = Vec::with_capacity(threads);
        let mut links = Vec::with_capacity(threads);
        let priority = Arc::new(Priority::new());
        let phases: Arc<[Phase]> = phases.into();
        for thread in 0..threads {
            let (back, spares) = mpsc::sync_channel(most_sets(threads));
            for _ in 0..POOL {
                let _ = back.try_send(IntervalSet::new(thread, server_total, &phases));
            }
            backs.push(back);
            links.push(WorkerLink {
                thread,
                tx: tx.clone(),
                spares,
                priority: priority.clone(),
                phases: phases.clone(),
            });
        }
        let collector = Collector::new(threads, Instant::now(), interval);
        let its = priority.clone();
        let handle = std::thread::Builder::new()
            .name("reqlife-collector".into())
            .spawn(move || run(collector, rx, backs, sinks, interval, start, its))?;
        Ok((
            CollectorThread {
                tx: Some(tx),
                handle,
                priority,
            },
            links,
        ))
    }

    /// Waits for the collector to take the last intervals (every worker's link dropped) and
    /// gives the series.
    pub fn join(mut self) -> Collected {
        // Nothing left to protect: an idle collector would wait for busy cores to go idle.
        self.priority.finish();
        self.tx.take();
        self.handle.join().unwrap_or_else(|_| Collected {
            series: Series::default(),
            totals: None,
            log_error: Some(RecordError::CollectorFailed),
            late: 0,
            exemplars: Exemplars::new(),
        })
    }
}

/// The collector thread: merges what comes in, gives what is final to the sinks.
fn run(
    mut c: Collector,
    rx: Receiver<Msg>,
    backs: Vec<SyncSender<Box<IntervalSet>>>,
    sinks: Sinks,
    interval: Duration,
    start: Start,
    priority: Arc<Priority>,
) -> Collected {
    priority.enter();
    let (early, record_from) = wait_for_start(&start, &rx);
    c.begin(record_from);
    let base = crate::util::start::wall_clock_at(record_from);
    let (live, final_below) = match sinks.live {
        Some(l) => (Some(l.tx), Some(l.final_below)),
        None => (None, None),
    };
    let on_interval = sinks.on_interval;
    let (late, log_error) = crate::recorder::hdrlog::logged(sinks.log, base, interval, |write| {
        let mut emit = |snap: IntervalSnapshot| {
            write(&snap);
            if let Some(on_interval) = &on_interval {
                on_interval(&snap);
            }
            if let Some(live) = &live {
                let _ = live.send(snap);
            }
        };
        for msg in early {
            take(&mut c, msg, &backs, &mut emit);
        }
        drain(
            &mut c,
            &rx,
            &backs,
            &priority,
            final_below.as_deref(),
            &mut emit,
        );
        c.late
    });
    let (series, totals, exemplars) = c.finish();
    Collected {
        series,
        totals: Some(totals),
        log_error,
        late,
        exemplars,
    }
}

/// Takes the workers' intervals until every worker is done, sending their sets back; what
/// is final goes to `emit`, then how far it is final to `final_below`. A widening of the
/// series goes on between messages.
fn drain(
    c: &mut Collector,
    rx: &Receiver<Msg>,
    backs: &[SyncSender<Box<IntervalSet>>],
    priority: &Priority,
    final_below: Option<&AtomicU64>,
    emit: &mut dyn FnMut(IntervalSnapshot),
) {
    let mut compacting = false;
    loop {
        let wait = match c.next_deadline() {
            _ if compacting => Duration::ZERO,
            Some(d) => d.saturating_duration_since(Instant::now()),
            None => Duration::from_millis(200),
        };
        match rx.recv_timeout(wait) {
            Ok(msg) => {
                take(c, msg, backs, emit);
                // What is queued counts before a deadline does (a collector behind its
                // workers must not end an interval whose parts are waiting here).
                while let Ok(msg) = rx.try_recv() {
                    take(c, msg, backs, emit);
                }
                // Caught up: idle again.
                priority.settle();
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        let now = Instant::now();
        c.ready(now, false).into_iter().for_each(&mut *emit);
        if let Some(f) = final_below {
            f.store(c.final_below(now), Ordering::Release);
        }
        compacting = c.compact();
    }
    c.ready(Instant::now(), true).into_iter().for_each(emit);
    if let Some(f) = final_below {
        f.store(u64::MAX, Ordering::Release);
    }
}

/// Merges one worker's closed interval and sends the emptied set back to it.
fn take(
    c: &mut Collector,
    msg: Msg,
    backs: &[SyncSender<Box<IntervalSet>>],
    emit: &mut dyn FnMut(IntervalSnapshot),
) {
    let Msg::Closed { mut set, now_at } = msg;
    if let Some(part) = c.add(&set, now_at) {
        emit(part);
    }
    set.reset();
    if let Some(back) = backs.get(set.thread) {
        let _ = back.try_send(set);
    }
}
