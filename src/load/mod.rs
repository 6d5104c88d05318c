//! Generating the load: worker threads, each with its own single-threaded tokio runtime and
//! its own [`Recorder`], hold the plan's connections (spread evenly over the threads). In a
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

pub use signals::{Progress, StopSignal, ThreadProgress};

pub use crate::util::start::StartGate;
use connection::{record_outcome, Activity, Connection, Feed, Opening, Who};
use failfast::FailFast;
pub use scheduler::Scheduler;

use crate::engine::{ConnectGate, Session, SessionConfig};
use crate::model::{ConnStage, LoadModel, Segment};
use crate::plan::RunPlan;
use crate::recorder::collector::{CollectorThread, Sinks};
use crate::recorder::join::{JoinInput, JoinThread, TrailSink};
use crate::recorder::request_log::{LogWorker, RequestLog};
use crate::recorder::{busy_share, thread_cpu, Measured, Recorder, WorkerLink};
use crate::workload::request::Rendered;
use crate::workload::{Renderer, Workload};
use pacer::{BurstPacer, ThreadPacer};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// Everything one worker thread needs.
struct WorkerCtx {
    thread: usize,
    threads: usize,
    /// Ends of the stages, for the recorder to keep them apart.
    stage_ends: Vec<Instant>,
    /// Closed-loop connection stages.
    conn_stages: Option<Arc<Vec<ConnStage>>>,
    /// This process's share of the plan: its connections interleave with the other segments'.
    segment: Segment,
    /// Requests rendered per send, and the seed of their generators.
    workload: Option<(Arc<Workload>, u64)>,
    /// Bursts: their pacer and the whole plan's burst size.
    burst: Option<(BurstPacer, u64)>,
    /// `--server-total`.
    server_total: String,
    /// Sessions (streams) per connection: 1 for HTTP/1.1.
    streams: usize,
    /// Where closed intervals go (the run's collector).
    link: Option<WorkerLink>,
    connections: usize,
    scheduler: Arc<Scheduler>,
    /// The thread's share of an open-loop schedule, from the origin the gate gives.
    pacer: Option<ThreadPacer>,
    config: Arc<SessionConfig>,
    stop: StopSignal,
    fail_fast: Arc<FailFast>,
    progress: Arc<Progress>,
    /// A closed loop's recorded window (an open loop's is known when its gate opens).
    record_from: Instant,
    /// The window's end, as the scheduler has it.
    record_until: Arc<crate::model::WindowEnd>,
    gate: Arc<StartGate>,
    warmup: Duration,
    interval: Duration,
    /// Open loop: how the pacer batches, spins, waits and sleeps.
    pacing: crate::plan::Pacing,
    done: tokio::sync::mpsc::UnboundedSender<()>,
    /// `--log-requests`: this thread's end of the log.
    log: Option<LogWorker>,
    /// `--server-probes`: where the thread's recorded requests go to be joined.
    trails: Option<TrailSink>,
}

impl WorkerCtx {
    fn run(mut self) -> Measured {
        let mut recorder = Recorder::new(self.record_from, self.interval)
            .sharing_end(self.record_until.clone())
            .server_total(&self.server_total)
            .with_segments(&self.stage_ends)
            .with_requests(self.workload.as_ref().map_or(0, |(w, _)| w.names.len()))
            .request_log(self.log.take())
            .trails(self.trails.take());
        if let Some(link) = self.link.take() {
            recorder = recorder.collector(link);
        }
        let recorder = Rc::new(RefCell::new(recorder));
        let open_loop = self.pacer.is_some();
        if open_loop {
            timer::tighten_timer_slack();
        }
        let cpu_start = thread_cpu();
        let wall_start = Instant::now();
        let mut spun = Duration::ZERO;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        if let Ok(runtime) = runtime {
            let local = tokio::task::LocalSet::new();
            let pacer = self.pacer.take();
            spun = local.block_on(&runtime, self.drive(recorder.clone(), pacer));
            // Dropping the set cancels connections still in flight after a stop.
            drop(local);
        }
        let busy = busy_share(cpu_start, thread_cpu(), wall_start.elapsed());
        let _ = self.done.send(());
        // Every task holding a clone was dropped with the LocalSet, so this is the last one;
        // `replace` takes the contents out either way.
        let recorder = recorder.replace(Recorder::new(self.record_from, self.interval));
        let mut measured = recorder.finish();
        measured.thread_busy = vec![busy];
        if open_loop && self.pacing.spin > 0.0 {
            measured.pacer_spin = vec![spun.as_secs_f64() / wall_start.elapsed().as_secs_f64()];
        }
        measured
    }

    /// Runs the thread's load; gives the time its pacer spun to send on time.
    async fn drive(&self, recorder: Rc<RefCell<Recorder>>, pacer: Option<ThreadPacer>) -> Duration {
        let spun = Rc::new(Cell::new(Duration::ZERO));
        // A per-thread copy: no shared reference counts touched on the hot path.
        let config = Rc::new(self.config.per_thread());
        let feed = match pacer {
            None => Feed::Closed(self.scheduler.clone()),
            Some(_) => Feed::Open(Rc::new(queue::OpenQueue::for_takers(
                self.connections * self.streams,
            ))),
        };
        let gate = config
            .max_connects_per_s
            .map(|per_s| Rc::new(ConnectGate::new(per_s, self.threads)));
        let renderer = self.renderer();
        let mut set = tokio::task::JoinSet::new();
        let opening = pacer.is_some().then(|| self.opening());
        let mut keeper = None;
        if let (Some(pacer), Feed::Open(queue)) = (pacer, &feed) {
            set.spawn_local(self.dispatch(pacer, queue, &recorder, &spun));
            keeper = Some(tokio::task::spawn_local(open::keep_timer_wheel(
                config.timeout,
            )));
        }
        if let Some((pacer, size)) = self.burst {
            let run = self.burst_run(pacer, size, &config, &gate, &recorder, &renderer);
            set.spawn_local(run.run());
        }
        let connections = if self.burst.is_some() {
            0
        } else {
            self.connections
        };
        for local in 0..connections {
            // HTTP/2 and HTTP/3: the connection slot's streams share one connection.
            let sessions = Session::slot(&config, &gate, self.streams);
            for (stream, session) in sessions.into_iter().enumerate() {
                // Connections are numbered across threads (thread i holds i, i+T, i+2T, …) and
                // segments (segment s holds every S-th of those), so a ramp of connections grows
                // evenly on every thread of every generator.
                let activity_index = self.scheduler.connection(local, self.thread, self.threads);
                let activity = self.conn_stages.as_ref().map(|stages| Activity {
                    stages: stages.clone(),
                    origin: self.record_from,
                    index: activity_index as usize,
                });
                let conn = Connection {
                    opening: opening.clone().filter(|_| stream == 0),
                    activity,
                    session,
                    feed: feed.clone(),
                    recorder: recorder.clone(),
                    progress: self.progress.clone(),
                    fail_fast: self.fail_fast.clone(),
                    thread: self.thread,
                    worker: self.worker(),
                    slot: activity_index as u32,
                    renderer: renderer.clone(),
                    buf: Rendered::default(),
                };
                match conn.session.pipeline() {
                    depth if depth > 1 => set.spawn_local(conn.run_pipelined(depth)),
                    _ => set.spawn_local(conn.run()),
                };
            }
        }
        tokio::select! {
            _ = self.stop.stopped() => {}
            _ = async { while set.join_next().await.is_some() {} } => {}
        }
        set.abort_all();
        if let Some(k) = keeper {
            k.abort();
        }
        spun.get()
    }

    /// This worker's index over every generator's threads.
    fn worker(&self) -> usize {
        let s = self.segment;
        crate::workload::gen::global_worker(
            s.index as usize,
            s.count as usize,
            self.thread,
            self.threads,
        )
        .0
    }

    /// This worker's request generator: worker (segment, thread) of (segments × threads),
    /// with its own stream; `None` without a workload.
    fn renderer(&self) -> Option<Rc<RefCell<Renderer>>> {
        self.workload.as_ref().map(|(w, seed)| {
            let s = self.segment;
            let (worker, workers) = crate::workload::gen::global_worker(
                s.index as usize,
                s.count as usize,
                self.thread,
                self.threads,
            );
            Rc::new(RefCell::new(Renderer::new(
                w.clone(),
                *seed,
                worker,
                workers,
            )))
        })
    }

    /// An open loop opens its connections first: one per connection slot (an HTTP/2 link's
    /// streams share it); the last one to open tells the gate this thread is ready (at once
    /// when it has none).
    fn opening(&self) -> Rc<Opening> {
        let slots = if self.burst.is_some() {
            0
        } else {
            self.connections
        };
        if slots == 0 {
            self.gate.arrive();
        }
        Rc::new(Opening {
            pending: Cell::new(slots),
            gate: self.gate.clone(),
            record: self.warmup.is_zero(),
        })
    }

    /// The open loop's dispatcher: once the gate opens, the schedule and the recording begin
    /// (after the warm-up) and the pacer hands the due requests to the connections' `queue`;
    /// the requests it could not send are recorded.
    fn dispatch(
        &self,
        pacer: ThreadPacer,
        queue: &Rc<queue::OpenQueue>,
        recorder: &Rc<RefCell<Recorder>>,
        spun: &Rc<Cell<Duration>>,
    ) -> impl std::future::Future<Output = ()> + 'static {
        let (gate, scheduler, queue) = (self.gate.clone(), self.scheduler.clone(), queue.clone());
        let (recorder, warmup) = (recorder.clone(), self.warmup);
        let (pacing, spun) = (self.pacing, spun.clone());
        async move {
            let origin = gate.opened().await;
            scheduler.begin(origin + warmup);
            recorder
                .borrow_mut()
                .begin(origin + warmup, scheduler.deadline());
            let not_sent = open::dispatch(pacer, origin, scheduler, queue, pacing, spun).await;
            recorder.borrow_mut().not_sent(not_sent);
        }
    }

    /// Bursts: this thread's run of `size` requests at once on every connection, as `pacer`
    /// says when.
    fn burst_run(
        &self,
        pacer: BurstPacer,
        size: u64,
        config: &Rc<SessionConfig>,
        gate: &Option<Rc<ConnectGate>>,
        recorder: &Rc<RefCell<Recorder>>,
        renderer: &Option<Rc<RefCell<Renderer>>>,
    ) -> burst::BurstRun {
        burst::BurstRun {
            sessions: self.burst_sessions(config, gate),
            size,
            pacer,
            scheduler: self.scheduler.clone(),
            recorder: recorder.clone(),
            progress: self.progress.clone(),
            fail_fast: self.fail_fast.clone(),
            thread: self.thread,
            worker: self.worker(),
            renderer: renderer.clone(),
        }
    }

    /// Bursts: this thread's sessions, one per connection.
    fn burst_sessions(
        &self,
        config: &Rc<SessionConfig>,
        gate: &Option<Rc<ConnectGate>>,
    ) -> Vec<burst::BurstSession> {
        (0..self.connections)
            .map(|local| {
                burst::BurstSession {
                    session: Session::new(config.clone(), gate.clone()),
                    buf: Rendered::default(),
                    // Numbered across threads and segments, as connections are.
                    index: self.scheduler.connection(local, self.thread, self.threads),
                }
            })
            .collect()
    }
}
