//! What the help and the manual list, against the code's own lists: the URL schemes a run
//! takes (`cli::resolve::URL_SCHEMES`, which the URL parser refuses every other scheme with),
//! the embedded target's routes (`server::routes::ROUTES`, which its router is checked
//! against, and from which `serve` prints its list, its `--help` and its 404), the faults of
//! `serve --faults` (`server::faults::HTTP1_FAULTS`, `H2_FAULTS`) and the record's fields
//! (`schema/runrecord.schema.json`). A scheme, route, fault or field added to the code and not
//! to the docs, or left in the docs after the code dropped it, fails here.

use crate::common::*;
use reqlife::cli::resolve::{target, URL_SCHEMES};
use reqlife::server::faults::{H2_FAULTS, HTTP1_FAULTS};
use reqlife::server::routes::ROUTES;
use std::collections::BTreeSet;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The text of `text` from `start` to the first `end` after it (`end` left out).
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let from = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in:\n{text}"));
    let rest = &text[from..];
    &rest[..rest[start.len()..]
        .find(end)
        .map_or(rest.len(), |i| i + start.len())]
}

/// Every `scheme://` a text names.
fn schemes_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in text.match_indices("://") {
        let head = &text[..at];
        let start = head
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        if start < at {
            out.insert(format!("{}://", &text[start..at]));
        }
    }
    out
}

fn set<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> BTreeSet<String> {
    items.into_iter().map(|s| s.as_ref().to_string()).collect()
}

#[test]
fn the_url_schemes_listed_are_the_ones_the_parser_takes() {
    let code = set(URL_SCHEMES);
    // The list is what the parser does: each of its schemes is taken, and every other one is
    // refused with the list.
    for scheme in &code {
        let url = format!("{scheme}127.0.0.1:9");
        assert!(target(&url, &[]).is_ok(), "{url} is refused");
    }
    for other in [
        "ftp://", "udp://", "grpc://", "h2c://", "quic://", "unix://",
    ] {
        let e = target(&format!("{other}127.0.0.1:9"), &[]).unwrap_err().0;
        for scheme in &code {
            assert!(e.contains(scheme.as_str()), "{other}: {e}");
        }
    }
    // `run --help` and `knee --help`: the URL argument.
    for command in ["run", "knee"] {
        let help = stdout(&run_ok(&[command, "--help"]));
        let url = between(&help, "  [URL]\n", "\n\n");
        assert_eq!(schemes_in(url), code, "{command} --help's URL: {url}");
    }
    // The manual's reference and the README: the sentence that lists them.
    let reference = read("docs/reference.md");
    let listed = between(&reference, "The URL's scheme is", ";");
    assert_eq!(schemes_in(listed), code, "docs/reference.md: {listed}");
    let readme = read("README.md");
    let listed = between(&readme, "A URL is", ";");
    assert_eq!(schemes_in(listed), code, "README.md: {listed}");
}

#[test]
fn the_routes_listed_are_the_ones_the_target_serves() {
    let code: Vec<String> = ROUTES.iter().map(|r| r.to_string()).collect();
    // The manual's list: one bullet per route, the route first.
    let reference = read("docs/reference.md");
    let section = between(&reference, "### Routes", "\n#");
    let listed: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .map(|l| l[..l.find('`').unwrap()].to_string())
        .collect();
    assert_eq!(listed, code, "docs/reference.md's routes");
    // `serve --help` ends with them (parameters in capitals: clap reads `{n}` as a newline).
    let help = stdout(&run_ok(&["serve", "--help"]));
    let listed: Vec<String> = between(&help, "Routes", "\n\n")
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with('/'))
        .map(str::to_lowercase)
        .collect();
    assert_eq!(listed, code, "serve --help's routes:\n{help}");
}

#[test]
fn the_faults_listed_are_the_ones_serve_faults_has() {
    let page = read("docs/troubleshooting.md");
    let faults = between(&page, "The faults of `serve --faults`", "\n#");
    let (http1, h2) = faults.split_at(faults.find("HTTP/2 (h2c").expect("the HTTP/2 faults"));
    let first_cells = |table: &str| -> Vec<String> {
        table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .map(|l| l[..l.find('`').unwrap()].to_string())
            .collect()
    };
    let paths: Vec<String> = HTTP1_FAULTS.iter().map(|f| format!("/fault/{f}")).collect();
    assert_eq!(
        first_cells(http1),
        paths,
        "docs/troubleshooting.md's HTTP/1.1 faults"
    );
    assert_eq!(
        first_cells(h2),
        H2_FAULTS.iter().map(|f| f.to_string()).collect::<Vec<_>>(),
        "docs/troubleshooting.md's HTTP/2 faults"
    );
}

#[test]
fn the_record_page_names_every_field_of_the_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&read("schema/runrecord.schema.json")).unwrap();
    let keys = |v: &serde_json::Value| -> BTreeSet<String> {
        v["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .cloned()
            .collect()
    };
    let top = keys(&schema);
    let summary = keys(&schema["properties"]["summary"]);
    assert!(
        top.contains("summary") && summary.contains("throughput_rps"),
        "{top:?}"
    );
    let page = read("docs/record.md");
    let fields = between(&page, "## The record's fields", "\n## ");
    let (top_table, summary_table) =
        fields.split_at(fields.find("The summary").expect("the summary's table"));
    let rows = |table: &str| -> BTreeSet<String> {
        table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .map(|l| l[..l.find('`').unwrap()].to_string())
            .collect()
    };
    assert_eq!(
        rows(top_table),
        top,
        "docs/record.md's table of the record's fields"
    );
    assert_eq!(
        rows(summary_table),
        summary,
        "docs/record.md's table of the summary's fields"
    );
}
