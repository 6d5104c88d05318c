//! What rendering a report can fail with: a page that cannot be written where the user asked
//! (bad input, exit 2), a record that does not hold what was asked of it (exit 2), or a page
//! our own templates cannot render (a fault of reqlife, exit 1).

use crate::util::exit::{ExitCode, EXIT_FAILURE, EXIT_USAGE};

/// A report that could not be made, with its one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    /// `--html FILE` names a file that cannot be written.
    #[error("{0}")]
    Unwritable(String),
    /// The record has no such histogram, or one that cannot be read.
    #[error("{0}")]
    Record(String),
    /// The HTML templates are broken or cannot render the page.
    #[error("{0}")]
    Render(String),
}

impl ExitCode for ReportError {
    fn exit_code(&self) -> i32 {
        match self {
            ReportError::Unwritable(_) | ReportError::Record(_) => EXIT_USAGE,
            ReportError::Render(_) => EXIT_FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_path_or_phase_is_bad_input_a_broken_page_a_failure() {
        let record = crate::report::fixture::plain();
        let nowhere = std::path::Path::new("/nonexistent/dir/r.html");
        let unwritable = crate::report::html::check_writable(nowhere).unwrap_err();
        assert!(matches!(unwritable, ReportError::Unwritable(_)));
        assert_eq!(unwritable.exit_code(), EXIT_USAGE);
        let phase = crate::report::hgrm::of_record(&record, "latency").unwrap_err();
        assert!(matches!(phase, ReportError::Record(_)));
        assert_eq!(phase.exit_code(), EXIT_USAGE);
        assert_eq!(ReportError::Render("x".into()).exit_code(), EXIT_FAILURE);
    }
}
