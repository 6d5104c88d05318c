//! Generating the load: worker threads, each with its own single-threaded tokio runtime and
//! its own [`Recorder`](crate::recorder::Recorder), hold the plan's connections (spread evenly over the threads). In a
//! closed loop the [`Scheduler`] hands each free connection its next [`Ticket`](crate::model::Ticket); in an open
//! loop each thread's pacer ([`pacer`]) releases tickets at their due times, waiting on a
//! precise timer ([`timer`]), into a queue its connections take from; bursts (`burst`) are
//! paced by a burst pacer and admitted a burst at a time by the same scheduler. All apply the
//! stop rule. The open loop's schedule starts once every thread has opened its connections
//! ([`start`]). The controlling thread stops everything through one [`StopSignal`] (end of
//! the duration, Ctrl-C); in-flight requests are then abandoned, never half-recorded. One
//! collector thread per run ([`crate::recorder::collector`]) takes the workers' closed
//! intervals. A run's life as a whole (its start gate, deadline, drain and why it ended) is
//! [`executor`]'s.

mod burst;
mod connection;
pub mod early;
pub mod executor;
pub mod failfast;
mod open;
pub mod pacer;
mod queue;
mod scheduler;
mod signals;
pub mod timer;
mod worker;

pub use signals::{Progress, StopSignal, ThreadProgress};

pub use crate::util::start::StartGate;
use connection::{record_outcome, Who};
use failfast::FailFast;
pub use scheduler::Scheduler;
use worker::WorkerCtx;

use crate::engine::SessionConfig;
use crate::model::LoadModel;
use crate::plan::RunPlan;
use crate::recorder::collector::{CollectorThread, Sinks};
use crate::recorder::join::{JoinInput, JoinThread};
use crate::recorder::request_log::RequestLog;
use crate::recorder::Measured;
use pacer::{BurstPacer, ThreadPacer};
use std::sync::Arc;
use std::time::Instant;

/// A run in progress: its worker threads.
pub struct Workers {
    handles: Vec<std::thread::JoinHandle<Measured>>,
    /// Merges the threads' intervals as they close.
    collector: CollectorThread,
    done_rx: tokio::sync::mpsc::UnboundedReceiver<()>,
    finished: usize,
    /// Opens when the load starts (an open loop: once its connections are open).
    gate: Arc<StartGate>,
    /// Stops the run when every connection fails the same way ([`failfast`]).
    fail_fast: Arc<FailFast>,
    /// `--log-requests`: the log's writer.
    log: Option<RequestLog>,
    /// `--server-probes`: the joiner of the server's side to each request.
    join: Option<JoinThread>,
    /// Whose window [`Workers::close`] ends early.
    scheduler: Arc<Scheduler>,
}

/// Starts the worker threads of `plan`. The load starts at once in a closed loop, and once
/// every connection is open in an open loop ([`Workers::gate`]); recording starts after the
/// warm-up; the scheduler stops issuing requests by itself at the end of the duration or
/// request count.
pub fn start(
    plan: &RunPlan,
    config: SessionConfig,
    stop: StopSignal,
    progress: Arc<Progress>,
    mut sinks: Sinks,
) -> std::io::Result<Workers> {
    let start = Instant::now();
    let record_from = start + plan.warmup;
    let scheduler = Arc::new(Scheduler::pending(plan));
    let gate = gate(plan, &scheduler, start, record_from);
    let stage_ends = stage_ends(plan, record_from);
    let conn_stages = match &plan.load {
        LoadModel::ClosedStages(st) => Some(Arc::new(st.clone())),
        _ => None,
    };
    let phases = config.phases();
    let config = Arc::new(config);
    let fail_fast = Arc::new(FailFast::new(plan.local_connections(), stop.clone()));
    let (done_tx, done_rx) = tokio::sync::mpsc::unbounded_channel();
    // This process's share of the plan's connections (all of them unless --segment).
    let connections = plan.local_connections();
    let join_input = sinks.join.take();
    let probed = join_input.as_ref().map_or(Vec::new(), |j| j.phase_names());
    let (collector, links) = spawn_collector(plan, &gate, &phases, sinks)?;
    let (log, join) = log_and_join(plan, join_input, &probed)?;
    let mut handles = Vec::with_capacity(plan.threads);
    for (thread, link) in (0..plan.threads).zip(links) {
        // Thread i holds c/t connections, and one more for the first c%t threads.
        let conns = connections / plan.threads + usize::from(thread < connections % plan.threads);
        let pacer = thread_pacer(plan, thread);
        let ctx = WorkerCtx {
            thread,
            threads: plan.threads,
            stage_ends: stage_ends.clone(),
            link: Some(link),
            server_total: plan.server_total.clone(),
            streams: plan.streams(),
            burst: bursts_of(plan),
            conn_stages: conn_stages.clone(),
            segment: plan.segment,
            workload: plan.workload.clone().map(|w| (w, plan.seed)),
            connections: conns,
            scheduler: scheduler.clone(),
            pacer,
            config: config.clone(),
            stop: stop.clone(),
            fail_fast: fail_fast.clone(),
            progress: progress.clone(),
            record_from,
            record_until: scheduler.end(),
            gate: gate.clone(),
            warmup: plan.warmup,
            interval: plan.interval,
            pacing: plan.pacing,
            done: done_tx.clone(),
            log: log
                .as_ref()
                .filter(|_| join.is_none())
                .map(RequestLog::worker),
            trails: join.as_ref().map(|j| j.source().sink()),
        };
        let handle = std::thread::Builder::new()
            .name(format!("reqlife-worker-{thread}"))
            .spawn(move || ctx.run())?;
        handles.push(handle);
    }
    Ok(Workers {
        handles,
        collector,
        done_rx,
        finished: 0,
        gate,
        fail_fast,
        log,
        join,
        scheduler,
    })
}

/// The per-request log (`--log-requests`) and, with `--server-probes`, the joiner that
/// writes it (each row with the server's phases of its request), to which the workers hand
/// their requests; without the joiner the workers write the log.
fn log_and_join(
    plan: &RunPlan,
    input: Option<JoinInput>,
    probed: &[String],
) -> std::io::Result<(Option<RequestLog>, Option<JoinThread>)> {
    let log = request_log(plan, probed)?;
    let join = match input {
        Some(input) => Some(JoinThread::spawn(
            input,
            log.as_ref().map(RequestLog::worker),
        )?),
        None => None,
    };
    Ok((log, join))
}

/// The gate the load starts by: an open loop's opens once every thread's connections are
/// open; a closed loop's is open now (`start`), its schedule begun at `record_from`.
fn gate(
    plan: &RunPlan,
    scheduler: &Scheduler,
    start: Instant,
    record_from: Instant,
) -> Arc<StartGate> {
    let open_loop = matches!(plan.load, LoadModel::Open { .. });
    Arc::new(if open_loop {
        StartGate::new(plan.threads)
    } else {
        scheduler.begin(record_from);
        StartGate::opened_at(start)
    })
}

/// The run's collector thread, its series started by `gate` after the warm-up, and one link
/// per worker.
fn spawn_collector(
    plan: &RunPlan,
    gate: &Arc<StartGate>,
    phases: &[crate::model::Phase],
    sinks: Sinks,
) -> std::io::Result<(CollectorThread, Vec<crate::recorder::WorkerLink>)> {
    let start = crate::recorder::collector::Start {
        gate: gate.clone(),
        warmup: plan.warmup,
    };
    CollectorThread::spawn(
        plan.threads,
        &plan.server_total,
        phases,
        start,
        plan.interval,
        sinks,
    )
}

/// `--log-requests`: the log's writer, its header written.
fn request_log(plan: &RunPlan, probed: &[String]) -> std::io::Result<Option<RequestLog>> {
    let Some(l) = &plan.log else { return Ok(None) };
    let names = plan
        .workload
        .as_ref()
        .map_or(Vec::new(), |w| w.names.clone());
    RequestLog::start(l.file.clone(), l.every, plan.threads, names.into(), probed).map(Some)
}

/// When each stage of `plan` ends, the first starting at `record_from`.
fn stage_ends(plan: &RunPlan, record_from: Instant) -> Vec<Instant> {
    plan.stage_durations()
        .iter()
        .scan(record_from, |end, d| {
            *end += *d;
            Some(*end)
        })
        .collect()
}

/// Thread `thread`'s share of an open loop's schedule; `None` for the other loads.
fn thread_pacer(plan: &RunPlan, thread: usize) -> Option<ThreadPacer> {
    match &plan.load {
        LoadModel::Closed { .. } | LoadModel::ClosedStages(_) | LoadModel::Burst { .. } => None,
        LoadModel::Open {
            schedule, arrival, ..
        } => Some(ThreadPacer::new(
            schedule.clone(),
            *arrival,
            thread,
            plan.threads,
            plan.segment,
            plan.seed,
        )),
    }
}

/// Bursts: their pacer and the whole plan's burst size.
fn bursts_of(plan: &RunPlan) -> Option<(BurstPacer, u64)> {
    let pacer = BurstPacer::of(&plan.load)?;
    Some((pacer, plan.connections() as u64))
}

impl Workers {
    /// The gate that opens when the load starts.
    pub fn gate(&self) -> Arc<StartGate> {
        self.gate.clone()
    }

    /// Ends the recorded window at `at`, as a timed run's deadline would (`--until`): no
    /// request is sent after it, and the requests in flight then are drained.
    pub fn close(&self, at: Instant) {
        self.scheduler.close(at);
    }

    /// Whether [`Workers::close`] ended the window.
    pub fn closed(&self) -> bool {
        self.scheduler.closed()
    }

    /// Why the fail-fast rule stopped the run, if it did.
    pub fn tripped(&self) -> Option<failfast::Tripped> {
        self.fail_fast.tripped()
    }

    /// Resolves when every worker has finished (by itself, or after a stop). Cancel-safe.
    pub async fn all_finished(&mut self) {
        while self.finished < self.handles.len() {
            match self.done_rx.recv().await {
                Some(()) => self.finished += 1,
                None => break,
            }
        }
    }

    /// Joins the workers (after a stop or when all are done) and merges what they measured,
    /// the collector's series with it; gives the first error writing `--hdr-log` too.
    pub fn join(self) -> (Measured, Option<crate::recorder::RecordError>) {
        let parts = self
            .handles
            .into_iter()
            .filter_map(|h| h.join().ok())
            .collect();
        let mut measured = Measured::merge(parts);
        // Every worker's requests are in: the joiner joins what is left once the probes'
        // clock has passed them, and lets go of its end of the log.
        if let Some(join) = self.join {
            measured.joined = join.finish(crate::util::clock::mono_now_ns()).map(Box::new);
        }
        let collected = self.collector.join();
        if let Some(totals) = &collected.totals {
            measured.hists.merge(totals);
        }
        measured.snapshot_bytes = collected.series.footprint();
        measured.request_log = self.log.map(RequestLog::finish);
        measured.exemplars = collected.exemplars;
        measured.series = collected.series;
        (measured, collected.log_error)
    }
}
