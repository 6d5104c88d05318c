//! The recorder's errors ([`RecordError`]): a record file that cannot be read, a histogram
//! that cannot be decoded, records that cannot be merged, an interval log that cannot be
//! written. Each says in one line what is wrong (and, where there is one, what to do), and
//! which exit code it calls for ([`ExitCode`]): a bad record or a refused merge is bad input
//! (2); an interval log that cannot be written fails the run (1).

use crate::recorder::record::SCHEMA_VERSION;
use crate::util::exit::{ExitCode, EXIT_FAILURE, EXIT_USAGE};

/// What went wrong reading, merging or writing what the recorder keeps.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RecordError {
    /// A record file that is not JSON.
    #[error("{name} is not JSON: {reason}")]
    NotJson { name: String, reason: String },
    /// JSON with no `schema_version`: not a RunRecord.
    #[error(
        "{name} is not a reqlife RunRecord: it has no schema_version (write one with `reqlife run -o FILE`)"
    )]
    NoSchemaVersion { name: String },
    /// A record of a layout newer than this version reads.
    #[error(
        "{name} has schema_version {version}, newer than this reqlife reads ({SCHEMA_VERSION}): upgrade reqlife"
    )]
    NewerSchema { name: String, version: u64 },
    /// A RunRecord's JSON that does not fit the record's layout.
    #[error("{name} is not a valid RunRecord: {reason}")]
    Invalid { name: String, reason: String },
    /// A histogram's text that is not base64.
    #[error("invalid histogram encoding: {0}")]
    HistogramEncoding(String),
    /// Bytes that are not an HdrHistogram V2 (+DEFLATE).
    #[error("invalid histogram: {0}")]
    HistogramBytes(String),
    /// A record with no histogram of that name.
    #[error("the record has no histogram for '{0}'")]
    NoHistogram(String),
    /// One of a record's histograms, named, could not be read.
    #[error("histogram '{name}': {source}")]
    InHistogram {
        name: String,
        source: Box<RecordError>,
    },
    /// Two histograms of one name that cannot be added.
    #[error("histogram '{name}' cannot be added: {reason}")]
    CannotAdd { name: String, reason: String },
    /// `merge` given no record.
    #[error("nothing to merge: give at least one record")]
    NothingToMerge,
    /// One record given twice (`why`: its run id, or identical content).
    #[error(
        "{a} and {b} are the same record ({why}): merging it twice would double its figures; give each run once"
    )]
    SameRecord { a: String, b: String, why: String },
    /// A merged record given with one of its parts.
    #[error(
        "{a} and {b} share the run {id} (one is a merge that holds the other): merging them would count it twice; give each run once"
    )]
    SharedRun { a: String, b: String, id: String },
    /// Records of different layouts.
    #[error(
        "{name} has schema_version {version}, {first} has {first_version}: records of different reqlife versions"
    )]
    SchemaDiffers {
        name: String,
        version: u32,
        first: String,
        first_version: u32,
    },
    /// Records of different plans: the first field that differs, in words.
    #[error(
        "{field} differs: {a} in {first}, {b} in {name}: not the same plan; merge only the records of one plan (its segments, or its repeated runs)"
    )]
    PlanDiffers {
        field: &'static str,
        a: String,
        first: String,
        b: String,
        name: String,
    },
    /// A segment of another split of the plan.
    #[error("{name} is segment {i}/{n} but {first} is one of {first_n}: the segments of one plan share n")]
    SegmentCount {
        name: String,
        i: u64,
        n: u64,
        first: String,
        first_n: u64,
    },
    /// A segment index outside 1..=n.
    #[error("{name} is segment {i}/{n}: a segment index is from 1 to n")]
    SegmentIndex { name: String, i: u64, n: u64 },
    /// One segment index given by two records.
    #[error(
        "segment {i}/{n} is given twice, by {other} and {name}: two generators ran the same index (Kubernetes can start two pods for one index); merge one of them"
    )]
    SegmentTwice {
        i: u64,
        n: u64,
        other: String,
        name: String,
    },
    /// Segments given with whole runs.
    #[error("some records are segments of a plan (--segment) and some are not: merge one kind")]
    MixedSegments,
    /// `--hdr-log -`: standard output could not be taken for the log.
    #[error("cannot write the interval log to standard output: {0}")]
    LogToStdout(String),
    /// `--hdr-log FILE`: the file could not be created.
    #[error("cannot write '{path}': {reason}")]
    LogCreate { path: String, reason: String },
    /// Writing the interval log failed during the run (nothing more was written).
    #[error("cannot write the interval log '{path}': {reason}")]
    LogWrite { path: String, reason: String },
    /// The interval collector thread ended abnormally: the interval log may be incomplete.
    #[error("the interval collector failed")]
    CollectorFailed,
}

impl ExitCode for RecordError {
    fn exit_code(&self) -> i32 {
        match self {
            RecordError::LogToStdout(_)
            | RecordError::LogCreate { .. }
            | RecordError::LogWrite { .. }
            | RecordError::CollectorFailed => EXIT_FAILURE,
            _ => EXIT_USAGE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_usage_and_a_log_that_cannot_be_written_fails_the_run() {
        // (error, exit code, its line)
        let rows = [
            (
                RecordError::NotJson {
                    name: "a.json".into(),
                    reason: "EOF while parsing a value at line 1 column 0".into(),
                },
                EXIT_USAGE,
                "a.json is not JSON: EOF while parsing a value at line 1 column 0",
            ),
            (
                RecordError::NewerSchema {
                    name: "b.json".into(),
                    version: 9,
                },
                EXIT_USAGE,
                "b.json has schema_version 9, newer than this reqlife reads (1): upgrade reqlife",
            ),
            (
                RecordError::InHistogram {
                    name: "total".into(),
                    source: Box::new(RecordError::HistogramEncoding("bad byte".into())),
                },
                EXIT_USAGE,
                "histogram 'total': invalid histogram encoding: bad byte",
            ),
            (
                RecordError::NothingToMerge,
                EXIT_USAGE,
                "nothing to merge: give at least one record",
            ),
            (
                RecordError::LogCreate {
                    path: "/no/such/log".into(),
                    reason: "No such file or directory (os error 2)".into(),
                },
                EXIT_FAILURE,
                "cannot write '/no/such/log': No such file or directory (os error 2)",
            ),
            (
                RecordError::CollectorFailed,
                EXIT_FAILURE,
                "the interval collector failed",
            ),
        ];
        for (e, code, line) in rows {
            assert_eq!(e.exit_code(), code, "{e}");
            assert_eq!(e.to_string(), line);
        }
    }
}
