//! Unit tests of `scenario`.

use super::*;
use crate::model::{Arrival, ConnStage, RateStage, Schedule};
use crate::workload::gen::GenState;
use std::time::Duration;

fn parse_str(text: &str) -> Result<Scenario, ScenarioError> {
    parse(
        text,
        Path::new("s.toml"),
        &mut Sources::new("/nonexistent").with_env([("TOKEN", "t0k")]),
    )
}

const GET: &str = "[[request]]\nname = \"get\"\npath = \"/\"\n";

#[test]
fn the_kv_example_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kv.toml");
    let s = load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.seed, Some(7));
    let names: Vec<_> = s.requests.iter().map(|r| r.spec.name.as_str()).collect();
    assert_eq!(names, ["put", "get", "head", "delete"]);
    assert!(s.requests.iter().enumerate().all(|(i, r)| r.spec.id == i));
    let put = &s.requests[0].spec;
    assert_eq!(put.method, "PUT");
    assert_eq!(put.path.to_string(), "/kv/{seq:1:100000}");
    let headers: Vec<_> = put
        .headers
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    assert_eq!(
        headers,
        ["Content-Type=text/plain", "X-Request-Id={uuid}"],
        "file order"
    );
    assert_eq!(s.phases.len(), 2);
    let fill = &s.phases[0];
    assert_eq!(fill.name, "fill");
    assert_eq!(fill.mix.entries().collect::<Vec<_>>(), [(0, 1)]);
    assert_eq!(fill.load, LoadModel::Closed { connections: 50 });
    assert_eq!(fill.stop, StopRule::Requests(100_000));
    let read = &s.phases[1];
    assert_eq!(
        read.mix.entries().collect::<Vec<_>>(),
        [(1, 90), (2, 5), (0, 5)]
    );
    assert_eq!(
        read.load,
        LoadModel::Open {
            schedule: Schedule::Constant { rate: 20_000.0 },
            arrival: Arrival::Poisson,
            connections: 100
        }
    );
    assert_eq!(read.stop, StopRule::Duration(Duration::from_secs(30)));
    assert_eq!(s.request_index("head"), Some(2));
}

#[test]
fn a_phase_mix_keeps_its_proportions_over_a_run() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kv.toml");
    let s = load(&path).unwrap();
    let mix = &s.phases[1].mix;
    let mut state = GenState::new(7, 0, 1);
    let mut counts = [0u64; 4];
    let draws = 100_000u64;
    for _ in 0..draws {
        counts[mix.pick(&mut state)] += 1;
    }
    // (request index, weight out of 100): within 4.5 binomial standard deviations
    assert_eq!(counts[3], 0, "delete is not in the read phase");
    for (i, w) in [(1usize, 90.0), (2, 5.0), (0, 5.0)] {
        let p = w / 100.0;
        let want = p * draws as f64;
        let tol = 4.5 * (draws as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (counts[i] as f64 - want).abs() <= tol,
            "request {i}: {} vs {want}",
            counts[i]
        );
    }
}

#[test]
fn load_keys_follow_the_command_line() {
    // (phase keys, load model, stop rule)
    let s = |x| Duration::from_secs(x);
    let rows: Vec<(&str, LoadModel, StopRule)> = vec![
        // defaults: a closed loop of 50 connections
        (
            "count = \"10k\"",
            LoadModel::Closed { connections: 50 },
            StopRule::Requests(10_000),
        ),
        // a bare number of seconds, a count with units
        (
            "duration = 30\nconnections = \"1k\"",
            LoadModel::Closed { connections: 1000 },
            StopRule::Duration(s(30)),
        ),
        // an open loop with a rate in a unit
        (
            "rate = \"250/s\"\nduration = \"2m\"\nconnections = 4",
            LoadModel::Open {
                schedule: Schedule::Constant { rate: 250.0 },
                arrival: Arrival::Constant,
                connections: 4,
            },
            StopRule::Duration(s(120)),
        ),
        // rate stages: the stages' length is the stop rule
        (
            "stages = \"10s:0->100, 20s:100\"",
            LoadModel::Open {
                schedule: Schedule::Stages(vec![
                    RateStage {
                        duration: s(10),
                        from_rps: 0.0,
                        to_rps: 100.0,
                    },
                    RateStage {
                        duration: s(20),
                        from_rps: 100.0,
                        to_rps: 100.0,
                    },
                ]),
                arrival: Arrival::Constant,
                connections: 50,
            },
            StopRule::Duration(s(30)),
        ),
        // connection stages
        (
            "stages = \"10s:1->20c\"",
            LoadModel::ClosedStages(vec![ConnStage {
                duration: s(10),
                from: 1,
                to: 20,
            }]),
            StopRule::Duration(s(10)),
        ),
        // bursts: a count of bursts is a stop rule
        (
            "burst = 10\nbursts = 5\nburst_interval = \"50ms\"",
            LoadModel::Burst {
                size: 10,
                interval: Duration::from_millis(50),
                bursts: Some(5),
            },
            StopRule::Requests(50),
        ),
        // bursts for a duration
        (
            "burst = 3\nduration = \"1s\"",
            LoadModel::Burst {
                size: 3,
                interval: crate::model::load_spec::DEFAULT_BURST_INTERVAL,
                bursts: None,
            },
            StopRule::Duration(s(1)),
        ),
    ];
    for (keys, load, stop) in rows {
        let text = format!("{GET}[[phase]]\n{keys}\n");
        let sc = parse_str(&text).unwrap_or_else(|e| panic!("{keys}: {e}"));
        assert_eq!(sc.phases[0].load, load, "{keys}");
        assert_eq!(sc.phases[0].stop, stop, "{keys}");
        assert_eq!(sc.phases[0].name, "phase 1");
    }
}

#[test]
fn errors_give_file_line_column_and_the_valid_choices() {
    // (file text, line, column, words of the message)
    let rows: &[(&str, usize, usize, &[&str])] = &[
        // an unknown top-level key: the valid keys are listed
        ("sed = 7\n", 1, 1, &["unknown field `sed`", "`seed`", "`request`", "`phase`"]),
        // an unknown request key
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbodyy = \"x\"\n",
            4, 1,
            &["unknown field `bodyy`", "`body`", "`body_file`", "`weight`"],
        ),
        // an unknown phase key
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\ncount = 1\nthreads = 2\n",
            6, 1,
            &["unknown field `threads`", "`connections`", "`rate`", "`stages`"],
        ),
        // TOML syntax
        ("[[request]\n", 1, 11, &["expected `]`"]),
        // a missing required key
        ("[[request]]\nname = \"a\"\n", 1, 1, &["missing field `path`"]),
        // an unknown generator, at the slot inside the string
        (
            "[[request]]\nname = \"a\"\npath = \"/kv/{zipff:10:1}\"\n",
            3, 13,
            &["request 'a', path", "unknown generator 'zipff'", "{zipf:N:S}", "{seq:FROM:TO}"],
        ),
        // bad arguments of a generator in a body
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody = 'x {zipf:0:1.1}'\n",
            4, 11,
            &["request 'a', body", "N must be from 1", "{zipf:N:S}"],
        ),
        // a string with escapes: the position is the string's
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody = \"\\t{nope}\"\n",
            4, 8,
            &["unknown generator 'nope'"],
        ),
        // raw bytes in a header
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { X = \"{random_bytes:4}\" }\n",
            4, 18,
            &["header X", "raw bytes", "{random_text:4}"],
        ),
        // weight 0
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n",
            4, 10,
            &["request 'a', weight", "0 is not a positive integer"],
        ),
        // weight 0 in a phase's mix
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nmix = { a = 0 }\ncount = 1\n",
            5, 13,
            &["weight 0 of 'a'", "positive integer"],
        ),
        // a missing data file
        (
            "[[request]]\nname = \"a\"\npath = \"/{line:keys.txt}\"\n",
            3, 10,
            &["cannot read data file '/nonexistent/keys.txt'"],
        ),
        // a missing body file
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nbody_file = \"b.json\"\n",
            4, 13,
            &["body_file", "cannot read '/nonexistent/b.json'"],
        ),
        // a missing environment variable
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { Authorization = \"Bearer {env:NOPE}\" }\n",
            4, 37,
            &["header Authorization", "NOPE is not set"],
        ),
        // a phase naming an unknown request: the requests are listed
        (
            "[[request]]\nname = \"put\"\npath = \"/\"\n[[request]]\nname = \"get\"\npath = \"/\"\n[[phase]]\nrequests = [\"put\", \"gett\"]\ncount = 1\n",
            8, 20,
            &["no request 'gett'", "the requests are put, get"],
        ),
        // a phase with no stop rule
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nname = \"read\"\nrate = 100\n",
            4, 1,
            &["phase 'read'", "no stop rule", "count = N", "duration"],
        ),
        // two stop rules
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\ncount = 5\nduration = \"1s\"\n",
            6, 12,
            &["count and duration conflict"],
        ),
        // stages and a rate
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nstages = \"1s:5\"\nrate = 5\n",
            6, 8,
            &["stages and rate conflict"],
        ),
        // a bad unit: the command line's message
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nrate = \"fast\"\ncount = 1\n",
            5, 8,
            &["phase 1, rate: invalid rate 'fast'", "250/s"],
        ),
        // a bad arrival
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nrate = 5\narrival = \"bursty\"\ncount = 1\n",
            6, 11,
            &["unknown arrival 'bursty'", "\"constant\" or \"poisson\""],
        ),
        // arrival in a closed loop
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\narrival = \"poisson\"\ncount = 1\n",
            5, 11,
            &["arrival applies to an open loop"],
        ),
        // a path without its leading slash
        (
            "[[request]]\nname = \"a\"\npath = \"kv/1\"\n",
            3, 8,
            &["does not start with '/'", "\"/kv/{seq}\""],
        ),
        // a bad method
        (
            "[[request]]\nname = \"a\"\nmethod = \"GE T\"\npath = \"/\"\n",
            3, 10,
            &["invalid method 'GE T'", "GET, POST"],
        ),
        // Content-Length is computed
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { \"Content-Length\" = \"3\" }\n",
            4, 13,
            &["Content-Length is set by reqlife"],
        ),
        // two requests of one name
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/b\"\n",
            5, 8,
            &["a request named 'a' is already defined"],
        ),
        // requests and mix together
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nrequests = [\"a\"]\nmix = { a = 1 }\ncount = 1\n",
            6, 7,
            &["requests and mix conflict"],
        ),
        // zero connections
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\nconnections = 0\ncount = 1\n",
            5, 15,
            &["connections must be at least 1"],
        ),
        // a count that is not whole
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\ncount = 1.5\n",
            5, 9,
            &["phase 1, count: 1.5 is not a whole number"],
        ),
        // a value of the wrong type
        (
            "[[request]]\nname = \"a\"\npath = \"/\"\n[[phase]]\ncount = true\n",
            5, 9,
            &["a number, or a string with a unit"],
        ),
    ];
    for &(text, line, col, words) in rows {
        let e = parse_str(text)
            .err()
            .unwrap_or_else(|| panic!("accepted: {text}"));
        let shown = e.to_string();
        assert_eq!(e.position, Some((line, col)), "{text}\n{shown}");
        assert!(
            shown.starts_with(&format!("s.toml:{line}:{col}: ")),
            "{shown}"
        );
        for w in words {
            assert!(e.message.contains(w), "{text}\n'{shown}' lacks '{w}'");
        }
    }
    // errors with no position
    let e = parse_str("seed = 1\n").unwrap_err();
    assert_eq!(e.to_string().split(": ").next(), Some("s.toml"));
    assert!(e.message.contains("no [[request]]"), "{e}");
    let e = load(Path::new("/nonexistent/s.toml")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/s.toml: cannot read the scenario"),
        "{e}"
    );
}

#[test]
fn data_files_and_env_resolve_from_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keys.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(dir.path().join("v.json"), "{\"v\": 1}").unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        "[[request]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/k/{line:keys.txt}\"\nbody_file = \"v.json\"\n",
    )
    .unwrap();
    let s = load(&file).unwrap();
    let spec = &s.requests[0].spec;
    assert_eq!(
        spec.body.static_bytes(),
        Some(&b"{\"v\": 1}"[..]),
        "a body file is not a template"
    );
    let mut out = Vec::new();
    spec.path
        .render_into(&mut out, &mut GenState::new(0, 0, 1), 1);
    assert_eq!(out, b"/k/beta");
    assert!(s.phases.is_empty());
    assert_eq!(s.default_mix().entries().collect::<Vec<_>>(), [(0, 1)]);
    // a fixed environment
    let t =
        parse_str("[[request]]\nname = \"a\"\npath = \"/\"\nheaders = { A = \"x {env:TOKEN}\" }\n")
            .unwrap();
    assert_eq!(
        t.requests[0].spec.headers[0].1.static_bytes(),
        Some(&b"x t0k"[..])
    );
}

// That parsing never panics, whatever the text: fuzz/fuzz_targets/scenario.rs.
