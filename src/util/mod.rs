//! Leaf utilities, the lowest layer (see `tests/checks/layers.rs`): they use no other module
//! of the crate. Units (durations, counts, rates, sizes), the random generator, shared limits, and
//! the gate at which a run's load starts.

pub mod limits;
pub mod rng;
pub mod start;
pub mod units;
