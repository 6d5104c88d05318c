use super::*;

#[test]
fn records_that_cannot_be_compared_are_bad_input() {
    use crate::util::exit::ExitCode;
    let b = crate::report::fixture::plain();
    let mut a = b.clone();
    a.summary.requests.ok = 0;
    let e = compare(&a, &b, 0.02, 1).unwrap_err();
    assert_eq!(e.to_string(), "A has no complete response to compare");
    assert_eq!(e.exit_code(), crate::util::exit::EXIT_USAGE);
}

#[test]
fn log_buckets_are_within_one_percent() {
    for ns in [1u64, 999, 12_345, 1_000_000, 3_600_000_000_000] {
        let b = resample::bucket_of(ns) as f64;
        let (lo, hi) = (1.01f64.powf(b), 1.01f64.powf(b + 1.0));
        assert!(
            lo <= ns as f64 * 1.000_001 && ns as f64 <= hi * 1.000_001,
            "{ns}: [{lo}, {hi})"
        );
    }
}

/// A value of a lognormal with this median (ns) and log-sd, from `rng` (Box-Muller).
fn lognormal(rng: &mut crate::util::rng::SplitMix64, median: f64, sigma: f64) -> u64 {
    let (u1, u2) = (rng.unit_open(), rng.unit_open());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (median * (sigma * z).exp()).max(1.0) as u64
}

/// A single run drawn from one fixed process, seeded: 20 intervals of 0.5 s with 900 to 1,099
/// requests each; a total of median 100 µs times a level that drifts from interval to
/// interval (an AR(1) of the log, φ = 0.7, sd 8%: a shared machine's load moving), and a
/// `Server-Timing` metric `app` of median 300 ns written in tenths of a µs as servers do (all
/// its values on a 100 ns grid: ties).
fn same_distribution(seed: u64) -> RunRecord {
    drawn(seed, 1.0)
}

/// [`same_distribution`] with the total `factor` times as long.
fn drawn(seed: u64, factor: f64) -> RunRecord {
    use crate::recorder::hist::{self, Stats};
    let mut rng = crate::util::rng::SplitMix64(seed);
    let mut r = crate::report::fixture::plain();
    let (mut total, mut app) = (hist::new_hist(), hist::new_hist());
    let template = r.intervals[0].clone();
    let mut level = 0.0f64;
    r.intervals = (0..20)
        .map(|i| {
            let (mut t, mut s) = (hist::new_hist(), hist::new_hist());
            let n = 900 + rng.below(200);
            let z = lognormal(&mut rng, 1e6, 1.0) as f64 / 1e6;
            level = 0.7 * level + (1.0f64 - 0.49).sqrt() * 0.08 * z.ln();
            for _ in 0..n {
                hist::record(
                    &mut t,
                    lognormal(&mut rng, 100_000.0 * factor * level.exp(), 0.5),
                );
                let rounded = (lognormal(&mut rng, 300.0, 0.4) + 50) / 100 * 100;
                hist::record(&mut s, rounded.max(100));
            }
            total.add(&t).unwrap();
            app.add(&s).unwrap();
            let mut iv = template.clone();
            iv.start_s = i as f64 * 0.5;
            iv.duration_s = 0.5;
            iv.requests = n;
            iv.histograms = [
                ("total".to_string(), hist::encode(&t)),
                ("server_timing.app".to_string(), hist::encode(&s)),
            ]
            .into();
            iv
        })
        .collect();
    r.summary.latency.total = Stats::of(&total);
    r.summary.latency.phases.clear();
    r.summary.server_timing = [("app".to_string(), Stats::of(&app))].into();
    r.summary.server_timing_order = vec!["app".into()];
    r.summary.server_probes = None;
    r.summary.throughput_rps = 4000.0;
    r.repetitions.clear();
    r
}

#[test]
fn reruns_from_one_distribution_call_at_most_one_row_in_20_changed() {
    // 10 pairs of runs drawn from the same distribution: every call is a wrong one.
    let (mut rows, mut called, mut wrong) = (0, 0, Vec::new());
    for pair in 0..10u64 {
        let (a, b) = (
            same_distribution(2 * pair + 1),
            same_distribution(2 * pair + 2),
        );
        let c = compare(&a, &b, 0.02, pair).unwrap();
        assert_eq!(c.method, "intervals");
        assert_eq!(
            c.rows.len(),
            9,
            "throughput and 4 quantiles of 2 histograms"
        );
        for r in &c.rows {
            rows += 1;
            if matches!(r.verdict, Verdict::Faster | Verdict::Slower) {
                called += 1;
                println!(
                    "pair {pair}: {} called {:?}: {:?}",
                    r.figure, r.verdict, r.change
                );
            }
            // Every interval holds its estimate, and is not a point where the runs differ;
            // the change is that of the figures shown.
            let e = r.change;
            if !(e.lo <= e.point && e.point <= e.hi) {
                wrong.push(format!(
                    "pair {pair}: {} outside its interval: {e:?}",
                    r.figure
                ));
            }
            if e.hi <= e.lo {
                wrong.push(format!("pair {pair}: {} zero-width: {e:?}", r.figure));
            }
            if (r.b / r.a - 1.0 - e.point).abs() > 1e-9 {
                wrong.push(format!(
                    "pair {pair}: {} {} to {} is not {e:?}",
                    r.figure, r.a, r.b
                ));
            }
        }
    }
    println!(
        "{called} of {rows} rows called changed; {} rows wrong",
        wrong.len()
    );
    assert!(
        called * 20 <= rows,
        "{called} of {rows} rows called changed"
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_run_twice_as_slow_is_called_slower() {
    // The same process with the total twice as long: the drift (a run's quarters move by
    // some 8% here, so the MDE of p50 is about 50%) and the adjustment for many rows leave a
    // change of that size seen in every pair.
    for pair in 0..3u64 {
        let (a, b) = (drawn(40 + pair, 1.0), drawn(50 + pair, 2.0));
        let c = compare(&a, &b, 0.02, pair).unwrap();
        for figure in ["total p50", "total p90"] {
            let r = c.rows.iter().find(|r| r.figure == figure).unwrap();
            assert_eq!(r.verdict, Verdict::Slower, "pair {pair}: {r:?}");
        }
        // The rounded metric did not change: not called.
        for r in c.rows.iter().filter(|r| r.figure.starts_with("server app")) {
            assert_eq!(
                r.verdict,
                Verdict::NoSignificantChange,
                "pair {pair}: {r:?}"
            );
        }
    }
}

/// `r` probed and joined, its tail's table of `groups`: (which, requests, mean µs, the
/// server's socket share, its handle share); the rest of each group's time is `wait left`.
fn with_tail(mut r: RunRecord, groups: &[(&str, u64, f64, f64, f64)]) -> RunRecord {
    use crate::recorder::record::probes::{Joining, ServerProbes, TailShares};
    let tail = groups
        .iter()
        .map(|&(which, requests, mean_us, socket, handle)| TailShares {
            which: which.into(),
            requests,
            from_us: mean_us,
            mean_us,
            shares: [
                ("server: socket".to_string(), socket),
                ("server: handle".to_string(), handle),
                ("wait left".to_string(), 1.0 - socket - handle),
            ]
            .into(),
        })
        .collect();
    r.summary.server_probes = Some(ServerProbes {
        joining: Some(Joining {
            requests: 3000,
            joined: 3000,
            ..Default::default()
        }),
        tail,
        ..Default::default()
    });
    r
}

#[test]
fn the_tails_shares_are_compared_part_by_part_in_points() {
    // B's slowest 1% waited in the server's socket: 20% of their time in A, 65% in B.
    let a = with_tail(
        same_distribution(1),
        &[
            ("p50", 300, 100.0, 0.10, 0.50),
            ("p99", 30, 900.0, 0.20, 0.30),
        ],
    );
    let b = with_tail(
        same_distribution(2),
        &[
            ("p50", 310, 104.0, 0.12, 0.50),
            ("p99", 31, 3000.0, 0.65, 0.05),
        ],
    );
    let c = compare(&a, &b, 0.02, 1).unwrap();
    let t = c.tail.as_ref().expect("both records have the tail's table");
    assert_eq!(t.missing, None);
    assert_eq!(t.note, tail::DESCRIPTIVE);
    let which: Vec<&str> = t.groups.iter().map(|g| g.which.as_str()).collect();
    assert_eq!(which, ["p50", "p99"]);
    let p99 = &t.groups[1];
    assert_eq!((p99.a_requests, p99.b_requests), (30, 31));
    assert_eq!((p99.a_mean_us, p99.b_mean_us), (900.0, 3000.0));
    let part = |name: &str| p99.parts.iter().find(|p| p.part == name).unwrap();
    assert_eq!(part("server: socket").points, 45.0);
    assert_eq!(part("server: handle").points, -25.0);
    assert_eq!(part("wait left").points, -20.0);
    assert_eq!(
        (part("server: socket").a, part("server: socket").b),
        (0.2, 0.65)
    );
    // In the record's order of parts: the server's socket before its handling.
    let names: Vec<&str> = p99.parts.iter().map(|p| p.part.as_str()).collect();
    assert_eq!(names, ["server: socket", "server: handle", "wait left"]);

    // The text: a row per part, A, B and the move of each group, and the mean totals.
    let text = crate::report::text::compare::render(&c, "a.json", "b.json", false);
    let line = |start: &str| {
        text.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no {start:?} in\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(text.contains("Why the tail is slow, A and B"), "{text}");
    assert!(text.contains("no interval and no verdict"), "{text}");
    assert_eq!(
        line("  server: socket"),
        "server: socket 10.0% 12.0% +2.0pt 20.0% 65.0% +45.0pt"
    );
    assert_eq!(
        line("  mean total"),
        "mean total 100.00us 104.00us +4.0% 900.00us 3.00ms +233.3%"
    );
    assert_eq!(line("  requests"), "requests 300 310 30 31");
    assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
    // The JSON has it, and the HTML page a section of it.
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["tail"]["groups"][1]["parts"][0]["points"], 45.0);
    let page = crate::report::html::render_compare(&c, ("a.json", &a), ("b.json", &b)).unwrap();
    assert!(page.contains("<section id=\"tail\">"), "{page}");
    assert!(page.contains("+45.0 pt"), "{page}");
}

#[test]
fn a_tail_table_in_one_record_only_says_which_lacks_it_and_why() {
    let probed = with_tail(same_distribution(1), &[("p99", 30, 900.0, 0.2, 0.3)]);
    let plain = same_distribution(2);
    let c = compare(&probed, &plain, 0.02, 1).unwrap();
    let t = c.tail.as_ref().unwrap();
    assert!(t.groups.is_empty());
    assert_eq!(
        t.missing.as_deref(),
        Some("B has no tail table: it was run without --server-probes")
    );
    let text = crate::report::text::compare::render(&c, "a", "b", false);
    assert!(
        text.contains("  B has no tail table: it was run without --server-probes"),
        "{text}"
    );
    // Probed by an agent on the server's host: per read and write, never joined.
    let mut agent = with_tail(same_distribution(2), &[]);
    if let Some(p) = agent.summary.server_probes.as_mut() {
        p.joining = None;
    }
    let c = compare(&agent, &probed, 0.02, 1).unwrap();
    let missing = c.tail.unwrap().missing.unwrap();
    assert!(
        missing.starts_with("A has no tail table: its server's side was not joined"),
        "{missing}"
    );
    // Neither has one: nothing is said of it.
    let c = compare(&plain, &same_distribution(3), 0.02, 1).unwrap();
    assert_eq!(c.tail, None);
    let text = crate::report::text::compare::render(&c, "a", "b", false);
    assert!(!text.contains("Why the tail"), "{text}");
    assert!(serde_json::to_value(&c).unwrap().get("tail").is_none());
}
