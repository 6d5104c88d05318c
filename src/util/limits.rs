//! Limits and defaults shared by the plan builders (flags and scenario files) and the records.

/// Upper bound on connections, far above what one process can hold open usefully.
pub const MAX_CONNECTIONS: u64 = 1_000_000;

/// The number of cores (the default thread count).
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
