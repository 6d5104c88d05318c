//! `-` on the command line, checked: standard output for the files a command writes (`-o`,
//! `--html`, `--hdr-log`) carries one document, and standard input is read once. What the
//! commands do with `-` (write there, read from there) is `app`'s.

use super::error::err;
use super::plan::PlanError;
use std::path::Path;

/// Whether `path` is `-`.
pub fn is_dash(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Checks that at most one of the `(flag, path)` outputs is `-`; whether one is (the report
/// then goes to stderr).
pub fn stdout_taken(outputs: &[(&str, Option<&Path>)]) -> Result<bool, PlanError> {
    let dashes: Vec<&str> = outputs
        .iter()
        .filter(|(_, p)| p.is_some_and(is_dash))
        .map(|(flag, _)| *flag)
        .collect();
    match dashes.len() {
        0 => Ok(false),
        1 => Ok(true),
        _ => err(format!(
            "{} all write to standard output ('-'): give '-' to one of them, a file to the others",
            dashes.join(" and ")
        )),
    }
}

/// Checks that at most one of `inputs` is `-`.
pub fn one_stdin(inputs: &[&Path]) -> Result<(), PlanError> {
    if inputs.iter().filter(|p| is_dash(p)).count() > 1 {
        return err(
            "'-' (standard input) is given more than once: it can be read once; give files for the others",
        );
    }
    Ok(())
}
