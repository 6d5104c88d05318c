//! The README against the tool. Its sample output ("What a run prints") has the structure of a
//! real run's report: the same lines in the same order, each with its label and its fields,
//! and the phase tables with their columns and rows; the figures are not compared, nor the
//! asides in parentheses (`(space savings 0.00%)`, `(the embedded target)`). Its test command
//! is the one `.ci/run` runs, a script that installs what the tests need, and the manual's
//! Testing section (which the README links) says what it installs. Its links, and the
//! manual's, are checked in `docs.rs`.

use crate::common::*;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn readme() -> String {
    std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md")
}

/// The lines of the first code block after the line `heading` (None when there is none).
fn block_after(text: &str, heading: &str) -> Option<Vec<String>> {
    let rest = &text[text.find(heading)? + heading.len()..];
    let start = rest.find("\n```")? + 4;
    let body = &rest[start..];
    let body = &body[body.find('\n')? + 1..];
    let end = body.find("\n```")?;
    Some(body[..end].lines().map(str::to_string).collect())
}

/// The structure of a line of the text report: the figures (numbers, sizes, durations,
/// rates, addresses) as `#`, the asides in parentheses left out, spaces collapsed.
/// `  Traffic      111.04MiB (116435025) total, 105.12MiB (110225157) headers (space savings
/// 0.00%), 5.92MiB (6209868) data` is `Traffic # total, # headers, # data`.
fn shape(line: &str) -> String {
    let mut plain = String::new();
    let mut depth = 0usize;
    for c in line.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    plain
        .split_whitespace()
        .map(|w| {
            // An interval's bounds (`[436.84us,`, `6.78ms]`, `-]` where it has none) are figures.
            // A rough figure (`~1.91ms`: too few values beyond it) is one too.
            let bound = w.trim_start_matches(['[', '~']);
            let figure = bound.starts_with(|c: char| c.is_ascii_digit())
                || (w.starts_with('[') || w.ends_with(']') || w.ends_with("],"))
                    && bound.starts_with('-')
                || w.starts_with("http://")
                || w.starts_with("https://");
            if figure {
                // A figure keeps the punctuation that follows it: `5.00s;` is `#;`.
                let tail: String = w
                    .chars()
                    .rev()
                    .take_while(|c| matches!(c, ',' | ';'))
                    .collect();
                format!("#{tail}")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        // An aside between a word and its comma leaves a space: `headers ,`.
        .replace(" ,", ",")
        .replace(" ;", ";")
}

/// The report's lines as shapes: blank lines, warnings, the verdict on the load and the
/// footnote of rough figures (which depend on the machine) left out. A line the report wrapped to fit 80 columns is joined back first (its continuations
/// are indented 6 or more, deeper than any table row): where it breaks depends on the
/// figures' widths.
fn shapes<S: AsRef<str>>(lines: &[S]) -> Vec<String> {
    let mut joined: Vec<String> = Vec::new();
    for l in lines.iter().map(|l| l.as_ref()) {
        let indent = l.len() - l.trim_start().len();
        match joined.last_mut() {
            Some(last) if indent >= 6 && !l.trim().is_empty() && !last.trim().is_empty() => {
                last.push(' ');
                last.push_str(l.trim());
            }
            _ => joined.push(l.to_string()),
        }
    }
    joined
        .iter()
        .map(|l| l.trim())
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with("WARNING")
                && !l.starts_with("Load ")
                && !l.starts_with("~:")
        })
        .map(shape)
        .collect()
}

#[test]
fn shapes_keep_labels_and_fields_not_figures() {
    // (line, shape)
    for (line, want) in [
        (
            "  Traffic      111.04MiB (116435025) total, 105.12MiB (110225157) headers (space savings 0.00%), 5.92MiB (6209868) data",
            "Traffic # total, # headers, # data",
        ),
        (
            "  Traffic      3.79MiB (3978676) total, 3.59MiB (3766480) headers, 207.22KiB (212196) data",
            "Traffic # total, # headers, # data",
        ),
        (
            "  Requests     517489 total, 517489 ok, 0 errors, 0 non-2xx/3xx in 5.00s",
            "Requests # total, # ok, # errors, # non-2xx/3xx in #",
        ),
        (
            "  Throughput   103487.80 req/s (the 517439 that ended within the 5.00s); read 111.04MiB (22.21MiB/s), written 33.56MiB",
            "Throughput # req/s; read #, written #",
        ),
        (
            "Running 5.00s test @ http://127.0.0.1:46763/ (the embedded target)",
            "Running # test @ #",
        ),
        (
            "  Phase              min      mean       p50       p90       p99     p99.9    p99.99       max      count",
            "Phase min mean p50 p90 p99 p99.9 p99.99 max count",
        ),
        (
            "  connect                         498.94us  568.83us  657.92us  657.92us  657.92us  (50 req)",
            "connect # # # # #",
        ),
        (
            "  server total (server's total)   269.06us  331.52us  502.53us  798.72us    2.74ms     58.9%",
            "server total # # # # # #",
        ),
        (
            "  Precision    total at 95%: p99.9 [4.22ms, 5.96ms], p99.99 [6.60ms, -] (order statistics)",
            "Precision total at # p99.9 #, #, p99.99 #, #",
        ),
    ] {
        assert_eq!(shape(line), want, "{line}");
    }
    // A wrapped line shapes as the line it was; table rows stay apart.
    let whole = ["  End          48 ended in the drain (3.43ms after the window, 0 timed out), 0 still in flight, 0 due but never sent", "  read   0ns"];
    let wrapped = [
        "  End          48 ended in the drain (3.43ms after the window, 0 timed out), 0",
        "               still in flight, 0 due but never sent",
        "  read   0ns",
    ];
    assert_eq!(shapes(&wrapped), shapes(&whole));
    assert_eq!(shapes(&wrapped).len(), 2);
}

#[test]
fn the_sample_output_has_the_structure_of_a_real_run() {
    let text = readme();
    let heading = "## What a run prints";
    let sample = block_after(&text, heading).expect("the README's sample output");
    let sample = shapes(&sample);
    // The lines the sample must show, so that a README without them fails too.
    for label in [
        "Running",
        "Requests",
        "Throughput",
        "End",
        "Traffic",
        "Connections",
        "Phase mean p50 p90 p99 p99.9 max count",
        "Life of a request:",
        "Phase p50 p90 p99 p99.9 p50 share",
        "Status codes",
        "Errors",
    ] {
        assert!(
            sample.iter().any(|l| l.starts_with(label)),
            "the sample has no {label:?} line: {sample:#?}"
        );
    }
    // A real run of the command the README shows (`run -d 5s`, the embedded target), shorter.
    let out = run_ok(&["run", "-d", "1s"]);
    let real = stdout(&out);
    let real: Vec<&str> = real.lines().collect();
    let real = shapes(&real);
    // The End line is there only when requests were in flight as the window closed: a worker
    // stalled across the deadline finds its last responses stamped (by the kernel) inside
    // the window, and then there is none. It is compared where both have it.
    let (sample, real) = if real.iter().any(|l| l.starts_with("End ")) {
        (sample, real)
    } else {
        let no_end = |v: Vec<String>| -> Vec<String> {
            v.into_iter().filter(|l| !l.starts_with("End ")).collect()
        };
        (no_end(sample), real)
    };
    if sample != real {
        let width = sample.iter().map(String::len).max().unwrap_or(0);
        let rows: Vec<String> = (0..sample.len().max(real.len()))
            .map(|i| {
                let a = sample.get(i).map_or("", String::as_str);
                let b = real.get(i).map_or("", String::as_str);
                let mark = if a == b { " " } else { "≠" };
                format!("{mark} {a:<width$} | {b}")
            })
            .collect();
        panic!(
            "README.md's sample output ({heading}) no longer has the structure of a real run's \
             report; update the sample from `cargo run --release -- run -d 5s`.\n  README \
             (left) | real run (right):\n{}",
            rows.join("\n")
        );
    }
}

#[test]
fn the_test_command_is_what_ci_runs_and_installs_what_the_tests_need() {
    let text = readme();
    // The README opens with two commands: the first run, then the tests.
    let top = block_after(&text, "# reqlife").expect("the README's first commands");
    let commands: Vec<&str> = top
        .iter()
        .map(|l| l.split('#').next().unwrap().trim())
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "{top:?}");
    assert_eq!(commands[0], "cargo run --release -- run");
    let test = commands[1];
    // `.ci/run` ends with exactly that command, after the format and lint checks.
    let ci = std::fs::read_to_string(Path::new(ROOT).join(".ci/run")).unwrap();
    let steps: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert_eq!(steps.last().copied(), Some(test), ".ci/run: {steps:?}");
    assert_eq!(
        steps.iter().filter(|s| s.contains("cargo test")).count(),
        0,
        ".ci/run runs the tests through the README's command only: {steps:?}"
    );
    // The script it names installs the tools the tests use when they are missing (with no
    // standard input), then runs the tests.
    let script = test
        .split_whitespace()
        .find(|w| w.contains('/'))
        .expect("a script");
    let body = std::fs::read_to_string(Path::new(ROOT).join(script))
        .unwrap_or_else(|e| panic!("{script}: {e}"));
    for needed in [
        "nginx",
        "nghttp2-server",
        "nghttp2-client",
        "chromium",
        "iproute2",
        "yamllint",
        "thrift",
        "apt-get install -y",
        "DEBIAN_FRONTEND=noninteractive",
    ] {
        assert!(
            body.contains(needed),
            "{script} does not mention {needed:?}"
        );
    }
    let last = body
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'));
    // The tests' two steps and their totals: `.ci/steps` (tests/checks/ci.rs).
    assert_eq!(
        last,
        Some("exec bash .ci/steps"),
        "{script} ends with the tests"
    );
    // The README links the manual's Testing section, which says what it installs.
    assert!(
        text.contains("](docs/development.md#testing)"),
        "the README does not link docs/development.md#testing"
    );
    let dev = std::fs::read_to_string(Path::new(ROOT).join("docs/development.md")).unwrap();
    let testing = &dev[dev
        .find("## Testing")
        .expect("docs/development.md: ## Testing")..];
    let testing = &testing[..testing[3..].find("\n## ").map_or(testing.len(), |i| i + 3)];
    for package in [
        "nginx",
        "nghttp2-server",
        "nghttp2-client",
        "chromium",
        "yamllint",
        "thrift",
    ] {
        assert!(
            testing.contains(&format!("`{package}`")),
            "docs/development.md's Testing section does not say that {script} installs {package}"
        );
    }
}
