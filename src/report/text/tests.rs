//! The text report's lines that once misled (issue 46): a knee search's first block, the life
//! of a request's shares, the traffic of responses that never completed, counts of one, and
//! one style of units.

use super::*;
use crate::report::fixture;

/// The text report of `r` as a user sees it (80 columns).
fn report(r: &RunRecord) -> String {
    render(r, TextOptions::default())
}

/// `text` with every run of blanks and line ends one space: wrapped lines joined back.
fn joined(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn a_knee_search_s_first_block_says_it_adds_up_every_step() {
    // A knee record: the steps are its levels; its config is the first step's plan, with its
    // rate. Before, the header said "offered 124 req/s" (the first step's) and the totals
    // read as one run's.
    let mut r = fixture::sweep();
    r.config.sweep = None;
    r.config.rate_rps = Some(124.0);
    r.knee = Some(crate::analysis::knee::KneeResult {
        slos: vec!["p99<=20ms".into()],
        precision: 0.05,
        answer_rps: None,
        confirmed: false,
        limited_by: "server".into(),
        steps: Vec::new(),
        summary: String::new(),
    });
    let text = report(&r);
    assert!(!text.contains("offered 124 req/s"), "{text}");
    let lead = text
        .lines()
        .position(|l| l.starts_with("  All 2 steps together"))
        .unwrap_or_else(|| panic!("no lead line:\n{text}"));
    let requests = text
        .lines()
        .position(|l| l.starts_with("  Requests"))
        .unwrap();
    assert!(lead < requests, "{text}");
    // A sweep says so of its levels.
    let text = report(&fixture::sweep());
    assert!(text.contains("  All 2 levels together"), "{text}");
    // A single run has no such line.
    assert!(!report(&fixture::plain()).contains("together (each one's own"));
}

/// The p50 share cells of the life of a request, by row name.
fn shares(text: &str) -> Vec<(String, String)> {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.contains("Life of a request"));
    lines.next();
    lines.next(); // the head
    lines
        .take_while(|l| !l.trim().is_empty() && !l.starts_with("  network+client ="))
        .map(|l| {
            // The name column: 31 wide after the indent of 2.
            let name = l.chars().skip(2).take(31).collect::<String>();
            let share = l.split_whitespace().last().unwrap();
            (name.trim().to_string(), share.to_string())
        })
        .collect()
}

#[test]
fn the_life_of_a_request_s_shares_count_the_server_s_parts_once() {
    // The fixture's server sends parse, handler and total: parse and handler are parts of
    // its total. Before, every share was a plain percentage, and those above the total's
    // row added up to far more than 100%.
    let text = report(&fixture::plain());
    let rows = shares(&text);
    let mut added = 0.0;
    for (name, share) in &rows {
        if name == "total" || share.starts_with('(') || share.ends_with(')') {
            continue;
        }
        let v = share.trim_end_matches('%').parse::<f64>();
        added += v.unwrap_or_else(|_| panic!("{name}: {share:?} in\n{text}"));
    }
    assert!(
        (90.0..=110.0).contains(&added),
        "{added}% of {rows:?}\n{text}"
    );
    for part in ["server parse", "server handler"] {
        let (_, share) = rows
            .iter()
            .find(|(n, _)| n == part)
            .unwrap_or_else(|| panic!("no {part}: {rows:?}"));
        assert!(
            share.starts_with('(') && share.ends_with("%)"),
            "{part}: {share}"
        );
    }
    assert!(
        joined(&text)
            .contains("(in parentheses): a part of the server's total, counted in its share"),
        "{text}"
    );
}

#[test]
fn bytes_of_responses_that_never_completed_are_said() {
    // /fault/drip's responses: headers and some body read, then the timeout, so no header
    // or data byte was counted. Before: "153B (153) total, 0B (0) headers, 0B (0) data".
    let mut r = fixture::plain();
    r.summary.bytes.read = 153;
    r.summary.bytes.headers = 0;
    r.summary.bytes.body = 0;
    r.summary.bytes.body_decoded = 0;
    let text = report(&r);
    assert!(
        joined(&text).contains("0B (0) data, 153B (153) more in responses that did not complete"),
        "{text}"
    );
    // Every response complete: nothing more to say.
    let mut r = fixture::plain();
    r.summary.requests.errors = 0;
    assert!(!report(&r).contains("did not complete"));
}

#[test]
fn one_of_a_thing_is_singular() {
    let r = fixture::record(
        &["-c", "1", "-t", "1", "-n", "300"],
        fixture::Shape::default(),
    );
    let text = report(&r);
    assert!(text.contains("  1 thread and 1 connection, GET"), "{text}");
    let mut r = fixture::plain();
    r.summary.requests.errors = 1;
    assert!(report(&r).contains(" 1 error, "), "{}", report(&r));
}
