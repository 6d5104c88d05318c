//! A request's timeout on a timer its session keeps from one request to the next.
//!
//! `tokio::time::timeout_at` registers a timer entry with the runtime's wheel for every request
//! and removes it when the response comes first, as it nearly always does: two trips through
//! the timer driver's lock per request (about 5% of the HTTP/1.1 client's user time). A
//! session's timer is armed once and moved only when it fires: at an earlier request's
//! deadline, the request in flight (dispatched later, so due later) re-arms it at its own
//! deadline and goes on. A request still times out at its deadline, to the timer's precision
//! (a millisecond, as before); a timer that fires between requests wakes its connection's
//! task once, for nothing, per timeout period.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;
use tokio::time::Sleep;

/// The timer a session keeps (made by its first request).
pub type Timer = Option<Pin<Box<Sleep>>>;

/// Runs `work` until `deadline`: its output, or `None` when the deadline passed first. The
/// caller pins `work` where it lives: taken by value, an async fn's argument is kept apart
/// from its pinned copy, and the connection's task would hold the exchange twice.
pub async fn within<F: Future>(
    timer: &mut Timer,
    deadline: Instant,
    mut work: Pin<&mut F>,
) -> Option<F::Output> {
    let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
    if timer.deadline().into_std() > deadline {
        // Armed for a later deadline than this request's: not a session's order, but kept exact.
        timer.as_mut().reset(deadline.into());
    }
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(out));
        }
        loop {
            match timer.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if timer.deadline().into_std() >= deadline => {
                    return Poll::Ready(None)
                }
                // An earlier request's deadline: this one's is later.
                Poll::Ready(()) => timer.as_mut().reset(deadline.into()),
            }
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::time::Duration;

    /// The runtime's clock (paused: it moves only when every task waits on a timer).
    fn now() -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap()
    }

    #[test]
    fn a_request_times_out_at_its_own_deadline_on_a_timer_armed_earlier() {
        runtime().block_on(async {
            let mut timer: Timer = None;
            let t0 = now();
            let ms = Duration::from_millis;
            // The first request arms the timer at t0 + 100 ms and is answered at once.
            assert_eq!(
                within(&mut timer, t0 + ms(100), pin!(async { 1 })).await,
                Some(1)
            );
            // The next one, due at t0 + 150 ms, outlives the first deadline and still waits
            // until its own.
            let slow = tokio::time::sleep(ms(1000));
            assert_eq!(within(&mut timer, t0 + ms(150), pin!(slow)).await, None);
            let waited = now() - t0;
            assert!(waited >= ms(150) && waited < ms(152), "{waited:?}");
            // A response before the deadline wins, on the re-armed timer.
            let t1 = now();
            let quick = async {
                tokio::time::sleep(ms(40)).await;
                7
            };
            assert_eq!(within(&mut timer, t1 + ms(50), pin!(quick)).await, Some(7));
            // An earlier deadline than the armed one is kept exact too.
            let t2 = now();
            let armed_late = t2 + ms(500);
            timer.as_mut().unwrap().as_mut().reset(armed_late.into());
            let slow = tokio::time::sleep(ms(1000));
            assert_eq!(within(&mut timer, t2 + ms(20), pin!(slow)).await, None);
            let waited = now() - t2;
            assert!(waited >= ms(20) && waited < ms(22), "{waited:?}");
        });
    }
}
