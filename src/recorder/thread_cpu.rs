//! A thread's own CPU time ([`thread_cpu`]) and the share of a wall time it spent on a CPU
//! ([`busy_share`]): the workers' health, as each interval and the run report it.

use std::time::Duration;

/// The share of `wall` that a thread whose CPU time went from `start` to `end` was on a CPU.
pub(crate) fn busy_share(start: Duration, end: Duration, wall: Duration) -> f64 {
    if wall.is_zero() {
        return 0.0;
    }
    (end.saturating_sub(start).as_secs_f64() / wall.as_secs_f64()).min(1.0)
}

/// The CPU time used by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub(crate) fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}
