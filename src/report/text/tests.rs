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
