//! `reqlife stats FILE`: exact summary statistics of raw numbers (one per line, or a column
//! of a delimited file), R's `summary()` and type-7 quantiles, and a log2 histogram.

use super::{out, usage_error, EXIT_OK};
use crate::analysis::summary::{Log2Hist, Summary};
use crate::cli::StatsArgs;
use std::io::Read;

/// `reqlife stats`.
pub fn stats(args: &StatsArgs) -> i32 {
    let text = match read_input(&args.file) {
        Ok(t) => t,
        Err(e) => return usage_error(e),
    };
    let mut values = match parse_values(&text, args) {
        Ok(v) => v,
        Err(e) => return usage_error(e),
    };
    let hist = Log2Hist::of_values(&values);
    let Some(summary) = Summary::of_values(&mut values) else {
        return usage_error(format!(
            "no values in '{}': expected one number per line (or --column N of a delimited file)",
            args.file
        ));
    };
    let mut text = String::new();
    summary.render(&mut text, "");
    text.push('\n');
    hist.render(&mut text);
    out(&text);
    EXIT_OK
}

fn read_input(file: &str) -> Result<String, String> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
    } else {
        bytes = std::fs::read(file).map_err(|e| format!("cannot read '{file}': {e}"))?;
    }
    String::from_utf8(bytes).map_err(|_| format!("'{file}' is not text (UTF-8)"))
}

/// The numbers of the input: each line (or its `--column`), blank lines skipped.
pub fn parse_values(text: &str, args: &StatsArgs) -> Result<Vec<f64>, String> {
    if args.column == Some(0) {
        return Err("--column counts from 1".into());
    }
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let field = match args.column {
            None => Some(line),
            Some(c) => match &args.delimiter {
                Some(d) => line.split(d.as_str()).nth(c - 1),
                None => line
                    .split([',', '\t', ' '])
                    .filter(|f| !f.is_empty())
                    .nth(c - 1),
            },
        };
        let parsed = field
            .map(str::trim)
            .and_then(|f| f.parse::<f64>().ok())
            .filter(|v| v.is_finite());
        match parsed {
            Some(v) => values.push(v),
            None if args.skip_invalid => {}
            None => {
                let what = match (field, args.column) {
                    (None, Some(c)) => format!("has no column {c}"),
                    (Some(f), _) => format!("'{}' is not a number", f.trim()),
                    (None, None) => "is empty".into(),
                };
                return Err(format!(
                    "line {}: {what} (use --skip-invalid to skip such lines)",
                    i + 1
                ));
            }
        }
    }
    Ok(values)
}
