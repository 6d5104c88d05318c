//! CLOCK_MONOTONIC in nanoseconds: what bpftrace's `nsecs` reads, and what `Instant` is on
//! Linux, so that the kernel's stamps and the client's meet on one clock.

use std::time::Instant;

/// CLOCK_MONOTONIC now, ns.
pub fn mono_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `at` in CLOCK_MONOTONIC ns (two clock reads).
pub fn mono_ns(at: Instant) -> u64 {
    MonoBase::now().ns(at)
}

/// One reading of both clocks, to turn many `Instant`s into CLOCK_MONOTONIC ns without a
/// clock read each.
#[derive(Debug, Clone, Copy)]
pub struct MonoBase {
    at: Instant,
    ns: u64,
}

impl MonoBase {
    /// The clocks now.
    pub fn now() -> MonoBase {
        MonoBase {
            at: Instant::now(),
            ns: mono_now_ns(),
        }
    }

    /// `t` in CLOCK_MONOTONIC ns.
    #[inline]
    pub fn ns(&self, t: Instant) -> u64 {
        match t.checked_duration_since(self.at) {
            Some(after) => self.ns + after.as_nanos() as u64,
            None => self
                .ns
                .saturating_sub(self.at.duration_since(t).as_nanos() as u64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn instants_are_the_monotonic_clock() {
        let base = MonoBase::now();
        let t = Instant::now();
        let direct = mono_now_ns();
        let via = base.ns(t);
        // Read within microseconds of each other, on the one clock.
        assert!(direct.abs_diff(via) < 5_000_000, "{direct} {via}");
        let earlier = t - Duration::from_millis(3);
        assert_eq!(base.ns(t) - base.ns(earlier), 3_000_000);
    }
}
