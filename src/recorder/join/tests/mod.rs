//! The join on events and requests made up here: keep-alive, pipelining (one read, one write
//! for several requests), HTTP/2's streams answered out of order, a response in two writes
//! held back, sampling's edges, functions after the read, requests whose events are missing.

use super::*;
use crate::model::{Phase, Sample, Timestamps};
use std::time::{Duration, Instant};

/// A request on client port `port` that ended at `tx_end` in its stream and whose response
/// lay at `rx_first..rx_end`, written at `write_ns` and done at `done_ns`, its total `total`.
fn trail(port: u16, tx_end: u64, rx: (u64, u64), write_ns: u64, done_ns: u64) -> Trail {
    let base = Instant::now();
    let mut st = Timestamps::new(base, base);
    st.written = Some(base + Duration::from_nanos(1_000));
    st.first_byte = Some(base + Duration::from_nanos(done_ns - write_ns));
    st.done = st.first_byte;
    let s = Sample::ok(st);
    let d = crate::recorder::durations(&s);
    Trail {
        kept: crate::recorder::exemplar::Exemplar::of(&s, &d, b"", base),
        wire: crate::model::Wire {
            port,
            exact: true,
            tx_end,
            rx_first: rx.0,
            rx_end: rx.1,
        },
        interval: 0,
        start_ns: 0,
        bytes_read: rx.1 - rx.0,
        bytes_written: 0,
        write_ns,
        done_ns,
    }
}

fn spec(functions: &[&str], sample: u64) -> JoinSpec {
    JoinSpec {
        functions: functions.iter().map(|f| f.to_string()).collect(),
        sample,
        split: false,
        upstream: false,
        interval: Duration::from_secs(1),
        tick: Duration::from_millis(100),
    }
}

fn joiner(functions: &[&str], sample: u64) -> Joiner {
    Joiner::new(spec(functions, sample), None, None)
}

use KernelEvent::*;

/// The values of phase `name` as its histogram holds them (each as its bucket's lowest).
fn phase(j: &Joined, name: &str) -> Vec<u64> {
    let (_, _, h) = j.phases.iter().find(|(n, _, _)| n == name).unwrap();
    h.iter_recorded()
        .flat_map(|v| {
            let low = h.lowest_equivalent(v.value_iterated_to());
            std::iter::repeat_n(low, v.count_at_value() as usize)
        })
        .collect()
}

/// `ns` as phase `name`'s histogram holds it.
fn held(j: &Joined, name: &str, ns: &[u64]) -> Vec<u64> {
    let (_, _, h) = j.phases.iter().find(|(n, _, _)| n == name).unwrap();
    ns.iter().map(|v| h.lowest_equivalent(*v)).collect()
}

#[test]
fn keep_alive_requests_get_their_own_events() {
    let mut j = joiner(&[], 1);
    let p = 40000;
    j.event(Opened { port: p, ns: 0 });
    // Request 1: bytes 0..80, answered 0..150; request 2: 80..160, answered 150..300.
    for (k, (tx, rx)) in [((0, 80), (0, 150)), ((80, 160), (150, 300))]
        .into_iter()
        .enumerate()
    {
        let t0 = 1_000_000 * (k as u64 + 1);
        j.event(Arrived {
            port: p,
            prev: tx.0,
            off: tx.1,
            ns: t0 + 10_000,
        });
        j.event(Read {
            port: p,
            start: tx.0,
            off: tx.1,
            ns: t0 + 30_000,
            pid: 9,
            key: 9,
        });
        j.event(Wrote {
            port: p,
            start: rx.0,
            end: rx.1,
            ns: t0 + 130_000,
            pid: 9,
        });
        j.event(Delivered {
            port: p,
            prev: rx.0,
            off: rx.1,
            ns: t0 + 140_000,
        });
        j.trails(&[trail(p, tx.1, rx, t0, t0 + 150_000)], 0);
    }
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 2, "{:?}", out.counts);
    assert_eq!(phase(&out, "send"), held(&out, "send", &[10_000, 10_000]));
    assert_eq!(
        phase(&out, "socket"),
        held(&out, "socket", &[20_000, 20_000])
    );
    assert_eq!(
        phase(&out, "handle"),
        held(&out, "handle", &[100_000, 100_000])
    );
    assert_eq!(
        phase(&out, "return"),
        held(&out, "return", &[10_000, 10_000])
    );
    assert_eq!(out.counts.shared_read, 0);
    assert_eq!(out.pids.iter().copied().collect::<Vec<_>>(), vec![9]);
    // The kept requests carry their server phases.
    let kept = out.kept.slowest.iter().next().unwrap();
    assert_eq!(kept.probed(slot::HANDLE), Some(100_000));
    assert_eq!(out.tail.count(), 2);
}

#[test]
fn pipelined_requests_share_a_read_and_each_finds_its_write() {
    let mut j = joiner(&[], 1);
    let p = 40001;
    j.event(Opened { port: p, ns: 0 });
    // Four requests of 50 bytes in one write, one arrival, one read; four responses, the
    // server writing two at a time.
    j.event(Arrived {
        port: p,
        prev: 0,
        off: 200,
        ns: 1_010_000,
    });
    j.event(Read {
        port: p,
        start: 0,
        off: 200,
        ns: 1_020_000,
        pid: 3,
        key: 3,
    });
    j.event(Wrote {
        port: p,
        start: 0,
        end: 200,
        ns: 1_100_000,
        pid: 3,
    });
    j.event(Wrote {
        port: p,
        start: 200,
        end: 400,
        ns: 1_300_000,
        pid: 3,
    });
    j.event(Delivered {
        port: p,
        prev: 0,
        off: 200,
        ns: 1_110_000,
    });
    j.event(Delivered {
        port: p,
        prev: 200,
        off: 400,
        ns: 1_310_000,
    });
    let trails: Vec<Trail> = (0..4u64)
        .map(|i| {
            trail(
                p,
                50 * (i + 1),
                (100 * i, 100 * (i + 1)),
                1_000_000,
                1_400_000,
            )
        })
        .collect();
    j.trails(&trails, 0);
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 4);
    assert_eq!(phase(&out, "socket"), held(&out, "socket", &[10_000; 4]));
    // The first two answered by the first write, the last two by the second.
    assert_eq!(
        phase(&out, "handle"),
        held(&out, "handle", &[80_000, 80_000, 280_000, 280_000])
    );
    assert_eq!(out.counts.shared_read, 4);
}

#[test]
fn http2_streams_answered_out_of_order_find_their_frames() {
    let mut j = joiner(&[], 1);
    let p = 40002;
    j.event(Opened { port: p, ns: 0 });
    // Two streams' requests in one write (0..60, 60..120), read apart; the second's response
    // (frames at 0..90) written before the first's (90..200).
    j.event(Arrived {
        port: p,
        prev: 0,
        off: 120,
        ns: 1_000,
    });
    j.event(Read {
        port: p,
        start: 0,
        off: 60,
        ns: 2_000,
        pid: 1,
        key: 1,
    });
    j.event(Read {
        port: p,
        start: 60,
        off: 120,
        ns: 3_000,
        pid: 1,
        key: 1,
    });
    j.event(Wrote {
        port: p,
        start: 0,
        end: 90,
        ns: 50_000,
        pid: 1,
    });
    j.event(Wrote {
        port: p,
        start: 90,
        end: 200,
        ns: 90_000,
        pid: 1,
    });
    j.event(Delivered {
        port: p,
        prev: 0,
        off: 90,
        ns: 51_000,
    });
    j.event(Delivered {
        port: p,
        prev: 90,
        off: 200,
        ns: 91_000,
    });
    j.trails(
        &[
            trail(p, 120, (0, 90), 500, 60_000),
            trail(p, 60, (90, 200), 500, 95_000),
        ],
        0,
    );
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 2);
    let mut handle = phase(&out, "handle");
    handle.sort();
    // The second stream: read at 3 µs, answered at 50 µs; the first: 2 µs → 90 µs.
    assert_eq!(handle, held(&out, "handle", &[47_000, 88_000]));
}

#[test]
fn a_response_in_two_writes_held_back_is_named() {
    let mut j = joiner(&[], 1);
    let p = 40003;
    j.event(Opened { port: p, ns: 0 });
    j.event(Arrived {
        port: p,
        prev: 0,
        off: 80,
        ns: 1_000,
    });
    j.event(Read {
        port: p,
        start: 0,
        off: 80,
        ns: 2_000,
        pid: 1,
        key: 1,
    });
    // Headers, then the body 10 µs later; the body reaches the client 40 ms later.
    j.event(Wrote {
        port: p,
        start: 0,
        end: 100,
        ns: 20_000,
        pid: 1,
    });
    j.event(Wrote {
        port: p,
        start: 100,
        end: 150,
        ns: 30_000,
        pid: 1,
    });
    j.event(Delivered {
        port: p,
        prev: 0,
        off: 100,
        ns: 21_000,
    });
    j.event(Delivered {
        port: p,
        prev: 100,
        off: 150,
        ns: 40_030_000,
    });
    j.trails(&[trail(p, 80, (0, 150), 500, 40_040_000)], 0);
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.several_writes, 1);
    assert_eq!(out.counts.held_back, 1);
    assert_eq!(
        phase(&out, "last_return"),
        held(&out, "last_return", &[40_000_000])
    );
    assert_eq!(phase(&out, "return"), held(&out, "return", &[1_000]));
}

#[test]
fn missing_events_are_never_guessed() {
    let mut j = joiner(&[], 1);
    let p = 40004;
    j.event(Opened { port: p, ns: 0 });
    // The first request's arrival was not seen; the arrival seen began after its end.
    j.event(Arrived {
        port: p,
        prev: 100,
        off: 180,
        ns: 5_000,
    });
    j.event(Read {
        port: p,
        start: 0,
        off: 180,
        ns: 6_000,
        pid: 1,
        key: 1,
    });
    j.trails(&[trail(p, 80, (0, 150), 0, 9_000)], 0);
    // A request on a connection never seen, and one that failed.
    j.trails(&[trail(41000, 80, (0, 150), 0, 9_000)], 0);
    let mut failed = trail(p, 180, (150, 300), 0, 9_000);
    failed.kept.status = None;
    j.trails(&[failed], 0);
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 0);
    let why = &out.counts.unjoined;
    assert_eq!(why.get("no_arrival"), Some(&1), "{why:?}");
    assert_eq!(why.get("connection_not_seen"), Some(&1), "{why:?}");
    assert_eq!(why.get("failed"), Some(&1), "{why:?}");
}

#[test]
fn functions_belong_to_the_request_their_thread_read_last() {
    let mut j = joiner(&["parse", "handle", "respond"], 1);
    let p = 40005;
    j.event(Opened { port: p, ns: 0 });
    for (k, tx) in [(0u64, 80u64), (80, 160)].into_iter().enumerate() {
        let t0 = 1_000_000 * (k as u64 + 1);
        j.event(Arrived {
            port: p,
            prev: tx.0,
            off: tx.1,
            ns: t0,
        });
        j.event(Read {
            port: p,
            start: tx.0,
            off: tx.1,
            ns: t0 + 1_000,
            pid: 1,
            key: 7,
        });
        // A function on another thread is not this request's.
        j.event(Function {
            index: 0,
            key: 8,
            ns: t0 + 1_500,
        });
        j.event(Function {
            index: 0,
            key: 7,
            ns: t0 + 2_000,
        });
        // Go: the first function's entry fired twice (its stack grew).
        j.event(Function {
            index: 0,
            key: 7,
            ns: t0 + 2_100,
        });
        j.event(Function {
            index: 1,
            key: 7,
            ns: t0 + 52_000,
        });
        j.event(Function {
            index: 2,
            key: 7,
            ns: t0 + 252_000,
        });
        let rx = (150 * k as u64, 150 * (k as u64 + 1));
        j.event(Wrote {
            port: p,
            start: rx.0,
            end: rx.1,
            ns: t0 + 300_000,
            pid: 1,
        });
        j.trails(&[trail(p, tx.1, rx, t0, t0 + 400_000)], 0);
    }
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(
        phase(&out, "fn:parse->handle"),
        held(&out, "fn:parse->handle", &[50_000, 50_000])
    );
    assert_eq!(
        phase(&out, "fn:handle->respond"),
        held(&out, "fn:handle->respond", &[200_000, 200_000])
    );
    assert_eq!(
        phase(&out, "fn:parse->respond"),
        held(&out, "fn:parse->respond", &[250_000, 250_000])
    );
    assert_eq!(out.counts.stray_hits, 2);
}

#[test]
fn the_tails_shares_add_up_and_name_the_socket() {
    let mut j = joiner(&[], 1);
    let p = 40006;
    j.event(Opened { port: p, ns: 0 });
    // 99 requests of 20 µs (all handle), one of 3 ms (2.9 ms in the server's socket).
    for k in 0..100u64 {
        let t0 = 10_000_000 * (k + 1);
        let (socket, handle) = if k == 50 {
            (2_900_000, 80_000)
        } else {
            (0, 18_000)
        };
        let tx = (80 * k, 80 * (k + 1));
        let rx = (100 * k, 100 * (k + 1));
        j.event(Arrived {
            port: p,
            prev: tx.0,
            off: tx.1,
            ns: t0 + 1_000,
        });
        j.event(Read {
            port: p,
            start: tx.0,
            off: tx.1,
            ns: t0 + 1_000 + socket,
            pid: 1,
            key: 1,
        });
        let w = t0 + 1_000 + socket + handle;
        j.event(Wrote {
            port: p,
            start: rx.0,
            end: rx.1,
            ns: w,
            pid: 1,
        });
        j.event(Delivered {
            port: p,
            prev: rx.0,
            off: rx.1,
            ns: w + 1_000,
        });
        j.trails(&[trail(p, tx.1, rx, t0, w + 1_000)], 0);
    }
    j.event(Tick {
        ns: 10_000_000_000_000,
    });
    let out = j.finish();
    let table = out.tail.table();
    let p99 = table.iter().find(|t| t.which == "p99").unwrap();
    assert_eq!(p99.requests, 1);
    let socket = p99.shares["server: socket"];
    assert!((socket - 2.9 / 2.982).abs() < 0.01, "{p99:?}");
    let sum: f64 = p99.shares.values().sum();
    assert!((sum - 1.0).abs() < 0.001, "{sum}");
    let p50 = table.iter().find(|t| t.which == "p50").unwrap();
    assert_eq!(p50.shares["server: socket"], 0.0);
    assert!(p50.shares["server: handle"] > 0.8, "{p50:?}");
    let _ = Phase::Total;
}

#[test]
fn batches_are_joined_in_order_and_come_back_once_joined_whole() {
    let mut j = joiner(&[], 1);
    let p = 40010;
    // Two workers' batches of two requests, ending 1, 2, 3 and 4 ms in, then one of one (no
    // events: each is counted unjoined, which is all this needs).
    let t = |i: u64| {
        trail(
            p,
            50 * (i + 1),
            (100 * i, 100 * (i + 1)),
            0,
            1_000_000 * (i + 1),
        )
    };
    let mut first = Vec::with_capacity(4);
    first.extend([t(0), t(1)]);
    j.batch(first, 0);
    j.batch(vec![t(2), t(3)], 2);
    assert_eq!(j.held(), 4);
    j.resolve(1_500_000);
    assert_eq!(j.held(), 3, "the first request only");
    assert!(!j.has_spent(), "a batch comes back only once joined whole");
    j.resolve(3_000_000);
    assert_eq!(j.held(), 1, "the second and third");
    let spent: Vec<Vec<Trail>> = j.spent().collect();
    assert_eq!(spent.len(), 1);
    assert!(
        spent[0].is_empty() && spent[0].capacity() >= 4,
        "emptied, its buffer kept"
    );
    assert!(!j.has_spent());
    // A mostly empty batch (an interval's close): its buffer comes back at once, its request
    // waits in one of its size.
    let mut last = Vec::with_capacity(64);
    last.push(t(4));
    j.batch(last, 0);
    let spent: Vec<Vec<Trail>> = j.spent().collect();
    assert_eq!(spent.len(), 1);
    assert!(spent[0].is_empty() && spent[0].capacity() >= 64);
    assert_eq!(j.held(), 2);
    // A count alone (what a run probed on another host hands over) leaves nothing to give.
    j.batch(Vec::new(), 1);
    assert!(!j.has_spent());
    let out = j.finish();
    assert_eq!(out.counts.requests, 5);
    assert_eq!(out.counts.dropped, 3);
}

mod exemplars;
mod remote;
mod upstream;
