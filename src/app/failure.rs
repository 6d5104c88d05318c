//! What a command fails with, typed: each kind has its exit code, so no caller chooses an exit
//! code by reading an error's text. Every lower layer's error becomes a [`Failure`] through
//! `From`, of the kind its own [`ExitCode`] says (decided where the error was made).

use crate::util::exit::{
    ExitCode, EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_HTTP_ERRORS, EXIT_MOSTLY_FAILED, EXIT_USAGE,
};

/// A command's failure, with the one line to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Bad input (flags, URL, files): exit 2.
    Usage(String),
    /// The fail-fast rule stopped a step: every connection failed the same way before any
    /// request succeeded; or the run did not start because the open-file limit is too low.
    /// The line names the fix. Exit 3.
    FailFast(String),
    /// Responses came back, but every one had an HTTP error status: exit 4.
    HttpErrors(String),
    /// Most of the run failed: more than half of the requests failed without a response, or
    /// the server stopped answering for more than half of the window: exit 5.
    MostlyFailed(String),
    /// Anything else that went wrong (a server that could not start, no request succeeded,
    /// an output that could not be written): exit 1.
    Failed(String),
}

impl Failure {
    /// The line that says what went wrong.
    pub fn message(&self) -> &str {
        match self {
            Failure::Usage(m)
            | Failure::FailFast(m)
            | Failure::HttpErrors(m)
            | Failure::MostlyFailed(m)
            | Failure::Failed(m) => m,
        }
    }

    /// Prints the line (`error: …`) and gives the exit code.
    pub(crate) fn report(&self) -> i32 {
        eprintln!("error: {self}");
        self.exit_code()
    }

    /// The same line as bad input: for a command whose only output is the file the user
    /// named (`reqlife report --html FILE`), a file that cannot be written is the path to fix.
    pub(crate) fn into_usage(self) -> Failure {
        match self {
            Failure::Failed(m) => Failure::Usage(m),
            other => other,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl ExitCode for Failure {
    fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            Failure::FailFast(_) => EXIT_FAIL_FAST,
            Failure::HttpErrors(_) => EXIT_HTTP_ERRORS,
            Failure::MostlyFailed(_) => EXIT_MOSTLY_FAILED,
            Failure::Failed(_) => EXIT_FAILURE,
        }
    }
}

impl Failure {
    /// `e`'s line, as the kind of failure its exit code says.
    fn of(e: &impl ExitCode) -> Failure {
        let line = e.to_string();
        match e.exit_code() {
            EXIT_USAGE => Failure::Usage(line),
            EXIT_FAIL_FAST => Failure::FailFast(line),
            EXIT_HTTP_ERRORS => Failure::HttpErrors(line),
            EXIT_MOSTLY_FAILED => Failure::MostlyFailed(line),
            _ => Failure::Failed(line),
        }
    }
}

/// Each lower layer's error as a command's failure, of the kind it says.
macro_rules! failure_from {
    ($($t:ty),* $(,)?) => {$(
        impl From<$t> for Failure {
            fn from(e: $t) -> Self {
                Failure::of(&e)
            }
        }
    )*};
}
failure_from!(
    crate::model::ModelError,
    crate::model::load_spec::LoadError,
    crate::workload::WorkloadError,
    crate::engine::SetupError,
    crate::analysis::expr::ExprError,
    crate::analysis::compare::CompareError,
    crate::report::ReportError,
    crate::server::ServerError,
    crate::cli::plan::PlanError,
    crate::cli::PrepareError,
    crate::recorder::RecordError,
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_exit_code() {
        assert_eq!(Failure::Usage("x".into()).exit_code(), 2);
        assert_eq!(Failure::FailFast("x".into()).exit_code(), 3);
        assert_eq!(Failure::HttpErrors("x".into()).exit_code(), 4);
        assert_eq!(Failure::MostlyFailed("x".into()).exit_code(), 5);
        assert_eq!(Failure::Failed("x".into()).exit_code(), 1);
        assert_eq!(Failure::FailFast("refused".into()).message(), "refused");
        assert_eq!(Failure::Failed("gone".into()).into_usage().exit_code(), 2);
    }

    #[test]
    fn a_lower_error_keeps_its_line_and_its_kind() {
        let plan = crate::cli::plan::PlanError("bad -c".into());
        assert_eq!(Failure::from(plan), Failure::Usage("bad -c".into()));
        let url = crate::model::split_url("ftp://x/").unwrap_err();
        let line = url.to_string();
        assert_eq!(Failure::from(url), Failure::Usage(line));
        let render = crate::report::ReportError::Render("broken".into());
        assert_eq!(Failure::from(render), Failure::Failed("broken".into()));
        let expr = crate::analysis::expr::Expr::parse("p99<<1ms").unwrap_err();
        assert_eq!(Failure::from(expr).exit_code(), 2);
    }
}
