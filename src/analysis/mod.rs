//! Analysis of measurements: summary statistics (R's `summary()` and type-7 quantiles, log2
//! histograms) for `--detail` and `reqlife stats`; calibration of the client machine.

pub mod calibrate;
pub mod compare;
pub mod describe;
pub mod expr;
pub mod knee;
pub mod precision;
pub mod significance;
pub mod validity;
