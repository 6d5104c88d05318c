use super::*;
use crate::cli::{Cli, Command};
use crate::model::LoadKind;
use crate::model::{Schedule, Scheme, StopRule};
use crate::util::limits::default_threads;
use clap::Parser;

fn args(extra: &[&str]) -> RunArgs {
    let mut argv = vec!["reqlife", "run"];
    argv.extend_from_slice(extra);
    match Cli::try_parse_from(argv).unwrap().command {
        Command::Run(a) => *a,
        _ => unreachable!(),
    }
}

fn plan(extra: &[&str]) -> Result<RunPlan, PlanError> {
    build(&args(extra), "http://127.0.0.1:8080/x?y=1")
}

#[test]
fn targets() {
    // (url, scheme, host, port, path)
    let rows = [
        (
            "http://127.0.0.1:8080/",
            Scheme::Http,
            "127.0.0.1",
            8080,
            "/",
        ),
        ("http://127.0.0.1", Scheme::Http, "127.0.0.1", 80, "/"), // default port, root path
        (
            "https://localhost/a?b=c",
            Scheme::Https,
            "localhost",
            443,
            "/a?b=c",
        ),
        ("http://[::1]:9000/p", Scheme::Http, "::1", 9000, "/p"), // IPv6 literal
    ];
    for (url, scheme, host, port, path) in rows {
        let t = parse_target(url).unwrap();
        assert_eq!(
            (t.scheme, t.host.as_str(), t.port, t.path_and_query.as_str()),
            (scheme, host, port, path),
            "{url}"
        );
        assert_eq!(t.addr.port(), port);
    }
}

#[test]
fn bad_targets() {
    // (url, a part the message must hold)
    let rows = [
        ("ftp://127.0.0.1/", "unsupported scheme 'ftp'"),
        (
            "127.0.0.1:8080",
            "no scheme; did you mean http://127.0.0.1:8080?",
        ),
        // A path made this "invalid format"; the same line as without one now.
        (
            "localhost:8080/",
            "no scheme; did you mean http://localhost:8080/?",
        ),
        (
            "example.com/a?b",
            "no scheme; did you mean http://example.com/a?b?",
        ),
        ("//host/x", "no scheme; did you mean http://host/x?"),
        ("http:/x", "invalid URL 'http:/x'"), // a mistyped scheme: no guess
        ("not a url", "invalid URL 'not a url'"),
        (
            "udp://127.0.0.1:9/",
            "reqlife speaks http://, https://, tcp://, ws:// and wss://",
        ),
        ("http://", "invalid URL"),
        ("http://exa mple.com/", "invalid URL"),
        ("http://127.0.0.1:0/", "port 0"),
        ("http://u:p@127.0.0.1/", "user information"),
        (
            "http://no-such-host.invalid/",
            "cannot resolve host 'no-such-host.invalid'",
        ),
    ];
    for (url, want) in rows {
        let e = parse_target(url).unwrap_err().0;
        assert!(e.contains(want), "{url}: {e}");
    }
}

#[test]
fn defaults() {
    let p = plan(&[]).unwrap();
    assert_eq!(p.connections(), 50);
    assert_eq!(p.threads, default_threads().min(50));
    assert_eq!(p.stop, StopRule::Duration(DEFAULT_DURATION));
    assert_eq!(p.timeout, Duration::from_secs(10));
    assert_eq!(p.method, "GET");
    assert!(p.body.is_empty());
}

#[test]
fn flags_become_the_plan() {
    let p = plan(&[
        "-c",
        "5",
        "-t",
        "2",
        "-n",
        "10k",
        "-m",
        "POST",
        "-H",
        "A: b",
        "-H",
        "X-Y:z",
        "--body",
        "hi",
        "--timeout",
        "1.5s",
        "--warmup",
        "2s",
    ])
    .unwrap();
    assert_eq!(p.connections(), 5);
    assert_eq!(p.threads, 2);
    assert_eq!(p.stop, StopRule::Requests(10_000));
    assert_eq!(p.method, "POST");
    assert_eq!(
        p.headers,
        vec![("A".into(), "b".into()), ("X-Y".into(), "z".into())]
    );
    assert_eq!(p.body, b"hi");
    assert_eq!(p.timeout, Duration::from_millis(1500));
    assert_eq!(p.warmup, Duration::from_secs(2));
    assert_eq!(p.target.path_and_query, "/x?y=1");
}

#[test]
fn open_loop_and_connection_policy() {
    let p = plan(&[
        "-R",
        "20k",
        "--arrival",
        "poisson",
        "-c",
        "8",
        "--seed",
        "7",
    ])
    .unwrap();
    assert_eq!(
        p.load,
        LoadModel::Open {
            schedule: Schedule::Constant { rate: 20_000.0 },
            arrival: Arrival::Poisson,
            connections: 8
        }
    );
    assert_eq!(p.seed, 7);
    assert!(p.keepalive);
    assert!(!plan(&["--no-keepalive"]).unwrap().keepalive);
    assert!(!plan(&["--connection-policy", "new"]).unwrap().keepalive);
    // HTTP/2: a connection per request has one stream.
    assert!(!plan(&["--http2", "--no-keepalive"]).unwrap().keepalive);
    let e = plan(&["--http2", "--streams", "4", "--no-keepalive"]).unwrap_err();
    assert!(
        e.0.contains("--streams 4 with a new connection per request"),
        "{}",
        e.0
    );
    let p = plan(&["--max-connections-per-second", "500"]).unwrap();
    assert_eq!(p.max_connects_per_s, Some(500.0));
}

#[test]
fn stages_become_the_load_and_the_length() {
    let p = plan(&["--stages", "2s:0->100, 3s:100", "-c", "4"]).unwrap();
    assert_eq!(p.stop, StopRule::Duration(Duration::from_secs(5)));
    assert_eq!(p.stage_labels(), vec!["0->100 req/s", "100 req/s"]);
    assert_eq!(p.connections(), 4);
    let p = plan(&["--stages", "1s:1->8c, 1s:8c"]).unwrap();
    assert_eq!(p.load.kind(), LoadKind::Closed);
    assert_eq!(p.connections(), 8, "the most connections at any time");
    assert_eq!(p.stage_durations(), vec![Duration::from_secs(1); 2]);
}

#[test]
fn bursts() {
    let p = plan(&["--burst", "100", "--burst-interval", "5ms", "--bursts", "3"]).unwrap();
    assert_eq!(
        p.load,
        LoadModel::Burst {
            size: 100,
            interval: Duration::from_millis(5),
            bursts: Some(3)
        }
    );
    assert_eq!(p.threads, 1);
    assert_eq!(p.connections(), 100);
    assert_eq!(p.stop, StopRule::Requests(300));
    let p = plan(&["--burst", "10", "-d", "2s"]).unwrap();
    assert_eq!(p.stop, StopRule::Duration(Duration::from_secs(2)));
}

#[test]
fn sweeps_are_one_plan_per_level() {
    let levels = |flags: &[&str]| build_levels(&args(flags), "http://127.0.0.1:9/");
    let c: Vec<usize> = levels(&["-c", "1,2,5"])
        .unwrap()
        .iter()
        .map(|p| p.connections())
        .collect();
    assert_eq!(c, vec![1, 2, 5]);
    let r: Vec<String> = levels(&["-R", "100,2k"])
        .unwrap()
        .iter()
        .map(|p| format!("{:?}", p.load))
        .collect();
    assert!(
        r[0].contains("rate: 100.0") && r[1].contains("rate: 2000.0"),
        "{r:?}"
    );
    assert_eq!(levels(&["-c", "7"]).unwrap().len(), 1);
    // (flags, a part of the message)
    for (flags, want) in [
        (&["-c", "1,2", "-R", "5,6"][..], "varies one thing"),
        (&["-c", "1,2", "--stages", "1s:5"][..], "conflict"),
        (
            &["-c", "1,2", "--hdr-log", "x.hlog"][..],
            "--hdr-log records one run",
        ),
        (&["-c", "1,0"][..], "at least 1"),
    ] {
        let e = levels(flags).unwrap_err().0;
        assert!(e.contains(want), "{flags:?}: {e}");
    }
}

#[test]
fn with_load_changes_only_the_load() {
    let base = plan(&[
        "-c",
        "8",
        "-t",
        "2",
        "-m",
        "POST",
        "-H",
        "A: b",
        "--body",
        "hi",
        "--seed",
        "7",
        "--interval",
        "250ms",
        "--timeout",
        "3s",
        "--segment",
        "2/2",
    ])
    .unwrap();
    // (what the spec changes, the load and stop rule of the derived plan, its threads)
    type Row = (fn(&mut LoadSpec), LoadModel, StopRule, usize);
    let rows: &[Row] = &[
        // knee's step: an open loop for the step's length
        (
            |s| {
                s.rate = Some(Given::flag(500.0));
                s.duration = Some(Given::flag(Duration::from_secs(2)))
            },
            LoadModel::Open {
                schedule: Schedule::Constant { rate: 500.0 },
                arrival: Arrival::Constant,
                connections: 8,
            },
            StopRule::Duration(Duration::from_secs(2)),
            2,
        ),
        // calibrate's low load: fewer connections, so one thread per connection at most
        // (this segment holds 1 of 2)
        (
            |s| {
                s.connections = Some(Given::flag(2));
                s.count = Some(Given::flag(10))
            },
            LoadModel::Closed { connections: 2 },
            StopRule::Requests(10),
            1,
        ),
    ];
    for (set, load, stop, threads) in rows {
        let mut spec = load_spec(&args(&["-c", "8"]));
        set(&mut spec);
        let derived = base.with_load(&spec).unwrap();
        assert_eq!((&derived.load, derived.stop), (load, *stop));
        assert_eq!(derived.threads, *threads);
        // Everything else is the base's, field by field.
        let back = RunPlan {
            load: base.load.clone(),
            stop: base.stop,
            threads: base.threads,
            ..derived
        };
        assert_eq!(format!("{back:?}"), format!("{base:?}"));
    }
    // A bad load is the load builder's message; a segment left without a connection is
    // refused.
    let mut spec = load_spec(&args(&[]));
    spec.rate = Some(Given::flag(-1.0));
    let e = base.with_load(&spec).unwrap_err().message;
    assert!(e.contains("-R/--rate must be more than 0"), "{e}");
    let mut spec = load_spec(&args(&[]));
    spec.connections = Some(Given::flag(1));
    let e = base.with_load(&spec).unwrap_err().message;
    assert!(e.contains("segment 2/2 would have no connection"), "{e}");
}

#[test]
fn threads_default_to_no_more_than_connections() {
    let p = plan(&["-c", "1"]).unwrap();
    assert_eq!(p.threads, 1);
}

#[test]
fn pacer_slack() {
    // (flags, the plan's slack)
    let rows: &[(&[&str], Duration)] = &[
        (&["-R", "1000"], DEFAULT_PACER_SLACK), // not given: the default
        (&["-R", "1000", "--pacer-slack", "0"], Duration::ZERO), // a wake-up per request
        (
            &["-R", "1000", "--pacer-slack", "200us"],
            Duration::from_micros(200),
        ),
        (&["-R", "1000", "--pacer-slack", "10ms"], MAX_PACER_SLACK), // the largest
        (&[], DEFAULT_PACER_SLACK), // a closed loop carries it, unused
    ];
    for (flags, want) in rows {
        assert_eq!(plan(flags).unwrap().pacing.slack, *want, "{flags:?}");
    }
    // (flags, the plan's spin budget, a share of a core)
    let spins: &[(&[&str], f64)] = &[
        (&["-R", "1000"], crate::load::early::DEFAULT_SPIN),
        (&["-R", "1000", "--pacer-spin", "0"], 0.0),
        (&["-R", "1000", "--pacer-spin", "25%"], 0.25),
        (&["-R", "1000", "--pacer-spin", "100"], 1.0),
    ];
    for (flags, want) in spins {
        assert_eq!(plan(flags).unwrap().pacing.spin, *want, "{flags:?}");
    }
}

/// The benchmarks' before switches (environment variables before issue 47) are in the plan:
/// the pacer's timer and naps, HTTP/2's gathering of new requests before their write.
#[test]
fn the_before_switches_are_in_the_plan() {
    use crate::plan::PacerTimer;
    // (flags, the plan's timer and naps)
    let rows: &[(&[&str], PacerTimer, bool)] = &[
        (&["-R", "1000"], PacerTimer::Precise, true),
        (
            &["-R", "1000", "--pacer-timer", "coarse"],
            PacerTimer::Coarse,
            true,
        ),
        (
            &["-R", "1000", "--pacer-timer", "precise"],
            PacerTimer::Precise,
            true,
        ),
        (
            &["-R", "1000", "--pacer-naps", "off"],
            PacerTimer::Precise,
            false,
        ),
        (
            &["-R", "1000", "--pacer-naps", "on"],
            PacerTimer::Precise,
            true,
        ),
        (&[], PacerTimer::Precise, true), // a closed loop carries the defaults, unused
    ];
    for (flags, timer, naps) in rows {
        let p = plan(flags).unwrap().pacing;
        assert_eq!((p.timer, p.naps), (*timer, *naps), "{flags:?}");
    }
    // (flags, whether HTTP/2's new requests gather)
    let rows: &[(&[&str], bool)] = &[
        (&["--http2"], true),
        (&["--http2", "--h2-writes", "gather"], true),
        (&["--http2", "--h2-writes", "at-once"], false),
        (
            &["--http2", "--h2-coalesce", "0", "--h2-writes", "at-once"],
            false,
        ),
        (&["--grpc", "s.S/M", "--data-file", "Cargo.toml"], true),
        (
            &[
                "--grpc",
                "s.S/M",
                "--data-file",
                "Cargo.toml",
                "--h2-writes",
                "at-once",
            ],
            false,
        ),
    ];
    for (flags, gather) in rows {
        let p = plan(flags).unwrap();
        assert_eq!(p.http2().map(|h| h.gather), Some(*gather), "{flags:?}");
    }
}

#[test]
fn bad_flags() {
    // (flags, a part the message must hold)
    let rows: &[(&[&str], &str)] = &[
        (&["-c", "0"], "at least 1"),
        (&["-t", "0"], "at least 1"),
        (&["-c", "2", "-t", "4"], "more than -c/--connections"),
        (&["-d", "1s", "-n", "5"], "conflict"),
        (&["-d", "0s"], "more than 0"),
        (&["-n", "0"], "at least 1"),
        (&["--timeout", "0s"], "--timeout"),
        (&["-m", "GE T"], "invalid method"),
        (
            &["-m", "10"],
            "h2load's -m, streams per connection, is --streams 10 here",
        ),
        (&["-H", "NoColon"], "no ':'"),
        // The pacer's slack: open loops only, at most 10ms.
        (&["--pacer-slack", "50us"], "applies to an open loop"),
        (&["-R", "1000", "--pacer-slack", "11ms"], "from 0 to 10ms"),
        // Its spin budget: open loops only, a share of one core.
        (&["--pacer-spin", "5"], "applies to an open loop"),
        (&["-R", "1000", "--pacer-spin", "150%"], "from 0 to 100%"),
        (&["-R", "1000", "--pacer-spin=-1"], "from 0 to 100%"),
        (&["-H", ": v"], "name is empty"),
        (&["--body", "a", "--body-file", "/etc/hostname"], "conflict"),
        (
            &["--body-file", "/no/such/file"],
            "cannot read body file '/no/such/file'",
        ),
        (&["--cacert", "/no/such/ca.pem"], "cannot read CA file"),
        (&["--cacert", "/etc/hostname"], "no PEM certificate"),
        (
            &["-o", "/no/such/dir/run.json"],
            "its folder does not exist",
        ),
    ];
    for (flags, want) in rows {
        let e = plan(flags).unwrap_err().0;
        assert!(e.contains(want), "{flags:?}: {e}");
    }
}

#[test]
fn unit_errors_come_from_clap_with_the_flag_named() {
    let e = Cli::try_parse_from(["reqlife", "run", "-d", "10x"]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("--duration"), "{msg}");
    assert!(msg.contains("ns, us, ms, s, m or h"), "{msg}");
    assert_eq!(e.exit_code(), 2);
}

/// A flag given with its default value is given: the rules that refuse a flag where it does
/// not apply refuse it too (no flag is told given by comparing it with its default), while
/// leaving it out still means the default.
#[test]
fn an_explicit_default_is_given() {
    let ws = |flags: &[&str]| build(&args(flags), "ws://127.0.0.1:9/").map_err(|e| e.0);
    assert!(ws(&["--data", "a"]).is_ok());
    let e = ws(&["--data", "a", "-m", "GET"]).unwrap_err();
    assert!(e.contains("-m/--method does not apply to WebSocket"), "{e}");
    // (flags, a part of the message)
    for (flags, want) in [
        (
            &["--arrival", "constant"][..],
            "--arrival applies to an open loop",
        ),
        (
            &["--burst-interval", "10ms"][..],
            "--burst-interval applies to bursts",
        ),
        (
            &["--stages", "1s:5", "--warmup", "0s"][..],
            "--warmup conflict",
        ),
        (
            &["--stages", "1s:1->8c", "-c", "50"][..],
            "connection stages set the connections",
        ),
        (
            &["--pacer-timer", "precise"][..],
            "--pacer-timer applies to an open loop",
        ),
        (
            &["--pacer-naps", "on"][..],
            "--pacer-naps applies to an open loop",
        ),
        (
            &["--h2-writes", "gather"][..],
            "--h2-writes applies to HTTP/2",
        ),
    ] {
        let e = plan(flags).unwrap_err().0;
        assert!(e.contains(want), "{flags:?}: {e}");
    }
    // Left out, each is its default.
    let p = plan(&["--stages", "1s:1->8c"]).unwrap();
    assert_eq!(p.connections(), 8);
    let p = plan(&["--burst", "4", "--bursts", "2"]).unwrap();
    let crate::model::LoadModel::Burst { interval, .. } = p.load else {
        panic!("{:?}", p.load)
    };
    assert_eq!(interval, Duration::from_millis(10));
    assert_eq!(plan(&[]).unwrap().method, "GET");
    let e =
        crate::cli::TargetChoice::of(Some("http://x/"), &args(&["--kv-preload", "0"]).kv, false)
            .unwrap_err();
    assert!(
        e.0.contains("--kv-preload fills the embedded target's store"),
        "{e}"
    );
}
