use super::*;

/// The rates a search tries against a server whose steps pass below `capacity`, and its
/// answer.
fn path(start: f64, capacity: f64, precision: f64, max: Option<f64>) -> (Vec<f64>, Search) {
    let mut s = Search::new(start, precision, max);
    let mut tried = Vec::new();
    while let Some((rate, _)) = s.next() {
        tried.push(rate);
        s.record(if rate <= capacity {
            Verdict::Pass
        } else {
            Verdict::Fail
        });
    }
    (tried, s)
}

#[test]
fn doubles_then_bisects_then_confirms() {
    let (tried, s) = path(100.0, 500.0, 0.05, None);
    // 100, 200, 400 pass; 800 fails; bisect 600 (fail), 500 (pass), 550 (fail), 525
    // (fail), then 500 is within 5% of 525 and is confirmed.
    assert_eq!(
        tried,
        [100.0, 200.0, 400.0, 800.0, 600.0, 500.0, 550.0, 525.0, 500.0]
    );
    assert_eq!(s.answer(), Some(500.0));
    assert!(s.confirmed);
}

#[test]
fn answers_are_within_the_precision_of_the_capacity() {
    // (start, capacity, precision)
    for (start, cap, p) in [
        (100.0, 500.0, 0.05),
        (1000.0, 37_000.0, 0.05),
        (50.0, 13.0, 0.05),   // the first steps fail: halve until one passes
        (10.0, 1234.0, 0.02), // a finer precision
    ] {
        let (tried, s) = path(start, cap, p, None);
        let a = s
            .answer()
            .unwrap_or_else(|| panic!("no answer for {cap}: {tried:?}"));
        assert!(
            a <= cap && a >= cap * (1.0 - p) - 1.0,
            "{cap}: {a} via {tried:?}"
        );
        assert!(tried.len() <= MAX_STEPS);
    }
}

#[test]
fn the_generator_limit_stops_the_search() {
    let mut s = Search::new(100.0, 0.05, None);
    s.record(Verdict::Pass); // 100
    s.record(Verdict::Pass); // 200
    s.record(Verdict::Client); // 400: the client could not keep up
    assert_eq!(s.next(), Some((400.0, false)), "run once more");
    assert!(s.retrying());
    s.record(Verdict::Client); // and again: the client is the limit
    assert_eq!(s.next(), None);
    assert_eq!(s.answer(), Some(200.0));
    assert_eq!(s.limited_by, "client");
}

#[test]
fn one_generator_blip_does_not_end_the_search() {
    // The first step fails on the generator's health once, then passes when run again.
    let mut s = Search::new(62.0, 0.05, None);
    s.record(Verdict::Client);
    assert_eq!(s.next(), Some((62.0, false)));
    s.record(Verdict::Pass);
    assert_eq!(s.next(), Some((124.0, false)));
    assert!(!s.retrying());
    // A later blip is also given a second chance, once per rate.
    s.record(Verdict::Client);
    assert_eq!(s.next(), Some((124.0, false)));
    s.record(Verdict::Pass);
    assert_eq!(s.next(), Some((248.0, false)));
    assert_eq!(s.limited_by, "server");
}

/// A step record of `n` lag samples of `lag_ms` each after the start-up, and one start-up
/// interval whose lag is 50 ms.
fn lag_record(n: u64, lag_ms: u64) -> RunRecord {
    use crate::recorder::record::Interval;
    let argv = ["reqlife", "run", "-R", "100", "-d", "1s"];
    let crate::cli::Command::Run(args) = <crate::cli::Cli as clap::Parser>::try_parse_from(argv)
        .unwrap()
        .command
    else {
        unreachable!()
    };
    let plan = crate::cli::plan::build(&args, "http://127.0.0.1:9/").unwrap();
    let m = crate::recorder::Recorder::new(
        std::time::Instant::now(),
        std::time::Duration::from_secs(1),
    )
    .finish();
    let mut r = RunRecord::build(
        &plan,
        &m,
        crate::recorder::record::Ending {
            recorded: std::time::Duration::from_secs(1),
            drained: std::time::Duration::ZERO,
            stop_reason: crate::model::StopReason::Duration,
            interrupted: false,
            start_time: String::new(),
            command_line: Vec::new(),
            embedded_target: false,
        },
    );
    r.summary.duration_s = 1.0;
    let interval = |start_s: f64, values: &[u64]| {
        let mut h = hist::new_hist();
        for v in values {
            hist::record(&mut h, *v);
        }
        let mut i: Interval = serde_json::from_value(serde_json::json!({
            "start_s": start_s, "duration_s": 0.1, "requests": 0, "ok": 0, "errors": 0,
            "throughput_rps": 0.0, "bytes_read": 0, "latency": {}, "server_timing": {},
            "histograms": {}
        }))
        .unwrap();
        i.histograms.insert("schedule_lag".into(), hist::encode(&h));
        i
    };
    r.intervals = vec![
        interval(0.0, &[50_000_000; 5]),
        interval(0.5, &vec![lag_ms * 1_000_000; n as usize]),
    ];
    r
}

#[test]
fn the_lag_is_judged_after_the_start_up_at_a_quantile_the_samples_support() {
    // 62 samples: p50 (p99 would be their maximum); the start-up's 50 ms left out.
    let (lag, q, n) = settled_lag(&lag_record(62, 0));
    assert_eq!((lag, q, n), (Some(0.0), Some("p50"), 62));
    let (_, q, _) = settled_lag(&lag_record(150, 0));
    assert_eq!(q, Some("p90"));
    let (lag, q, _) = settled_lag(&lag_record(1000, 2));
    assert_eq!(q, Some("p99"));
    assert!((lag.unwrap() - 2000.0).abs() < 5.0, "{lag:?}");
    // Under 20 samples the lag does not judge.
    assert_eq!(settled_lag(&lag_record(10, 0)).0, None);
}

#[test]
fn a_failed_confirmation_steps_down_and_confirms_again() {
    let mut s = Search::new(100.0, 0.1, Some(100.0));
    s.record(Verdict::Pass); // 100 = max: confirm
    assert_eq!(s.next(), Some((100.0, true)));
    s.record(Verdict::Fail); // it did not hold: 90
    assert_eq!(s.next(), Some((90.0, true)));
    s.record(Verdict::Pass);
    assert_eq!(s.answer(), Some(90.0));
    assert!(s.confirmed);
}

#[test]
fn no_rate_meets_the_slos() {
    let (tried, s) = path(100.0, 0.0, 0.05, None);
    assert_eq!(s.answer(), None);
    assert_eq!(tried.len(), MAX_HALVINGS + 1, "{tried:?}");
}

/// A step of 123 req/s for 1 s (the records of [`lag_record`]): `lag_record(n, 0)`'s
/// start-up interval lagged, what came after did not; its figures given explicitly.
fn step_of(n: u64, offered: f64, achieved: f64, sent: f64) -> RunRecord {
    let mut r = lag_record(n, 0);
    let s = &mut r.summary;
    s.throughput_rps = achieved;
    s.generator.offered_rps = Some(offered);
    s.generator.sent_rps = Some(sent);
    // What was due and never sent, as a real run counts it (the schedule's count).
    s.end.not_sent = ((offered - sent) * s.duration_s).round().max(0.0) as u64;
    s.requests.total = achieved as u64;
    s.requests.ok = achieved as u64;
    s.latency.total.p99_us = Some(5_000.0);
    s.latency.total.mean_us = Some(3_000.0);
    r
}

fn slos(list: &[&str]) -> Vec<Expr> {
    list.iter().map(|e| Expr::arg(e).unwrap()).collect()
}

#[test]
fn a_step_is_not_blamed_on_the_client_for_one_late_interval() {
    // The case: 123 req/s, one interval (the start-up's) lagging 1.25 ms, which
    // puts the whole step's lag p99 over 1 ms; after the start-up the lag is 0 (p50 of 62
    // samples, all the step supports).
    let mut r = step_of(62, 123.0, 123.0, 123.0);
    r.summary.latency.schedule_lag.p99_us = Some(1_250.0);
    r.summary.latency.schedule_lag.max_us = Some(1_250.0);
    let one = crate::recorder::hist::IntervalStats {
        count: 5,
        p50_us: 1_250.0,
        p99_us: 1_250.0,
        max_us: 1_250.0,
    };
    r.intervals[0].latency.insert(crate::model::Phase::Lag, one);
    // The run's rule would blame the client for it...
    let by_run = crate::recorder::record::warnings_of(&r);
    assert!(
        by_run.iter().any(|w| w.contains("limited this run")),
        "{by_run:?}"
    );
    // ...the knee's does not: the step passes, and its warnings say nothing of the
    // generator.
    let (step, blamed) = judge(&r, 123.0, &slos(&["errors<=1%"]), false, 1000.0);
    assert_eq!(step.verdict, Verdict::Pass, "{:?}", step.reasons);
    assert!(blamed.is_empty(), "{blamed:?}");
    let w = step_warnings(&r, &blamed);
    assert!(
        !w.iter()
            .any(|w| w.contains("generator") || w.contains("client")),
        "{w:?}"
    );
}

#[test]
fn a_step_blamed_on_the_client_says_so_once_by_the_knee_s_rule() {
    // A worker thread saturated and the rate not achieved: the client's step. The run's
    // rule would add its own saturation warning beside the knee's: one line only.
    let mut r = step_of(62, 123.0, 60.0, 60.0);
    r.summary.generator.thread_busy = vec![0.99, 0.2];
    let (step, blamed) = judge(&r, 123.0, &slos(&["errors<=1%"]), false, 1000.0);
    assert_eq!(step.verdict, Verdict::Client, "{:?}", step.reasons);
    assert_eq!(blamed, ["a worker thread was on a CPU 99% of the step"]);
    let w = step_warnings(&r, &blamed);
    let about: Vec<&String> = w.iter().filter(|w| w.contains("worker thread")).collect();
    assert_eq!(about.len(), 1, "{w:?}");
    assert!(
        about[0].starts_with("the client, not the server, limited this step: a worker thread"),
        "{w:?}"
    );
    // The rate is the row's one figure in the warning too.
    assert!(
        step.reasons
            .iter()
            .any(|r| r.starts_with("achieved 60.0 of 123 req/s")),
        "{:?}",
        step.reasons
    );
    assert!(
        about[0].contains("achieved 60.0 req/s of the 123 offered"),
        "{w:?}"
    );
}

#[test]
fn a_step_s_row_and_its_warning_give_one_achieved_figure() {
    // The case: 498.6 req/s achieved (the responses within the step), 527 sent
    // (those in flight at the end included), 992 offered; the server's queue full.
    let mut r = step_of(62, 992.0, 498.6, 527.0);
    r.summary.end.not_sent = 935;
    r.summary.latency.phases.insert(
        crate::model::Phase::Queue,
        crate::recorder::hist::Stats {
            count: 100,
            p99_us: Some(933_000.0),
            ..Default::default()
        },
    );
    let (step, blamed) = judge(&r, 992.0, &slos(&["p99<=20ms"]), false, 1000.0);
    assert_eq!(step.verdict, Verdict::Fail, "{:?}", step.reasons);
    assert_eq!(step.achieved_rps, 498.6);
    assert!(
        step.reasons[0].starts_with("achieved 498.6 of 992 req/s"),
        "{:?}",
        step.reasons
    );
    let w = step_warnings(&r, &blamed);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("the server did not keep up"), "{w:?}");
    assert!(
        w[0].contains("achieved 498.6 req/s of the 992 offered"),
        "{w:?}"
    );
    assert!(!w[0].contains("527"), "{w:?}");
}

/// A step of 123 req/s whose total latency is 1 ms in each of its 10 intervals of 100
/// requests but `slow` of them, which took 60 ms.
fn noisy_step(slow: &[usize]) -> RunRecord {
    use crate::recorder::record::Interval;
    let mut r = step_of(62, 123.0, 123.0, 123.0);
    let mut whole = hist::new_hist();
    r.intervals = (0..10)
        .map(|i| {
            let mut h = hist::new_interval_hist();
            let ms = if slow.contains(&i) { 60 } else { 1 };
            for k in 0..100u64 {
                hist::record(&mut h, ms * 1_000_000 + k * 1_000);
            }
            let _ = whole.add(&h);
            let mut one: Interval = serde_json::from_value(serde_json::json!({
                "start_s": i as f64 * 0.1, "duration_s": 0.1, "requests": 100, "ok": 100,
                "errors": 0, "throughput_rps": 1000.0, "bytes_read": 0, "latency": {},
                "server_timing": {}, "histograms": {}
            }))
            .unwrap();
            one.histograms.insert("total".into(), hist::encode(&h));
            one
        })
        .collect();
    r.histograms.insert("total".into(), hist::encode(&whole));
    r
}

#[test]
fn a_verdict_resting_on_an_slo_its_interval_cannot_decide_says_so() {
    // One interval in ten at 60 ms: the step's p90 is 1.1 ms and passes p90<=10ms, but its
    // intervals' p90s (batch means: nine at 1.1 ms, one at 60 ms) give an interval that holds
    // 10 ms: the pass rests on an undecided SLO.
    let (step, _) = judge(&noisy_step(&[4]), 123.0, &slos(&["p90<=10ms"]), false, 1e3);
    assert_eq!(step.verdict, Verdict::Pass, "{:?}", step.reasons);
    assert_eq!(step.undecided.len(), 1, "{:?}", step.undecided);
    assert!(
        step.undecided[0].starts_with("p90<=10ms (measured 1.1"),
        "{:?}",
        step.undecided
    );
    // Two in ten: the p90 is 60 ms, a failure that rests on that SLO alone.
    let (step, _) = judge(
        &noisy_step(&[4, 5]),
        123.0,
        &slos(&["p90<=10ms"]),
        false,
        1e3,
    );
    assert_eq!(step.verdict, Verdict::Fail, "{:?}", step.reasons);
    assert_eq!(step.undecided.len(), 1, "{:?}", step.undecided);
    // A steady step decides it: nothing undecided.
    let (step, _) = judge(&noisy_step(&[]), 123.0, &slos(&["p90<=10ms"]), false, 1e3);
    assert_eq!((step.verdict, step.undecided.len()), (Verdict::Pass, 0));
    // A failure that also has a decided reason (the rate not achieved) does not rest on the
    // undecided SLO: re-measuring could not change it.
    let mut r = noisy_step(&[4, 5]);
    r.summary.throughput_rps = 60.0;
    let (step, _) = judge(&r, 123.0, &slos(&["p90<=10ms"]), false, 1e3);
    assert_eq!(step.verdict, Verdict::Fail, "{:?}", step.reasons);
    assert!(step.undecided.is_empty(), "{:?}", step.undecided);
    // The notes of a re-measured row say so.
    let mut s = step.clone();
    s.measurements = 3;
    s.undecided = vec!["p90<=10ms (…)".into()];
    assert_eq!(
        step_notes(&s),
        [
            "judged on 3 runs together",
            "undecided, judged by the measured figure: p90<=10ms (…)"
        ]
    );
}
