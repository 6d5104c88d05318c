//! reqlife: a load generator, latency recorder and analyst in one library.
//!
//! The pipeline (see "How it works" in `docs/development.md`): `cli` builds a validated
//! [`plan::RunPlan`]; `load` turns it into [`model::Ticket`]s for worker threads; `engine` sends
//! each request and stamps a [`model::Timestamps`]; `recorder` folds samples into per-thread
//! histograms and merges them into a [`recorder::record::RunRecord`]; `watch` shows the run while
//! it goes; `report` renders records.
//!
//! The modules form layers, lowest first; each uses only those below it (checked by
//! `tests/checks/layers.rs`): `util` (units, the random generator, limits, the start gate) →
//! `model` (the types that flow: samples, timestamps, tickets, load models, URLs) →
//! `workload` (what is sent: request templates, scenarios, target lists) → `plan` (a run's
//! validated plan) → `engine` (connections and protocols) → `recorder` (histograms, series,
//! the run record) → `load`, `server`, `probe` and `watch` (the worker threads; the embedded
//! target; the server-side probes; the live views and the metrics endpoint) → `analysis`
//! (statistics, comparisons, the knee) → `report` (text, HTML, exports of a finished record) →
//! `cli` (flags into plans) → `app` (the commands).

#![warn(missing_docs)]

pub mod util;

pub mod model;

pub mod workload;

pub mod plan;

pub mod engine;

pub mod recorder;

pub mod load;
pub mod probe;
pub mod server;
pub mod watch;

pub mod analysis;

pub mod report;

pub mod cli;

pub mod app;
