//! The commands end to end through the real binary: `run` against the embedded target, bad
//! input and misbehaving servers, interrupts as they come (timeout, a process group, a
//! terminal's Ctrl-C), fail-fast, the fault target, other tools' habits, `calibrate`,
//! workloads and the Kubernetes files' command lines.
//! One test binary of several former ones (`tests/commands/NAME.rs` was `tests/NAME.rs`): they
//! share the helpers and the setup, and the crate is linked once for them. Each module is the
//! test file it was (`cargo test --test commands run::` runs that module's tests alone).

#[path = "../common/mod.rs"]
mod common;

mod calibrate;
mod failfast;
mod faults;
mod findable;
mod habits;
mod hostile;
mod interrupt;
mod kubernetes;
mod run;
mod workload;
