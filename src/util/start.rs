//! When the load starts. An open loop's schedule must not begin before the plan's connections
//! are open: opening a thousand connections takes tens of milliseconds, and requests due
//! meanwhile would wait for them and carry that wait in their corrected latency (seen: a first
//! interval with schedule lag p99 17–22 ms where the rest of the run had 4 ms). So every
//! worker thread opens its connections first (their connect and TLS times are still recorded)
//! and arrives at one [`StartGate`]; the last arrival sets the run's origin, from which every
//! thread's schedule, the warm-up and the duration count. A closed loop opens its gate at once:
//! its requests are intended when a connection is free, connecting included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How far ahead of the last arrival the origin is set: time for every waiting thread to wake
/// before the first requests are due (a cross-thread wake-up takes tens to hundreds of µs on
/// a busy machine, and would show as those requests' schedule lag).
pub const WAKE_MARGIN: Duration = Duration::from_millis(2);

/// The moment the load starts, set once by the last worker thread to be ready.
pub struct StartGate {
    /// Threads not yet ready.
    waiting: AtomicUsize,
    origin: watch::Sender<Option<Instant>>,
}

impl StartGate {
    /// A gate that opens when `threads` threads have arrived (at once when `threads` is 0).
    pub fn new(threads: usize) -> Self {
        let gate = StartGate {
            waiting: AtomicUsize::new(threads),
            origin: watch::channel(None).0,
        };
        if threads == 0 {
            gate.open(Instant::now());
        }
        gate
    }

    /// A gate already open at `origin` (a closed loop).
    pub fn opened_at(origin: Instant) -> Self {
        let gate = StartGate::new(usize::MAX);
        gate.open(origin);
        gate
    }

    /// A thread's connections are open; the last thread to arrive opens the gate, with the
    /// origin [`WAKE_MARGIN`] from now.
    pub fn arrive(&self) {
        if self.waiting.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.open(Instant::now() + WAKE_MARGIN);
        }
    }

    fn open(&self, origin: Instant) {
        self.origin.send_if_modified(|o| {
            if o.is_none() {
                *o = Some(origin);
                true
            } else {
                false
            }
        });
    }

    /// The origin, if the gate is open.
    pub fn origin(&self) -> Option<Instant> {
        *self.origin.borrow()
    }

    /// Resolves with the origin once the gate opens (from any runtime). Cancel-safe.
    pub async fn opened(&self) -> Instant {
        let mut rx = self.origin.subscribe();
        let origin = match rx.wait_for(Option::is_some).await {
            Ok(o) => *o,
            // The sender lives in `self`: it cannot be dropped while we borrow it.
            Err(_) => None,
        };
        origin.expect("the gate owns its sender and waited for an origin")
    }
}

/// The wall-clock time at `instant` (near now, before or after).
pub fn wall_clock_at(instant: Instant) -> std::time::SystemTime {
    let (wall, now) = (std::time::SystemTime::now(), Instant::now());
    if instant >= now {
        wall + (instant - now)
    } else {
        wall - (now - instant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_last_arrival_sets_the_origin() {
        let gate = StartGate::new(3);
        let before = Instant::now();
        gate.arrive();
        gate.arrive();
        assert_eq!(gate.origin(), None, "two of three threads ready: not open");
        gate.arrive();
        let origin = gate.origin().expect("open after the third");
        assert!(origin >= before + WAKE_MARGIN);
        // A late extra arrival changes nothing.
        gate.arrive();
        assert_eq!(gate.origin(), Some(origin));
    }

    #[test]
    fn waiters_on_other_threads_see_the_same_origin() {
        let gate = Arc::new(StartGate::new(2));
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let g = gate.clone();
                std::thread::spawn(move || {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .build()
                        .unwrap();
                    rt.block_on(async {
                        let o = g.opened().await;
                        g.arrive();
                        o
                    })
                })
            })
            .collect();
        // Neither waiter arrives before the gate opens: open it from here. Kept: a waiter
        // parked in `opened()` shows nothing to poll; the pause lets both park first.
        std::thread::sleep(std::time::Duration::from_millis(20));
        gate.arrive();
        gate.arrive();
        let origins: Vec<Instant> = waiters.into_iter().map(|w| w.join().unwrap()).collect();
        assert_eq!(origins[0], origins[1]);
        assert_eq!(Some(origins[0]), gate.origin());
    }

    #[test]
    fn a_closed_loop_gate_is_open_from_the_start() {
        let t0 = Instant::now();
        let gate = StartGate::opened_at(t0);
        assert_eq!(gate.origin(), Some(t0));
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(rt.block_on(gate.opened()), t0);
        assert!(StartGate::new(0).origin().is_some());
    }
}
