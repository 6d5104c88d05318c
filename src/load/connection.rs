//! One connection's loop (take a ticket, send, record, repeat), what feeds it its tickets,
//! and the one place an outcome becomes a sample ([`record_outcome`]).

use super::failfast::FailFast;
use super::scheduler::Scheduler;
use super::{queue, Progress, StartGate, ThreadProgress};
use crate::engine::pipeline::Batch;
use crate::engine::{Send, Session};
use crate::model::trace::TraceId;
use crate::model::{ConnStage, ErrorKind, Reconnect, Sample, Ticket, Timestamps};
use crate::recorder::Recorder;
use crate::workload::request::Rendered;
use crate::workload::Renderer;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where a connection gets its tickets: the shared closed-loop scheduler, or its thread's
/// open-loop queue.
#[derive(Clone)]
pub(super) enum Feed {
    Closed(Arc<Scheduler>),
    Open(Rc<queue::OpenQueue>),
}

impl Feed {
    /// The next ticket and its dispatch: a closed loop's is issued now, so it is dispatched
    /// when intended (no second clock read); an open loop's when a connection took it.
    pub(super) async fn next(&self) -> Option<(Ticket, Instant)> {
        match self {
            Feed::Closed(s) => s.next_ticket().map(|t| (t, t.intended)),
            Feed::Open(q) => q.take().await,
        }
    }

    /// Waits `pause` before the next request (a connection that could not connect: see
    /// [`Reconnect`]), no later than a closed loop's end.
    async fn pause(&self, pause: Duration) {
        let mut until = Instant::now() + pause;
        if let Feed::Closed(s) = self {
            until = s.deadline().map_or(until, |end| end.min(until));
        }
        tokio::time::sleep_until(until.into()).await;
    }
}

/// Whether `outcome` failed because its connection could not be opened.
fn failed_connect(outcome: &crate::engine::Outcome) -> bool {
    matches!(&outcome.result, Err(e) if matches!(e.kind, ErrorKind::Connect | ErrorKind::AddrNotAvail))
}

/// Which request a sample is: its name slot, its connection slot and its trace ids.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Who {
    pub request: u16,
    pub connection: u32,
    pub trace: Option<TraceId>,
}

/// Records one request's outcome (with its response's `Server-Timing`) and updates the
/// thread's live counters: the one place an outcome becomes a sample.
pub(super) fn record_outcome(
    recorder: &RefCell<Recorder>,
    progress: &ThreadProgress,
    fail_fast: &FailFast,
    stamps: Timestamps,
    outcome: &crate::engine::Outcome,
    session: &Session,
    who: Who,
) {
    let extras = session.extras(outcome);
    let sample = Sample {
        stamps,
        status: outcome.result.as_ref().ok().copied(),
        // A complete response may fail by its protocol's status (a gRPC call not OK).
        error: match &outcome.result {
            Err(e) => Some(e.kind),
            Ok(_) => extras.failed(),
        },
        bytes_read: outcome.bytes_read,
        bytes_written: outcome.bytes_written,
        traffic: outcome.traffic,
        server_closed: outcome.server_closed,
        request: who.request,
        connection: who.connection,
        trace: who.trace,
        wire: outcome.wire,
    };
    let mut recorder = recorder.borrow_mut();
    recorder.record_response(&sample, session.server_timing(), session.event_gaps());
    recorder.fold(&sample, &extras);
    progress
        .requests
        .store(recorder.requests(), Ordering::Relaxed);
    match &outcome.result {
        Ok(_) => {
            fail_fast.succeeded();
            if let Some(done) = stamps.done {
                progress
                    .answered(done.saturating_duration_since(stamps.dispatched).as_nanos() as u64);
            }
        }
        Err(e) => {
            fail_fast.failed(e.cause, &e.detail);
            recorder.note_error(e.kind, &e.detail);
        }
    }
    if sample.error.is_some() {
        progress.errors.store(recorder.errors(), Ordering::Relaxed);
    }
}

/// When a connection of a closed loop with connection stages is active: connection `index`
/// is active while the stage's connection count (linear within a stage) is above it.
pub(super) struct Activity {
    pub(super) stages: Arc<Vec<ConnStage>>,
    pub(super) origin: Instant,
    pub(super) index: usize,
}

/// How often an inactive connection looks again whether a ramp reached it.
const ACTIVITY_POLL: Duration = Duration::from_millis(10);

impl Activity {
    /// The number of connections wanted at `now`, or `None` after the last stage.
    pub(super) fn wanted(&self, now: Instant) -> Option<f64> {
        let mut t = now.saturating_duration_since(self.origin).as_secs_f64();
        for s in self.stages.iter() {
            let d = s.duration.as_secs_f64();
            if t < d {
                return Some(s.from as f64 + (s.to as f64 - s.from as f64) * t / d);
            }
            t -= d;
        }
        None
    }

    /// Waits until this connection is active; false when the stages are over.
    pub(super) async fn wait_active(&self) -> bool {
        loop {
            match self.wanted(Instant::now()) {
                None => return false,
                Some(w) if (self.index as f64) < w => return true,
                Some(_) => tokio::time::sleep(ACTIVITY_POLL).await,
            }
        }
    }
}

/// A thread's connections being opened ahead of an open loop's schedule.
pub(super) struct Opening {
    /// Connection slots not yet open (or failed).
    pub(super) pending: Cell<usize>,
    pub(super) gate: Arc<StartGate>,
    /// Whether their connect times are recorded (not in a warm-up).
    pub(super) record: bool,
}

impl Opening {
    /// One slot is open (or failed: its first request will connect again).
    pub(super) fn done(&self) {
        let left = self.pending.get().saturating_sub(1);
        self.pending.set(left);
        if left == 0 {
            self.gate.arrive();
        }
    }
}

/// One connection's loop: take a ticket, send, record, repeat.
pub(super) struct Connection {
    /// An open loop: open the connection before the schedule starts.
    pub(super) opening: Option<Rc<Opening>>,
    pub(super) activity: Option<Activity>,
    pub(super) session: Session,
    pub(super) feed: Feed,
    pub(super) recorder: Rc<RefCell<Recorder>>,
    pub(super) progress: Arc<Progress>,
    pub(super) fail_fast: Arc<FailFast>,
    pub(super) thread: usize,
    /// The worker's index over every generator's threads (its requests' trace ids are made
    /// from it and their sequence numbers) and this connection's slot number.
    pub(super) worker: usize,
    pub(super) slot: u32,
    /// A workload's renderer (shared by the thread's connections) and this connection's
    /// buffer for the rendered request.
    pub(super) renderer: Option<Rc<RefCell<Renderer>>>,
    pub(super) buf: Rendered,
}

impl Connection {
    /// One request at a time until the feed ends. Not an `async fn`: its `self`, captured
    /// by the block, is not kept a second time as the body's local (rustc keeps both for an
    /// `async fn` taking `mut self`), which sizes every connection's task (issue 18: small
    /// connections).
    #[allow(clippy::manual_async_fn)] // an `async fn` would double `self`: see above
    pub(super) fn run(mut self) -> impl Future<Output = ()> {
        async move {
            if let Some(opening) = self.opening.take() {
                let now = Instant::now();
                let mut stamps = Timestamps::new(now, now);
                if self.session.open(&mut stamps).await.is_ok() && opening.record {
                    self.recorder.borrow_mut().record_connection(&stamps);
                }
                opening.done();
            }
            let mut reconnect = Reconnect::default();
            loop {
                if let Some(a) = &self.activity {
                    if !a.wait_active().await {
                        break;
                    }
                }
                let Some((ticket, dispatched)) = self.feed.next().await else {
                    break;
                };
                let mut stamps =
                    Timestamps::new(ticket.intended, dispatched).released_at(ticket.released);
                let (send, slot) = match &self.renderer {
                    Some(r) => {
                        let (slot, head) = r.borrow_mut().render(ticket.seq, &mut self.buf);
                        let send = Send::Rendered {
                            rendered: &self.buf,
                            head,
                        };
                        (send, slot)
                    }
                    None => (Send::Fixed { seq: ticket.seq }, 0),
                };
                let who = {
                    let (seq, worker, conn) = (ticket.seq, self.worker, self.slot);
                    let trace = self
                        .session
                        .config()
                        .trace
                        .as_ref()
                        .map(|c| c.ids(worker, seq));
                    self.session.trace_next(trace);
                    Who {
                        request: slot,
                        connection: conn,
                        trace,
                    }
                };
                self.recorder.borrow_mut().sending(1);
                let outcome = self.session.request(&mut stamps, send).await;
                record_outcome(
                    &self.recorder,
                    &self.progress.0[self.thread],
                    &self.fail_fast,
                    stamps,
                    &outcome,
                    &self.session,
                    who,
                );
                if let Some(pause) = reconnect.after(failed_connect(&outcome)) {
                    self.feed.pause(pause).await;
                }
            }
        }
    }

    /// `--pipeline depth` (a closed loop): take up to `depth` tickets at once, send their
    /// requests (or WebSocket messages) in one write, record each response as it ends, repeat.
    #[allow(clippy::manual_async_fn)] // an `async fn` would double `self`: see `run`
    pub(super) fn run_pipelined(mut self, depth: usize) -> impl Future<Output = ()> {
        async move {
            let mut batch = Batch::default();
            let mut reconnect = Reconnect::default();
            let mut slots: Vec<Who> = Vec::with_capacity(depth);
            // A request with its trace headers (capacity kept).
            let mut traced = Vec::new();
            loop {
                if let Some(a) = &self.activity {
                    if !a.wait_active().await {
                        break;
                    }
                }
                batch.clear();
                slots.clear();
                while batch.len() < depth {
                    let Some((ticket, _)) = self.feed.next().await else {
                        break;
                    };
                    // A closed loop's ticket was issued now: it is dispatched when intended.
                    let stamps = Timestamps::new(ticket.intended, ticket.intended)
                        .released_at(ticket.released);
                    let config = self.session.config();
                    let (bytes, head, slot) = match &self.renderer {
                        Some(r) => {
                            let mut r = r.borrow_mut();
                            let (slot, head) = r.render(ticket.seq, &mut self.buf);
                            // A WebSocket message is rendered as a body.
                            let bytes = match r.parts() {
                                true => self.buf.parts.body.as_slice(),
                                false => self.buf.bytes.as_slice(),
                            };
                            (bytes, head, slot)
                        }
                        // HTTP/1.1's fixed request, or a WebSocket's message.
                        None => match self.session.pipelined_request() {
                            Some(fixed) => (fixed.0, fixed.1, 0),
                            None => break,
                        },
                    };
                    let trace = config
                        .trace
                        .as_ref()
                        .map(|c| (c, c.ids(self.worker, ticket.seq)));
                    match &trace {
                        Some((ctx, id)) => {
                            let headers = crate::model::trace::TraceHeaders::new(ctx, id);
                            crate::engine::trace::http1_into(&mut traced, bytes, &headers);
                            batch.push(&traced, head, stamps);
                        }
                        None => batch.push(bytes, head, stamps),
                    }
                    slots.push(Who {
                        request: slot,
                        connection: self.slot,
                        trace: trace.map(|(_, id)| id),
                    });
                }
                if batch.is_empty() {
                    break;
                }
                self.recorder.borrow_mut().sending(batch.len() as u64);
                let (recorder, fail_fast) = (&self.recorder, &self.fail_fast);
                let progress = &self.progress.0[self.thread];
                let mut unconnected = false;
                self.session
                    .request_batch(&mut batch, |i, stamps, outcome, session| {
                        unconnected |= failed_connect(outcome);
                        record_outcome(
                            recorder, progress, fail_fast, stamps, outcome, session, slots[i],
                        )
                    })
                    .await;
                if let Some(pause) = reconnect.after(unconnected) {
                    self.feed.pause(pause).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Connection;

    /// The size of what `f` returns (a future, here), without calling it.
    fn returned<A, R>(_: impl FnOnce(A) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    /// A connection's task is allocated at its largest state for the whole run, however idle
    /// the connection: issue 18 wants ≤ 6 KB of client memory per idle connection at 10,000.
    /// Large, rare futures (TLS handshakes, HTTP/3) are boxed where they are awaited; one
    /// inlined again shows here (7,200 bytes before they were boxed, in release).
    #[test]
    fn a_connection_task_stays_small() {
        let one = returned(Connection::run);
        let pipelined = returned(|c: Connection| c.run_pipelined(2));
        println!("connection task: {one} bytes, pipelined {pipelined} bytes");
        assert!(one <= 3072, "a connection's task is {one} bytes");
        assert!(
            pipelined <= 3072,
            "a pipelined connection's task is {pipelined} bytes"
        );
    }
}
