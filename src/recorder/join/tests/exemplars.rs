//! The traced requests as the exemplars of their server phases' buckets (the metrics
//! endpoint's).

use super::*;

#[test]
fn traced_requests_are_the_exemplars_of_their_server_phases_buckets() {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<crate::recorder::IntervalSnapshot>>> = Arc::default();
    let into = seen.clone();
    let mut j = Joiner::new(
        spec(&[], 1),
        None,
        Some(Box::new(move |snap| {
            into.lock().unwrap().push(snap.clone())
        })),
    );
    let names: Vec<String> = j.names().iter().map(|(n, _)| n.clone()).collect();
    let p = 40000;
    j.event(Opened { port: p, ns: 0 });
    // Two requests on one connection: the first traced, 23 µs in the server's socket; the
    // second not, 60 µs there.
    for (k, socket) in [23_000u64, 60_000].into_iter().enumerate() {
        let (t0, tx, rx) = (1_000_000 * (k as u64 + 1), 80 * k as u64, 150 * k as u64);
        j.event(Arrived {
            port: p,
            prev: tx,
            off: tx + 80,
            ns: t0 + 10_000,
        });
        j.event(Read {
            port: p,
            start: tx,
            off: tx + 80,
            ns: t0 + 10_000 + socket,
            pid: 9,
            key: 9,
        });
        let wrote = t0 + 110_000 + socket;
        j.event(Wrote {
            port: p,
            start: rx,
            end: rx + 150,
            ns: wrote,
            pid: 9,
        });
        j.event(Delivered {
            port: p,
            prev: rx,
            off: rx + 150,
            ns: wrote + 10_000,
        });
        let mut t = trail(p, tx + 80, (rx, rx + 150), t0, wrote + 20_000);
        if k == 0 {
            t.kept.trace = Some(crate::model::trace::TraceId {
                trace: 0xabc,
                span: 1,
                sampled: true,
            });
        }
        j.trails(&[t], 0);
    }
    j.event(Tick { ns: 10_000_000_000 });
    let out = j.finish();
    assert_eq!(out.counts.joined, 2, "{:?}", out.counts);
    let mut m = crate::watch::metrics::Metrics::new(None);
    for snap in seen.lock().unwrap().iter() {
        m.add_joined(snap, &names);
    }
    let text = m.render();
    let bucket = |phase: &str, le: &str| {
        let head = format!("reqlife_server_probe_seconds_bucket{{phase=\"{phase}\",le=\"{le}\"}}");
        text.lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("no {head} in\n{text}"))
            .to_string()
    };
    // The traced request stands in the buckets of each server phase it was joined in, by its
    // value there: 23 µs in the socket's bucket up to 25 µs, 100 µs of handling, 10 µs back.
    let trace = format!("# {{trace_id=\"{:032x}\"}}", 0xabc);
    let socket = bucket("socket", "0.000025");
    assert_eq!(
        socket,
        format!("{} 1 {trace} 0.000023", socket.split(' ').next().unwrap())
    );
    assert!(
        bucket("handle", "0.0001").ends_with(&format!("{trace} 0.0001")),
        "{text}"
    );
    assert!(
        bucket("send", "0.00001").ends_with(&format!("{trace} 0.00001")),
        "{text}"
    );
    // The untraced one is none's: its socket's bucket counts it, with no exemplar.
    let untraced = bucket("socket", "0.000063");
    assert!(untraced.ends_with(" 2"), "{untraced}");
    // The series (the record) keeps the phases, not these requests.
    assert!(!out.series.entries.is_empty());
    assert!(out.series.entries.iter().all(|s| s.exemplars.is_empty()));
}
