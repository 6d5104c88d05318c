//! The end of a run: what became of the requests that did not end within the window, and
//! when the server answered last, if requests failed after that (a server that stopped
//! answering, which a report and an exit code read from it).

use crate::recorder::summary::round6;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The end of a run. Every request sent is counted once: in `requests` (it ended within the
/// window, or in the drain after it) or here as still in flight when the run ended; requests
/// due but never sent are counted apart.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct EndOfRun {
    /// Requests that ended after the window, while the run waited for those in flight
    /// (`--drain`); they are in `requests` and in the latency figures.
    pub drained: u64,
    /// Of the drained requests, those that timed out.
    pub drain_timeouts: u64,
    /// Of the drained requests, those answered (a complete response; absent when none).
    #[serde(default, skip_serializing_if = "crate::recorder::hist::is_zero")]
    pub drained_ok: u64,
    /// Requests sent and still in flight when the run ended (the drain ran out, or a signal
    /// stopped the run): not in `requests`.
    pub in_flight: u64,
    /// Open loop: requests due within the window that were never sent (every connection was
    /// busy until its end): not in `requests`.
    pub not_sent: u64,
    /// How long after the window the drain ended, seconds.
    pub drain_s: f64,
}

impl EndOfRun {
    pub(super) fn of(c: &crate::recorder::Counters, drain: Duration) -> Self {
        EndOfRun {
            drained: c.drained,
            drain_timeouts: c.drain_timeouts,
            drained_ok: c.drained_ok,
            in_flight: c.in_flight_at_end,
            not_sent: c.not_sent,
            // The wait for requests that never came back, or the last one that did.
            drain_s: round6(drain.as_secs_f64().max(c.drain_ns as f64 / 1e9)),
        }
    }

    /// Whether anything is left to say.
    pub fn is_empty(&self) -> bool {
        self.drained + self.in_flight + self.not_sent == 0
    }
}

/// The last complete response of a run after which requests failed: a server that stopped
/// answering (killed, crashed, restarted), and what followed.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct LastAnswer {
    /// When it ended, seconds from the start of the window (at most its length).
    pub at_s: f64,
    /// Requests that failed after it (each worker thread's after its own last response).
    pub failed_after: u64,
}

impl LastAnswer {
    /// From a run's counters over a window of `secs`: some response, then failures.
    pub(super) fn of(c: &crate::recorder::Counters, secs: f64) -> Option<Self> {
        (c.ok > 0 && c.failed_since_ok > 0).then(|| LastAnswer {
            at_s: round6((c.last_ok_ns as f64 / 1e9).min(secs)),
            failed_after: c.failed_since_ok,
        })
    }

    /// The share of a window of `duration_s` after it: the time the server did not answer.
    pub fn silent_share(&self, duration_s: f64) -> f64 {
        if duration_s <= 0.0 {
            return 0.0;
        }
        ((duration_s - self.at_s) / duration_s).clamp(0.0, 1.0)
    }
}
