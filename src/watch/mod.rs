//! Watching a run while it goes: the views fed by the merged intervals that the run's
//! collector hands over as each is final, never by the workers. [`live`] prints one line per
//! interval (`--every`), [`tui`] draws the full-screen terminal view (`--live`) and
//! [`metrics`] serves the run's figures to Prometheus on an HTTP server of its own thread
//! (`--metrics-addr`). What renders a finished record is [`crate::report`]'s.
//!
//! A layer above `recorder` (its interval snapshots) and `plan` (what the run will do), beside
//! `load`, `server` and `probe`; `app` wires a view to a run (checked by
//! `tests/checks/layers.rs`).

pub mod live;
pub mod metrics;
pub mod tui;
