//! Unit tests of threshold expressions: parsing, printing back and measuring.

use super::*;
use crate::recorder::hist;

#[test]
fn a_threshold_over_no_data_is_neither_pass_nor_fail() {
    // Nothing measured yet: no requests, no histograms.
    let empty = PartialRun::new(std::time::Duration::from_secs(1));
    for text in ["errors<1%", "non_2xx<1%"] {
        let c = p(text).check(&empty);
        if text.starts_with("errors") {
            assert!(
                c.no_data && !c.pass && c.measured.is_none(),
                "{text}: {c:?}"
            );
            assert!(c.note.unwrap().contains("none was made"));
        }
    }
    // A count of nothing is a count: 0.
    let mut run = PartialRun::new(std::time::Duration::from_secs(1));
    run.hists.insert("total".into(), hist::new_hist());
    let c = p("count>=0").check(&run);
    assert!(c.pass && !c.no_data, "{c:?}");
    // A percentile of an empty histogram: no data.
    let c = p("p99<5ms").check(&run);
    assert!(c.no_data && !c.pass, "{c:?}");
    // A histogram the record does not have at all is a failure, not "no data".
    let c = p("server.nope.p99<1ms").check(&run);
    assert!(!c.no_data && !c.pass, "{c:?}");
}

fn p(text: &str) -> Expr {
    Expr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn valid_expressions() {
    use Figure::*;
    // (text, scope, figure, op, threshold in natural units)
    let rows: Vec<(&str, Scope, Figure, Op, f64)> = vec![
        (
            "p99<5ms",
            Scope::Phase(Phase::Total),
            Percentile(99.0),
            Op::Lt,
            5e6,
        ), // total by default
        (
            " p99 <= 2ms ",
            Scope::Phase(Phase::Total),
            Percentile(99.0),
            Op::Le,
            2e6,
        ), // spaces
        (
            "wait.p90<2ms",
            Scope::Phase(Phase::Wait),
            Percentile(90.0),
            Op::Lt,
            2e6,
        ),
        (
            "p99.9<1.5ms",
            Scope::Phase(Phase::Total),
            Percentile(99.9),
            Op::Lt,
            1.5e6,
        ),
        (
            "p999<1s",
            Scope::Phase(Phase::Total),
            Percentile(99.9),
            Op::Lt,
            1e9,
        ), // alias
        (
            "mean<=1.5ms",
            Scope::Phase(Phase::Total),
            Mean,
            Op::Le,
            1.5e6,
        ),
        (
            "connect.max<250us",
            Scope::Phase(Phase::Connect),
            Max,
            Op::Lt,
            250e3,
        ),
        (
            "queue.p50<10µs",
            Scope::Phase(Phase::Queue),
            Percentile(50.0),
            Op::Lt,
            10e3,
        ),
        ("errors<0.1%", Scope::Run, Errors, Op::Lt, 0.1), // a share, in percent
        ("errors<=0", Scope::Run, Errors, Op::Le, 0.0),   // a count
        ("rps>10000", Scope::Run, Rps, Op::Gt, 10_000.0),
        ("rps>=10k", Scope::Run, Rps, Op::Ge, 10_000.0), // with a multiplier
        ("non_2xx<1%", Scope::Run, Non2xx, Op::Lt, 1.0),
        (
            "server.db.p99<1ms",
            Scope::Server("db".into()),
            Percentile(99.0),
            Op::Lt,
            1e6,
        ),
        (
            "server.app.db.p99.9<1ms", // a metric name with a dot
            Scope::Server("app.db".into()),
            Percentile(99.9),
            Op::Lt,
            1e6,
        ),
        (
            "request.get.p99<3ms",
            Scope::Request("get".into()),
            Percentile(99.0),
            Op::Lt,
            3e6,
        ),
        (
            "wait.count>=100",
            Scope::Phase(Phase::Wait),
            Count,
            Op::Ge,
            100.0,
        ),
    ];
    for (text, scope, figure, op, threshold) in rows {
        let e = p(text);
        assert_eq!((&e.scope, &e.figure, e.op), (&scope, &figure, op), "{text}");
        assert!(
            (e.threshold() - threshold).abs() < 1e-6,
            "{text}: {}",
            e.threshold()
        );
    }
}

#[test]
fn invalid_expressions_say_what_is_valid() {
    // (text, parts of the message)
    let rows = [
        ("p99 5ms", vec!["no comparison", "<, <=, >, >="]),
        ("p99x<5ms", vec!["unknown figure 'p99x'", "pNN", "rps"]),
        ("p101<5ms", vec!["unknown figure", "pNN"]),
        ("p99<5", vec!["needs a unit", "ns, us, ms or s"]),
        ("p99<5kg", vec!["unknown unit 'kg'", "ns, us, ms or s"]),
        ("errors<5ms", vec!["not a latency", "%"]),
        ("rps<5%", vec!["'%' applies to errors"]),
        (
            "nope.p99<5ms",
            vec!["unknown scope 'nope'", "wait", "server.METRIC"],
        ),
        (
            "wait.errors<1%",
            vec!["figure of the whole run", "without a scope"],
        ),
        ("<5ms", vec!["no figure"]),
        ("p99<", vec!["no number"]),
        ("p99<<5ms", vec!["one comparison"]),
        ("server.<5ms", vec!["unknown figure"]),
        ("p99<-1ms", vec!["no number"]),
    ];
    for (text, parts) in rows {
        let e = Expr::parse(text).expect_err(text).0;
        for part in parts {
            assert!(e.contains(part), "{text}: {e}");
        }
    }
}

#[test]
fn printing_gives_back_the_expression() {
    for text in [
        "p99<5ms",
        "wait.p90<=2.5ms",
        "errors<0.1%",
        "rps>=10000",
        "server.app.db.p99.9>1us",
        "request.put.mean<3s",
    ] {
        let e = p(text);
        assert_eq!(e.to_string(), text);
        assert_eq!(p(&e.to_string()), e);
    }
}

proptest::proptest! {
    // That parsing never panics, and a parsed expression prints and parses back, whatever
    // the text: fuzz/fuzz_targets/expr.rs.
    #[test]
    fn parse_print_parse_is_stable(
        scope in proptest::sample::select(vec!["", "wait.", "server.db.", "request.get."]),
        q in 1u32..=9999,
        op in proptest::sample::select(vec!["<", "<=", ">", ">="]),
        v in 0u32..100_000,
        unit in proptest::sample::select(vec!["ns", "us", "ms", "s"]),
    ) {
        let text = format!("{scope}p{}{op}{}{unit}", q as f64 / 100.0, v as f64 / 10.0);
        let e = Expr::parse(&text).unwrap();
        proptest::prop_assert_eq!(Expr::parse(&e.to_string()).unwrap(), e);
    }
}

#[test]
fn an_expression_that_does_not_parse_is_bad_input() {
    use crate::util::exit::ExitCode;
    let e = Expr::parse("p99<<5ms").unwrap_err();
    assert_eq!(e.exit_code(), crate::util::exit::EXIT_USAGE);
}

#[test]
fn a_limit_inside_a_percentiles_interval_is_undecided_and_judged_by_the_figure() {
    // 1000 values of 1..=1000 us: p99 is 990 us, its 95% interval the 983rd and 997th values.
    let mut run = PartialRun::new(std::time::Duration::from_secs(1));
    let mut h = hist::new_hist();
    for us in 1..=1000u64 {
        hist::record(&mut h, us * 1000);
    }
    run.hists.insert("total".into(), h);
    // Far from the limit: decided.
    let c = p("p99<2ms").check(&run);
    assert!(c.pass && !c.undecided, "{c:?}");
    let [lo, hi] = c.interval.unwrap();
    assert!(lo.unwrap() < 990e3 && 990e3 < hi.unwrap(), "{c:?}");
    // Inside the interval, on either side of the figure: undecided, the figure's verdict kept.
    let c = p("p99<992us").check(&run);
    assert!(c.pass && c.undecided, "{c:?}");
    let c = p("p99<985us").check(&run);
    assert!(!c.pass && c.undecided, "{c:?}");
    // p99.9 of 1000 values has no high bound: any limit above its low bound is undecided.
    let c = p("p99.9<10s").check(&run);
    assert!(
        c.pass && c.undecided && c.interval.unwrap()[1].is_none(),
        "{c:?}"
    );
    // Not a percentile: no interval.
    let c = p("mean<1s").check(&run);
    assert!(c.interval.is_none() && !c.undecided, "{c:?}");
}
