//! Unit tests of `recorder`.

use super::*;
use crate::model::{Timestamps, Traffic};

fn sample(base: Instant, start_ms: u64, total_us: u64, error: Option<ErrorKind>) -> Sample {
    let t0 = base + Duration::from_millis(start_ms);
    let mut st = Timestamps::new(t0, t0);
    if error.is_none() {
        st.written = Some(t0 + Duration::from_micros(1));
        st.first_byte = Some(t0 + Duration::from_micros(total_us - 1));
        st.done = Some(t0 + Duration::from_micros(total_us));
    }
    let ok = Sample {
        traffic: Traffic {
            header: 60,
            header_decoded: 60,
            body: 40,
            body_decoded: 40,
        },
        ..Sample::ok(st)
    };
    match error {
        None => ok,
        Some(kind) => ok.failed(kind),
    }
}

#[test]
fn counts_statuses_errors_and_phases() {
    let base = Instant::now();
    let mut r = Recorder::new(base, Duration::from_secs(1));
    for i in 0..10 {
        r.record(&sample(base, i, 100, None));
    }
    r.record(&sample(base, 20, 0, Some(ErrorKind::Timeout)));
    r.note_error(ErrorKind::Timeout, "first");
    r.note_error(ErrorKind::Timeout, "second");
    let m = r.finish();
    assert_eq!(m.counts.counters.requests, 11);
    assert_eq!(m.counts.counters.ok, 10);
    assert_eq!(m.counts.counters.errors[ErrorKind::Timeout.index()], 1);
    assert_eq!(m.counts.counters.bytes_read, 1000);
    assert_eq!(m.counts.status[200], 10);
    assert_eq!(m.hists.get(Phase::Total).len(), 10);
    assert_eq!(m.hists.get(Phase::Wait).len(), 10);
    assert_eq!(m.hists.get(Phase::Connect).len(), 0);
    assert_eq!(
        m.counts.first_errors[ErrorKind::Timeout.index()].as_deref(),
        Some("first")
    );
}

#[test]
fn warmup_samples_are_ignored() {
    let base = Instant::now();
    let from = base + Duration::from_millis(5);
    let mut r = Recorder::new(from, Duration::from_secs(1));
    for i in 0..10 {
        r.record(&sample(base, i, 100, None)); // intended at 0..9 ms
    }
    assert_eq!(r.requests(), 5); // 5..9 ms only
}

#[test]
fn samples_ending_after_the_window_are_drained_and_kept() {
    let base = Instant::now();
    let until = base + Duration::from_millis(100);
    let mut r = Recorder::new(base, Duration::from_secs(1)).sharing_end(std::sync::Arc::new(
        crate::model::WindowEnd::at(Some(until)),
    ));
    // (intended ms, total µs, error): ends inside, ends in the drain, times out in it
    let rows = [
        (50, 40_000, None),
        (90, 20_000, None),
        (95, 0, Some(ErrorKind::Timeout)),
    ];
    for (ms, us, err) in rows {
        r.sending(1);
        let mut s = sample(base, ms, us, err);
        if err.is_some() {
            s.stamps.done = Some(until + Duration::from_millis(1));
        }
        r.record_with_timing(&s, &[]);
    }
    r.sending(1); // one more never comes back
    r.not_sent(2);
    let m = r.finish();
    let c = &m.counts.counters;
    assert_eq!(
        (c.requests, c.ok),
        (3, 2),
        "every ended request is recorded"
    );
    assert_eq!((c.drained, c.drain_timeouts), (2, 1));
    assert_eq!((c.in_flight_at_end, c.not_sent), (1, 2));
    assert_eq!(
        m.hists.get(Phase::Total).len(),
        2,
        "the slow one is in the tail"
    );
}

#[test]
fn intervals_split_by_end_time_and_merge_across_threads() {
    let base = Instant::now();
    let interval = Duration::from_millis(100);
    let mut a = Recorder::new(base, interval);
    let mut b = Recorder::new(base, interval);
    // thread a: 3 requests in interval 0, 2 in interval 2; thread b: 4 in interval 0
    for ms in [0, 10, 20, 210, 220] {
        a.record(&sample(base, ms, 50, None));
    }
    for ms in [30, 40, 50, 60] {
        b.record(&sample(base, ms, 50, None));
    }
    let m = Measured::merge(vec![a.finish(), b.finish()]);
    let counts: Vec<(u64, u64)> = m
        .series
        .entries
        .iter()
        .map(|s| (s.index, s.counters.requests))
        .collect();
    assert_eq!(counts, vec![(0, 7), (2, 2)]);
    assert_eq!(m.counts.counters.requests, 9);
    assert_eq!(m.hists.get(Phase::Total).len(), 9);
    let total0 = &m.series.entries[0]
        .hists
        .iter()
        .find(|(p, _)| *p == Phase::Total)
        .unwrap()
        .1;
    assert_eq!(hist::decode_bytes(total0).unwrap().len(), 7);
}

#[test]
fn failed_request_keeps_its_connect_time() {
    let base = Instant::now();
    let mut r = Recorder::new(base, Duration::from_secs(1));
    let mut s = sample(base, 0, 0, Some(ErrorKind::Read));
    s.stamps.connect_start = Some(base);
    s.stamps.connect_end = Some(base + Duration::from_micros(30));
    r.record(&s);
    let m = r.finish();
    assert_eq!(m.hists.get(Phase::Connect).len(), 1);
    assert_eq!(m.hists.get(Phase::Total).len(), 0);
    assert_eq!(m.counts.counters.connections_opened, 1);
}

#[test]
fn extras_fold_into_tallies_and_a_failed_status_notes_its_first_detail() {
    use crate::engine::extras::{Extras, Status, Tally};
    let base = Instant::now();
    let from = base + Duration::from_millis(5);
    let mut r = Recorder::new(from, Duration::from_secs(1));
    let pings = [2_000_000, 3_000_000];
    // (intended ms, grpc message): a warm-up call (its counts still count, its pings not),
    // then two recorded ones.
    for (ms, message) in [(0, "warm"), (10, "down"), (20, "still down")] {
        let mut extras = Extras {
            status: Some(Status {
                tally: Tally::Grpc,
                code: 14,
                message,
                failed: Some(ErrorKind::Grpc),
            }),
            values: Some((Phase::WsPing, &pings)),
            ..Extras::default()
        };
        extras.events.push(Tally::Reset, 7);
        let s = sample(base, ms, 100, extras.failed());
        r.record_response(&s, &[], &[]);
        r.fold(&s, &extras);
    }
    let m = r.finish();
    assert_eq!(m.counts.tallies.by_name(Tally::Reset)["REFUSED_STREAM"], 3);
    assert_eq!(m.counts.tallies.by_name(Tally::Grpc)["UNAVAILABLE"], 3);
    assert_eq!(
        m.counts.tallies.messages(Tally::Grpc)["UNAVAILABLE"],
        "warm"
    );
    assert_eq!(
        m.counts.first_errors[ErrorKind::Grpc.index()].as_deref(),
        Some("UNAVAILABLE: warm")
    );
    assert_eq!(m.counts.counters.errors[ErrorKind::Grpc.index()], 2);
    assert_eq!(
        m.hists.get(Phase::WsPing).len(),
        4,
        "the recorded calls' pings"
    );
}

#[test]
fn a_streams_gaps_go_where_its_phases_go() {
    let base = Instant::now();
    let mut r = Recorder::new(base, Duration::from_millis(100))
        .with_requests(2)
        .with_segments(&[base + Duration::from_secs(1)]);
    // (intended ms, request name slot, gaps µs): two streams in two intervals, one plain.
    let rows: [(u64, u16, &[u64]); 3] = [(0, 0, &[5, 6, 7]), (150, 1, &[8]), (160, 0, &[])];
    for (ms, request, gaps) in rows {
        let mut s = sample(base, ms, 50, None);
        s.request = request;
        if !gaps.is_empty() {
            s.stamps.first_event = Some(s.stamps.written.unwrap() + Duration::from_micros(5));
            s.stamps.events = Some(gaps.len() as u32 + 1);
        }
        let ns: Vec<u64> = gaps.iter().map(|us| us * 1000).collect();
        r.record_response(&s, &[], &ns);
    }
    // A failed stream's gaps are not latency of a response.
    r.record_response(
        &sample(base, 170, 0, Some(ErrorKind::Timeout)),
        &[],
        &[9_000],
    );
    let m = r.finish();
    let gaps = m.hists.get(Phase::EventGap);
    assert_eq!((gaps.len(), gaps.min()), (4, 5000));
    assert!(gaps.equivalent(gaps.max(), 8000), "{}", gaps.max());
    assert_eq!(m.hists.get(Phase::FirstEvent).len(), 2);
    let events = m.hists.get(Phase::Events);
    assert_eq!((events.min(), events.max()), (2, 4), "counts, exactly");
    assert_eq!(m.by_request[0].hists.get(Phase::EventGap).len(), 3);
    assert_eq!(m.by_request[1].hists.get(Phase::EventGap).len(), 1);
    assert_eq!(m.segments[0].1.get(Phase::EventGap).len(), 4);
    // Each interval's set has its own gaps.
    let per_interval: Vec<(u64, u64)> = m
        .series
        .entries
        .iter()
        .map(|e| {
            let h = e.hists.iter().find(|(p, _)| *p == Phase::EventGap);
            (
                e.index,
                h.map_or(0, |(_, b)| hist::decode_bytes(b).unwrap().len()),
            )
        })
        .collect();
    assert_eq!(per_interval, vec![(0, 3), (1, 1)]);
}

#[test]
fn the_overhead_spans_the_write_so_a_late_stamp_of_its_end_does_not_hide_it() {
    // The server says 0.2 ms. The generator began writing at t0, was preempted before it
    // stamped the end of its write (0.5 ms), and the response had arrived at 0.3 ms: its
    // first byte is stamped no earlier than the write's end, so its wait is 0. The network
    // and the client still took 0.5 − 0.2 = 0.3 ms of the span from the write to the first
    // byte; wait − server total would have said 0 (clamped).
    let base = Instant::now();
    let mut r = Recorder::new(base, Duration::from_secs(1));
    let mut s = sample(base, 1, 600, None);
    let t0 = s.stamps.dispatched;
    s.stamps.written = Some(t0 + Duration::from_micros(500));
    s.stamps.first_byte = s.stamps.written;
    assert_eq!(s.stamps.phase(Phase::Wait), Some(Duration::ZERO));
    r.record_with_timing(&s, b"total;dur=0.2");
    let m = r.finish();
    assert_eq!(m.server.overhead.len(), 1);
    let us = m.server.overhead.max() as f64 / 1e3;
    assert!((us - 300.0).abs() < 1.0, "overhead {us} us");
}

#[test]
fn a_request_is_recorded_into_its_interval_only_and_the_run_is_their_sum() {
    let base = Instant::now();
    let mut r = Recorder::new(base, Duration::from_secs(1));
    // A connection opened ahead of the load: its connect time is the run's, no interval's.
    let mut opened = Timestamps::new(base, base);
    opened.connect_start = Some(base);
    opened.connect_end = Some(base + Duration::from_micros(30));
    r.record_connection(&opened);
    for (start_ms, total_us) in [(0, 100), (1500, 200), (1600, 300), (2500, 400)] {
        r.record(&sample(base, start_ms, total_us, None));
    }
    // The worker's own histograms hold the connection only: one record per phase and
    // request, into the current interval.
    assert!(Phase::ALL
        .iter()
        .filter(|p| **p != Phase::Connect)
        .all(|p| r.hists.get(*p).is_empty()));
    assert_eq!(r.hists.get(Phase::Connect).len(), 1);
    let current = r.current.as_ref().unwrap();
    assert_eq!(
        (current.index, current.hists.get(Phase::Total).len()),
        (2, 1)
    );
    let m = r.finish();
    let total = m.hists.get(Phase::Total);
    assert_eq!(total.len(), 4);
    assert_eq!(m.hists.get(Phase::Wait).len(), 4);
    assert_eq!(m.hists.get(Phase::Connect).len(), 1);
    // Exactly the sum of the intervals: the same count at every value.
    let per_interval: Vec<u64> = m
        .series
        .entries
        .iter()
        .map(|e| e.counters.requests)
        .collect();
    assert_eq!(per_interval, vec![1, 2, 1]);
    assert_eq!(total.max(), total.highest_equivalent(400_000));
    assert_eq!(total.count_at(200_000), 1);
}

#[test]
fn the_phases_an_on_time_request_implies_come_out_as_if_recorded() {
    // Interval 0: a closed loop's requests only (one of them failed); interval 1: on-time
    // requests, then late ones, then on-time ones again; interval 2: late ones first.
    let base = Instant::now();
    let late = |start_ms: u64, total_us: u64| {
        let mut s = sample(base, start_ms, total_us, None);
        let t = s.stamps.intended;
        s.stamps.dispatched = t + Duration::from_micros(7);
        s.stamps = s.stamps.released_at(t + Duration::from_micros(3));
        s
    };
    let mut samples = vec![
        sample(base, 10, 100, None),
        sample(base, 20, 0, Some(ErrorKind::Timeout)),
        sample(base, 30, 300, None),
        sample(base, 1010, 110, None),
        late(1020, 120),
        sample(base, 1030, 130, None),
        late(2010, 210),
        sample(base, 2020, 220, None),
    ];
    samples.extend((0..50).map(|i| sample(base, 40 + i, 50 + i, None)));
    let mut r = Recorder::new(base, Duration::from_secs(1));
    let mut expected: Vec<PhaseHists> = (0..3)
        .map(|_| PhaseHists::new(hist::new_interval_hist))
        .collect();
    for s in &samples {
        r.record(s);
        let index = (s.stamps.intended - base).as_secs() as usize;
        expected[index].record(&durations(s));
    }
    let m = r.finish();
    let mut run = PhaseHists::new(hist::new_hist);
    for e in &expected {
        run.merge(e);
    }
    // The same counts at the same values (the histograms' sizes may differ).
    let counts = |h: &Histogram<u64>| -> Vec<(u64, u64)> {
        let at = |v: hdrhistogram::iterators::IterationValue<u64>| {
            (v.value_iterated_to(), v.count_at_value())
        };
        h.iter_recorded().map(at).collect()
    };
    for p in Phase::ALL {
        assert_eq!(
            counts(m.hists.get(p)),
            counts(run.get(p)),
            "the run's {p:?}"
        );
    }
    assert_eq!(m.hists.get(Phase::Queue).len(), samples.len() as u64);
    let uncorrected = m.hists.get(Phase::Uncorrected);
    assert_eq!(uncorrected.max(), uncorrected.highest_equivalent(300_000));
    for (e, want) in m.series.entries.iter().zip(&expected) {
        for p in Phase::ALL {
            let got = e.hists.iter().find(|(q, _)| *q == p);
            let got = got.map(|(_, b)| hist::decode_bytes(b).unwrap());
            match got {
                Some(h) => assert_eq!(counts(&h), counts(want.get(p)), "{} {p:?}", e.index),
                None => assert!(want.get(p).is_empty(), "interval {} {p:?}", e.index),
            }
        }
    }
    assert_eq!(m.series.entries.len(), 3);
}

#[test]
fn only_the_phases_every_request_has_start_at_full_size() {
    // A thread keeps several interval sets: the phases most runs never record stay small.
    for make in [
        hist::new_interval_hist as fn() -> Histogram<u64>,
        hist::new_hist,
    ] {
        let hists = PhaseHists::new(make);
        for p in Phase::ALL {
            let counts = hists.get(p).distinct_values();
            if Phase::EVERY_REQUEST.contains(&p) {
                assert_eq!(counts, make().distinct_values(), "{p:?}");
            } else {
                assert_eq!(counts, 2048, "{p:?}: 16 KiB until it records");
            }
        }
    }
}
