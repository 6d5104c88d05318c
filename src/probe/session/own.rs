//! The reader of reqlife's own programs ([`Own`]): each tick, the ring's events read, put in
//! time order and handed over up to the clock of the read before, then that clock.
//!
//! The ring holds the events in the order they were written, nearly their times' order: a
//! send is stamped at its start and written at its end, an arrival stamped before its
//! program's work. So the events read at a tick wait one tick, and the clock handed over is
//! the last read's: an event written by then is in, whatever its stamp (as with bpftrace's
//! maps, each read a turn after it was left).

use super::{hand_over, mono_now_ns, ticked, Into, Shared, BATCH};
use crate::probe::own::{Own, Runs};
use crate::recorder::join::KernelEvent;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How long the kernel counts the programs' run time, from the recorded window's start: its
/// two clock readings a run cost the server too (on the 2-core VM, kvm-clock readings took
/// 5% of nginx's core with the run time counted throughout, two thirds of them the count's).
const SAMPLE_NS: u64 = 1_000_000_000;

/// The programs' run time counted over the window's first [`SAMPLE_NS`]: the runs and the
/// records read when it began, and what the sample held once it ended.
#[derive(Default)]
struct Sample {
    from: Option<(Runs, u64, u64)>,
    took: Option<(Runs, u64)>,
}

impl Sample {
    /// At a read at `now`, `read` records in all so far: begun once the window has, ended
    /// [`SAMPLE_NS`] later or at the end (`stop`), the counting then turned off.
    fn step(&mut self, own: &mut Own, window: bool, now: u64, read: u64, stop: bool) {
        if self.from.is_none() && window && own.counting() {
            self.from = Some((own.runs(), read, now));
        }
        if let (Some((r0, e0, t0)), None) = (self.from, self.took) {
            if stop || now >= t0 + SAMPLE_NS {
                let r1 = own.runs();
                let runs = Runs {
                    count: r1.count.saturating_sub(r0.count),
                    ns: r1.ns.saturating_sub(r0.ns),
                    missed: 0,
                };
                self.took = Some((runs, read - e0));
                own.stop_counting();
            }
        }
    }

    /// The window's runs and their time, from the sample's, by the records read in the
    /// window (`read` in all) against in the sample.
    fn whole(&self, read: u64) -> Option<(u64, u64, f64)> {
        let ((_, e0, t0), (runs, events)) = (self.from?, self.took?);
        let scale = (read - e0) as f64 / events.max(1) as f64;
        let seconds = SAMPLE_NS.min(mono_now_ns().saturating_sub(t0)) as f64 / 1e9;
        Some((
            (runs.count as f64 * scale) as u64,
            (runs.ns as f64 * scale) as u64,
            seconds,
        ))
    }
}

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
    // Events lost, and arrivals of other clients, told so far.
    let mut seen = (0u64, 0u64);
    let (mut sample, mut read_in_all) = (Sample::default(), 0u64);
    loop {
        let stop = {
            let s = lock.lock().unwrap_or_else(|e| e.into_inner());
            let (s, _) = cv
                .wait_timeout_while(s, tick, |s| !s.stop)
                .unwrap_or_else(|e| e.into_inner());
            s.stop
        };
        let now = mono_now_ns();
        let window = lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .window
            .is_some();
        let (lost_now, others_now) = {
            let mut o = own.lock().unwrap_or_else(|e| e.into_inner());
            read_in_all += o.read(&mut waiting);
            sample.step(&mut o, window, now, read_in_all, stop);
            (o.lost(), o.others())
        };
        // At the end, every event read is handed over: the run has ended before `now`.
        let clock = if stop { now } else { last };
        // Stable: events of one stamp keep the ring's order.
        waiting.sort_by_key(|(ns, _)| *ns);
        let due = waiting.partition_point(|(ns, _)| *ns < clock);
        batch.extend(waiting.drain(..due).map(|(_, e)| e));
        counts(lock, &mut batch, (lost_now, others_now), &mut seen);
        batch.push(KernelEvent::Tick { ns: clock });
        ticked(lock, &mut batch, clock);
        last = now;
        if stop {
            break;
        }
    }
    let counting = own.lock().unwrap_or_else(|e| e.into_inner()).counting();
    drop(own);
    hand_over(lock, &mut batch);
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    match sample.whole(read_in_all) {
        Some((runs, ns, seconds)) => s.acc.cost.count_runs(runs, ns, seconds),
        None if sample.from.is_none() && !counting && s.window.is_some() => s.acc.notes.push(
            "the probes' CPU was not counted: the kernel's run-time statistics of reqlife's \
             own programs could not be turned on"
                .into(),
        ),
        None => {}
    }
    s.ended = true;
    s.closed = true;
    cv.notify_all();
}

/// The programs' counts since the last tick: events lost (an event of their number in
/// `batch`, and the accumulator's count), arrivals of other clients (the joiner told,
/// outside the lock: its channel may be full); `seen` what was told before.
fn counts(
    lock: &Mutex<Shared>,
    batch: &mut Vec<KernelEvent>,
    (lost_now, others_now): (u64, u64),
    seen: &mut (u64, u64),
) {
    let (lost, others) = seen;
    if lost_now > *lost {
        batch.push(KernelEvent::Lost {
            n: lost_now - *lost,
        });
        lock.lock()
            .unwrap_or_else(|e| e.into_inner())
            .acc
            .lost_events += lost_now - *lost;
        *lost = lost_now;
    }
    if others_now != *others {
        *others = others_now;
        let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
        s.acc.others = others_now;
        let sink = match &s.into {
            Into::Join(sink) => Some(sink.clone()),
            _ => None,
        };
        drop(s);
        if let Some(sink) = sink {
            sink.others(others_now);
        }
    }
}
