//! `--help`: `run`'s flags grouped under headings in the order people look for them, and
//! `knee --help` listing only the flags knee accepts.

use crate::common::*;

/// The flags (`-x` and `--xyz`) a help text lists, in order.
fn flags(help: &str) -> Vec<String> {
    help.lines()
        .filter(|l| l.trim_start().starts_with('-'))
        .flat_map(|l| {
            l.split_whitespace()
                .take_while(|w| w.starts_with('-'))
                .map(|w| w.trim_end_matches(',').to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn run_help_groups_the_flags_under_headings_in_order() {
    let help = stdout(&run_ok(&["run", "--help"]));
    let headings: Vec<&str> = help
        .lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect();
    assert_eq!(
        headings,
        [
            "Arguments:",
            "Options:",
            "Target:",
            "Embedded target:",
            "Load:",
            "Protocol:",
            "gRPC:",
            "Output:",
            "Analysis:",
            "Server side:",
            "Exit codes:"
        ],
        "{help}"
    );
    // Each flag under its heading (a few of each), and the request's flags before the store's.
    let at = |s: &str| {
        help.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{help}"))
    };
    for (heading, next, flag) in [
        ("Target:", "Embedded target:", "--method"),
        ("Target:", "Embedded target:", "--header"),
        ("Embedded target:", "Load:", "--kv-preload"),
        ("Load:", "Protocol:", "--connections"),
        ("Load:", "Protocol:", "--rate"),
        ("Protocol:", "Output:", "--http2"),
        ("Protocol:", "gRPC:", "--insecure"),
        ("gRPC:", "Output:", "--grpc"),
        ("gRPC:", "Output:", "--proto-set"),
        ("Output:", "Analysis:", "--output"),
        ("Output:", "Analysis:", "--json"),
        ("Analysis:", "Server side:", "--threshold"),
        ("Server side:", "Exit codes:", "--server-probes"),
        ("Server side:", "Exit codes:", "--server-fn"),
    ] {
        let f = at(&format!(" {flag}"));
        let end = if next.is_empty() {
            help.len()
        } else {
            at(next)
        };
        assert!(at(heading) < f && f < end, "{flag} not under {heading}");
    }
}

#[test]
fn knee_help_lists_only_the_flags_knee_accepts() {
    let help = stdout(&run_ok(&["knee", "--help"]));
    let listed = flags(&help);
    for f in [
        "--slo",
        "--step",
        "--connections",
        "--method",
        "--http2",
        "--json",
    ] {
        assert!(listed.iter().any(|l| l == f), "{f} missing:\n{help}");
    }
    // (flag as typed, its value): hidden from the help, and refused.
    for (flag, value) in [
        ("--rate", Some("100")),
        ("--duration", Some("5s")),
        ("--requests", Some("100")),
        ("--stages", Some("1s:10")),
        ("--burst", Some("10")),
        ("--bursts", Some("2")),
        ("--burst-interval", Some("20ms")),
        ("--repeat", Some("2")),
        ("--scenario", Some("examples/kv.toml")),
        ("--targets", Some("targets.txt")),
        ("--start-at", Some("+1s")),
        ("--abort-on-fail", None),
        ("--hdr-log", Some("x.hlog")),
        ("--every", Some("1s")),
    ] {
        assert!(!listed.iter().any(|l| l == flag), "{flag} listed:\n{help}");
        let mut args = vec!["knee", "--slo", "p99<1ms", flag];
        args.extend(value);
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("conflict"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}
