//! The model's own bad input: a URL the run cannot load, a `--segment` that names no part of
//! a plan. Each is one line naming what is wrong and what is valid; both are usage errors
//! (exit 2), decided here where they are made.

use crate::util::exit::{ExitCode, EXIT_USAGE};

/// Bad input the model refuses, with its one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A URL that is not an absolute `http://` or `https://` URL reqlife can load.
    #[error("{0}")]
    Url(String),
    /// A `--segment i/n` that is not one part of the plan.
    #[error("{0}")]
    Segment(String),
}

impl ExitCode for ModelError {
    fn exit_code(&self) -> i32 {
        match self {
            ModelError::Url(_) | ModelError::Segment(_) => EXIT_USAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_url_or_segment_is_bad_input() {
        let url = crate::model::split_url("ftp://x/").unwrap_err();
        assert!(matches!(url, ModelError::Url(_)), "{url:?}");
        assert_eq!(url.exit_code(), 2);
        let segment = crate::model::Segment::parse("4/3").unwrap_err();
        assert!(matches!(segment, ModelError::Segment(_)), "{segment:?}");
        assert_eq!(segment.exit_code(), 2);
    }

    #[test]
    fn segments() {
        // (input, 0-based index and count, or a part of the error)
        type Want = Result<(u64, u64), &'static str>;
        let rows: [(&str, Want); 7] = [
            ("1/1", Ok((0, 1))),
            ("2/3", Ok((1, 3))),
            (" 3 / 3 ", Ok((2, 3))),
            ("0/3", Err("from 1 to n")),
            ("4/3", Err("from 1 to n")),
            ("1-3", Err("no '/'")),
            ("a/3", Err("not a whole number")),
        ];
        for (input, want) in rows {
            match (crate::model::Segment::parse(input), want) {
                (Ok(s), Ok((i, n))) => assert_eq!((s.index, s.count), (i, n), "{input}"),
                (Err(e), Err(part)) => assert!(e.to_string().contains(part), "{input}: {e}"),
                (got, _) => panic!("{input}: {got:?}"),
            }
        }
    }
}
