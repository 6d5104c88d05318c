//! Leaf utilities, the lowest layer (see `tests/checks/layers.rs`): they use no other module
//! of the crate. Exit codes and the [`exit::ExitCode`] trait every layer's error implements;
//! units (durations, counts, rates, sizes), the monotonic clock in nanoseconds, the head of a request to the tool's own small servers, the random generator, Student's t distribution, the lag-1 autocorrelation, shared limits, and the gate
//! at which a run's load starts.

pub mod clock;
pub mod exit;
pub mod http_head;
pub mod lag;
pub mod limits;
pub mod rng;
pub mod start;
pub mod student;
pub mod units;
