//! The open loop's queue of one worker thread: the tickets its dispatcher released and no
//! connection has taken yet, and the connections waiting idle for one. It holds at most a
//! round of tickets beyond a batch (one per connection or stream that takes from it): when
//! more requests fall due than that, the thread is **behind**, and the dispatcher hands the
//! schedule itself to the connections ([`OpenQueue::fall_behind`]). The requests due and not
//! sent are then counted by the schedule's position, never stored one by one (they were 40
//! bytes each, and a rate the connections could not carry filled gigabytes in seconds): each
//! connection that comes free takes the next one due straight from the schedule, as a closed
//! loop takes its next request, and the thread sends as fast as its connections carry. Each
//! such request keeps its due time as `intended`, so its corrected latency counts from the
//! schedule's time, as it did when it waited in the queue; it was released (the end of its
//! schedule lag, the start of its `queue`) when the dispatcher found no room for it, or at its
//! due time if that came later. Once a connection finds nothing due, the schedule goes back to
//! the dispatcher, which times the next request again.

use super::open::DueTimes;
use crate::model::Ticket;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::time::Instant;
use tokio::sync::Notify;

/// Tickets released and not yet taken, in due order, the connections waiting for one, and
/// the schedule while the thread is behind it.
#[derive(Default)]
pub struct OpenQueue {
    tickets: RefCell<VecDeque<Ticket>>,
    notify: Notify,
    /// Connections waiting in `take` that no one has woken yet.
    idle: Cell<usize>,
    closed: Cell<bool>,
    /// How many connections (HTTP/2 and HTTP/3: streams) take tickets from it; 0: not known.
    pub(super) takers: usize,
    /// The schedule, while the connections take their requests from it.
    behind: RefCell<Option<Behind>>,
    /// Wakes the dispatcher once the connections have caught up with the schedule.
    caught_up: Notify,
}

/// A thread behind its schedule: the connections take the due requests from it.
pub(super) struct Behind {
    /// The schedule's due times, from the first not yet taken.
    pub due_times: DueTimes,
    /// That request (due by now, while behind); `None`: the schedule is over.
    pub next: Option<(Instant, u64)>,
    /// When the dispatcher found no room for it: the release of every request due by then.
    pub since: Instant,
    /// The end of a timed run's window, with the slack: nothing is taken after it (the
    /// dispatcher counts what is left as not sent).
    pub until: Option<Instant>,
    /// A connection found nothing due and went idle: the dispatcher takes the schedule back
    /// whatever the time when it looks (its next request may have fallen due meanwhile, and
    /// the idle connections wait for the dispatcher to wake them).
    pub given_back: bool,
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
    pub(super) fn push(&self, ticket: Ticket) {
        self.tickets.borrow_mut().push_back(ticket);
    }

    /// Tickets released and not taken.
    pub(super) fn len(&self) -> usize {
        self.tickets.borrow().len()
    }

    /// Whether no ticket waits.
    pub(super) fn is_empty(&self) -> bool {
        self.tickets.borrow().is_empty()
    }

    /// How many more tickets it takes before it holds a round, one for each taker (no bound
    /// when the takers are not known).
    pub(super) fn room(&self) -> usize {
        match self.takers {
            0 => usize::MAX,
            t => t.saturating_sub(self.len()),
        }
    }

    /// Wakes one idle connection per waiting ticket (busy ones take tickets when they finish).
    pub(super) fn wake(&self) {
        let n = self.len().min(self.idle.get());
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

    /// Hands the schedule to the connections, `behind.next` being due with no room for it,
    /// until they catch up with it (they find nothing due) or the window closes at
    /// `behind.until`: the schedule back, from its first request not taken.
    pub(super) async fn fall_behind(&self, behind: Behind) -> (DueTimes, Option<(Instant, u64)>) {
        let until = behind.until;
        *self.behind.borrow_mut() = Some(behind);
        // No connection waits idle while a round of tickets is queued; had one, it takes now.
        for _ in 0..self.idle.replace(0) {
            self.notify.notify_one();
        }
        loop {
            match until {
                Some(end) => tokio::select! {
                    _ = self.caught_up.notified() => {}
                    _ = tokio::time::sleep_until(end.into()) => break,
                },
                None => self.caught_up.notified().await,
            }
            if self.behind.borrow().as_ref().is_none_or(|b| b.given_back) {
                break;
            }
        }
        let b = self
            .behind
            .take()
            .expect("the schedule is the dispatcher's to take back");
        (b.due_times, b.next)
    }

    /// The next ticket, waiting for one, and when it was taken (its dispatch); `None` once
    /// closed and empty. A ticket found waiting waited for a busy connection since its release
    /// (its `queue`); one taken by a connection that was idle, woken for it, did not: its
    /// `released` is moved to the dispatch, so that the moment the connection took to start
    /// is the generator's lag and not the server's queue. While the thread is behind, the
    /// next request due comes from the schedule ([`OpenQueue::take_due`]).
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
            if let Some(taken) = self.take_due() {
                return Some(taken);
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

    /// While behind: the next request due, from the schedule, released when the dispatcher
    /// fell behind or at its due time if later, and dispatched now. Once nothing is due (or
    /// the window has closed), the dispatcher is woken to take the schedule back.
    fn take_due(&self) -> Option<(Ticket, Instant)> {
        let mut slot = self.behind.borrow_mut();
        let b = slot.as_mut()?;
        let now = Instant::now();
        match b.next {
            Some((intended, seq)) if intended <= now && b.until.is_none_or(|u| now <= u) => {
                b.next = b.due_times.next();
                let released = intended.max(b.since);
                Some((
                    Ticket {
                        seq,
                        intended,
                        released,
                    },
                    now,
                ))
            }
            _ => {
                b.given_back = true;
                self.caught_up.notify_one();
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;
    use std::time::Duration;

    /// Runs `f` on a current-thread runtime's local set, as a worker thread does.
    pub(crate) fn on_a_local_set(f: impl std::future::Future<Output = ()>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
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
