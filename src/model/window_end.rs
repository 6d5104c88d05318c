//! The end of a run's recorded window, shared by the threads that send and record it: set when
//! recording begins (a timed run's deadline; none for a count of requests), and moved earlier,
//! never later, when the run has measured enough (`--until`). One relaxed atomic load to read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Stored as nanoseconds after `base`; `NONE`: no end.
#[derive(Debug)]
pub struct WindowEnd {
    base: Instant,
    ns: AtomicU64,
}

const NONE: u64 = u64::MAX;

impl WindowEnd {
    /// No end yet.
    pub fn open() -> WindowEnd {
        // An hour back: every instant a run's end is moved to lies after it.
        let now = Instant::now();
        WindowEnd {
            base: now.checked_sub(Duration::from_secs(3600)).unwrap_or(now),
            ns: AtomicU64::new(NONE),
        }
    }

    /// An end at `end` (none: `None`).
    pub fn at(end: Option<Instant>) -> WindowEnd {
        let w = WindowEnd::open();
        w.set(end);
        w
    }

    fn ns_of(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.base).as_nanos() as u64).min(NONE - 1)
    }

    /// Sets the end (recording begins).
    pub fn set(&self, end: Option<Instant>) {
        let ns = end.map_or(NONE, |e| self.ns_of(e));
        self.ns.store(ns, Ordering::Relaxed);
    }

    /// Ends the window at `at` if it ends later (or has no end): nothing is sent after it, and
    /// what ends after it was in flight.
    pub fn close(&self, at: Instant) {
        self.ns.fetch_min(self.ns_of(at), Ordering::Relaxed);
    }

    /// The end, if there is one.
    pub fn get(&self) -> Option<Instant> {
        match self.ns.load(Ordering::Relaxed) {
            NONE => None,
            ns => Some(self.base + Duration::from_nanos(ns)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_moves_earlier_never_later() {
        let t0 = Instant::now();
        let w = WindowEnd::open();
        assert_eq!(w.get(), None);
        w.close(t0 + Duration::from_secs(5));
        assert_eq!(w.get(), Some(t0 + Duration::from_secs(5)));
        w.close(t0 + Duration::from_secs(9));
        assert_eq!(w.get(), Some(t0 + Duration::from_secs(5)));
        let w = WindowEnd::at(Some(t0 + Duration::from_secs(10)));
        w.close(t0 + Duration::from_secs(3));
        assert_eq!(w.get(), Some(t0 + Duration::from_secs(3)));
        w.set(None);
        assert_eq!(w.get(), None);
    }
}
