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
//!
//! reqlife runs on Linux only: the open-loop pacer sleeps on `timerfd` with
//! `PR_SET_TIMERSLACK`, responses are stamped by the kernel on arrival (`SO_TIMESTAMPNS`), the
//! server's side is probed with eBPF (bpftrace) and `/proc`. On any other system the build
//! stops at one `compile_error!` that says so: every module below is Linux's only.

#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!(
    "reqlife runs on Linux only: it needs timerfd and PR_SET_TIMERSLACK (the open-loop pacer), \
     SO_TIMESTAMPNS (kernel arrival stamps), /proc and eBPF through bpftrace (the server-side \
     probes), none of which this target has; build it on Linux (or in a Linux container or VM)"
);

#[cfg(target_os = "linux")]
pub mod util;

#[cfg(target_os = "linux")]
pub mod model;

#[cfg(target_os = "linux")]
pub mod workload;

#[cfg(target_os = "linux")]
pub mod plan;

#[cfg(target_os = "linux")]
pub mod engine;

#[cfg(target_os = "linux")]
pub mod recorder;

#[cfg(target_os = "linux")]
pub mod load;
#[cfg(target_os = "linux")]
pub mod probe;
#[cfg(target_os = "linux")]
pub mod server;
#[cfg(target_os = "linux")]
pub mod watch;

#[cfg(target_os = "linux")]
pub mod analysis;

#[cfg(target_os = "linux")]
pub mod report;

#[cfg(target_os = "linux")]
pub mod cli;

#[cfg(target_os = "linux")]
pub mod app;
