//! The one error of the command line's checks, [`PlanError`]: bad input, always exit 2. The
//! lower layers' bad input (a URL, a load, a workload file) becomes one with its line
//! unchanged, so `cli` callers see one type.

use crate::util::exit::{ExitCode, EXIT_USAGE};

/// Bad input: one line naming what is wrong and what is valid. Always a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanError(pub String);

crate::util::exit::exit_code!(EXIT_USAGE => PlanError);

/// What stops a command before its run, found while its plans are made: bad input (a
/// [`PlanError`] or a load's, exit 2), an output that cannot be written, or the target's
/// answer when it was asked before the run (gRPC server reflection: exit 2, 3 or 1). One
/// line, with the exit code the error that made it calls for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}")]
pub struct PrepareError {
    /// The line that says what went wrong.
    pub line: String,
    /// The exit code it calls for.
    pub exit_code: i32,
}

impl PrepareError {
    /// `e`'s line and exit code.
    pub fn of(e: &impl ExitCode) -> Self {
        PrepareError {
            line: e.to_string(),
            exit_code: e.exit_code(),
        }
    }
}

impl ExitCode for PrepareError {
    fn exit_code(&self) -> i32 {
        self.exit_code
    }
}

/// Each error met while preparing as a [`PrepareError`], its line and exit code unchanged.
macro_rules! prepare_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for PrepareError {
            fn from(e: $t) -> Self {
                PrepareError::of(&e)
            }
        }
    )*};
}
prepare_error_from!(
    PlanError,
    crate::model::load_spec::LoadError,
    crate::report::ReportError
);

/// Refuses the input with `msg`, its one line.
pub(super) fn err<T>(msg: impl Into<String>) -> Result<T, PlanError> {
    Err(PlanError(msg.into()))
}

/// The flags of `flags` that were given (`(given, name)` pairs), in order: what a check that
/// refuses flags names in its one line.
pub(super) fn flags_given<'a>(flags: &[(bool, &'a str)]) -> Vec<&'a str> {
    flags
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect()
}

/// Each lower layer's bad input as a plan's, its line unchanged (all are usage errors).
macro_rules! plan_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for PlanError {
            fn from(e: $t) -> Self {
                PlanError(e.to_string())
            }
        }
    )*};
}
plan_error_from!(
    crate::model::ModelError,
    crate::model::load_spec::LoadError,
    crate::workload::WorkloadError
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_flags_and_the_lower_layers_bad_input_exit_2_with_their_line() {
        let target = crate::cli::plan::parse_target("http://127.0.0.1:8080/a b");
        assert_eq!(target.unwrap_err().exit_code(), EXIT_USAGE);
        let url = crate::model::split_url("ftp://x/").unwrap_err();
        let line = url.to_string();
        let plan = PlanError::from(url);
        assert_eq!(
            (plan.0.as_str(), plan.exit_code()),
            (line.as_str(), EXIT_USAGE)
        );
    }
}
