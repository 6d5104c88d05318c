//! One worker thread's life ([`WorkerCtx`]): its recorder and single-threaded runtime, its
//! connections opened and driven in a closed loop, an open loop (taking the pacer's tickets)
//! or bursts, until the stop; what it measured handed back whole.

use super::connection::{Activity, Connection, Feed, Opening};
use super::failfast::FailFast;
use super::pacer::{BurstPacer, ThreadPacer};
use super::{burst, open, queue, timer, Progress, Scheduler, StartGate, StopSignal};
use crate::engine::{ConnectGate, Session, SessionConfig};
use crate::model::{ConnStage, Segment};
use crate::recorder::join::TrailSink;
use crate::recorder::request_log::LogWorker;
use crate::recorder::{busy_share, thread_cpu, Measured, Recorder, WorkerLink};
use crate::workload::request::Rendered;
use crate::workload::{Renderer, Workload};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Everything one worker thread needs.
pub(super) struct WorkerCtx {
    pub(super) thread: usize,
    pub(super) threads: usize,
    /// Ends of the stages, for the recorder to keep them apart.
    pub(super) stage_ends: Vec<Instant>,
    /// Closed-loop connection stages.
    pub(super) conn_stages: Option<Arc<Vec<ConnStage>>>,
    /// This process's share of the plan: its connections interleave with the other segments'.
    pub(super) segment: Segment,
    /// Requests rendered per send, and the seed of their generators.
    pub(super) workload: Option<(Arc<Workload>, u64)>,
    /// Bursts: their pacer and the whole plan's burst size.
    pub(super) burst: Option<(BurstPacer, u64)>,
    /// `--server-total`.
    pub(super) server_total: String,
    /// Sessions (streams) per connection: 1 for HTTP/1.1.
    pub(super) streams: usize,
    /// Where closed intervals go (the run's collector).
    pub(super) link: Option<WorkerLink>,
    pub(super) connections: usize,
    pub(super) scheduler: Arc<Scheduler>,
    /// The thread's share of an open-loop schedule, from the origin the gate gives.
    pub(super) pacer: Option<ThreadPacer>,
    pub(super) config: Arc<SessionConfig>,
    pub(super) stop: StopSignal,
    pub(super) fail_fast: Arc<FailFast>,
    pub(super) progress: Arc<Progress>,
    /// A closed loop's recorded window (an open loop's is known when its gate opens).
    pub(super) record_from: Instant,
    /// The window's end, as the scheduler has it.
    pub(super) record_until: Arc<crate::model::WindowEnd>,
    pub(super) gate: Arc<StartGate>,
    pub(super) warmup: Duration,
    pub(super) interval: Duration,
    /// Open loop: how the pacer batches, spins, waits and sleeps.
    pub(super) pacing: crate::plan::Pacing,
    pub(super) done: tokio::sync::mpsc::UnboundedSender<()>,
    /// `--log-requests`: this thread's end of the log.
    pub(super) log: Option<LogWorker>,
    /// `--server-probes`: where the thread's recorded requests go to be joined.
    pub(super) trails: Option<TrailSink>,
}

impl WorkerCtx {
    /// Runs the thread's connections until the stop; what they measured.
    pub(super) fn run(mut self) -> Measured {
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
