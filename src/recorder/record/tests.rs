//! Unit tests of the record: built from measured runs, sweeps and repetitions.

use super::*;
use crate::cli::{plan::build, Cli, Command};
use crate::model::Phase;
use crate::recorder::hist::IntervalStats;
use crate::recorder::summary::latency;
use crate::recorder::Recorder;
use clap::Parser;
use std::time::Instant;

fn record(flags: &[&str], tweak: impl FnOnce(&mut Measured)) -> RunRecord {
    let mut argv = vec!["reqlife", "run"];
    argv.extend_from_slice(flags);
    let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    let plan = build(&args, "http://127.0.0.1:9/").unwrap();
    let mut m = Recorder::new(Instant::now(), Duration::from_secs(1)).finish();
    tweak(&mut m);
    RunRecord::build(
        &plan,
        &m,
        Ending {
            recorded: Duration::from_secs(10),
            drained: Duration::from_millis(250),
            stop_reason: StopReason::Duration,
            interrupted: false,
            start_time: String::new(),
            command_line: vec![],
            embedded_target: false,
        },
    )
}

/// One request of the property test: its phase durations in µs (queue, connect or none,
/// write, wait, read) from `start_us`, and whether it failed after writing.
type Life = (u64, u64, Option<u64>, u64, u64, u64, bool);

fn life() -> impl proptest::strategy::Strategy<Value = Life> {
    use proptest::prelude::*;
    (
        0u64..2_000_000,
        prop_oneof![0u64..50, 0u64..50_000],
        proptest::option::of(1u64..5_000),
        0u64..500,
        0u64..200_000,
        0u64..5_000,
        proptest::bool::weighted(0.1),
    )
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the requests, every summary of a run keeps its invariants (each
    /// summary's percentiles in order within [min, max]), and when every request ended
    /// their client phases add up to their totals.
    #[test]
    fn every_summary_keeps_its_invariants(lives in proptest::collection::vec(life(), 1..200)) {
        use crate::model::{Sample, Timestamps};
        let base = Instant::now();
        let all_ended = lives.iter().all(|l| !l.6);
        // What the recorder does with each sample: its phases into the histograms.
        let mut hists = crate::recorder::PhaseHists::new(hist::new_hist);
        {
            for &(start, queue, connect, write, wait, read, fails) in &lives {
                let us = |n: u64| Duration::from_micros(n);
                let intended = base + us(start);
                let dispatched = intended + us(queue);
                let mut st = Timestamps::new(intended, dispatched);
                let mut t = dispatched;
                if let Some(c) = connect {
                    st.connect_start = Some(t);
                    t += us(c);
                    st.connect_end = Some(t);
                }
                t += us(write);
                st.written = Some(t);
                if !fails {
                    t += us(wait);
                    st.first_byte = Some(t);
                    t += us(read);
                    st.done = Some(t);
                    proptest::prop_assert_eq!(st.unaccounted_ns(), Some(0));
                }
                hists.record(&crate::recorder::durations(&Sample {
                    status: (!fails).then_some(200),
                    error: fails.then_some(ErrorKind::Timeout),
                    ..Sample::ok(st)
                }));
            }
        }
        let latency = latency(&hists);
        let v = latency.violations(all_ended);
        proptest::prop_assert!(v.is_empty(), "{:?}", v);
        proptest::prop_assert_eq!(
            latency.total.count,
            lives.iter().filter(|l| !l.6).count() as u64
        );
    }
}

#[test]
fn port_exhaustion_is_one_warning_with_what_to_do() {
    let r = record(&[], |m| {
        m.counts.counters.errors[ErrorKind::AddrNotAvail.index()] = 5000;
        m.counts.counters.requests = 5000;
    });
    let w: Vec<_> = r
        .summary
        .warnings
        .iter()
        .filter(|w| w.contains("ports ran out"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", r.summary.warnings);
    for advice in [
        "--no-keepalive",
        "--max-connections-per-second",
        "ip_local_port_range",
    ] {
        assert!(w[0].contains(advice), "{}", w[0]);
    }
    assert!(w[0].starts_with("5000 connections failed"));
}

#[test]
fn generator_warnings() {
    // A saturated worker thread.
    let r = record(&[], |m| m.thread_busy = vec![0.99, 0.4]);
    assert!(r
        .summary
        .warnings
        .iter()
        .any(|w| w.contains("on a CPU 99%")));
    // A worker near its limit: a warning of its own, not the saturation one.
    let r = record(&[], |m| m.thread_busy = vec![0.9, 0.4]);
    let near: Vec<_> = r
        .summary
        .warnings
        .iter()
        .filter(|w| w.contains("on a CPU 90%"))
        .collect();
    assert_eq!(near.len(), 1, "{:?}", r.summary.warnings);
    assert!(near[0].contains("near its limit"));
    // An open loop that sent 50% of the requests due: the rest never sent.
    let r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 5000;
        m.counts.counters.not_sent = 5000;
    });
    assert!(r
        .summary
        .warnings
        .iter()
        .any(|w| w.contains("achieved 500.0 req/s of the 1000 offered")));
    // A quiet run has none.
    let r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 10_000;
        m.thread_busy = vec![0.2];
    });
    assert!(r.summary.warnings.is_empty(), "{:?}", r.summary.warnings);
    // A poisson schedule that drew 1.5% fewer requests than the offered rate × the window,
    // every one of them sent: chance, not a shortfall.
    let r = record(&["-R", "1000", "--arrival", "poisson"], |m| {
        m.counts.counters.requests = 9_850;
    });
    assert!(r.summary.warnings.is_empty(), "{:?}", r.summary.warnings);
}

#[test]
fn a_lagging_schedule_is_the_generator_s_fault() {
    let r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 10_000;
        for _ in 0..100 {
            hist::record(&mut m.hists.0[Phase::Lag.index()], 5_000_000); // 5 ms late
        }
    });
    assert!(
        r.summary
            .warnings
            .iter()
            .any(|w| w.contains("the generator fell behind")),
        "{:?}",
        r.summary.warnings
    );
    // 700 us late: near the limit, not over it.
    let r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 10_000;
        for _ in 0..100 {
            hist::record(&mut m.hists.0[Phase::Lag.index()], 700_000);
        }
    });
    let w = &r.summary.warnings;
    assert!(
        w.iter()
            .any(|w| w.contains("near its limit: schedule lag p99 700.41us")),
        "{w:?}"
    );
    assert!(!w.iter().any(|w| w.contains("fell behind")), "{w:?}");
    // 5 ms late with a 5 ms pacer slack: lateness by design, no warning.
    let r = record(&["-R", "1000", "--pacer-slack", "5ms"], |m| {
        m.counts.counters.requests = 10_000;
        for _ in 0..100 {
            hist::record(&mut m.hists.0[Phase::Lag.index()], 5_000_000);
        }
    });
    let w = &r.summary.warnings;
    assert!(!w.iter().any(|w| w.contains("schedule lag")), "{w:?}");
}

/// Sets the schedule lag (p99, max) of interval `i`, in µs.
fn lag_in(r: &mut RunRecord, i: usize, p99_us: f64, max_us: f64) {
    r.intervals[i].latency.insert(
        crate::model::Phase::Lag,
        IntervalStats {
            count: 100,
            p50_us: 10.0,
            p99_us,
            max_us,
        },
    );
}

#[test]
fn lagging_intervals_are_named_when_the_run_as_a_whole_kept_up() {
    let mut r = record(&["-R", "1000"], |m| m.counts.counters.requests = 10_000);
    assert_eq!(r.intervals.len(), 10);
    // (interval, lag p99 µs, max µs): two adjacent intervals over the bound, one apart,
    // one under it.
    for (i, p99, max) in [
        (0, 4000.0, 9000.0),
        (1, 2000.0, 3000.0),
        (5, 1500.0, 2500.0),
    ] {
        lag_in(&mut r, i, p99, max);
    }
    lag_in(&mut r, 7, 900.0, 950.0);
    let w = warnings_of(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with("the generator fell behind in 3 of 10 intervals (0.0-2.0s, 5.0-6.0s)"),
        "{w:?}"
    );
    assert!(w[0].contains("up to 9.00ms"), "{w:?}");
}

#[test]
fn a_run_that_lagged_throughout_names_its_intervals_and_blames_the_client() {
    let mut r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 9_000;
        m.counts.counters.not_sent = 1_000;
        for _ in 0..200 {
            hist::record(&mut m.hists.0[Phase::Lag.index()], 3_000_000);
        }
    });
    lag_in(&mut r, 3, 3000.0, 3100.0);
    let w = warnings_of(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("schedule lag p99 3.00ms"), "{w:?}");
    assert!(w[0].contains("in 1 of 10 intervals (3.0-4.0s)"), "{w:?}");
    assert!(w[0].contains("the client, not the server, limited this run"));
    assert!(
        w[0].contains("achieved 900.0 req/s of the 1000 offered"),
        "{w:?}"
    );
}

#[test]
fn a_full_queue_with_some_lag_is_the_server_s_doing_said_once() {
    // The generator was 2 ms late at p99, but requests waited 50 ms for a free
    // connection: the server did not keep up, and only that is said.
    let r = record(&["-R", "1000", "-c", "10"], |m| {
        m.counts.counters.requests = 8_000;
        m.counts.counters.not_sent = 2_000;
        for _ in 0..200 {
            hist::record(&mut m.hists.0[Phase::Lag.index()], 2_000_000);
            hist::record(&mut m.hists.0[Phase::Queue.index()], 50_000_000);
        }
    });
    let w = warnings_of(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("the server did not keep up"), "{w:?}");
    assert!(w[0].contains("2000 requests due were never sent"), "{w:?}");
    assert!(!w[0].contains("the client, not the server"), "{w:?}");
}

#[test]
fn requests_left_in_flight_are_named_with_the_fix() {
    let r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 10_000;
        m.counts.counters.in_flight_at_end = 7;
        m.counts.counters.drained = 40;
    });
    let e = &r.summary.end;
    assert_eq!((e.in_flight, e.drained, e.drain_s), (7, 40, 0.25));
    // The throughput divides what ended within the window by the window.
    assert_eq!(r.summary.throughput_rps, 996.0);
    assert_eq!(r.summary.generator.sent_rps, Some(1000.7));
    let w = &r.summary.warnings;
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("7 requests were still in flight when the drain ended (0.25s"));
    assert!(w[0].contains("--drain"), "{w:?}");
}

#[test]
fn intervals_with_a_saturated_worker_are_named() {
    let mut r = record(&["-R", "1000"], |m| {
        m.counts.counters.requests = 10_000;
        m.thread_busy = vec![0.5];
    });
    // (interval, busiest worker's CPU share): two saturated, one near but under.
    for (i, busy) in [(2, 0.99), (3, 0.97), (8, 0.9)] {
        r.intervals[i].generator = Some(IntervalGenerator {
            lag_p99_us: None,
            lag_max_us: None,
            busy_max: Some(busy),
        });
    }
    let w = warnings_of(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(
            "a worker thread was on a CPU over 95% of the time in 2 of 10 intervals (2.0-4.0s)"
        ),
        "{w:?}"
    );
}

/// Records of schema_version 1 as reqlife wrote them before their phases and protocol were
/// typed: an open loop in stages sending two named requests over HTTP/1.1, and a sweep of
/// two levels over HTTP/2 in the clear.
const V1_RECORDS: [(&str, &str); 2] = [
    (
        "record_v1_stages.json",
        include_str!("../../../tests/data/record_v1_stages.json"),
    ),
    (
        "record_v1_sweep_h2c.json",
        include_str!("../../../tests/data/record_v1_sweep_h2c.json"),
    ),
];

/// The schema test: a record read and written again (as `-o` writes it) is the same bytes.
#[test]
fn records_of_schema_version_1_read_and_write_byte_for_byte() {
    for (name, text) in V1_RECORDS {
        let r = RunRecord::from_json(text, name).unwrap();
        let again = serde_json::to_string_pretty(&r).unwrap() + "\n";
        let at = text
            .bytes()
            .zip(again.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(text.len().min(again.len()));
        assert!(
            again == text,
            "{name}: differs from byte {at}: {:?} written as {:?}",
            &text[at.saturating_sub(80)..(at + 80).min(text.len())],
            &again[at.saturating_sub(80)..(at + 80).min(again.len())]
        );
    }
}

/// The keys were read as what they name: phases and protocols, not text.
#[test]
fn records_of_schema_version_1_read_typed() {
    use crate::model::{Phase, Protocol};
    let stages = RunRecord::from_json(V1_RECORDS[0].1, V1_RECORDS[0].0).unwrap();
    assert_eq!(stages.config.protocol, Protocol::Http1);
    assert_eq!(stages.config.scheme(), Some(crate::model::Scheme::Http));
    // (url, its scheme as the one URL parser reads it)
    for (url, scheme) in [
        ("https://example.test/", Some(crate::model::Scheme::Https)),
        ("http://[::1]:8080/x", Some(crate::model::Scheme::Http)),
        ("tcp://127.0.0.1:9090", None), // a framed run's
    ] {
        let mut c = stages.config.clone();
        c.url = url.into();
        assert_eq!(c.scheme(), scheme, "{url}");
    }
    let wait = &stages.summary.latency.phases[&Phase::Wait];
    assert!(wait.count > 0, "{wait:?}");
    assert_eq!(
        stages.summary.by_request["get"].latency.phases[&Phase::Wait].count
            + stages.summary.by_request["put"].latency.phases[&Phase::Wait].count,
        wait.count
    );
    assert!(stages.stages[0].histograms.contains_key(&Phase::Total));
    assert!(stages.intervals[0].latency.contains_key(&Phase::Lag));
    let sweep = RunRecord::from_json(V1_RECORDS[1].1, V1_RECORDS[1].0).unwrap();
    assert_eq!(sweep.config.protocol, Protocol::H2c);
    assert_eq!(sweep.levels.len(), 2);
    assert!(sweep.levels[1].summary.latency.phases[&Phase::H2Handshake].count > 0);
}

/// A newer reqlife's phase in a record of the same schema version is left out, the rest read
/// as it was; a protocol this version does not know is refused in one line.
#[test]
fn unknown_phases_are_left_out_and_unknown_protocols_refused() {
    let (name, text) = V1_RECORDS[0];
    let known = RunRecord::from_json(text, name).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    let queue = v["summary"]["latency"]["phases"]["queue"].clone();
    v["summary"]["latency"]["phases"]["dns"] = queue;
    v["intervals"][0]["latency"]["dns"] = v["intervals"][0]["latency"]["total"].clone();
    let newer = RunRecord::from_json(&v.to_string(), name).unwrap();
    assert_eq!(newer, known);

    v["config"]["protocol"] = "h9".into();
    let e = RunRecord::from_json(&v.to_string(), name).unwrap_err();
    let line = e.to_string();
    assert!(
        line.starts_with("record_v1_stages.json is not a valid RunRecord: unknown protocol 'h9'"),
        "{line}"
    );
    assert!(line.contains("http/1.1, h2, h2c, h3, tcp"), "{line}");
    assert!(!line.contains('\n'), "{line}");
    assert_eq!(
        crate::util::exit::ExitCode::exit_code(&e),
        crate::util::exit::EXIT_USAGE
    );
}

#[test]
fn the_counts_of_a_summary_follow_from_each_other() {
    // A run's own counts keep the relations (-c 10: 10 connections may exist before it).
    let consistent = record(&["-c", "10"], |m| {
        m.counts.counters.requests = 120;
        m.counts.counters.ok = 100;
        m.counts.counters.errors[ErrorKind::Timeout.index()] = 20;
        m.counts.counters.bytes_read = 5000;
        m.counts.counters.connections_opened = 30;
        m.counts.counters.server_closes = 25;
    });
    let v = consistent.summary.count_violations(10);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(consistent.summary.throughput_rps, 12.0);
    // What issue 37 saw: more server closes than connections; responses, no byte read.
    let broken = record(&["-c", "10"], |m| {
        m.counts.counters.requests = 400;
        m.counts.counters.ok = 400;
        m.counts.counters.connections_opened = 122;
        m.counts.counters.server_closes = 309;
    });
    let v = broken.summary.count_violations(10);
    assert!(
        v.iter().any(|v| v.contains("309 server closes of 122")),
        "{v:?}"
    );
    assert!(v.iter().any(|v| v.contains("no byte read")), "{v:?}");
    let mut s = consistent.summary.clone();
    s.throughput_rps = 915.58;
    s.bytes.body = 6000;
    s.requests.ok = 90;
    let v = s.count_violations(10);
    assert_eq!(v.len(), 3, "{v:?}");
}

#[test]
fn connections_that_cannot_carry_the_rate_are_named_with_the_fix() {
    // 100M req/s on 2 connections answering in 96 us: 2 / 96 us, some 20.8k req/s at most,
    // whatever the server's speed. The wait is the connections' limit, not the server's.
    let r = record(&["-R", "100M", "-c", "2"], |m| {
        m.counts.counters.requests = 200_000;
        m.counts.counters.not_sent = 999_800_000;
        for _ in 0..200 {
            hist::record(&mut m.hists.0[Phase::Uncorrected.index()], 96_000);
            hist::record(&mut m.hists.0[Phase::Queue.index()], 5_000_000_000);
            hist::record(&mut m.hists.0[Phase::Lag.index()], 50_000);
        }
    });
    let w = warnings_of(&r);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("2 connections at 96.0"), "{w:?}");
    assert!(
        w[0].contains(
            "us carry at most ~20.8k req/s, under the 100M req/s offered: raise -c or lower -R"
        ),
        "{w:?}"
    );
    assert!(
        w[0].contains("999800000 requests due were never sent"),
        "{w:?}"
    );
    assert!(!w[0].contains("the server did not keep up"), "{w:?}");
}

#[test]
fn a_server_that_stopped_answering_is_said_first_with_when_and_what_followed() {
    let died = |last_ok_s: f64, failed: u64| {
        record(&["-d", "10s", "-c", "4"], |m| {
            m.counts.counters.requests = 1_000 + failed;
            m.counts.counters.ok = 1_000;
            m.counts.counters.errors[ErrorKind::Connect.index()] = failed;
            m.counts.counters.last_ok_ns = (last_ok_s * 1e9) as u64;
            m.counts.counters.failed_since_ok = failed;
            m.counts.first_errors[ErrorKind::Connect.index()] =
                Some("connect to 127.0.0.1:9: Connection refused".into());
        })
    };
    // Answers for 1.5 s of the 10 s window, then 300 refusals.
    let r = died(1.5, 300);
    let last = r
        .summary
        .last_answer
        .clone()
        .expect("the last answer is kept");
    assert_eq!((last.at_s, last.failed_after), (1.5, 300));
    let w = &r.summary.warnings;
    assert!(
        w[0].starts_with(
            "the server stopped answering 1.50s into the 10.00s window: no response after \
             that (85% of the window), and the 300 requests after it failed, mostly connect \
             (first: connect to 127.0.0.1:9: Connection refused); each connection tried \
             again after a pause doubling from 1.00ms to 100.00ms"
        ),
        "{w:?}"
    );
    assert_eq!(stopped_answering(&r).as_ref(), Some(&w[0]));
    // The last answer 9.9 s into the 10 s (1% of it silent): nothing said.
    assert_eq!(stopped_answering(&died(9.9, 3)), None);
    // Nothing failed after the last answer: no last answer kept, nothing said.
    let r = died(1.5, 0);
    assert_eq!(r.summary.last_answer, None);
    assert_eq!(stopped_answering(&r), None);
}
