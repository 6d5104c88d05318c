//! Habits of other tools' users: compound durations; a negative rate in words.
//! Every load is a fraction of a second, on 127.0.0.1.

mod common;

use common::*;
use reqlife::server::ServerTls;

#[test]
fn a_negative_rate_gets_a_sentence() {
    let out = run(&["run", "-R", "-5", "http://127.0.0.1:9/"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("the rate must be a positive number of requests per second"),
        "{err}"
    );
    assert!(!err.contains("'-- -5'"), "no clap tip: {err}");
}

#[test]
fn compound_durations_are_accepted() {
    let s = embedded(ServerTls::None);
    let out = run_ok(&[
        "run",
        "-d",
        "0m300ms",
        "-c",
        "1",
        "-t",
        "1",
        "--json",
        &s.url("/"),
    ]);
    let d = num(&summary(&out), "duration_s");
    assert!((0.29..=0.31).contains(&d), "{d}");
}
