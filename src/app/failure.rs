//! What a command fails with, typed: each kind has its exit code, so no caller chooses an exit
//! code by reading an error's text.

use super::{EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_USAGE};

/// A command's failure, with the one line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Bad input (flags, URL, files): exit 2.
    Usage(String),
    /// The fail-fast rule stopped a step: every connection failed the same way before any
    /// request succeeded; the line names the fix. Exit 3.
    FailFast(String),
    /// Anything else that went wrong (a server that could not start, no request succeeded):
    /// exit 1.
    Failed(String),
}

impl Failure {
    /// The exit code of this kind of failure.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            Failure::FailFast(_) => EXIT_FAIL_FAST,
            Failure::Failed(_) => EXIT_FAILURE,
        }
    }

    /// The line that says what went wrong.
    pub(crate) fn message(&self) -> &str {
        match self {
            Failure::Usage(m) | Failure::FailFast(m) | Failure::Failed(m) => m,
        }
    }

    /// Prints the line (`error: …`) and gives the exit code.
    pub(crate) fn report(&self) -> i32 {
        eprintln!("error: {}", self.message());
        self.exit_code()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_exit_code() {
        assert_eq!(Failure::Usage("x".into()).exit_code(), 2);
        assert_eq!(Failure::FailFast("x".into()).exit_code(), 3);
        assert_eq!(Failure::Failed("x".into()).exit_code(), 1);
        assert_eq!(Failure::FailFast("refused".into()).message(), "refused");
    }
}
