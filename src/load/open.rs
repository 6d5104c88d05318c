//! The open loop of one worker thread: a dispatcher task waits (precisely) on the thread's one
//! timer and, on each wake-up, releases every ticket of the thread's pacer already due into the
//! thread's queue, then sleeps until the next due time plus the pacer's slack
//! (`--pacer-slack`): requests due within the slack of each other leave together, one wake-up
//! for the batch, late by at most the slack (plus the wake-up's own lateness), never early, and
//! never more of them than the thread has connections to take them (a batch that overfilled
//! the connections would queue its own requests behind each other, a wait of the pacer's
//! making).
//! That lateness is the schedule lag each ticket records, and latency is always measured from
//! the due time. The thread's connections take tickets from the queue as they become free; the
//! dispatcher wakes only connections that wait idle, one per ticket. A ticket that waits in
//! the queue is a request due while every connection was busy: its wait is the `queue` phase.
//! The queue holds a round of tickets (one per connection) and a batch at most: when more
//! fall due, the thread is behind its schedule and its connections take the due requests
//! from the schedule itself ([`super::queue`]): counted by its position, never stored, and
//! sent as fast as the connections carry them. At the end of a timed run the tickets still
//! waiting are withdrawn and counted as not sent, with those the dispatcher could not release
//! before the window closed (counted from the schedule's `N(t)`, not drawn one by one:
//! [`ThreadPacer::count_before`]): nothing due in it goes uncounted.

use super::early::EarlyWake;
use super::pacer::ThreadPacer;
use super::queue::{Behind, OpenQueue};
use super::timer::PreciseTimer;
use super::Scheduler;
use crate::engine::arrival;
use crate::model::Ticket;
use crate::plan::{PacerTimer, Pacing};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Takes `first` and the requests due within `slack` after it (taken from `next`) into
/// `batch`, at most `most` of them (0: no bound), to leave together in one wake-up at the last
/// one's due time; returns the first request after them, or `None` when the schedule is over.
///
/// The bound is the thread's connections: a batch of more requests than connections to take
/// them would queue its last ones behind its first by construction, a wait of the pacer's
/// making that the `queue` phase would book as the server's (every connection busy), and
/// every reply would wake the thread to send the next queued one. With the bound, requests
/// queue only behind connections the server has not answered yet.
fn gather<T>(
    first: (Instant, T),
    (slack, most): (Duration, usize),
    mut next: impl FnMut() -> Option<(Instant, T)>,
    batch: &mut Vec<(Instant, T)>,
) -> Option<(Instant, T)> {
    let until = first.0 + slack;
    let most = if most == 0 { usize::MAX } else { most };
    batch.push(first);
    loop {
        match next() {
            Some(item) if item.0 <= until && batch.len() < most => batch.push(item),
            after => return after,
        }
    }
}

/// The due times of one thread's share of the plan, ending with the schedule, at the
/// deadline of a timed run, or when the request count is reached.
pub(super) struct DueTimes {
    pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
}

impl DueTimes {
    /// The next request's due time and sequence number, admitted under the stop rule (the
    /// window's end read each time: `--until` may move it earlier).
    pub(super) fn next(&mut self) -> Option<(Instant, u64)> {
        let due = self.origin + self.pacer.next_due()?;
        if self.scheduler.deadline().is_some_and(|d| due >= d) {
            return None;
        }
        Some((due, self.scheduler.admit(due)?))
    }

    /// The requests still due in a timed run's window, counted, not drawn one by one
    /// ([`ThreadPacer::count_before`]): nothing for a run ended by its request count.
    fn count_rest(&mut self) -> u64 {
        let Some(end) = self.scheduler.deadline() else {
            return 0;
        };
        self.pacer
            .count_before(end.saturating_duration_since(self.origin))
    }
}

/// Releases `first` and every following request due by `now` (taken from `next`) through
/// `release`, at most `room` of them; returns the first request not released (not yet due,
/// or due with no room left for it), or `None` when the schedule is over.
fn release_due<T>(
    first: (Instant, T),
    now: Instant,
    mut room: usize,
    mut next: impl FnMut() -> Option<(Instant, T)>,
    mut release: impl FnMut(Instant, T),
) -> Option<(Instant, T)> {
    let mut pending = Some(first);
    while let Some((due, item)) = pending {
        if due > now || room == 0 {
            return Some((due, item));
        }
        room -= 1;
        release(due, item);
        pending = next();
    }
    None
}

/// Releases the thread's tickets at their due times (from `origin`), batched within the
/// pacing's slack (the requests due within it of each other leave together, at the last one's
/// due time), until the schedule, the duration or the request count ends; waking early and
/// spinning the rest within its spin, a share of a core ([`early`](super::early)), the time
/// spun kept in `spun` as it goes; waiting on the pacing's timer, napping through responses
/// if it naps ([`wait_until`]). Gives the number of requests due in a timed run's window that were
/// never sent (the window closed, beyond the slack, before they could be released, or they
/// were still queued at its end).
pub async fn dispatch(
    pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
    queue: Rc<OpenQueue>,
    pacing: Pacing,
    spun: Rc<Cell<Duration>>,
) -> u64 {
    let slack = pacing.slack;
    let mut d = Dispatcher {
        timer: match pacing.timer {
            PacerTimer::Precise => PreciseTimer::new(),
            PacerTimer::Coarse => PreciseTimer::coarse(),
        },
        queue,
        scheduler: scheduler.clone(),
        slack,
        naps: pacing.naps,
        early: EarlyWake::new(pacing.spin, slack, Instant::now()),
        spun,
    };
    let mut due_times = DueTimes {
        pacer,
        origin,
        scheduler,
    };
    let mut not_sent = 0;
    let mut batch = Vec::new();
    let mut pending = due_times.next();
    while let Some(first) = pending {
        if d.queue.room() == 0 {
            match d.when_full(due_times, first).await {
                Ok(back) => (due_times, pending) = back,
                Err(never_sent) => {
                    not_sent += never_sent;
                    break;
                }
            }
            continue;
        }
        batch.clear();
        let most = (slack, d.queue.takers);
        let after = gather(first, most, || due_times.next(), &mut batch);
        // The batch holds `first` at least: it leaves at its last request's due time.
        d.wait(batch[batch.len() - 1].0).await;
        let released = Instant::now();
        if d.closed(released) {
            // The window closed before these could leave: the batch, and all due after it.
            not_sent += (batch.len() + usize::from(after.is_some())) as u64;
            not_sent += due_times.count_rest();
            break;
        }
        let push = |intended, seq| {
            d.queue.push(Ticket {
                seq,
                intended,
                released,
            })
        };
        for &(intended, seq) in &batch {
            push(intended, seq);
        }
        // A late wake-up releases what fell due meanwhile too, up to a round of tickets.
        let room = d.queue.room();
        pending = after.and_then(|a| release_due(a, released, room, || due_times.next(), push));
        d.queue.wake();
    }
    if let Some(end) = d.until() {
        d.wait(end).await;
        // The connections just woken take their tickets first.
        tokio::task::yield_now().await;
        not_sent += d.queue.withdraw();
    }
    d.queue.close();
    not_sent
}

/// The dispatcher's own state: its timer, the queue it fills, how it waits.
struct Dispatcher {
    timer: PreciseTimer,
    queue: Rc<OpenQueue>,
    /// Whose window's end, with the slack, nothing is released after.
    scheduler: Arc<Scheduler>,
    slack: Duration,
    naps: bool,
    early: EarlyWake,
    /// The time spun so far, kept for the worker as it goes.
    spun: Rc<Cell<Duration>>,
}

impl Dispatcher {
    /// The end of a timed run's window (or where `--until` closed it), with the slack:
    /// nothing is released after it.
    fn until(&self) -> Option<Instant> {
        self.scheduler.deadline().map(|d| d + self.slack)
    }

    /// Waits until `at` ([`wait_until`]).
    async fn wait(&mut self, at: Instant) {
        wait_until(&self.timer, &self.queue, at, self.naps, &mut self.early).await;
        self.spun.set(self.early.spun);
    }

    /// A round of tickets waits already: none is added. If `first` falls due with still no
    /// room for it, the connections take it, and the rest, from the schedule until they
    /// catch up ([`OpenQueue::fall_behind`]). The schedule back, with its next request; or,
    /// the window closed first, the requests due in it that were never sent.
    async fn when_full(
        &mut self,
        mut due_times: DueTimes,
        first: (Instant, u64),
    ) -> Result<(DueTimes, Option<(Instant, u64)>), u64> {
        self.wait(first.0).await;
        let now = Instant::now();
        if self.closed(now) {
            return Err(1 + due_times.count_rest());
        }
        if self.queue.room() > 0 {
            return Ok((due_times, Some(first)));
        }
        let behind = Behind {
            due_times,
            next: Some(first),
            since: now,
            until: self.until(),
            given_back: false,
        };
        Ok(self.queue.fall_behind(behind).await)
    }

    /// Whether the window has closed at `now`: nothing more is released.
    fn closed(&self, now: Instant) -> bool {
        self.until().is_some_and(|u| now > u)
    }
}

/// The longest the thread sleeps without a look at its sockets and timers: how late, at
/// worst, a request timeout, a stop or a closed connection is noticed while nothing is due.
const LONGEST_NAP: Duration = Duration::from_millis(10);

/// Waits until `at`, waking early by the lead `early` has learnt and spinning the rest within
/// its budget. While every ticket released has been taken and no connection needs the
/// thread awake ([`arrival::awake`]: what they wait for is timed by the kernel's arrival
/// stamps), the thread sleeps through responses instead of waking for each: one wake-up per
/// batch of due requests, not one more per response, and the responses that came meanwhile are
/// read together at the next wake-up (their `wait` and `read` are the kernel's, not the
/// reading's). Otherwise (a ticket waits for a connection to come free, a connect or TLS or
/// HTTP/2 exchange is under way) it waits on the precise timer, woken by any socket.
/// `naps: false` (`--pacer-naps off`, for the benchmarks' before/after) always does that.
async fn wait_until(
    timer: &PreciseTimer,
    queue: &OpenQueue,
    at: Instant,
    naps: bool,
    early: &mut EarlyWake,
) {
    loop {
        // The reactor's turn: the connections just woken send, the responses in are read.
        tokio::task::yield_now().await;
        let now = Instant::now();
        if now >= at {
            return;
        }
        let aim = early.aim(at, now);
        if now >= aim {
            // Woken early, within the lead: spin to the due time if the budget allows.
            if early.may_spin(now, at) {
                return early.spin_until(at);
            }
            return timer.sleep_until(at).await;
        }
        if !naps || !queue.is_empty() || !arrival::awake::may_sleep() {
            timer.sleep_until(aim).await;
            early.woke(aim, Instant::now());
            continue;
        }
        let until = aim.min(now + LONGEST_NAP);
        std::thread::sleep(until - now);
        if until == aim {
            early.woke(aim, Instant::now());
        }
    }
}

/// Keeps one timer in the thread's tokio timer wheel that expires before any new request's
/// timeout. tokio's timer driver unparks itself (an eventfd write, then an extra turn of the
/// reactor) for every timer registered that expires before the earliest one it saw when it
/// last parked, and for every one if the wheel was empty then: below saturation the open
/// loop's connections are often all idle, so the timeout of each request of the next batch
/// cost a syscall. Never returns; abort it.
pub async fn keep_timer_wheel(request_timeout: Duration) {
    let step = (request_timeout / 2).max(Duration::from_millis(1));
    loop {
        tokio::time::sleep(step).await;
    }
}

#[cfg(test)]
mod tests;
