//! The collector's own tests: finality, late parts, status counts, set reuse.

use super::*;

fn set(thread: usize, index: u64, n: u64) -> Box<IntervalSet> {
    let mut s = IntervalSet::new(thread, "total", &[]);
    s.index = index;
    s.counters.requests = n;
    for _ in 0..n {
        hist::record(&mut s.hists.0[Phase::Total.index()], 1000);
    }
    s
}

#[test]
fn an_interval_is_final_when_every_thread_moved_past_it() {
    let t0 = Instant::now();
    let mut c = Collector::new(2, t0, Duration::from_secs(3600));
    assert!(c.add(&set(0, 0, 3), 1).is_none());
    assert!(c.ready(t0, false).is_empty()); // thread 1 has not said
    assert!(c.add(&set(1, 0, 4), 2).is_none());
    let done = c.ready(t0, false);
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].index, done[0].counters.requests), (0, 7));
    // A late part of interval 0: merged into the series, given apart.
    let late = c.add(&set(1, 0, 5), 2).unwrap();
    assert_eq!(late.counters.requests, 5);
    assert_eq!(c.late, 1);
    let (s, totals, _) = c.finish();
    assert_eq!(s.entries[0].counters.requests, 12);
    // The run's histograms hold every part, the late one too.
    assert_eq!(totals.get(Phase::Total).len(), 12);
}

#[test]
fn the_grace_ends_a_wait_for_an_idle_thread() {
    let t0 = Instant::now();
    let mut c = Collector::new(2, t0, Duration::from_millis(100));
    c.add(&set(0, 0, 1), 1);
    assert!(c.ready(t0 + Duration::from_millis(110), false).is_empty());
    assert_eq!(c.ready(t0 + Duration::from_millis(250), false).len(), 1);
}

#[test]
fn intervals_are_final_below_what_every_thread_passed_or_the_grace_ended() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    // Intervals of 100 ms, a grace of 100 ms.
    let mut c = Collector::new(2, t0, ms(100));
    assert_eq!(
        c.final_below(t0 + ms(150)),
        0,
        "nothing said, no grace over"
    );
    // Interval 0 ends at 100 ms, its grace at 200: final then, even with no request.
    assert_eq!(c.final_below(t0 + ms(200)), 1);
    assert_eq!(c.final_below(t0 + ms(450)), 3);
    // A part of interval 4 waits for thread 1: 4 is not final, whatever the clock says.
    c.add(&set(0, 4, 2), 5);
    assert!(c.ready(t0 + ms(450), false).is_empty());
    assert_eq!(c.final_below(t0 + ms(650)), 4);
    // Thread 1 moved past 6 (nothing recorded in 4-5): 4 closes, and 0-5 are final.
    c.add(&set(1, 5, 0), 6);
    assert_eq!(c.ready(t0 + ms(500), false).len(), 1);
    assert_eq!(c.final_below(t0 + ms(500)), 5, "thread 0 is at 5");
    c.add(&set(0, 5, 0), 7);
    assert_eq!(c.final_below(t0 + ms(500)), 6);
}

#[test]
fn status_codes_add_up_by_code_and_a_reset_keeps_them_at_zero() {
    let t0 = Instant::now();
    let mut c = Collector::new(2, t0, Duration::from_secs(3600));
    let mut a = set(0, 0, 3);
    (0..3).for_each(|_| a.count_status(200));
    let mut b = set(1, 0, 2);
    b.count_status(503);
    b.count_status(200);
    c.add(&a, 1);
    c.add(&b, 1);
    let done = c.ready(t0, false);
    assert_eq!(done[0].status, vec![(200, 4), (503, 1)]);
    b.reset();
    assert_eq!(b.status, vec![(503, 0), (200, 0)]);
}

#[test]
fn reset_keeps_the_set_empty_and_reusable() {
    let mut s = set(0, 5, 10);
    s.server.ingest(b"db;dur=1", None);
    s.busy = Some(0.5);
    s.reset();
    assert_eq!(s.counters.requests, 0);
    assert!(s.hists.0.iter().all(|h| h.is_empty()));
    assert!(s.server.metrics.iter().all(|m| m.hist.is_empty()));
    assert_eq!(s.busy, None);
}

#[test]
fn a_worker_with_no_set_back_raises_the_collector() {
    // A load that has not started: the collector keeps what comes and gives nothing back.
    let start = Start {
        gate: Arc::new(crate::util::start::StartGate::new(1)),
        warmup: Duration::ZERO,
    };
    let sinks = Sinks {
        live: None,
        log: None,
        on_interval: None,
        join: None,
    };
    let (collector, mut links) =
        CollectorThread::spawn(1, "total", &[], start, Duration::from_secs(1), sinks).unwrap();
    let link = links.remove(0);
    let t0 = Instant::now();
    while !link.priority.entered() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the collector started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    // The pool's sets: the collector is not behind yet.
    let pool: Vec<_> = (0..POOL).map(|_| link.spare("total")).collect();
    assert!(!link.priority.is_raised());
    // None back: a new set, and the collector raised (where it may run idle at all).
    let extra = link.spare("total");
    assert_eq!(link.priority.is_raised(), link.priority.is_idle());
    drop((pool, extra, link));
    collector.join();
}
