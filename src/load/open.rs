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
//! At the end of a timed run the tickets still waiting are withdrawn and counted as not sent,
//! with those the dispatcher could not release before the window closed: nothing due in it
//! goes uncounted.

use super::early::EarlyWake;
use super::pacer::ThreadPacer;
use super::timer::PreciseTimer;
use super::Scheduler;
use crate::engine::arrival;
use crate::model::Ticket;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Tickets released and not yet taken, in due order, and the connections waiting for one.
#[derive(Default)]
pub struct OpenQueue {
    tickets: RefCell<VecDeque<Ticket>>,
    notify: Notify,
    /// Connections waiting in `take` that no one has woken yet.
    idle: Cell<usize>,
    closed: Cell<bool>,
    /// How many connections (HTTP/2 and HTTP/3: streams) take tickets from it; 0: not known.
    takers: usize,
}

impl OpenQueue {
    /// The queue of a thread whose `takers` connections (or streams) take its tickets: no
    /// batch of the pacer holds more requests than they can take at once.
    pub fn for_takers(takers: usize) -> Self {
        OpenQueue {
            takers,
            ..OpenQueue::default()
        }
    }

    /// Adds a ticket; `wake` lets the idle connections know.
    fn push(&self, ticket: Ticket) {
        self.tickets.borrow_mut().push_back(ticket);
    }

    /// Wakes one idle connection per waiting ticket (busy ones take tickets when they finish).
    fn wake(&self) {
        let n = self.tickets.borrow().len().min(self.idle.get());
        self.idle.set(self.idle.get() - n);
        for _ in 0..n {
            self.notify.notify_one();
        }
    }

    /// Withdraws the tickets not yet taken: how many there were.
    pub fn withdraw(&self) -> u64 {
        let mut tickets = self.tickets.borrow_mut();
        let n = tickets.len() as u64;
        tickets.clear();
        n
    }

    /// No more tickets will come.
    pub fn close(&self) {
        self.closed.set(true);
        self.idle.set(0);
        self.notify.notify_waiters();
    }

    /// The next ticket, waiting for one, and when it was taken (its dispatch); `None` once
    /// closed and empty. A ticket found waiting waited for a busy connection since its release
    /// (its `queue`); one taken by a connection that was idle, woken for it, did not: its
    /// `released` is moved to the dispatch, so that the moment the connection took to start
    /// is the generator's lag and not the server's queue.
    pub async fn take(&self) -> Option<(Ticket, Instant)> {
        let mut idle = false;
        loop {
            if let Some(mut t) = self.tickets.borrow_mut().pop_front() {
                let now = Instant::now();
                if idle {
                    t.released = now;
                }
                return Some((t, now));
            }
            if self.closed.get() {
                return None;
            }
            idle = true;
            // Counted before the first poll registers the waiter: nothing runs in between
            // on this thread, so `wake` never notifies a connection that is not waiting.
            self.idle.set(self.idle.get() + 1);
            self.notify.notified().await;
        }
    }
}

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
struct DueTimes {
    pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
    deadline: Option<Instant>,
}

impl DueTimes {
    /// The next request's due time and sequence number, admitted under the stop rule.
    fn next(&mut self) -> Option<(Instant, u64)> {
        let due = self.origin + self.pacer.next_due()?;
        if self.deadline.is_some_and(|d| due >= d) {
            return None;
        }
        Some((due, self.scheduler.admit(due)?))
    }
}

/// Releases `first` and every following request due by `now` (taken from `next`) through
/// `release`; returns the first request not yet due, or `None` when the schedule is over.
fn release_due<T>(
    first: (Instant, T),
    now: Instant,
    mut next: impl FnMut() -> Option<(Instant, T)>,
    mut release: impl FnMut(Instant, T),
) -> Option<(Instant, T)> {
    let mut pending = Some(first);
    while let Some((due, item)) = pending {
        if due > now {
            return Some((due, item));
        }
        release(due, item);
        pending = next();
    }
    None
}

/// Releases the thread's tickets at their due times (from `origin`), batched within `slack`
/// (the requests due within it of each other leave together, at the last one's due time),
/// until the schedule, the duration or the request count ends; waking early and spinning the
/// rest within `spin`, a share of a core ([`early`](super::early)), the time spun kept in
/// `spun` as it goes. Gives the number of requests due in a timed run's window that were
/// never sent (the window closed, beyond the slack, before they could be released, or they
/// were still queued at its end).
pub async fn dispatch(
    pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
    queue: Rc<OpenQueue>,
    (slack, spin): (Duration, f64),
    spun: Rc<Cell<Duration>>,
) -> u64 {
    let timer = PreciseTimer::new();
    let deadline = scheduler.deadline();
    let mut due_times = DueTimes {
        pacer,
        origin,
        deadline,
        scheduler,
    };
    let naps = std::env::var_os("REQLIFE_NO_NAPS").is_none_or(|v| v != "1");
    let mut early = EarlyWake::new(spin, slack, Instant::now());
    let mut not_sent = 0;
    let mut batch = Vec::new();
    let mut pending = due_times.next();
    while let Some(first) = pending {
        batch.clear();
        let after = gather(
            first,
            (slack, queue.takers),
            || due_times.next(),
            &mut batch,
        );
        // The batch holds `first` at least: it leaves at its last request's due time.
        let at = batch[batch.len() - 1].0;
        wait_until(&timer, &queue, at, naps, &mut early).await;
        let released = Instant::now();
        spun.set(early.spun);
        if deadline.is_some_and(|d| released > d + slack) {
            // The window closed before these could leave: the batch, and all due after it.
            not_sent += (batch.len() + usize::from(after.is_some())) as u64
                + std::iter::from_fn(|| due_times.next()).count() as u64;
            break;
        }
        let push = |intended, seq| {
            queue.push(Ticket {
                seq,
                intended,
                released,
            })
        };
        for &(intended, seq) in &batch {
            push(intended, seq);
        }
        // A late wake-up releases what fell due meanwhile too.
        pending = after.and_then(|a| release_due(a, released, || due_times.next(), push));
        queue.wake();
    }
    if let Some(end) = deadline {
        wait_until(&timer, &queue, end + slack, naps, &mut early).await;
        // The connections just woken take their tickets first.
        tokio::task::yield_now().await;
        not_sent += queue.withdraw();
    }
    queue.close();
    not_sent
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
/// `naps: false` (`REQLIFE_NO_NAPS=1`, for the benchmarks' before/after) always does that.
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
        if !naps || !queue.tickets.borrow().is_empty() || !arrival::awake::may_sleep() {
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
mod tests {
    use super::*;

    /// Simulates the dispatcher over due times (µs) with a slack and a fixed wake-up lateness
    /// (µs): for each wake-up, its time and the due times it released.
    fn batches(dues: &[u64], slack: u64, lateness: u64) -> Vec<(u64, Vec<u64>)> {
        batches_of(dues, (slack, 0), lateness)
    }

    /// As [`batches`], with at most `most` requests a batch (0: no bound).
    fn batches_of(
        dues: &[u64],
        (slack, most): (u64, usize),
        lateness: u64,
    ) -> Vec<(u64, Vec<u64>)> {
        let t0 = Instant::now();
        let at = |us: u64| t0 + Duration::from_micros(us);
        let mut rest = dues.iter().map(|&d| (at(d), d));
        let mut out = Vec::new();
        let mut pending = rest.next();
        let mut batch = Vec::new();
        while let Some(first) = pending {
            batch.clear();
            let after = gather(
                first,
                (Duration::from_micros(slack), most),
                || rest.next(),
                &mut batch,
            );
            let woke = batch[batch.len() - 1].1 + lateness;
            let mut released: Vec<u64> = batch.iter().map(|b| b.1).collect();
            pending = after
                .and_then(|a| release_due(a, at(woke), || rest.next(), |_, d| released.push(d)));
            out.push((woke, released));
        }
        out
    }

    /// Due times (µs), slack (µs), wake-up lateness (µs), and the expected wake-ups: each
    /// one's time (µs) and the due times it released.
    type Row<'a> = (&'a [u64], u64, u64, &'a [(u64, &'a [u64])]);

    #[test]
    fn a_wake_up_releases_every_request_due_by_then() {
        let rows: &[Row] = &[
            // No slack, no lateness: one wake-up per request, each on time.
            (&[0, 20, 40], 0, 0, &[(0, &[0]), (20, &[20]), (40, &[40])]),
            // 50 µs slack at one request per 20 µs: 0, 20 and 40 are due within 50 µs of 0
            // and leave together at 40, the last one's due time; then 60, 80, 100 at 100.
            (
                &[0, 20, 40, 60, 80, 100],
                50,
                0,
                &[(40, &[0, 20, 40]), (100, &[60, 80, 100])],
            ),
            // A gap longer than the slack: each request alone, each on time (the slack
            // batches, it does not delay a request with no other to wait for).
            (
                &[0, 100, 200],
                50,
                0,
                &[(0, &[0]), (100, &[100]), (200, &[200])],
            ),
            // A late wake-up (30 µs) takes what fell due meanwhile too: never anything early.
            (&[0, 20, 40, 60], 0, 30, &[(30, &[0, 20]), (70, &[40, 60])]),
            // Requests due at the same instant leave together.
            (&[10, 10, 10], 0, 0, &[(10, &[10, 10, 10])]),
            // Nothing due: no wake-up.
            (&[], 50, 0, &[]),
        ];
        for (i, (dues, slack, late, want)) in rows.iter().enumerate() {
            let want: Vec<(u64, Vec<u64>)> = want.iter().map(|(w, r)| (*w, r.to_vec())).collect();
            assert_eq!(batches(dues, *slack, *late), want, "row {i}");
        }
    }

    #[test]
    fn lateness_is_at_most_the_slack_plus_the_wake_up_s() {
        // One request per 20 µs for 10 ms; (slack µs, wake-up lateness µs) per row.
        let dues: Vec<u64> = (0..500).map(|n| n * 20).collect();
        for (slack, late) in [(0, 0), (10, 0), (50, 3), (100, 17), (1000, 0)] {
            let mut seen = 0;
            for (woke, released) in batches(&dues, slack, late) {
                for due in released {
                    assert!(woke >= due, "early: due {due} released {woke}");
                    assert!(woke - due <= slack + late, "slack {slack}: {due} at {woke}");
                    seen += 1;
                }
            }
            assert_eq!(seen, dues.len(), "every request released once");
        }
    }

    #[test]
    fn a_batch_holds_no_more_requests_than_connections_to_take_them() {
        let dues: Vec<u64> = (0..6).map(|i| i * 20).collect();
        // 2 connections, a slack of 100 µs over requests 20 µs apart: batches of 2, each
        // leaving at its last one's due time, none waiting behind another for a connection.
        assert_eq!(
            batches_of(&dues, (100, 2), 0),
            [(20, vec![0, 20]), (60, vec![40, 60]), (100, vec![80, 100])]
        );
        // Unbounded (0), the slack alone decides: 0..100 leave together, three requests
        // more than two connections can take.
        assert_eq!(
            batches_of(&dues, (100, 0), 0),
            [(100, vec![0, 20, 40, 60, 80, 100])]
        );
        // A late wake-up still releases what fell due meanwhile: those were due.
        assert_eq!(
            batches_of(&dues, (100, 2), 50),
            [(70, vec![0, 20, 40, 60]), (150, vec![80, 100])]
        );
    }

    /// Runs `f` on a current-thread runtime's local set, as a worker thread does.
    fn on_a_local_set(f: impl std::future::Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        tokio::task::LocalSet::new().block_on(&rt, f);
    }

    #[test]
    fn a_ticket_queues_only_when_no_connection_was_idle() {
        on_a_local_set(async {
            let q = Rc::new(OpenQueue::default());
            let released = Instant::now() - Duration::from_millis(5);
            let ticket = |seq| Ticket {
                seq,
                intended: released,
                released,
            };
            // Every connection busy: the ticket waits in the queue; the connection that comes
            // free takes it, and the wait since its release is its `queue`.
            q.push(ticket(0));
            let (t, dispatched) = q.take().await.unwrap();
            assert_eq!(
                t.released, released,
                "found waiting: released when released"
            );
            assert!(dispatched - t.released >= Duration::from_millis(5));
            // An idle connection woken for a ticket: no queue, the moment it took to start is
            // the generator's lag (released moves to the dispatch).
            let taker = {
                let q = q.clone();
                tokio::task::spawn_local(async move { q.take().await.unwrap() })
            };
            tokio::task::yield_now().await;
            assert_eq!(q.idle.get(), 1);
            q.push(ticket(1));
            q.wake();
            let (t, dispatched) = taker.await.unwrap();
            assert_eq!(t.released, dispatched, "taken by an idle connection");
            assert!(t.released - t.intended >= Duration::from_millis(5));
        });
    }

    #[test]
    fn the_queue_wakes_only_idle_connections() {
        on_a_local_set(async {
            let q = Rc::new(OpenQueue::default());
            let takers: Vec<_> = (0..3)
                .map(|_| {
                    let q = q.clone();
                    tokio::task::spawn_local(async move { q.take().await.map(|(t, _)| t.seq) })
                })
                .collect();
            tokio::task::yield_now().await;
            assert_eq!(q.idle.get(), 3, "all three wait");
            let now = Instant::now();
            for seq in 0..2 {
                q.push(Ticket {
                    seq,
                    intended: now,
                    released: now,
                });
            }
            q.wake();
            assert_eq!(q.idle.get(), 1, "two woken for two tickets");
            q.close();
            let mut got = Vec::new();
            for t in takers {
                got.push(t.await.unwrap());
            }
            got.sort();
            assert_eq!(got, vec![None, Some(0), Some(1)]);
        });
    }
}
