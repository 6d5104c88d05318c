//! The collector thread's scheduling priority. The collector shares cores with the workers
//! (on a 2-core machine with the server pinned to one core, it shares the worker's), and any
//! moment a worker waits for it to get off the CPU shows as schedule lag. So it runs idle
//! (`SCHED_IDLE`: only on an otherwise idle CPU, preempted at once by a waking worker) while it
//! keeps up; a worker that finds its queue full, or none of its sets back, raises it to the
//! normal policy, and the collector drops back to idle once it has emptied its queue. Raising a thread is allowed
//! to root and where `RLIMIT_NICE` reaches nice 0; elsewhere an idle collector could starve
//! behind a busy core (a worker would then wait on a full queue), so it runs at nice 10.
//! Once the workers have ended there is nothing left to protect: the collector runs normally
//! to its end ([`Priority::finish`]), or busy cores would hold the run's end back (an idle
//! thread runs only on an otherwise idle CPU).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// Shared by the collector thread and the workers' links.
#[derive(Debug)]
pub struct Priority {
    /// The collector thread's id (0 until it starts).
    tid: AtomicI32,
    /// Whether the collector is raised now.
    raised: AtomicBool,
    /// Whether it may run idle (it can be raised again).
    idle: bool,
    /// The load is over: never idle again.
    done: AtomicBool,
}

impl Priority {
    /// Idle with raising where this process may raise a thread, else nice 10.
    pub fn new() -> Self {
        Priority {
            tid: AtomicI32::new(0),
            raised: AtomicBool::new(false),
            idle: may_raise(),
            done: AtomicBool::new(false),
        }
    }

    /// On the collector thread, as it starts: its low priority.
    pub fn enter(&self) {
        let tid = gettid();
        self.tid.store(tid, Ordering::SeqCst);
        if self.idle && !self.done.load(Ordering::SeqCst) {
            set_policy(tid, libc::SCHED_IDLE);
        } else {
            // SAFETY: setpriority on a thread of this process; failure leaves it as it was.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10) };
        }
    }

    /// From a worker whose hand-over found the queue full: the collector runs normally until
    /// it has caught up.
    pub fn raise(&self) {
        let tid = self.tid.load(Ordering::Acquire);
        if self.idle && tid != 0 && !self.raised.swap(true, Ordering::AcqRel) {
            set_policy(tid, libc::SCHED_OTHER);
        }
    }

    /// On the collector thread, its queue empty: back to idle if it was raised (and the load
    /// is not over).
    pub fn settle(&self) {
        if self.raised.swap(false, Ordering::AcqRel) {
            let tid = self.tid.load(Ordering::Acquire);
            set_policy(tid, libc::SCHED_IDLE);
            // `finish` may have come in between: it stored `done` before it set the policy,
            // so either it set it after this, or this sees `done`.
            if self.done.load(Ordering::SeqCst) {
                set_policy(tid, libc::SCHED_OTHER);
            }
        }
    }

    /// The workers have ended: the collector runs normally to its end, whatever comes.
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        let tid = self.tid.load(Ordering::SeqCst);
        if self.idle && tid != 0 {
            self.raised.store(true, Ordering::Release);
            set_policy(tid, libc::SCHED_OTHER);
        }
    }

    /// Whether the collector runs idle (else at nice 10).
    pub fn is_idle(&self) -> bool {
        self.idle
    }

    /// Whether the collector thread has started (and taken its priority).
    pub fn entered(&self) -> bool {
        self.tid.load(Ordering::Acquire) != 0
    }

    /// Whether a worker has raised the collector and it has not settled since.
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }
}

impl Default for Priority {
    fn default() -> Self {
        Self::new()
    }
}

fn gettid() -> i32 {
    // SAFETY: gettid takes no argument and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

/// Sets a thread's policy (priority 0, as both policies need); best effort.
fn set_policy(tid: i32, policy: libc::c_int) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a valid sched_param for a thread of this process; failure changes nothing.
    unsafe { libc::sched_setscheduler(tid, policy, &param) };
}

/// Whether this process may move a thread from `SCHED_IDLE` back to the normal policy at nice
/// 0: root, or an `RLIMIT_NICE` of at least 20 (nice values down to 20 − limit are allowed).
fn may_raise() -> bool {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid rlimit to fill.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NICE, &mut limit) } == 0;
    ok && limit.rlim_cur >= 20
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's policy.
    fn policy() -> libc::c_int {
        // SAFETY: 0 names the calling thread.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn idle_raised_and_settled_again() {
        let p = std::sync::Arc::new(Priority::new());
        let q = p.clone();
        let seen = std::thread::spawn(move || {
            q.enter();
            let entered = policy();
            q.raise();
            let raised = policy();
            q.raise(); // twice: no change
            q.settle();
            (entered, raised, policy())
        })
        .join()
        .unwrap();
        if p.is_idle() {
            assert_eq!(
                seen,
                (libc::SCHED_IDLE, libc::SCHED_OTHER, libc::SCHED_IDLE)
            );
        } else {
            // Not allowed to raise: never idle, nice 10 instead.
            assert_eq!(
                seen,
                (libc::SCHED_OTHER, libc::SCHED_OTHER, libc::SCHED_OTHER)
            );
        }
    }

    /// An idle collector is raised from another thread when the load is over, and stays
    /// raised: its queue emptied, a worker's raise, a late start. (One that may not run idle
    /// runs at nice 10 throughout, under the normal policy.)
    #[test]
    fn finished_it_stays_normal() {
        let p = std::sync::Arc::new(Priority::new());
        let expect_entered = if p.is_idle() {
            libc::SCHED_IDLE
        } else {
            libc::SCHED_OTHER
        };
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (finished_tx, finished) = std::sync::mpsc::channel::<()>();
        let q = p.clone();
        let collector = std::thread::spawn(move || {
            q.enter();
            entered_tx.send(policy()).unwrap();
            finished.recv().unwrap();
            let after = policy();
            q.settle();
            q.raise();
            q.settle();
            (after, policy())
        });
        assert_eq!(entered.recv().unwrap(), expect_entered);
        p.finish();
        finished_tx.send(()).unwrap();
        let seen = collector.join().unwrap();
        assert_eq!(seen, (libc::SCHED_OTHER, libc::SCHED_OTHER));
        // Finished before the collector started: it never goes idle.
        let p = Priority::new();
        p.finish();
        let late = std::thread::scope(|s| {
            s.spawn(|| {
                p.enter();
                policy()
            })
            .join()
            .unwrap()
        });
        assert_eq!(late, libc::SCHED_OTHER);
    }
}
