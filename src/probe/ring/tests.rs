//! The ring: bounded, a connection opened anew lets go of the old one's events, a request's
//! events found by its bytes, and a request whose events have gone answered as gone.

use super::*;
use crate::recorder::join::remote::decode;
use KernelEvent::*;

/// The events of one request on `port`: its bytes tx0..tx1 arrive and are read, its
/// response rx0..rx1 written and delivered, from `ns` on.
fn request(port: u16, tx: (u64, u64), rx: (u64, u64), ns: u64) -> Vec<KernelEvent> {
    vec![
        Arrived {
            port,
            prev: tx.0,
            off: tx.1,
            ns,
        },
        Read {
            port,
            start: tx.0,
            off: tx.1,
            ns: ns + 10,
            pid: 1,
            key: 7,
        },
        Function {
            index: 0,
            key: 7,
            ns: ns + 15,
        },
        Wrote {
            port,
            start: rx.0,
            end: rx.1,
            ns: ns + 20,
            pid: 1,
        },
        Delivered {
            port,
            prev: rx.0,
            off: rx.1,
            ns: ns + 30,
        },
    ]
}

fn ask(port: u16, tx: (u64, u64), rx: (u64, u64), done_ns: u64) -> Ask {
    Ask {
        port,
        tx,
        rx,
        done_ns,
    }
}

fn events(p: &Pulled) -> Vec<KernelEvent> {
    p.events.iter().map(|w| decode(*w, 0).unwrap()).collect()
}

#[test]
fn a_request_gets_the_events_of_its_bytes_only_and_each_once() {
    let mut r = EventRing::new(100);
    r.push(&[Opened { port: 5, ns: 1 }]);
    r.push(&request(5, (0, 50), (0, 200), 100));
    r.push(&request(5, (50, 90), (200, 300), 1000));
    r.push(&request(6, (0, 50), (0, 200), 1100));
    r.push(&[Tick { ns: 5000 }]);
    let p = r.answer(&[ask(5, (50, 90), (200, 300), 2000)]);
    assert_eq!(p.tick_ns, 5000);
    assert!(p.gone.is_empty());
    let mut want = vec![Opened { port: 5, ns: 1 }];
    want.extend(request(5, (50, 90), (200, 300), 1000));
    assert_eq!(events(&p), want);
    // Asked again (or a request sharing them): not sent twice.
    let again = r.answer(&[ask(5, (50, 90), (200, 300), 2000)]);
    assert!(again.events.is_empty(), "{again:?}");
    // Another connection's request: its own.
    let other = r.answer(&[ask(6, (0, 50), (0, 200), 2000)]);
    assert_eq!(events(&other), request(6, (0, 50), (0, 200), 1100));
}

#[test]
fn the_ring_is_bounded_and_a_request_whose_events_went_is_gone() {
    let mut r = EventRing::new(12);
    for i in 0..10u64 {
        r.push(&request(
            5,
            (i * 10, i * 10 + 10),
            (i * 100, i * 100 + 100),
            i * 1000,
        ));
    }
    assert_eq!(r.len(), 12);
    assert_eq!(r.evicted(), 38);
    // The first requests' events went: gone, none of another's handed instead.
    let p = r.answer(&[
        ask(5, (0, 10), (0, 100), 20_000),
        ask(5, (70, 80), (700, 800), 20_000),
        ask(5, (90, 100), (900, 1000), 20_000),
    ]);
    assert_eq!(p.gone, vec![0, 1]);
    assert_eq!(p.evicted, 38);
    assert_eq!(events(&p), request(5, (90, 100), (900, 1000), 9000));
}

#[test]
fn a_connection_opened_anew_lets_go_of_the_old_ones_events() {
    let mut r = EventRing::new(100);
    r.push(&[Opened { port: 5, ns: 1 }]);
    r.push(&request(5, (0, 50), (0, 200), 100));
    // The port's connection ended; a new one on it, its bytes from 0 again.
    r.push(&[Opened {
        port: 5,
        ns: 10_000,
    }]);
    r.push(&request(5, (0, 50), (0, 200), 10_100));
    assert_eq!(r.len(), 6);
    assert_eq!(r.evicted(), 6);
    // The old connection's request (it ended before the new one opened): gone, never the new
    // one's events.
    let p = r.answer(&[ask(5, (0, 50), (0, 200), 500)]);
    assert_eq!((p.gone.clone(), p.events.len()), (vec![0], 0));
    let p = r.answer(&[ask(5, (0, 50), (0, 200), 20_000)]);
    assert_eq!(p.events.len(), 6);
    // Evicting the old connection's order entries later takes none of the new one's.
    let mut small = EventRing::new(7);
    small.push(&[Opened { port: 5, ns: 1 }]);
    small.push(&request(5, (0, 50), (0, 200), 100));
    small.push(&[Opened {
        port: 5,
        ns: 10_000,
    }]);
    small.push(&request(5, (0, 50), (0, 200), 10_100));
    small.push(&[Opened {
        port: 9,
        ns: 20_000,
    }]);
    let p = small.answer(&[ask(5, (0, 50), (0, 200), 20_000)]);
    assert_eq!((p.gone.len(), p.events.len()), (0, 6), "{p:?}");
}

#[test]
fn asks_are_read_from_lines_and_bad_ones_named() {
    let a = ask(40000, (10, 20), (300, 400), 123);
    let body = format!("{}{}", a.line(), a.line());
    assert_eq!(Ask::parse_all(&body, 10).unwrap(), vec![a, a]);
    for (body, why) in [
        ("1 2 3\n", "line 1: not `PORT"),
        ("0 0 1 0 1 5\n", "line 1: not"),
        ("70000 0 1 0 1 5\n", "line 1: not"),
        ("5 9 1 0 1 5\n", "line 1: not"),
        ("5 0 1 0 1 5\n5 0 1 0 1 x\n", "line 2: not"),
    ] {
        let e = Ask::parse_all(body, 10).unwrap_err();
        assert!(e.starts_with(why), "{body:?}: {e}");
    }
    let many = a.line().repeat(3);
    assert!(Ask::parse_all(&many, 2)
        .unwrap_err()
        .contains("more than 2"));
}

#[test]
fn a_request_on_a_long_connection_is_found_from_its_end_back() {
    let mut r = EventRing::new(100_000);
    r.push(&[Opened { port: 5, ns: 1 }]);
    for i in 0..10_000u64 {
        r.push(&request(
            5,
            (i * 10, i * 10 + 10),
            (i * 100, i * 100 + 100),
            1_000 + i * 1_000,
        ));
    }
    let (i, t) = (5_000u64, 1_000 + 5_000 * 1_000);
    let p = r.answer(&[ask(
        5,
        (i * 10, i * 10 + 10),
        (i * 100, i * 100 + 100),
        t + 40,
    )]);
    let mut want = vec![Opened { port: 5, ns: 1 }];
    want.extend(request(
        5,
        (i * 10, i * 10 + 10),
        (i * 100, i * 100 + 100),
        t,
    ));
    assert_eq!(events(&p), want);
}
