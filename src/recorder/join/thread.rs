//! The joiner's thread: the kernel's events (from the probes' reader) and the workers'
//! requests come in over one bounded channel; at the run's end it joins what is left once
//! the probes' clock has passed the last request (at most [`FINISH_WAIT`] later: probes
//! that stopped ticking), and gives what it joined.

use super::remote::{Puller, RemoteJoin};
use super::sink::{EventSink, Pool, TrailSource};
use super::{JoinSpec, Joined, Joiner, KernelEvent, Trail};
use crate::recorder::collector::IntervalSink;
use crate::recorder::request_log::LogWorker;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Messages that may wait for the joiner (batches of requests or events).
const QUEUE: usize = 1024;
/// How long the end waits for the probes' clock to pass the last request.
pub const FINISH_WAIT: Duration = Duration::from_secs(2);

/// What goes to the joiner.
pub enum JoinMsg {
    /// A worker's requests, and how many it could not hand over before.
    Trails(Vec<Trail>, u64),
    /// The kernel's events.
    Events(Vec<KernelEvent>),
    /// The probes' count of events on connections not the client's.
    Others(u64),
    /// The run is over: join everything that ended before this (CLOCK_MONOTONIC ns).
    Finish(u64),
}

/// The joiner's input before its thread starts: made where the probes are attached (they
/// get its [`EventSink`] then), started by the run with its workers.
pub struct JoinInput {
    spec: JoinSpec,
    tx: SyncSender<JoinMsg>,
    rx: Receiver<JoinMsg>,
    on_interval: Option<IntervalSink>,
    /// Probed on another host: the way to its agent and its clock's offset, ns.
    remote: Option<(Box<dyn Puller>, i64)>,
}

impl JoinInput {
    /// The channel of a run of `spec`, and the probes' end of it; `on_interval`: given each
    /// interval's phases (the metrics endpoint).
    pub fn new(spec: JoinSpec, on_interval: Option<IntervalSink>) -> (JoinInput, EventSink) {
        let (tx, rx) = mpsc::sync_channel(QUEUE);
        let events = EventSink::new(tx.clone());
        (
            JoinInput {
                spec,
                tx,
                rx,
                on_interval,
                remote: None,
            },
            events,
        )
    }

    /// Probed on another host: the events come from its agent through `puller`, its clock
    /// `offset_ns` ahead of ours ([`super::remote`]).
    pub fn remote(mut self, puller: Box<dyn Puller>, offset_ns: i64) -> JoinInput {
        self.remote = Some((puller, offset_ns));
        self
    }

    /// The probed phases' names (the per-request log's extra columns).
    pub fn phase_names(&self) -> Vec<String> {
        super::phase_names(&self.spec.functions, self.spec.upstream)
    }
}

/// The joiner's running thread.
pub struct JoinThread {
    tx: SyncSender<JoinMsg>,
    handle: std::thread::JoinHandle<Joined>,
    source: TrailSource,
}

impl JoinThread {
    /// Starts the joiner of `input`; `log`: the per-request log's writer, when the run keeps
    /// one (the joiner writes its rows).
    pub fn spawn(input: JoinInput, log: Option<LogWorker>) -> std::io::Result<JoinThread> {
        let JoinInput {
            spec,
            tx,
            rx,
            on_interval,
            remote,
        } = input;
        let pool: Pool = Arc::new(Mutex::new(Vec::new()));
        let back = pool.clone();
        let handle = std::thread::Builder::new()
            .name("reqlife-join".into())
            .spawn(move || {
                let joiner = Joiner::new(spec, log, on_interval);
                match remote {
                    Some((puller, offset)) => {
                        let join = RemoteJoin::new(joiner, puller, offset);
                        super::remote::run(join, &rx, &back, FINISH_WAIT)
                    }
                    None => run(joiner, &rx, &back),
                }
            })?;
        Ok(JoinThread {
            source: TrailSource {
                tx: tx.clone(),
                pool,
            },
            tx,
            handle,
        })
    }

    /// Where the workers' requests go.
    pub fn source(&self) -> &TrailSource {
        &self.source
    }

    /// The run is over (every worker's sink dropped): joins what is left and gives it.
    pub fn finish(self, until_ns: u64) -> Option<Joined> {
        let _ = self.tx.send(JoinMsg::Finish(until_ns));
        drop(self.source);
        drop(self.tx);
        self.handle.join().ok()
    }
}

fn run(mut joiner: Joiner, rx: &Receiver<JoinMsg>, pool: &Pool) -> Joined {
    let mut finishing: Option<(u64, Instant)> = None;
    loop {
        let msg = match finishing {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some((_, deadline)) => {
                rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            }
        };
        match msg {
            Ok(JoinMsg::Trails(v, dropped)) => joiner.batch(v, dropped),
            Ok(JoinMsg::Events(v)) => v.into_iter().for_each(|e| joiner.event(e)),
            Ok(JoinMsg::Others(n)) => joiner.others(n),
            Ok(JoinMsg::Finish(until)) => {
                finishing = Some((until, Instant::now() + FINISH_WAIT));
            }
            Err(_) => break,
        }
        if joiner.has_spent() {
            if let Ok(mut p) = pool.lock() {
                p.extend(joiner.spent());
            }
        }
        if let Some((until, _)) = finishing {
            if joiner.watermark() >= until.saturating_add(Joiner::SLACK_NS) {
                break;
            }
        }
    }
    joiner.finish()
}
