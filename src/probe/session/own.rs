//! The reader of reqlife's own programs ([`Own`]): each tick, the ring's events read, put in
//! time order and handed over up to the clock of the read before, then that clock.
//!
//! The ring holds the events in the order they were written, nearly their times' order: a
//! send is stamped at its start and written at its end, an arrival stamped before its
//! program's work. So the events read at a tick wait one tick, and the clock handed over is
//! the last read's: an event written by then is in, whatever its stamp (as with bpftrace's
//! maps, each read a turn after it was left).

use super::{hand_over, mono_now_ns, ticked, Into, Shared, BATCH};
use crate::probe::own::Own;
use crate::recorder::join::KernelEvent;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// Reads `own`'s events into `shared` every `tick` until asked to stop, then its last.
pub(super) fn read(own: Arc<Mutex<Own>>, shared: Arc<(Mutex<Shared>, Condvar)>, tick: Duration) {
    let (lock, cv) = &*shared;
    {
        let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
        s.ready = true;
        cv.notify_all();
    }
    let mut waiting: Vec<(u64, KernelEvent)> = Vec::new();
    let mut batch: Vec<KernelEvent> = Vec::with_capacity(BATCH);
    let mut last = mono_now_ns();
    let (mut lost, mut others) = (0u64, 0u64);
    loop {
        let stop = {
            let s = lock.lock().unwrap_or_else(|e| e.into_inner());
            let (s, _) = cv
                .wait_timeout_while(s, tick, |s| !s.stop)
                .unwrap_or_else(|e| e.into_inner());
            s.stop
        };
        let now = mono_now_ns();
        let (lost_now, others_now) = {
            let mut o = own.lock().unwrap_or_else(|e| e.into_inner());
            o.read(&mut waiting);
            (o.lost(), o.others())
        };
        // At the end, every event read is handed over: the run has ended before `now`.
        let clock = if stop { now } else { last };
        // Stable: events of one stamp keep the ring's order.
        waiting.sort_by_key(|(ns, _)| *ns);
        let due = waiting.partition_point(|(ns, _)| *ns < clock);
        batch.extend(waiting.drain(..due).map(|(_, e)| e));
        if lost_now > lost {
            batch.push(KernelEvent::Lost { n: lost_now - lost });
            lock.lock()
                .unwrap_or_else(|e| e.into_inner())
                .acc
                .lost_events += lost_now - lost;
            lost = lost_now;
        }
        if others_now != others {
            others = others_now;
            let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
            s.acc.others = others;
            // Sent outside the lock: the joiner's channel may be full.
            let sink = match &s.into {
                Into::Join(sink) => Some(sink.clone()),
                _ => None,
            };
            drop(s);
            if let Some(sink) = sink {
                sink.others(others);
            }
        }
        batch.push(KernelEvent::Tick { ns: clock });
        ticked(lock, &mut batch, clock);
        last = now;
        if stop {
            break;
        }
    }
    drop(own);
    hand_over(lock, &mut batch);
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    s.ended = true;
    s.closed = true;
    cv.notify_all();
}
