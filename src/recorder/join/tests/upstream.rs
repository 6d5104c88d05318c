//! `--server-upstream`: the server's calls upstream, each tied to the request whose
//! response's first write carried its reply (by that write's bytes), checked to lie inside
//! the request's read → write, with the upstream's own socket and read → write when it runs
//! here; a response without one (an upstream down) has none.

use super::*;

fn upstream_joiner() -> Joiner {
    Joiner::new(
        JoinSpec {
            upstream: true,
            ..spec(&[], 1)
        },
        None,
        None,
    )
}

/// One request of client port `port` at `t0`: its bytes `tx` arrived at +10 µs, read at
/// +30 µs; its response `rx` written at `+write` µs and delivered 10 µs later.
fn request(j: &mut Joiner, port: u16, t0: u64, tx: (u64, u64), rx: (u64, u64), write: u64) {
    j.event(Arrived {
        port,
        prev: tx.0,
        off: tx.1,
        ns: t0 + 10_000,
    });
    j.event(Read {
        port,
        start: tx.0,
        off: tx.1,
        ns: t0 + 30_000,
        pid: 9,
        key: 9,
    });
    j.event(Wrote {
        port,
        start: rx.0,
        end: rx.1,
        ns: t0 + write * 1_000,
        pid: 9,
    });
    j.event(Delivered {
        port,
        prev: rx.0,
        off: rx.1,
        ns: t0 + write * 1_000 + 10_000,
    });
    j.trails(&[trail(port, tx.1, rx, t0, t0 + write * 1_000 + 20_000)], 0);
}

#[test]
fn each_call_goes_to_the_request_whose_response_carried_its_reply() {
    let mut j = upstream_joiner();
    let (a, b) = (40000, 40002);
    j.event(Opened { port: a, ns: 0 });
    j.event(Opened { port: b, ns: 0 });
    // One worker: A read at 1.03 ms, B at 1.13 ms; B's call answers first. A's call: sent
    // at +50 µs, its reply at +850 µs; B's: +40 µs to +240 µs of its own start.
    j.event(Upstream {
        port: b,
        start: 0,
        end: 150,
        sent_ns: 1_140_000,
        arrived_ns: 1_340_000,
    });
    request(&mut j, b, 1_100_000, (0, 80), (0, 150), 260);
    j.event(Upstream {
        port: a,
        start: 0,
        end: 150,
        sent_ns: 1_050_000,
        arrived_ns: 1_850_000,
    });
    request(&mut j, a, 1_000_000, (0, 80), (0, 150), 870);
    // A's next request on its connection: its own call, 300 µs, to an upstream on this
    // host that saw it arrive 20 µs later, read it 30 µs after that, answered 200 µs on.
    j.event(Upstream {
        port: a,
        start: 150,
        end: 300,
        sent_ns: 3_040_000,
        arrived_ns: 3_340_000,
    });
    j.event(Backend {
        port: a,
        start: 150,
        arrived_ns: 3_060_000,
        read_ns: 3_090_000,
        wrote_ns: 3_290_000,
    });
    request(&mut j, a, 3_000_000, (80, 160), (150, 300), 360);
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 3, "{:?}", out.counts);
    assert_eq!(out.counts.upstream_calls, 3, "{:?}", out.counts);
    assert_eq!(out.counts.upstream_misplaced, 0);
    let mut got = phase(&out, "upstream");
    got.sort_unstable();
    assert_eq!(got, held(&out, "upstream", &[200_000, 300_000, 800_000]));
    // The upstream's own, for the one call it saw.
    assert_eq!(
        phase(&out, "upstream_socket"),
        held(&out, "upstream_socket", &[30_000])
    );
    assert_eq!(
        phase(&out, "upstream_handle"),
        held(&out, "upstream_handle", &[200_000])
    );
    // The phases are the last three, and the kept requests carry them.
    let names: Vec<&str> = out.phases.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names[names.len() - 3..],
        ["upstream", "upstream_socket", "upstream_handle"]
    );
    let slowest: Vec<Option<u64>> = out
        .kept
        .slowest
        .iter()
        .map(|k| k.probed(out.phases.len() - 3))
        .collect();
    assert!(slowest.contains(&Some(800_000)), "{slowest:?}");
    // The tail: the server's own handling without its call; the parts still add up.
    let (n, sums) = out.tail.sums();
    assert_eq!(n, 3);
    let names = tail::part_names();
    let part = |name: &str| sums[names.iter().position(|p| p == name).unwrap()];
    assert_eq!(part("server: upstream"), 1_300_000.0);
    // handle: 230 + 840 + 330 µs, less the calls.
    assert_eq!(part("server: handle"), 1_400_000.0 - 1_300_000.0);
}

#[test]
fn a_call_outside_the_requests_read_to_write_is_not_its() {
    let mut j = upstream_joiner();
    let p = 40000;
    j.event(Opened { port: p, ns: 0 });
    // The call began before this request was read: another request's reply, read on the
    // same thread just before this response's write.
    j.event(Upstream {
        port: p,
        start: 0,
        end: 150,
        sent_ns: 900_000,
        arrived_ns: 1_100_000,
    });
    j.event(Backend {
        port: p,
        start: 0,
        arrived_ns: 920_000,
        read_ns: 930_000,
        wrote_ns: 1_000_000,
    });
    request(&mut j, p, 1_000_000, (0, 80), (0, 150), 200);
    // A response with no call (the upstream down: the proxy's own 502).
    request(&mut j, p, 2_000_000, (80, 160), (150, 300), 100);
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 2, "{:?}", out.counts);
    assert_eq!(out.counts.upstream_calls, 0);
    assert_eq!(out.counts.upstream_misplaced, 1);
    assert!(phase(&out, "upstream").is_empty());
    assert!(phase(&out, "upstream_handle").is_empty());
    // Their handle is the server's own whole.
    let (_, sums) = out.tail.sums();
    let names = tail::part_names();
    let part = |name: &str| sums[names.iter().position(|p| p == name).unwrap()];
    assert_eq!(part("server: upstream"), 0.0);
    assert_eq!(part("server: handle"), 170_000.0 + 70_000.0);
    // And the tail's shares name no upstream part.
    for group in out.tail.table() {
        assert!(!group.shares.contains_key("server: upstream"), "{group:?}");
    }
}
