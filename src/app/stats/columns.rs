//! The columns of a delimited file, as `reqlife stats --column` reads them: the delimiter
//! (given, or guessed from the first line), fields split with their empty ones kept and
//! quotes as CSV writes them, the header row, a column named or numbered, and every row the
//! header's width.
//!
//! The guess, from the first line that is not blank nor a comment (`#`): a comma if it has
//! one (CSV: `1,,3` is three fields, the middle one empty, as in reqlife's own
//! `--log-requests` file), else a tab (TSV, empty fields kept too), else runs of spaces and
//! tabs (as R's `read.table`, where blanks align columns). The first such line is a header
//! when none of its fields reads as a number (R's `read.csv` takes its first line so too).

use super::super::failure::Failure;
use crate::cli::StatsColumn as Column;

/// How the fields of a line are separated.
#[derive(Debug, Clone, PartialEq)]
pub enum Separator {
    /// This string, each occurrence a boundary (empty fields kept), quotes honoured.
    Text(String),
    /// Runs of spaces and tabs (leading and trailing ones ignored).
    Blanks,
}

impl Separator {
    /// From `--delimiter`, or guessed from `first`, the first line of data.
    pub fn of(given: Option<&str>, first: &str) -> Separator {
        match given {
            Some(d) => Separator::Text(d.to_string()),
            None if first.contains(',') => Separator::Text(",".into()),
            None if first.contains('\t') => Separator::Text("\t".into()),
            None => Separator::Blanks,
        }
    }

    /// The separator in words, for messages.
    pub fn words(&self) -> String {
        match self {
            Separator::Text(t) if t == "," => "comma-separated".into(),
            Separator::Text(t) if t == "\t" => "tab-separated".into(),
            Separator::Text(t) => format!("separated by '{t}'"),
            Separator::Blanks => "separated by spaces".into(),
        }
    }

    /// Whether a quote in `line` opens a field that goes on past the line's end (an odd
    /// number of quotes: CSV doubles a quote inside a quoted field).
    pub fn open_quote(&self, line: &str) -> bool {
        matches!(self, Separator::Text(_)) && line.matches('"').count() % 2 == 1
    }

    /// The fields of `record`, each trimmed of the blanks around it; a field in quotes is
    /// its text, `""` a quote.
    pub fn split(&self, record: &str) -> Vec<String> {
        let sep = match self {
            Separator::Blanks => {
                return record
                    .split([' ', '\t'])
                    .filter(|f| !f.is_empty())
                    .map(String::from)
                    .collect()
            }
            Separator::Text(s) => s.as_str(),
        };
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut quoted = false;
        let mut rest = record;
        while let Some(c) = rest.chars().next() {
            if quoted {
                if rest.starts_with("\"\"") {
                    field.push('"');
                    rest = &rest[2..];
                    continue;
                }
                quoted = c != '"';
                if quoted {
                    field.push(c);
                }
            } else if !sep.is_empty() && rest.starts_with(sep) {
                fields.push(std::mem::take(&mut field).trim().to_string());
                rest = &rest[sep.len()..];
                continue;
            } else if c == '"' && field.trim().is_empty() {
                field.clear();
                quoted = true;
            } else {
                field.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        fields.push(field.trim().to_string());
        fields
    }
}

/// The column `--column` names, 0-based, among `width` fields; `header`: the header's fields,
/// if the file has one; `sep`, `first`: for the messages.
pub fn index(
    column: &Column,
    header: Option<&[String]>,
    width: usize,
    sep: &Separator,
    first: usize,
) -> Result<usize, Failure> {
    match column {
        Column::Number(0) => Err(Failure::Usage("--column counts from 1".into())),
        Column::Number(n) if *n > width => Err(Failure::Usage(format!(
            "--column {n}: line {first} has {width} field{} ({}): give 1 to {width}{}",
            if width == 1 { "" } else { "s" },
            sep.words(),
            header.map_or(String::new(), |h| format!(" or a name ({})", h.join(", ")))
        ))),
        Column::Number(n) => Ok(n - 1),
        Column::Name(name) => {
            let Some(h) = header else {
                return Err(Failure::Usage(format!(
                    "--column {name}: the file has no header line (line {first} has numbers): \
                     give the column's number, 1 to {width}"
                )));
            };
            h.iter()
                .position(|f| f == name)
                .or_else(|| h.iter().position(|f| f.eq_ignore_ascii_case(name)))
                .ok_or_else(|| {
                    Failure::Usage(format!(
                        "--column {name}: no such column; the header (line {first}) has {}",
                        h.join(", ")
                    ))
                })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_keep_their_empty_ones_and_quotes() {
        let comma = Separator::Text(",".into());
        // (separator, line, fields)
        let rows: [(&Separator, &str, &[&str]); 7] = [
            // reqlife's own request log: empty phases between commas stay fields
            (&comma, "1,,,3", &["1", "", "", "3"]),
            (&comma, "1, 2 ,3,", &["1", "2", "3", ""]),
            // CSV quoting: a comma and a doubled quote inside quotes
            (
                &comma,
                "\"GET /a,b\",\"say \"\"hi\"\"\",7",
                &["GET /a,b", "say \"hi\"", "7"],
            ),
            (&Separator::Text("\t".into()), "1\t\t3", &["1", "", "3"]),
            (&Separator::Blanks, "  1   2\t 3 ", &["1", "2", "3"]),
            (&Separator::Text("||".into()), "1||2||", &["1", "2", ""]),
            (&comma, "", &[""]),
        ];
        for (sep, line, want) in rows {
            assert_eq!(sep.split(line), want, "{sep:?} {line:?}");
        }
    }

    #[test]
    fn the_separator_is_guessed_from_the_first_line() {
        // (--delimiter, first line, separator)
        for (given, first, want) in [
            (None, "a,b\tc", Separator::Text(",".into())),
            (None, "a\tb c", Separator::Text("\t".into())),
            (None, "a  b", Separator::Blanks),
            (Some(";"), "a,b", Separator::Text(";".into())),
        ] {
            assert_eq!(Separator::of(given, first), want, "{first:?}");
        }
        let comma = Separator::Text(",".into());
        assert!(comma.open_quote("1,\"two"));
        assert!(!comma.open_quote("1,\"two\"\"\""));
        assert!(!Separator::Blanks.open_quote("1 \"two"));
    }
}
