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
    NotJson {
        /// The file's name, as given.
        name: String,
        /// What the JSON parser said.
        reason: String,
    },
    /// JSON with no `schema_version`: not a RunRecord.
    #[error(
        "{name} is not a reqlife RunRecord: it has no schema_version (write one with `reqlife run -o FILE`)"
    )]
    NoSchemaVersion {
        /// The file's name, as given.
        name: String,
    },
    /// A record of a layout newer than this version reads.
    #[error(
        "{name} has schema_version {version}, newer than this reqlife reads ({SCHEMA_VERSION}): upgrade reqlife"
    )]
    NewerSchema {
        /// The file's name, as given.
        name: String,
        /// The record's `schema_version`.
        version: u64,
    },
    /// A RunRecord's JSON that does not fit the record's layout.
    #[error("{name} is not a valid RunRecord: {reason}")]
    Invalid {
        /// The file's name, as given.
        name: String,
        /// What does not fit, as the JSON reader said it.
        reason: String,
    },
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
        /// The histogram's name in the record.
        name: String,
        /// Why it could not be read.
        source: Box<RecordError>,
    },
    /// Two histograms of one name that cannot be added.
    #[error("histogram '{name}' cannot be added: {reason}")]
    CannotAdd {
        /// The histogram's name.
        name: String,
        /// Why not, as the histogram library says it.
        reason: String,
    },
    /// `merge` given no record.
    #[error("nothing to merge: give at least one record")]
    NothingToMerge,
    /// One record given twice (`why`: its run id, or identical content).
    #[error(
        "{a} and {b} are the same record ({why}): merging it twice would double its figures; give each run once"
    )]
    SameRecord {
        /// The first record's file name.
        a: String,
        /// The second record's file name.
        b: String,
        /// How they are known to be the same (the same file, or the same run id).
        why: String,
    },
    /// A merged record given with one of its parts.
    #[error(
        "{a} and {b} share the run {id} (one is a merge that holds the other): merging them would count it twice; give each run once"
    )]
    SharedRun {
        /// The first record's file name.
        a: String,
        /// The second record's file name.
        b: String,
        /// The run id both hold.
        id: String,
    },
    /// Records of different layouts.
    #[error(
        "{name} has schema_version {version}, {first} has {first_version}: records of different reqlife versions"
    )]
    SchemaDiffers {
        /// The file name of the record that differs.
        name: String,
        /// Its `schema_version`.
        version: u32,
        /// The file name of the first record given.
        first: String,
        /// The first record's `schema_version`.
        first_version: u32,
    },
    /// Records of different plans: the first field that differs, in words.
    #[error(
        "the records differ in {field}: {a} in {first}, {b} in {name}: not the same plan; merge only the records of one plan (its segments, or its repeated runs)"
    )]
    PlanDiffers {
        /// The plan's field that differs.
        field: &'static str,
        /// Its value in the first record.
        a: String,
        /// The file name of the first record given.
        first: String,
        /// Its value in the record that differs.
        b: String,
        /// The file name of the record that differs.
        name: String,
    },
    /// A segment of another split of the plan.
    #[error("{name} is segment {i}/{n} but {first} is one of {first_n}: the segments of one plan share n")]
    SegmentCount {
        /// The file name of the record that differs.
        name: String,
        /// Its segment index (1-based).
        i: u64,
        /// Its number of segments.
        n: u64,
        /// The file name of the first record given.
        first: String,
        /// The first record's number of segments.
        first_n: u64,
    },
    /// A segment index outside 1..=n.
    #[error("{name} is segment {i}/{n}: a segment index is from 1 to n")]
    SegmentIndex {
        /// The record's file name.
        name: String,
        /// The segment index it gives.
        i: u64,
        /// Its number of segments.
        n: u64,
    },
    /// One segment index given by two records.
    #[error(
        "segment {i}/{n} is given twice, by {other} and {name}: two generators ran the same index (Kubernetes can start two pods for one index); merge one of them"
    )]
    SegmentTwice {
        /// The segment index given twice (1-based).
        i: u64,
        /// The number of segments.
        n: u64,
        /// The file name of the record that gave it first.
        other: String,
        /// The file name of the record that gave it again.
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
    LogCreate {
        /// The log's path.
        path: String,
        /// Why it could not be created.
        reason: String,
    },
    /// Writing the interval log failed during the run (nothing more was written).
    #[error("cannot write the interval log '{path}': {reason}")]
    LogWrite {
        /// The log's path.
        path: String,
        /// Why the write failed.
        reason: String,
    },
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
