//! The text report's lines that once misled (issue 46): a knee search's first block, the life
//! of a request's shares, the traffic of responses that never completed, counts of one, and
//! one style of units.

use super::*;
use crate::report::fixture;

/// The text report of `r` as a user sees it (80 columns).
fn report(r: &RunRecord) -> String {
    render(r, TextOptions::default())
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
