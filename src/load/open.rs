//! The open loop of one worker thread: a dispatcher task waits (precisely) for each due time
//! of the thread's pacer and releases a ticket into the thread's queue; the thread's
//! connections take tickets from the queue as they become free. A ticket that waits in the
//! queue is a request due while every connection was busy: its wait is the `queue` phase,
//! and latency is measured from its due time whatever it waited.

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
/// the duration or the request count ends.
pub async fn dispatch(
    mut pacer: ThreadPacer,
    origin: Instant,
    scheduler: Arc<Scheduler>,
    queue: Rc<OpenQueue>,
) {
    let timer = PreciseTimer::new();
    let deadline = scheduler.deadline();
    while let Some(offset) = pacer.next_due() {
        let due = origin + offset;
        if deadline.is_some_and(|d| due >= d) {
            break;
        }
        let Some(seq) = scheduler.admit(due) else {
            break;
        };
        timer.sleep_until(due).await;
        let released = Instant::now();
        queue.push(Ticket {
            seq,
            intended: due,
            released,
        });
    }
    queue.close();
}
