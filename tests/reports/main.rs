//! What a run leaves and what is made from it: the record and its schema, the HTML page,
//! merge (in one host and across network namespaces), thresholds, `stats` and the summary's invariants.
//! One test binary of several former ones (`tests/reports/NAME.rs` was `tests/NAME.rs`): they
//! share the helpers and the setup, and the crate is linked once for them. Each module is the
//! test file it was (`cargo test --test reports record::` runs that module's tests alone).

#[path = "../common/mod.rs"]
mod common;

mod html;
mod invariants;
mod merge;
mod netns;
mod precision;
mod record;
mod stats;
mod switches;
mod thresholds;
mod together;
mod until;
mod validity;
mod width;
