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

/// `run`'s help at `columns` columns: `-h` or `--help`.
fn run_help(flag: &str, columns: usize) -> String {
    let out = reqlife()
        .args(["run", flag])
        .env("COLUMNS", columns.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out)
}

/// The headings of a help text, in order.
fn headings(help: &str) -> Vec<&str> {
    help.lines()
        .filter(|l| !l.starts_with(' ') && l.ends_with(':'))
        .collect()
}

/// `run -h` is the newcomer's page (issue 46: it was 298 lines at 100 columns, `--help` 426):
/// the flags most runs need, each on one line with its text in 80 columns as in 100, under
/// `--help`'s headings in the same order, the last line naming how to see the rest; `--help`
/// keeps every flag of `run`.
#[test]
fn run_h_is_one_page_and_help_keeps_every_flag() {
    let long = run_help("--help", 100);
    for columns in [80, 100] {
        let short = run_help("-h", columns);
        let lines: Vec<&str> = short.lines().collect();
        assert!(lines.len() <= 60, "{} lines:\n{short}", lines.len());
        for l in &lines {
            assert!(l.chars().count() <= columns, "wider than {columns}: {l:?}");
        }
        // Every indented line is a flag (or the URL) and its text, on one line.
        let listed: Vec<&&str> = lines.iter().filter(|l| l.starts_with(' ')).collect();
        for l in &listed {
            let t = l.trim_start();
            let parts = t.split("  ").filter(|p| !p.trim().is_empty()).count();
            assert!(
                (t.starts_with('-') || t.starts_with("[URL]")) && parts >= 2,
                "not a flag and its text on one line at {columns} columns: {l:?}\n{short}"
            );
        }
        assert!(listed.len() >= 25, "{short}");
        assert_eq!(
            lines.last().copied(),
            Some("Every flag, its details and the exit codes: reqlife run --help"),
            "{short}"
        );
    }
    let short = run_help("-h", 100);
    // Its headings are --help's, in the same order.
    let long_headings = headings(&long);
    let mut at = 0;
    for h in headings(&short) {
        let found = long_headings[at..].iter().position(|l| *l == h);
        assert!(
            found.is_some(),
            "{h} not in --help's order {long_headings:?}"
        );
        at += found.unwrap() + 1;
    }
    // --help lists every flag of run, and every one -h lists.
    let long_flags = flags(&long);
    let short_flags = flags(&short);
    for f in &short_flags {
        assert!(long_flags.contains(f), "{f} is in -h, not in --help");
    }
    use clap::CommandFactory;
    let cli = reqlife::cli::Cli::command();
    let run = cli.find_subcommand("run").unwrap();
    let mut hidden = 0;
    for arg in run.get_arguments().filter(|a| !a.is_hide_set()) {
        let Some(name) = arg.get_long() else { continue };
        let name = format!("--{name}");
        assert!(long_flags.contains(&name), "{name} is not in --help");
        hidden += usize::from(!short_flags.contains(&name));
    }
    assert!(
        hidden >= 50,
        "only {hidden} flags kept for --help:\n{short}"
    );
    // The details stay in --help: the exit codes, and the whole text of a flag -h shortens.
    assert!(long.contains("\nExit codes:\n"), "{long}");
    let words = long.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("Without one, the embedded target is started in-process"),
        "{long}"
    );
    assert!(!short.contains("Exit codes:"), "{short}");
}
