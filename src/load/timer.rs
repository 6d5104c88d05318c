//! A precise timer for the open-loop pacer. tokio's timers have a granularity of one
//! millisecond, far coarser than the gap between requests at 50,000 req/s (20 µs), so the
//! pacer waits on a Linux `timerfd` armed to the nanosecond and registered with the thread's
//! reactor: the wait is an epoll wake-up like any socket's, with no spinning and no 1 ms
//! rounding. The worker thread's timer slack is set to 1 ns so the kernel does not defer the
//! wake-up (its default slack is 50 µs). A wake-up costs no syscall beyond the reactor's own:
//! the expiry count is never read, and the timer is not armed again for the deadline it holds.
//! Where a timerfd cannot be made, or the plan asks for it (`--pacer-timer coarse`, a
//! benchmark's before figure), tokio's sleep is used and the lag it causes shows in the
//! schedule-lag figure.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};
use tokio::io::unix::AsyncFd;

/// Sets the calling thread's timer slack to 1 ns (best effort).
pub fn tighten_timer_slack() {
    // SAFETY: prctl with PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Waits until an instant with sub-millisecond precision.
pub struct PreciseTimer {
    fd: Option<AsyncFd<OwnedFd>>,
    /// The deadline the timerfd is armed for and has not reached (no need to arm it again).
    armed: Cell<Option<Instant>>,
}

impl PreciseTimer {
    /// A timer for the current runtime (call from within it): a timerfd, or tokio's sleep
    /// where one cannot be made.
    pub fn new() -> Self {
        PreciseTimer {
            fd: make_timerfd().ok(),
            armed: Cell::new(None),
        }
    }

    /// tokio's sleep, to its 1 ms tick (`--pacer-timer coarse`: a benchmark's before figure).
    pub fn coarse() -> Self {
        PreciseTimer {
            fd: None,
            armed: Cell::new(None),
        }
    }

    /// Whether the precise path is in use (a timerfd was made).
    pub fn is_precise(&self) -> bool {
        self.fd.is_some()
    }

    /// Resolves at `due` (at once if it has passed).
    pub async fn sleep_until(&self, due: Instant) {
        let Some(fd) = &self.fd else {
            return tokio::time::sleep_until(due.into()).await;
        };
        loop {
            let now = Instant::now();
            if due <= now {
                return;
            }
            if self.armed.get() != Some(due) {
                if arm(fd.get_ref(), due - now).is_err() {
                    self.armed.set(None);
                    return tokio::time::sleep_until(due.into()).await;
                }
                self.armed.set(Some(due));
            }
            let Ok(mut guard) = fd.readable().await else {
                self.armed.set(None);
                return tokio::time::sleep_until(due.into()).await;
            };
            // The expiry count is never read (a syscall saved per wake-up): arming again
            // resets it, and the reactor's edge-triggered epoll reports every expiry anew.
            guard.clear_ready();
            if Instant::now() >= due {
                self.armed.set(None);
            }
        }
    }
}

impl Default for PreciseTimer {
    fn default() -> Self {
        Self::new()
    }
}

fn make_timerfd() -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: timerfd_create returns a new descriptor or -1.
    let raw = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: the OwnedFd keeps the descriptor open, and its as_raw_fd is always `raw`, for
    // as long as the AsyncFd owns it.
    unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Arms the timer to fire once after `after` (relative, so no clock conversion is needed).
fn arm(fd: &OwnedFd, after: Duration) -> io::Result<()> {
    let after = after.max(Duration::from_nanos(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs() as libc::time_t,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: a valid timerfd and a fully initialised itimerspec.
    let rc = unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[ignore = "timing: run alone by .ci/test's timing step"]
    fn timing_wakes_close_to_the_due_time_and_never_early() {
        tighten_timer_slack();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let timer = PreciseTimer::new();
            assert!(timer.is_precise());
            assert!(!PreciseTimer::coarse().is_precise());
            let mut lateness = Vec::new();
            for i in 0..200u64 {
                let due = Instant::now() + Duration::from_micros(100 + (i % 7) * 37);
                timer.sleep_until(due).await;
                let now = Instant::now();
                assert!(now >= due, "woke early");
                lateness.push((now - due).as_micros() as u64);
            }
            lateness.sort_unstable();
            // The median lateness is far below tokio's 1 ms granularity (bounded loosely:
            // this machine is shared).
            let median = lateness[lateness.len() / 2];
            eprintln!(
                "timer lateness median {median} us, p90 {} us",
                lateness[lateness.len() * 9 / 10]
            );
            assert!(median < 1000, "median lateness {median} µs: {lateness:?}");
        });
    }

    #[test]
    #[ignore = "timing: run alone by .ci/test's timing step"]
    fn timing_a_past_due_time_returns_at_once() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t = PreciseTimer::new();
            let started = Instant::now();
            t.sleep_until(started - Duration::from_millis(5)).await;
            assert!(started.elapsed() < Duration::from_millis(5));
        });
    }
}
