//! The fail-fast rule: a run whose connections cannot work stops at once and names the fix,
//! instead of making thousands of doomed attempts for its whole duration.
//!
//! The rule: while **no request has succeeded yet** (no complete response, whatever its
//! status), the run stops as soon as the first `N = min(max(connections, 3), 16)` failed
//! requests all failed with the **same cause** ([`Cause`]: at connecting, refused, untrusted
//! certificate, not TLS, ALPN, …; or a plain request answered with a TLS alert), or as soon as
//! at least two did over one second or more with nothing else in between (a slow open loop,
//! connects slowed by `--max-connections-per-second`). One complete response, or one failure
//! of another kind or cause (a timeout, a reset, a garbled response, another cause) disarms the rule for the rest of the run:
//! a server that refuses some connections after others succeeded, or whose first connections
//! fail and later ones work in some other way, keeps today's behaviour (every error counted).
//! The attempts are requests (an open loop's connections opened ahead of the schedule are
//! not: their failures are not recorded, and the first requests connect again), so the record
//! of a stopped run has its errors, by kind, with the first one's words.

use super::StopSignal;
use crate::engine::cause::Cause;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Most failed attempts the rule waits for.
pub const MAX_ATTEMPTS: u64 = 16;
/// Fewest failed attempts the rule waits for (a run of one connection tries three times).
pub const MIN_ATTEMPTS: u64 = 3;
/// Failures of one cause spread over this long stop the run even before N of them.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The attempts to wait for with `connections` connection slots.
pub fn attempts(connections: usize) -> u64 {
    (connections as u64).clamp(MIN_ATTEMPTS, MAX_ATTEMPTS)
}

/// Why the rule stopped a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tripped {
    /// The cause the failed attempts share (it names the fix).
    pub cause: Cause,
    /// Failed attempts when it stopped.
    pub failures: u64,
    /// The first one's error (`connect to 127.0.0.1:1: Connection refused`).
    pub first: String,
    /// From the first failure to the stop.
    pub after: Duration,
}

/// The rule's state, shared by a run's worker threads. A success costs one relaxed load.
pub struct FailFast {
    /// Until a request succeeds or failures differ.
    armed: AtomicBool,
    /// The cause of the first failure: its index in [`Cause::ALL`] plus one; 0 before.
    cause: AtomicU8,
    failures: AtomicU64,
    first_at: OnceLock<Instant>,
    first: Mutex<Option<String>>,
    tripped: Mutex<Option<Tripped>>,
    attempts: u64,
    stop: StopSignal,
}

impl FailFast {
    /// The rule for a run of `connections` slots, stopping it through `stop`.
    pub fn new(connections: usize, stop: StopSignal) -> Self {
        FailFast {
            armed: AtomicBool::new(true),
            cause: AtomicU8::new(0),
            failures: AtomicU64::new(0),
            first_at: OnceLock::new(),
            first: Mutex::new(None),
            tripped: Mutex::new(None),
            attempts: attempts(connections),
            stop,
        }
    }

    /// A request succeeded (a complete response): the rule is off for the rest of the run.
    #[inline]
    pub fn succeeded(&self) {
        if self.armed.load(Ordering::Relaxed) {
            self.armed.store(false, Ordering::Relaxed);
        }
    }

    /// A request (or an open loop's early connect) failed with `cause` (`None`: a failure
    /// that names no fix) and `detail`.
    pub fn failed(&self, cause: Option<Cause>, detail: &str) {
        if !self.armed.load(Ordering::Relaxed) {
            return;
        }
        let Some(cause) = cause else {
            self.armed.store(false, Ordering::Relaxed);
            return;
        };
        let code = Cause::ALL.iter().position(|c| *c == cause).unwrap_or(0) as u8 + 1;
        match self
            .cause
            .compare_exchange(0, code, Ordering::SeqCst, Ordering::SeqCst)
        {
            Ok(_) => {}
            Err(first) if first == code => {}
            Err(_) => {
                self.armed.store(false, Ordering::Relaxed);
                return;
            }
        }
        let now = Instant::now();
        let first_at = *self.first_at.get_or_init(|| now);
        if let Ok(mut first) = self.first.lock() {
            first.get_or_insert_with(|| detail.to_string());
        }
        let n = self.failures.fetch_add(1, Ordering::SeqCst) + 1;
        let after = now.saturating_duration_since(first_at);
        if n < self.attempts && (n < 2 || after < WINDOW) {
            return;
        }
        if !self.armed.load(Ordering::SeqCst) {
            return;
        }
        if let Ok(mut tripped) = self.tripped.lock() {
            if tripped.is_none() {
                let first = self
                    .first
                    .lock()
                    .ok()
                    .and_then(|f| f.clone())
                    .unwrap_or_default();
                *tripped = Some(Tripped {
                    cause,
                    failures: n,
                    first,
                    after,
                });
            }
        }
        // Done: the failures still coming back until the workers stop return at once.
        self.armed.store(false, Ordering::Relaxed);
        self.stop.stop();
    }

    /// Why the rule stopped the run, if it did.
    pub fn tripped(&self) -> Option<Tripped> {
        self.tripped.lock().ok().and_then(|t| t.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_attempts_failing_alike_stop_the_run() {
        let stop = StopSignal::default();
        let ff = FailFast::new(50, stop.clone());
        for i in 0..15 {
            ff.failed(Some(Cause::Refused), &format!("refused {i}"));
            assert!(!stop.is_stopped(), "after {}", i + 1);
        }
        ff.failed(Some(Cause::Refused), "refused 15");
        assert!(stop.is_stopped());
        let t = ff.tripped().unwrap();
        assert_eq!((t.cause, t.failures), (Cause::Refused, 16));
        assert_eq!(t.first, "refused 0");
        // One connection: three attempts.
        let stop = StopSignal::default();
        let ff = FailFast::new(1, stop.clone());
        for _ in 0..3 {
            ff.failed(Some(Cause::CertUntrusted), "UnknownIssuer");
        }
        assert!(stop.is_stopped());
    }

    #[test]
    fn a_success_or_a_different_failure_disarms_it() {
        // (what happens first, then N failures of one cause)
        let cases: [&dyn Fn(&FailFast); 3] = [
            &|ff| ff.succeeded(),
            &|ff| ff.failed(None, "timeout"),
            &|ff| ff.failed(Some(Cause::CertUntrusted), "UnknownIssuer"),
        ];
        for (i, first) in cases.iter().enumerate() {
            let stop = StopSignal::default();
            let ff = FailFast::new(4, stop.clone());
            first(&ff);
            for _ in 0..100 {
                ff.failed(Some(Cause::Refused), "refused");
            }
            assert!(!stop.is_stopped(), "case {i}");
            assert_eq!(ff.tripped(), None);
        }
    }

    #[test]
    fn slow_failures_stop_it_after_a_second() {
        let stop = StopSignal::default();
        let ff = FailFast::new(100, stop.clone());
        ff.failed(Some(Cause::Refused), "refused");
        // Pretend the first failure was a second ago.
        let ff = FailFast {
            first_at: OnceLock::from(Instant::now() - WINDOW),
            ..ff
        };
        ff.failed(Some(Cause::Refused), "refused");
        assert!(stop.is_stopped());
        assert_eq!(ff.tripped().unwrap().failures, 2);
    }
}
