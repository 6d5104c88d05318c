//! reqlife: a load generator, latency recorder and analyst in one library.
//!
//! The pipeline (see DESIGN.md): `cli` builds a validated [`model::RunPlan`]; `load` turns it
//! into [`model::Ticket`]s for worker threads; `engine` sends each request and stamps a
//! [`model::Timestamps`]; `recorder` folds samples into per-thread histograms and merges them
//! into a [`recorder::RunRecord`]; `report` renders records.

pub mod analysis;
pub mod app;
pub mod cli;
pub mod engine;
pub mod load;
pub mod model;
pub mod recorder;
pub mod report;
pub mod server;
pub mod target;
