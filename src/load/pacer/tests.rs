use super::*;
use crate::model::Segment;

fn us(d: Option<Duration>) -> Option<u64> {
    d.map(|d| (d.as_nanos() as f64 / 1000.0).round() as u64)
}

#[test]
fn constant_rate_due_times() {
    let s = Schedule::Constant { rate: 50_000.0 };
    // (request, due µs): one every 20 µs
    for (n, want) in [
        (0, 0),
        (1, 20),
        (2, 40),
        (50_000, 1_000_000),
        (123_456, 2_469_120),
    ] {
        assert_eq!(us(s.due(n)), Some(want), "n={n}");
    }
}

#[test]
fn a_ramp_from_zero_follows_the_square_root() {
    // 0 → 1000 req/s over 10 s: N(t) = 50 t², so request n is due at sqrt(n/50).
    let s = Schedule::Stages(vec![RateStage {
        duration: Duration::from_secs(10),
        from_rps: 0.0,
        to_rps: 1000.0,
    }]);
    // (request, due seconds)
    for (n, t) in [
        (0u64, 0.0),
        (50, 1.0),
        (200, 2.0),
        (1250, 5.0),
        (4999, 9.999),
    ] {
        let got = s.due(n).unwrap().as_secs_f64();
        assert!((got - t).abs() < 1e-3, "n={n}: {got} vs {t}");
    }
    assert_eq!(s.due(5000), None, "5000 requests in all");
}

#[test]
fn stages_chain_ramps_and_holds() {
    // 10 s 0→100, 10 s hold at 100, 10 s 100→0: 500 + 1000 + 500 requests.
    let st = |d, a, b| RateStage {
        duration: Duration::from_secs(d),
        from_rps: a,
        to_rps: b,
    };
    let s = Schedule::Stages(vec![
        st(10, 0.0, 100.0),
        st(10, 100.0, 100.0),
        st(10, 100.0, 0.0),
    ]);
    // (request, due seconds)
    let rows = [
        (500u64, 10.0), // the hold starts after the ramp's 500
        (600, 11.0),    // 100 req/s in the hold
        (1500, 20.0),   // the down-ramp starts
        // down-ramp 100→0 over 10 s: N(t) = 100 t − 5 t²; N = 450 at t = 10 − sqrt(10)
        (1950, 30.0 - 10f64.sqrt()),
    ];
    for (n, t) in rows {
        let got = s.due(n).unwrap().as_secs_f64();
        assert!((got - t).abs() < 1e-6, "n={n}: {got} vs {t}");
    }
    assert_eq!(s.due(2000), None);
    assert_eq!(s.length(), Some(Duration::from_secs(30)));
}

#[test]
fn threads_interleave_the_one_schedule() {
    let s = Schedule::Constant { rate: 1000.0 };
    let mut a = ThreadPacer::new(s.clone(), Arrival::Constant, 0, 2, Segment::WHOLE, 1);
    let mut b = ThreadPacer::new(s, Arrival::Constant, 1, 2, Segment::WHOLE, 1);
    let got_a: Vec<_> = (0..3).map(|_| us(a.next_due()).unwrap()).collect();
    let got_b: Vec<_> = (0..3).map(|_| us(b.next_due()).unwrap()).collect();
    assert_eq!(got_a, vec![0, 2000, 4000]);
    assert_eq!(got_b, vec![1000, 3000, 5000]);
}

#[test]
fn segments_and_their_threads_interleave_the_one_schedule() {
    // 1000 req/s over 3 segments of 2 threads: together, every due time of the plan once.
    let s = Schedule::Constant { rate: 1000.0 };
    let mut all: Vec<u64> = Vec::new();
    for index in 0..3 {
        for thread in 0..2 {
            let seg = Segment { index, count: 3 };
            let mut p = ThreadPacer::new(s.clone(), Arrival::Constant, thread, 2, seg, 1);
            all.extend((0..100).map(|_| us(p.next_due()).unwrap()));
        }
    }
    all.sort_unstable();
    let want: Vec<u64> = (0..600).map(|n| n * 1000).collect();
    assert_eq!(all, want);
    // Segment 2 of 3, thread 1 of 2: its k-th request is the plan's (2k + 1)·3 + 1.
    let seg = Segment { index: 1, count: 3 };
    let mut p = ThreadPacer::new(s, Arrival::Constant, 1, 2, seg, 1);
    let got: Vec<_> = (0..3).map(|_| us(p.next_due()).unwrap()).collect();
    assert_eq!(got, vec![4000, 10_000, 16_000]);
}

#[test]
fn poisson_keeps_the_mean_rate_and_is_reproducible() {
    let s = Schedule::Constant { rate: 10_000.0 };
    let mut p = ThreadPacer::new(s.clone(), Arrival::Poisson, 0, 1, Segment::WHOLE, 42);
    let n = 100_000;
    let mut last = Duration::ZERO;
    let mut gaps_sq = 0.0;
    for _ in 0..n {
        let d = p.next_due().unwrap();
        let gap = (d - last).as_secs_f64();
        gaps_sq += gap * gap;
        last = d;
    }
    let mean_gap = last.as_secs_f64() / n as f64;
    // Mean 100 µs within 1.5% (the standard error is 100 µs/sqrt(n) ≈ 0.3%).
    assert!((mean_gap - 1e-4).abs() < 1.5e-6, "mean gap {mean_gap}");
    // Exponential: the second moment is 2·mean² (a constant rate would give mean²).
    let m2 = gaps_sq / n as f64;
    assert!((m2 / (2.0 * 1e-8) - 1.0).abs() < 0.05, "second moment {m2}");
    let mut again = ThreadPacer::new(s, Arrival::Poisson, 0, 1, Segment::WHOLE, 42);
    let first: Vec<_> = (0..5).map(|_| again.next_due()).collect();
    let mut p2 = ThreadPacer::new(
        Schedule::Constant { rate: 10_000.0 },
        Arrival::Poisson,
        0,
        1,
        Segment::WHOLE,
        42,
    );
    let second: Vec<_> = (0..5).map(|_| p2.next_due()).collect();
    assert_eq!(first, second);
}

/// Counts a pacer's due times before `end` one by one, the slow way.
fn drawn_before(mut p: ThreadPacer, end: Duration) -> u64 {
    std::iter::from_fn(|| p.next_due().filter(|d| *d < end)).count() as u64
}

#[test]
fn the_rest_of_a_schedule_is_counted_as_if_drawn_one_by_one() {
    let ramp = Schedule::Stages(vec![
        RateStage {
            duration: Duration::from_secs(1),
            from_rps: 0.0,
            to_rps: 400_000.0,
        },
        RateStage {
            duration: Duration::from_secs(1),
            from_rps: 400_000.0,
            to_rps: 400_000.0,
        },
    ]);
    let seg = |index, count| Segment { index, count };
    // (schedule, thread, threads, segment, requests drawn first, end ms): beyond the
    // first 65,536 the count is the schedule's N(t), not a draw each.
    let rows = [
        (
            Schedule::Constant { rate: 1000.0 },
            0,
            1,
            Segment::WHOLE,
            0,
            1500,
        ),
        (
            Schedule::Constant { rate: 1e6 },
            0,
            1,
            Segment::WHOLE,
            10,
            900,
        ),
        (Schedule::Constant { rate: 1e6 }, 2, 3, seg(1, 2), 7, 1000),
        (
            Schedule::Constant { rate: 333_333.0 },
            1,
            2,
            seg(0, 3),
            0,
            1234,
        ),
        (ramp.clone(), 0, 1, Segment::WHOLE, 100, 1500),
        (ramp, 1, 2, seg(2, 3), 0, 700),
    ];
    for (i, (s, thread, threads, segment, drawn, end_ms)) in rows.into_iter().enumerate() {
        let end = Duration::from_millis(end_ms);
        let mut p = ThreadPacer::new(s, Arrival::Constant, thread, threads, segment, 1);
        for _ in 0..drawn {
            p.next_due();
        }
        let slow = drawn_before(p.clone(), end);
        let fast = p.count_before(end);
        // Exact but for the rounding of N(t) at the end (one request at most).
        assert!(fast.abs_diff(slow) <= 1, "row {i}: {fast} against {slow}");
    }
}

#[test]
fn poisson_s_rest_is_its_expected_count() {
    let s = Schedule::Constant { rate: 2e6 };
    let p = ThreadPacer::new(s, Arrival::Poisson, 0, 2, Segment::WHOLE, 7);
    let end = Duration::from_millis(500);
    // 500,000 due to this thread of two: the count drawn and the one computed agree
    // within the process's own spread (0.14% here).
    let (slow, fast) = (drawn_before(p.clone(), end), p.clone().count_before(end));
    assert!((fast as f64 / 500_000.0 - 1.0).abs() < 0.01, "{fast}");
    assert!(
        (fast as f64 / slow as f64 - 1.0).abs() < 0.01,
        "{fast} {slow}"
    );
}

#[test]
fn three_hundred_million_due_requests_are_counted_without_drawing_them() {
    // -R 100M for 3 s: the rest of the window counted from N(t), not by 300 million
    // draws (seconds of CPU at the end of the run).
    let s = Schedule::Constant { rate: 1e8 };
    let mut p = ThreadPacer::new(s, Arrival::Constant, 0, 1, Segment::WHOLE, 1);
    assert_eq!(p.count_before(Duration::from_secs(3)), 300_000_000);
    assert_eq!(p.k, COUNTED_ONE_BY_ONE, "drawn one by one");
}

#[test]
fn a_burst_is_due_the_pause_after_the_last_answer_of_the_previous_one() {
    let ms = Duration::from_millis;
    let p = BurstPacer {
        interval: ms(10),
        bursts: None,
    };
    // (bursts recorded, last answer of the previous burst, due): the pace follows the
    // answers, whatever each burst lasted.
    let rows = [
        (0, None, ms(0)),            // the first burst: at the start
        (1, Some(ms(50)), ms(60)),   // burst 0 answered by 50 ms: 10 ms later
        (2, Some(ms(61)), ms(71)),   // a fast burst (1 ms)
        (3, Some(ms(500)), ms(510)), // a slow one (429 ms)
        (0, Some(ms(7)), ms(17)),    // after a warm-up burst: still the same pause
    ];
    for (recorded, last, want) in rows {
        assert_eq!(p.due(recorded, last), Some(want), "{recorded} {last:?}");
    }
}

#[test]
fn a_burst_count_ends_the_bursts() {
    let ms = Duration::from_millis;
    let p = BurstPacer {
        interval: ms(5),
        bursts: Some(3),
    };
    // (bursts recorded, due?)
    for (recorded, due) in [(0, true), (1, true), (2, true), (3, false), (4, false)] {
        assert_eq!(p.due(recorded, Some(ms(1))).is_some(), due, "{recorded}");
    }
    let load = LoadModel::Burst {
        size: 4,
        interval: ms(5),
        bursts: Some(3),
    };
    assert_eq!(BurstPacer::of(&load), Some(p));
    assert_eq!(BurstPacer::of(&LoadModel::Closed { connections: 4 }), None);
}
