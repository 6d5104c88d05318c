use super::*;

#[test]
fn rates_read_at_a_glance() {
    // (req/s, as written)
    let rows = [
        (0.0, "0"),
        (950.0, "950"),
        (8_900.0, "8.9k"),
        (20_672.0, "20.7k"),
        (100_000_000.0, "100M"),
        (1_234_567.0, "1.23M"),
        (99_999.0, "100k"),
    ];
    for (rate, want) in rows {
        assert_eq!(human_rate(rate), want, "{rate}");
    }
}

#[test]
fn one_of_a_noun_is_singular() {
    // (n, noun, words)
    for (n, noun, want) in [
        (1u64, "thread", "1 thread"),
        (2, "thread", "2 threads"),
        (0, "error", "0 errors"),
        (1, "connection", "1 connection"),
    ] {
        assert_eq!(counted(n, noun), want);
    }
}

proptest::proptest! {
    // That no parser panics on any text: fuzz/fuzz_targets/units.rs.
    #[test]
    fn counts_and_durations_print_and_parse_back(n in 0u64..1_000_000_000, ms in 0u64..100_000_000) {
        proptest::prop_assert_eq!(parse_count(&n.to_string()), Ok(n));
        let d = Duration::from_millis(ms);
        proptest::prop_assert_eq!(parse_duration(&format!("{}ms", ms)), Ok(d));
        proptest::prop_assert_eq!(parse_duration(&format!("{}s", d.as_secs_f64())), Ok(d));
    }
}

#[test]
fn sizes() {
    for (text, bytes) in [
        ("65536", 65536),
        ("64KiB", 65536),
        ("64kib", 65536),
        ("64Ki", 65536),
        ("1MiB", 1 << 20),
        ("1.5MiB", 3 << 19),
        ("2GiB", 2 << 30),
        ("100k", 100_000),
        ("100KB", 100_000),
        ("1M", 1_000_000),
        ("512B", 512),
        (" 1 MiB ", 1 << 20),
    ] {
        assert_eq!(parse_size(text), Ok(bytes), "{text}");
    }
    for bad in ["", "KiB", "64XB", "-1", "lots", "1e3"] {
        let e = parse_size(bad).unwrap_err().0;
        assert!(e.starts_with(&format!("invalid size '{bad}'")), "{e}");
    }
    assert!(parse_size("1.5")
        .unwrap_err()
        .0
        .contains("not a whole number"));
}

#[test]
fn start_times() {
    assert_eq!(
        parse_start_at("+30s"),
        Ok(StartAt::In(Duration::from_secs(30)))
    );
    let at = std::time::UNIX_EPOCH + Duration::from_millis(1_795_000_000_500);
    assert_eq!(
        parse_start_at("2026-11-18T11:06:40.5Z"),
        Ok(StartAt::At(at))
    );
    assert!(parse_start_at("tomorrow")
        .unwrap_err()
        .0
        .contains("RFC 3339"));
    assert!(parse_start_at("+soon").is_err());
}

#[test]
fn durations() {
    // (input, expected nanoseconds)
    let rows: &[(&str, u64)] = &[
        ("10s", 10_000_000_000),   // seconds
        ("30", 30_000_000_000),    // a bare number is seconds (wrk)
        ("1.5ms", 1_500_000),      // decimals
        ("250us", 250_000),        // microseconds
        ("250µs", 250_000),        // micro sign
        ("100ns", 100),            // nanoseconds
        ("2m", 120_000_000_000),   // minutes
        ("1h", 3_600_000_000_000), // hours
        (" 3s ", 3_000_000_000),   // surrounding spaces
        ("0.5s", 500_000_000),     // fraction of a second
        ("0s", 0),                 // zero is a valid duration (callers reject it)
        ("1m30s", 90_000_000_000), // compound: the parts add up
        ("1h2m", 3_720_000_000_000),
        ("2s500ms", 2_500_000_000),
        ("1h1m1s1ms", 3_661_001_000_000),
        ("1.5m30s", 120_000_000_000), // decimals in a part
        ("500ms", 500_000_000),
    ];
    for (input, ns) in rows {
        assert_eq!(
            parse_duration(input).map(|d| d.as_nanos() as u64),
            Ok(*ns),
            "{input}"
        );
    }
}

#[test]
fn bad_durations_name_the_valid_forms() {
    // each is rejected: no number, unknown unit, two dots, negative, units only
    for input in [
        "",
        "s",
        "10x",
        "1.2.3s",
        "-5s",
        "ms",
        "abc",
        "10 parsecs",
        "nan",
        "inf",
        "1m30",   // a bare number only alone
        "1m-30s", // no signs inside
        "m30s",
        "1m 30x",
    ] {
        let err = parse_duration(input).unwrap_err().0;
        assert!(err.contains(&format!("'{input}'")), "{err}");
        assert!(err.contains("ns, us, ms, s, m or h"), "{err}");
    }
}

#[test]
fn counts() {
    // (input, expected)
    let rows: &[(&str, u64)] = &[
        ("100", 100),          // plain
        ("10k", 10_000),       // kilo
        ("10K", 10_000),       // either case
        ("1.5M", 1_500_000),   // decimal with mega
        ("2G", 2_000_000_000), // giga
        ("0", 0),              // zero parses (callers reject it)
    ];
    for (input, want) in rows {
        assert_eq!(parse_count(input), Ok(*want), "{input}");
    }
}

#[test]
fn bad_counts() {
    for input in ["", "k", "1.5", "10x", "-3", "1e5"] {
        assert!(parse_count(input).is_err(), "{input}");
    }
    assert!(parse_count("1.5")
        .unwrap_err()
        .0
        .contains("not a whole number"));
}

#[test]
fn rates() {
    // (input, requests per second)
    let rows: &[(&str, f64)] = &[
        ("5000", 5000.0),        // plain
        ("50k", 50_000.0),       // kilo
        ("1.5k/s", 1500.0),      // decimal, per second
        ("250/s", 250.0),        // per second spelled out
        ("30/m", 0.5),           // per minute
        ("36/h", 0.01),          // per hour
        ("50/1s", 50.0),         // vegeta's: so many per a duration
        ("100/10s", 10.0),       // a longer duration
        ("1/500ms", 2.0),        // a shorter one
        ("3/1m30s", 3.0 / 90.0), // a compound one
        ("2k/2s", 1000.0),       // with a unit on the amount
        ("0", 0.0),              // parses (callers reject it)
    ];
    for (input, want) in rows {
        let got = parse_rate(input).unwrap();
        assert!((got - want).abs() < 1e-9, "{input}: {got}");
    }
    for input in [
        "", "fast", "10/x", "10k/s/s", "-5", "5G", "50/0s", "50/", "50/-1s",
    ] {
        let e = parse_rate(input).unwrap_err().0;
        assert!(
            e.contains("invalid rate") || e.contains("too high"),
            "{input}: {e}"
        );
    }
    // A negative rate is told in a sentence.
    for input in ["-5", "-1k", " -0.5/s"] {
        let e = parse_rate(input).unwrap_err().0;
        assert!(
            e.contains("the rate must be a positive number of requests per second"),
            "{input}: {e}"
        );
    }
}

#[test]
fn stages() {
    let s = |x| Duration::from_secs(x);
    assert_eq!(
        parse_stages("10s:0->20000, 60s:20000, 10s:20k->0").unwrap(),
        StagesSpec::Rates(vec![
            (s(10), 0.0, 20_000.0),      // a ramp up
            (s(60), 20_000.0, 20_000.0), // a hold
            (s(10), 20_000.0, 0.0),      // a ramp down, with units
        ])
    );
    assert_eq!(
        parse_stages("10s:1->200c, 30s:200c").unwrap(),
        StagesSpec::Connections(vec![(s(10), 1, 200), (s(30), 200, 200)])
    );
    // (input, a part of the message)
    for (input, want) in [
        ("10s", "no ':'"),
        ("0s:100", "more than 0"),
        ("10x:100", "invalid duration"),
        ("10s:fast", "invalid rate"),
        (
            "10s:100, 10s:5c",
            "all stages must be rates or all connections",
        ),
    ] {
        let e = parse_stages(input).unwrap_err().0;
        assert!(e.contains(want), "{input}: {e}");
    }
}

#[test]
fn human_units() {
    let rows: &[(f64, &str)] = &[
        (812.0, "812ns"),
        (35_200.0, "35.20us"),
        (1_250_000.0, "1.25ms"),
        (2e9, "2.00s"),
    ];
    for (ns, want) in rows {
        assert_eq!(human_ns(*ns), *want);
    }
    assert_eq!(human_bytes(512.0), "512B");
    assert_eq!(human_bytes(1536.0), "1.50KiB");
}
