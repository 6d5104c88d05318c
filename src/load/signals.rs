//! What the controlling thread and the workers share while a run goes: the [`StopSignal`]
//! that stops them, and the [`Progress`] counters the progress display reads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::watch;

/// Tells every worker to stop sending; cheap to clone, works across runtimes.
#[derive(Clone)]
pub struct StopSignal {
    tx: Arc<watch::Sender<bool>>,
}

impl Default for StopSignal {
    fn default() -> Self {
        StopSignal {
            tx: Arc::new(watch::channel(false).0),
        }
    }
}

impl StopSignal {
    /// Stops the run.
    pub fn stop(&self) {
        self.tx.send_replace(true);
    }

    /// Whether `stop` was called.
    pub fn is_stopped(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once `stop` is called.
    pub async fn stopped(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// Live counters of one worker thread, read by the progress display. Padded to a cache line
/// so threads do not share one.
#[repr(align(64))]
#[derive(Default)]
pub struct ThreadProgress {
    /// Requests this thread recorded so far.
    pub requests: AtomicU64,
    /// Of them, those that failed.
    pub errors: AtomicU64,
    /// Of them, those answered (a complete response).
    pub answered: AtomicU64,
    /// Their time from dispatch to the end of the response, added, ns: how long a
    /// connection is busy with a request.
    pub answered_ns: AtomicU64,
}

impl ThreadProgress {
    /// Counts a request answered after `ns` from its dispatch. Only this thread writes its
    /// counters: a load and a store, no locked instruction.
    #[inline]
    pub fn answered(&self, ns: u64) {
        let add = |c: &AtomicU64, n: u64| c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
        add(&self.answered, 1);
        add(&self.answered_ns, ns);
    }
}

/// Live counters of every worker thread.
pub struct Progress(pub Vec<ThreadProgress>);

impl Progress {
    /// Zeroed counters for `threads` worker threads, to share between them and the display.
    pub fn new(threads: usize) -> Arc<Self> {
        Arc::new(Progress(
            (0..threads).map(|_| ThreadProgress::default()).collect(),
        ))
    }

    /// (requests answered, their time from dispatch to response added, ns) so far, by all
    /// threads.
    pub fn answered(&self) -> (u64, u64) {
        self.0.iter().fold((0, 0), |(n, ns), t| {
            (
                n + t.answered.load(Ordering::Relaxed),
                ns + t.answered_ns.load(Ordering::Relaxed),
            )
        })
    }

    /// (requests, errors) recorded so far by all threads.
    pub fn totals(&self) -> (u64, u64) {
        self.0.iter().fold((0, 0), |(r, e), t| {
            (
                r + t.requests.load(Ordering::Relaxed),
                e + t.errors.load(Ordering::Relaxed),
            )
        })
    }
}
