//! The ways into the joiner: a worker's [`TrailSink`] (its recorded requests, in batches,
//! never waiting: a batch the joiner has no room for is dropped and counted) and the probes'
//! [`EventSink`] (the kernel's events, in the order bpftrace printed them).

use super::{JoinMsg, KernelEvent, Trail};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

/// Requests a worker hands over at once.
pub const BATCH: usize = 256;

/// Empty batches, back from the joiner.
pub(super) type Pool = Arc<Mutex<Vec<Vec<Trail>>>>;

/// A worker's way into the joiner.
pub struct TrailSink {
    tx: SyncSender<JoinMsg>,
    pool: Pool,
    buf: Vec<Trail>,
    dropped: u64,
}

impl TrailSink {
    pub(super) fn new(tx: SyncSender<JoinMsg>, pool: Pool) -> TrailSink {
        TrailSink {
            tx,
            pool,
            buf: Vec::with_capacity(BATCH),
            dropped: 0,
        }
    }

    /// One recorded request.
    #[inline]
    pub fn push(&mut self, t: Trail) {
        self.buf.push(t);
        if self.buf.len() >= BATCH {
            self.flush();
        }
    }

    /// Hands over what is batched (an interval closed, or the batch is full).
    pub fn flush(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let spare = self
            .pool
            .lock()
            .ok()
            .and_then(|mut p| p.pop())
            .unwrap_or_else(|| Vec::with_capacity(BATCH));
        let full = std::mem::replace(&mut self.buf, spare);
        let dropped = std::mem::take(&mut self.dropped);
        match self.tx.try_send(JoinMsg::Trails(full, dropped)) {
            Ok(()) => {}
            Err(TrySendError::Full(JoinMsg::Trails(mut full, dropped))) => {
                self.dropped = dropped + full.len() as u64;
                full.clear();
                self.buf = full;
            }
            Err(_) => self.dropped += dropped,
        }
    }
}

impl Drop for TrailSink {
    /// The last requests go to the joiner (waiting for room: the worker is done).
    fn drop(&mut self) {
        let full = std::mem::take(&mut self.buf);
        let _ = self.tx.send(JoinMsg::Trails(full, self.dropped));
    }
}

/// The probes' way into the joiner.
#[derive(Clone)]
pub struct EventSink {
    tx: SyncSender<JoinMsg>,
}

impl EventSink {
    pub(super) fn new(tx: SyncSender<JoinMsg>) -> EventSink {
        EventSink { tx }
    }

    /// Events, in the order the kernel gave them; false once the joiner is gone.
    pub fn send(&self, events: Vec<KernelEvent>) -> bool {
        self.tx.send(JoinMsg::Events(events)).is_ok()
    }

    /// The count of events of connections not the client's (the probes' own count).
    pub fn others(&self, n: u64) {
        let _ = self.tx.send(JoinMsg::Others(n));
    }
}

/// Where a worker's requests come from, for the joiner's thread (its end of the channel).
pub struct TrailSource {
    pub(super) tx: SyncSender<JoinMsg>,
    pub(super) pool: Pool,
}

impl TrailSource {
    /// A worker's sink.
    pub fn sink(&self) -> TrailSink {
        TrailSink::new(self.tx.clone(), self.pool.clone())
    }
}
