//! The routes whose delay follows a rule: `/serial/{ms}` (one line, first come first served),
//! `/drift/{ms}` (a delay that grows over the run) and `/random/{ms}` (a delay drawn from the
//! exponential distribution).

use super::{nanos, origin};
use crate::util::rng::SplitMix64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// When the one server behind `/serial/{ms}` is next free, in nanoseconds since [`origin`].
static SERIAL_FREE_AT_NS: AtomicU64 = AtomicU64::new(0);

/// `/serial/{ms}`: takes a place in the one line (first come, first served) and answers when
/// its service ends. Each request's service starts when the previous one's ends, or when it
/// arrives if the server is idle: start = max(arrival, free_at), done = start + service. The
/// response waits until `done` (a timer late by up to a millisecond delays that response, never
/// the next one's start, so the capacity is exactly 1/service).
pub(super) async fn serial(service: Duration) {
    let arrival = nanos(Instant::now().duration_since(origin()));
    let service = nanos(service);
    let mut free_at = SERIAL_FREE_AT_NS.load(Ordering::Relaxed);
    let done = loop {
        let done = free_at.max(arrival) + service;
        match SERIAL_FREE_AT_NS.compare_exchange_weak(
            free_at,
            done,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => break done,
            Err(now) => free_at = now,
        }
    };
    tokio::time::sleep_until((origin() + Duration::from_nanos(done)).into()).await;
}

/// `/drift/{ms}`'s delay now: `ms × (1 + t/10 s)`, t the time since the process's first
/// `/drift` request, at most `4 × ms` (after 30 s).
pub(super) fn drift(base: Duration) -> Duration {
    static FIRST: OnceLock<Instant> = OnceLock::new();
    let t = FIRST.get_or_init(Instant::now).elapsed().as_secs_f64();
    base.mul_f64((1.0 + t / 10.0).min(4.0))
}

/// The most a `/random/{ms}` delay may be, in means: 20 (a draw beyond it, one in 485 million,
/// is cut to it), so that one draw cannot hold a connection for long.
const RANDOM_MAX_MEANS: f64 = 20.0;

/// `/random/{ms}`'s delay: drawn from the exponential distribution of mean `mean`
/// (`-mean × ln U`, U uniform in (0, 1]), so its p50 is 0.69 × mean, its p90 2.30 ×, its p99
/// 4.61 × and its p99.9 6.91 ×, at most [`RANDOM_MAX_MEANS`] ×. The draws of all the process's
/// requests are one SplitMix64 sequence: the n-th request's draw is the sequence's n-th value,
/// whichever task takes it.
pub(super) fn random(mean: Duration) -> Duration {
    static DRAWS: AtomicU64 = AtomicU64::new(0);
    let n = DRAWS.fetch_add(1, Ordering::Relaxed);
    let u = SplitMix64(n.wrapping_mul(0x9E37_79B9_7F4A_7C15)).unit_open();
    mean.mul_f64((-u.ln()).min(RANDOM_MAX_MEANS))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 100,000 draws of mean 10 ms have the exponential's mean and percentiles.
    #[test]
    fn random_delays_follow_the_exponential_distribution() {
        let mean = Duration::from_millis(10);
        let mut ms: Vec<f64> = (0..100_000)
            .map(|_| random(mean).as_secs_f64() * 1000.0)
            .collect();
        ms.sort_by(f64::total_cmp);
        let avg = ms.iter().sum::<f64>() / ms.len() as f64;
        assert!((avg - 10.0).abs() < 0.15, "mean {avg} ms");
        for (p, want) in [(0.5, 6.931), (0.9, 23.026), (0.99, 46.052)] {
            let got = ms[(p * ms.len() as f64) as usize];
            assert!(
                (got / want - 1.0).abs() < 0.03,
                "p{p}: {got} ms, want {want}"
            );
        }
        assert!(ms[ms.len() - 1] <= 200.0 + 1e-9);
    }
}
