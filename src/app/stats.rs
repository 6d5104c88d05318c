//! `reqlife stats FILE`: exact summary statistics of raw numbers (one per line, or a column
//! of a delimited file), R's `summary()` and type-7 quantiles, `sd()`, and a log2 histogram.
//!
//! The input is read as R's `scan()` reads numbers: a UTF-8 byte order mark is dropped (R's
//! `fileEncoding = "UTF-8-BOM"`), lines end with LF, CRLF or a lone CR, `NA` is a missing value
//! and `NaN`, `Inf`, `-Inf` (also `inf`, `Infinity`, any case) are read as such. As R's
//! `summary()` does, missing values (`NA` and `NaN`) are left out of the statistics and counted
//! as `NA's`; infinite values stay in (a mean of `Inf`, quantiles as R's `quantile()` gives).

use super::failure::Failure;
use super::{out, EXIT_OK};
use crate::analysis::describe::{self as summary, num, Description, Log2Hist};
use crate::cli::StatsArgs;
use columns::Separator;
use serde_json::{json, Value};
use std::io::Read;

mod columns;

/// `reqlife stats`.
pub fn stats(args: &StatsArgs) -> i32 {
    let text = match read_input(&args.file) {
        Ok(t) => t,
        Err(e) => return e.report(),
    };
    let parsed = match parse_values(&text, args) {
        Ok(v) => v,
        Err(e) => return e.report(),
    };
    if let Some(first) = parsed.first_skipped {
        let n = parsed.skipped;
        eprintln!(
            "skipped {n} line{} that {} not a number (--skip-invalid; the first: line {first})",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" },
        );
    }
    let mut values = parsed.values;
    let hist = Log2Hist::of_values(&values);
    let Some(summary) = Description::of_values(&mut values) else {
        let na = if parsed.na > 0 {
            format!(" (only {} NA's)", parsed.na)
        } else {
            String::new()
        };
        return Failure::Usage(format!(
            "no values in '{}'{na}: expected one number per line (or --column N or NAME of a delimited file)",
            args.file
        ))
        .report();
    };
    let sd = summary::sd(&values);
    if args.json {
        out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&to_json(&summary, sd, parsed.na, &hist))
                .unwrap_or_default()
        ));
        return EXIT_OK;
    }
    let mut text = String::new();
    let na = if parsed.na > 0 {
        format!(", {} NA's", parsed.na)
    } else {
        String::new()
    };
    summary.render(&mut text, &na);
    text.push_str(&format!(
        "  {:>12}\n  {:>12}   (standard deviation, n - 1 denominator as R's sd())\n",
        "sd",
        sd.map_or("NA".to_string(), num)
    ));
    text.push('\n');
    hist.render(&mut text);
    out(&text);
    EXIT_OK
}

/// A number for JSON: finite ones as numbers, the others as R writes them (`"Inf"`, `"-Inf"`,
/// `"NaN"`), as jsonlite does with `na = "string"`.
fn jnum(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        json!(num(v))
    }
}

/// `reqlife stats --json`.
fn to_json(s: &Description, sd: Option<f64>, na: u64, hist: &Log2Hist) -> Value {
    let quantiles: serde_json::Map<String, Value> = s
        .quantiles
        .iter()
        .map(|(p, v)| (format!("{}", p * 100.0), jnum(*v)))
        .collect();
    let buckets: Vec<Value> = hist
        .buckets
        .iter()
        .map(|(k, n)| json!({"from": 2f64.powi(*k), "to": 2f64.powi(k + 1), "count": n}))
        .collect();
    json!({
        "count": s.count,
        "na": na,
        "min": jnum(s.min),
        "q1": jnum(s.q1),
        "median": jnum(s.median),
        "mean": jnum(s.mean),
        "q3": jnum(s.q3),
        "max": jnum(s.max),
        "sd": sd.map_or(Value::Null, jnum),
        "quantiles": quantiles,
        "log2_histogram": {
            "nonpositive": hist.nonpositive,
            "buckets": buckets,
            "infinite": hist.infinite,
        },
    })
}

/// The text of `file` (`-`: standard input); one that cannot be read is bad input.
fn read_input(file: &str) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    if file == "-" {
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Failure::Usage(format!("cannot read standard input: {e}")))?;
    } else {
        bytes = std::fs::read(file)
            .map_err(|e| Failure::Usage(format!("cannot read '{file}': {e}")))?;
    }
    String::from_utf8(bytes).map_err(|_| Failure::Usage(format!("'{file}' is not text (UTF-8)")))
}

/// What [`parse_values`] read.
#[derive(Debug, Default, PartialEq)]
pub struct Values {
    /// The numbers, infinite ones included.
    pub values: Vec<f64>,
    /// `NA` and `NaN` (R's missing values).
    pub na: u64,
    /// Lines skipped by `--skip-invalid`.
    pub skipped: u64,
    /// The first of them (1-based).
    pub first_skipped: Option<usize>,
}

/// The lines of `text` (1-based number, line) as R's `scan()` sees them: a leading byte order
/// mark dropped, and LF, CRLF or a lone CR ending a line.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rest = Some(text);
    let mut n = 0;
    std::iter::from_fn(move || {
        let t = rest?;
        if t.is_empty() {
            return None;
        }
        n += 1;
        match t.find(['\n', '\r']) {
            Some(i) => {
                let skip = if t[i..].starts_with("\r\n") { 2 } else { 1 };
                rest = Some(&t[i + skip..]);
                Some((n, &t[..i]))
            }
            None => {
                rest = None;
                Some((n, t))
            }
        }
    })
}

/// A field as R's `scan(what = double())` reads it: `NA` is missing (`Ok(None)`), and numbers
/// as R's `R_strtod` reads them (`NaN`, `Inf`, `-Inf`, `Infinity` in any case, exponents).
fn number(field: &str) -> Result<Option<f64>, ()> {
    if field == "NA" {
        return Ok(None);
    }
    match field.parse::<f64>() {
        Ok(v) if v.is_nan() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(()),
    }
}

/// The records of `text`: (the line each starts on, its text), blank lines and comments
/// (`#`) left out, a quoted field's line breaks kept inside its record; a quote never closed
/// is bad input.
fn records(text: &str, sep: impl Fn(&str) -> Separator) -> Result<Vec<(usize, String)>, Failure> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open: Option<(usize, String)> = None;
    let mut split: Option<Separator> = None;
    for (n, line) in lines(text) {
        if let Some((start, mut record)) = open.take() {
            record.push('\n');
            record.push_str(line);
            match split.as_ref().is_some_and(|s| s.open_quote(&record)) {
                true => open = Some((start, record)),
                false => out.push((start, record)),
            }
            continue;
        }
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let s = split.get_or_insert_with(|| sep(t));
        match s.open_quote(t) {
            true => open = Some((n, t.to_string())),
            false => out.push((n, t.to_string())),
        }
    }
    match open {
        Some((n, _)) => Err(Failure::Usage(format!(
            "line {n}: a quote opened on this line is never closed"
        ))),
        None => Ok(out),
    }
}

/// Whether a field reads as a value (a number, `NA`, `NaN`).
fn is_value(field: &str) -> bool {
    number(field).is_ok()
}

/// The numbers of the input: each line (or its `--column`), blank lines, comments and the
/// header skipped; a line that is not a number, or a row of another width than the first,
/// is bad input.
pub(crate) fn parse_values(text: &str, args: &StatsArgs) -> Result<Values, Failure> {
    let given = args.delimiter.as_deref();
    let records = records(text, |first| match &args.column {
        Some(_) => Separator::of(given, first),
        // One number per line: no field is split, so no quote spans lines.
        None => Separator::Blanks,
    })?;
    let Some((first, first_line)) = records.first() else {
        return Ok(Values::default());
    };
    let sep = Separator::of(given, first_line);
    let head = sep.split(first_line);
    let header = (!head.iter().any(|f| is_value(f))).then_some(head.clone());
    let column = match &args.column {
        Some(c) => Some(columns::index(
            c,
            header.as_deref(),
            head.len(),
            &sep,
            *first,
        )?),
        None => None,
    };
    let mut out = Values::default();
    let data = records.iter().skip(usize::from(header.is_some()));
    for (n, line) in data {
        let fields;
        let field = match column {
            None => line.as_str(),
            Some(c) => {
                fields = sep.split(line);
                if fields.len() != head.len() {
                    return Err(Failure::Usage(format!(
                        "line {n} has {} field{} where line {first} has {} ({}): every row needs the same number",
                        fields.len(),
                        if fields.len() == 1 { "" } else { "s" },
                        head.len(),
                        sep.words()
                    )));
                }
                fields[c].as_str()
            }
        };
        match number(field) {
            Ok(Some(v)) => out.values.push(v),
            Ok(None) => out.na += 1,
            Err(()) if args.skip_invalid => {
                out.skipped += 1;
                out.first_skipped.get_or_insert(*n);
            }
            Err(()) => return Err(not_a_number(*n, field, column.is_none(), given, line)),
        }
    }
    Ok(out)
}

/// Line `n`'s field is not a number: what it is, and when a whole line of several fields was
/// read as one number (no `--column`), the flag that picks one.
fn not_a_number(n: usize, field: &str, whole: bool, given: Option<&str>, line: &str) -> Failure {
    let what = match field {
        "" => "is empty".to_string(),
        f => format!("'{f}' is not a number"),
    };
    let sep = Separator::of(given, line);
    let k = sep.split(line).len();
    let hint = if whole && k > 1 {
        format!(
            "; it has {k} fields ({}): choose one with --column N or --column NAME",
            sep.words()
        )
    } else {
        " (use --skip-invalid to skip such lines)".to_string()
    };
    Failure::Usage(format!("line {n}: {what}{hint}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_end_as_in_r() {
        let got: Vec<(usize, &str)> = lines("\u{feff}1\r2\r\n3\n\n4").collect();
        assert_eq!(got, vec![(1, "1"), (2, "2"), (3, "3"), (4, ""), (5, "4")]);
        let got: Vec<(usize, &str)> = lines("1\n").collect();
        assert_eq!(got, vec![(1, "1")]);
    }

    #[test]
    fn fields_as_r_scan_reads_them() {
        for (f, want) in [
            ("NA", Ok(None)),
            ("NaN", Ok(None)),
            ("nan", Ok(None)),
            ("Inf", Ok(Some(f64::INFINITY))),
            ("-Inf", Ok(Some(f64::NEG_INFINITY))),
            ("infinity", Ok(Some(f64::INFINITY))),
            ("1e-3", Ok(Some(0.001))),
            (".5", Ok(Some(0.5))),
            ("na", Err(())),
            ("12ms", Err(())),
        ] {
            assert_eq!(number(f), want, "{f}");
        }
    }
}
