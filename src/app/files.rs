//! `-` on the command line: standard output for the files a command writes (`-o`, `--html`,
//! `--hdr-log`), standard input for the records it reads (`report`, `merge`, `compare`; `stats`
//! reads its numbers so too). Standard output carries one document: when a file goes there,
//! the report (text or `--json`) goes to stderr, so that `reqlife run -o - | jq` reads valid
//! JSON. Standard input is read once: `-` for one input at most (both checked in
//! [`crate::cli::output`]).

use super::failure::Failure;
use crate::cli::output::is_dash;
use std::path::Path;

/// The name of `path` in messages: `'FILE'`, or `standard input` / `standard output` for `-`.
pub(crate) fn input_name(path: &Path) -> String {
    if is_dash(path) {
        "standard input".into()
    } else {
        format!("'{}'", path.display())
    }
}

/// Reads `path`, or standard input for `-`: an input that cannot be read is bad input.
pub(crate) fn read_text(path: &Path) -> Result<String, Failure> {
    if is_dash(path) {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| Failure::Usage(format!("cannot read standard input: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path)
        .map_err(|e| Failure::Usage(format!("cannot read '{}': {e}", path.display())))
}

/// Writes `text` (`what`: "the record", "the HTML report") to `path`, or to standard output
/// for `-`; a file written is said on stderr in one line unless `quiet`. A file that cannot
/// be written fails the command (exit 1): what it measured is lost to that file.
pub(crate) fn write_text(path: &Path, text: &str, what: &str, quiet: bool) -> Result<(), Failure> {
    if is_dash(path) {
        super::out(text);
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| {
        Failure::Failed(format!("cannot write {what} to '{}': {e}", path.display()))
    })?;
    if !quiet {
        eprintln!("reqlife: wrote {what} to {}", path.display());
    }
    Ok(())
}

/// Writes `record` to `output` (`-o`, its JSON) and `html` (`--html`, its page) where asked;
/// each that cannot be written says so in one line. The exit code: 0, or 1 when one failed.
pub(crate) fn write_record(
    record: &crate::recorder::record::RunRecord,
    output: Option<&Path>,
    html: Option<&Path>,
    quiet: bool,
) -> i32 {
    let mut code = crate::util::exit::EXIT_OK;
    if let Some(path) = output {
        let json = crate::report::record_json(record) + "\n";
        if let Err(e) = write_text(path, &json, "the record", quiet) {
            code = e.report();
        }
    }
    if let Some(path) = html {
        let page = crate::report::html::render(record)
            .map_err(Failure::from)
            .and_then(|p| write_text(path, &p, "the HTML report", quiet));
        if let Err(e) = page {
            code = e.report();
        }
    }
    code
}

/// Prints the report: on stdout, or on stderr when stdout carries a file (`-`).
pub(crate) fn report(text: &str, to_stderr: bool) {
    if to_stderr {
        use std::io::Write;
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(text.as_bytes());
        let _ = e.flush();
    } else {
        super::out(text);
    }
}
