//! Exit codes, and the one trait through which an error says which it calls for: every
//! layer's error type implements [`ExitCode`], so no caller chooses a code by reading text.

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run itself failed.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: bad input (flags, URL, files).
pub const EXIT_USAGE: i32 = 2;
/// Exit code: the run stopped early because every connection failed the same way before any
/// request succeeded (the fail-fast rule), or it did not start because the open-file limit is
/// below what its connections need; one line on stderr names the fix.
pub const EXIT_FAIL_FAST: i32 = 3;
/// Exit code: responses came back, but every one had an HTTP error status (not 2xx or 3xx).
pub const EXIT_HTTP_ERRORS: i32 = 4;
/// Exit code: the run went, but most of it failed: more than half of the requests that ended
/// failed without a response, or the server stopped answering for more than half of the
/// window (its last response came that early, and requests failed after it).
pub const EXIT_MOSTLY_FAILED: i32 = 5;
/// Exit code: `run --strict`, and the load was not valid: a check of the record's `validity`
/// failed (the client fell behind, the sends were not the process asked for, a warm-up or a
/// drift in the figures). A failed `--threshold` (99) and a run that failed (1, 3, 4, 5)
/// outrank it.
pub const EXIT_NOT_VALID: i32 = 6;
/// Exit code: a `--threshold` failed (k6's convention).
pub const EXIT_THRESHOLD: i32 = 99;
/// Exit code after SIGINT (128 + 2).
pub const EXIT_SIGINT: i32 = 130;
/// Exit code after SIGTERM (128 + 15).
pub const EXIT_SIGTERM: i32 = 143;

/// An error that knows the exit code it calls for. Implemented by each layer's error type;
/// the binary prints the error's one line and exits with this code.
pub trait ExitCode: std::fmt::Display {
    /// The process exit code this error calls for.
    fn exit_code(&self) -> i32;
}

/// Implements [`ExitCode`] for error types whose every value calls for the one code `code`
/// (an expression, a load, a plan: bad input whatever it says): `exit_code!(EXIT_USAGE => T)`.
macro_rules! exit_code {
    ($code:expr => $($t:ty),+ $(,)?) => {$(
        impl $crate::util::exit::ExitCode for $t {
            fn exit_code(&self) -> i32 {
                $code
            }
        }
    )+};
}
pub(crate) use exit_code;
