//! The open loop of one worker thread: a dispatcher task waits (precisely) for each due time
//! of the thread's pacer and releases a ticket into the thread's queue; the thread's
//! connections take tickets from the queue as they become free. A ticket that waits in the
//! queue is a request due while every connection was busy: its wait is the `queue` phase,
//! and latency is measured from its due time whatever it waited. At the end of a timed run
//! the tickets still waiting are withdrawn and counted as not sent: nothing is sent after
//! the recorded window, and nothing due in it goes uncounted.

use super::pacer::ThreadPacer;
use super::timer::PreciseTimer;
use super::Scheduler;
use crate::model::Ticket;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;

/// Tickets released and not yet taken, in due order.
#[derive(Default)]
pub struct OpenQueue {
    tickets: RefCell<VecDeque<Ticket>>,
    notify: Notify,
    closed: Cell<bool>,
}

impl OpenQueue {
    /// Releases a ticket to the first free connection.
    pub fn push(&self, ticket: Ticket) {
        self.tickets.borrow_mut().push_back(ticket);
        self.notify.notify_one();
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
        self.notify.notify_waiters();
    }

    /// The next ticket, waiting for one; `None` once closed and empty.
    pub async fn take(&self) -> Option<Ticket> {
        loop {
            if let Some(t) = self.tickets.borrow_mut().pop_front() {
                return Some(t);
            }
            if self.closed.get() {
                return None;
            }
            self.notify.notified().await;
        }
    }
}

/// Releases the thread's tickets at their due times (from `origin`), until the schedule,
/// the duration or the request count ends; gives the number of requests due in a timed run's
/// window that were never sent (released too late, or still queued at its end).
pub async fn dispatch(
    mut pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
    queue: Rc<OpenQueue>,
) -> u64 {
    let timer = PreciseTimer::new();
    let deadline = scheduler.deadline();
    let mut not_sent = 0;
    while let Some(offset) = pacer.next_due() {
        let due = origin + offset;
        if deadline.is_some_and(|d| due >= d) {
            break;
        }
        let Some(seq) = scheduler.admit(due) else {
            break;
        };
        if deadline.is_some_and(|d| Instant::now() >= d) {
            // The window closed before this one could leave.
            not_sent += 1;
            continue;
        }
        timer.sleep_until(due).await;
        let released = Instant::now();
        queue.push(Ticket {
            seq,
            intended: due,
            released,
        });
    }
    if let Some(end) = deadline {
        timer.sleep_until(end).await;
        not_sent += queue.withdraw();
    }
    queue.close();
    not_sent
}
