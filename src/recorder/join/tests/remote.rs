//! A run probed on another host: only the requests kept are asked for, the events that come
//! back (in the agent's clock) joined to them, the clocks' offset per request as NTP has it,
//! and a request whose events had left the agent's ring joined to nothing.

use super::super::remote::{encode, Ask, PerRequest, Pulled, Puller, RemoteJoin};
use super::*;
use std::sync::{Arc, Mutex};

type Answer = Box<dyn FnMut(&[Ask]) -> Pulled + Send>;

/// A puller that answers as told and keeps what it was asked.
struct Fake {
    answer: Answer,
    asked: Arc<Mutex<Vec<Ask>>>,
}

impl Puller for Fake {
    fn pull(&mut self, asks: &[Ask]) -> Result<Pulled, String> {
        self.asked.lock().unwrap().extend_from_slice(asks);
        Ok((self.answer)(asks))
    }

    fn bytes(&self) -> u64 {
        0
    }
}

/// The agent's clock against ours: this far ahead, ns.
const AHEAD: i64 = 5_020_000;

/// The events of a request on `port` written at `t1` and answered at `t4` (our clock): its
/// bytes arrive 40 µs after t1, its response is written 40 µs before t4; in the agent's clock.
fn served(port: u16, tx: (u64, u64), rx: (u64, u64), t1: u64, t4: u64) -> Vec<[u64; 7]> {
    let at = |ns: u64| ns.saturating_add_signed(AHEAD);
    [
        Arrived {
            port,
            prev: tx.0,
            off: tx.1,
            ns: at(t1 + 40_000),
        },
        Read {
            port,
            start: tx.0,
            off: tx.1,
            ns: at(t1 + 50_000),
            pid: 3,
            key: 3,
        },
        Wrote {
            port,
            start: rx.0,
            end: rx.1,
            ns: at(t4 - 40_000),
            pid: 3,
        },
        Delivered {
            port,
            prev: rx.0,
            off: rx.1,
            ns: at(t4 - 30_000),
        },
    ]
    .iter()
    .filter_map(encode)
    .collect()
}

/// Ten requests on port 7, each 100 bytes out and 200 back, the i-th written at i ms and
/// taking (1 + i) × 100 µs: the later, the slower.
fn trails() -> Vec<Trail> {
    (0..10u64)
        .map(|i| {
            let t1 = 1_000_000 + i * 1_000_000;
            let mut t = trail(
                7,
                100 * (i + 1),
                (200 * i, 200 * (i + 1)),
                t1,
                t1 + 100_000 * (i + 1),
            );
            t.bytes_written = 100;
            t
        })
        .collect()
}

/// The run's join, the exchange's offset 20 µs off the truth.
fn remote(answer: Answer) -> (RemoteJoin, Arc<Mutex<Vec<Ask>>>) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let fake = Fake {
        answer,
        asked: asked.clone(),
    };
    let join = RemoteJoin::new(joiner(&[], 1), Box::new(fake), AHEAD - 20_000);
    (join, asked)
}

/// The agent as the fake answers: the events of each ask's request, but those of the
/// requests in `gone` had left its ring; its clock far past them.
fn agent(gone: &'static [u64]) -> Answer {
    Box::new(move |asks| {
        let mut p = Pulled {
            tick_ns: 1_000_000_000,
            ..Pulled::default()
        };
        for (k, a) in asks.iter().enumerate() {
            let i = a.tx.1 / 100 - 1;
            if gone.contains(&i) {
                p.gone.push(k as u32);
                continue;
            }
            let t1 = 1_000_000 + i * 1_000_000;
            p.events
                .extend(served(7, a.tx, a.rx, t1, t1 + 100_000 * (i + 1)));
        }
        p
    })
}

#[test]
fn kept_requests_get_their_phases_and_the_offset_per_request() {
    let (mut join, asked) = remote(agent(&[]));
    join.trails(&trails(), 0);
    // The first pull learns the agent's clock; the second asks.
    join.pull().unwrap();
    assert!(asked.lock().unwrap().is_empty());
    join.pull().unwrap();
    let joined = join.finish();
    let asked = asked.lock().unwrap().clone();
    // Each later request is slower: each is kept (so asked for), by its byte ranges.
    assert_eq!(asked.len(), 10);
    assert_eq!(asked[3].tx, (300, 400));
    assert_eq!(asked[3].rx, (600, 800));
    assert_eq!(joined.counts.joined, 10);
    // The send (t1 → arrival) is 40 µs in the agent's events, read with the exchange's
    // offset (20 µs off): 60 µs.
    let send = phase(&joined, "send");
    assert!(
        send.iter().all(|ns| (59_000..=60_000).contains(ns)),
        "{send:?}"
    );
    // Per request the four stamps give the true offset, whatever the exchange said.
    let per: PerRequest = joined.remote.clone().unwrap();
    assert_eq!(per.count, 10);
    assert_eq!(per.asked, 10);
    assert_eq!(per.offset_median_us, Some(AHEAD as f64 / 1e3));
    assert_eq!(per.offset_p10_us, per.offset_p90_us);
    // δ: the round trip outside the server, 40 + 40 µs.
    assert_eq!(per.delay_median_us, Some(80.0));
}

#[test]
fn only_the_kept_are_asked_for() {
    let (mut join, asked) = remote(agent(&[]));
    // The same ten requests, slowest first: after the first KEEP by total, a faster one is
    // kept only by a bucket of its own or a phase it is the slowest of.
    let mut v = trails();
    v.reverse();
    let many: Vec<Trail> = (0..50).flat_map(|_| v.clone()).collect();
    join.trails(&many, 0);
    join.pull().unwrap();
    join.pull().unwrap();
    let joined = join.finish();
    let n = asked.lock().unwrap().len() as u64;
    assert!(n < 500 / 10, "{n} of 500 asked for");
    assert_eq!(joined.counts.requests, 500);
    assert_eq!(joined.counts.unjoined.get("not_kept"), Some(&(500 - n)));
}

#[test]
fn a_request_whose_events_left_the_ring_is_counted_and_joined_to_nothing() {
    let (mut join, _) = remote(agent(&[2, 5]));
    join.trails(&trails(), 0);
    join.pull().unwrap();
    join.pull().unwrap();
    let joined = join.finish();
    assert_eq!(joined.counts.joined, 8);
    assert_eq!(joined.counts.unjoined.get("left_ring"), Some(&2));
    let per = joined.remote.clone().unwrap();
    assert_eq!((per.left_ring, per.asked), (2, 10));
    // The two have no server phases: neither their own nor another's.
    let kept: Vec<_> = joined.kept.slowest.iter().collect();
    for e in &kept {
        let own = e.phases[crate::model::Phase::Total.index()].unwrap() / 100_000 - 1;
        assert_eq!(e.is_probed(), ![2, 5].contains(&own), "request {own}");
    }
    let notes = crate::recorder::probes::remote_notes(&per);
    let line = notes
        .iter()
        .find(|l| l.contains("left the agent's ring"))
        .unwrap();
    assert!(
        line.starts_with("2 of 10 kept or logged requests' server events"),
        "{line}"
    );
    assert!(line.contains("--ring EVENTS"), "{line}");
}
