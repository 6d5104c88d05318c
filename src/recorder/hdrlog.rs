//! `--hdr-log FILE`: the standard HdrHistogram interval log (`#[BaseTime: …]`, then one line
//! per interval and phase: `Tag=<phase>,<start s>,<duration s>,<max>,<V2+DEFLATE base64>`), as
//! the Java HistogramLogProcessor reads it. Values are nanoseconds; the max column is in
//! milliseconds (MaxValueDivisor 1e6). The file is created before the run and written by the
//! interval collector as each interval is final, a line at a time, so an interrupted or
//! crashed run leaves the series so far. A part of an interval that came after the interval
//! was written is a line of its own with the same start (the log's histograms add up exactly).

use crate::model::Phase;
use crate::recorder::{hist, IntervalSnapshot, RecordError};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::io::LineWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The interval log's file, created (empty) before the run.
pub struct LogFile {
    file: std::fs::File,
    path: PathBuf,
}

/// Creates (or truncates) the log file at `path`; `-` is standard output.
pub fn create(path: &Path) -> Result<LogFile, RecordError> {
    if path.as_os_str() == "-" {
        use std::os::fd::AsFd;
        let fd = std::io::stdout()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| RecordError::LogToStdout(e.to_string()))?;
        return Ok(LogFile {
            file: std::fs::File::from(fd),
            path: path.to_path_buf(),
        });
    }
    let file = std::fs::File::create(path).map_err(|e| RecordError::LogCreate {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    Ok(LogFile {
        file,
        path: path.to_path_buf(),
    })
}

/// Runs `body` with a writer of final intervals (of `interval`, recording from `base`) to
/// `log`, its header written first; gives what `body` gave and the first error writing,
/// after which nothing more is written. Without a log the writer does nothing.
pub fn logged<R>(
    log: Option<LogFile>,
    base: SystemTime,
    interval: Duration,
    body: impl FnOnce(&mut dyn FnMut(&IntervalSnapshot)) -> R,
) -> (R, Option<RecordError>) {
    let Some(log) = log else {
        return (body(&mut |_| {}), None);
    };
    let failed = |e: &dyn std::fmt::Debug| RecordError::LogWrite {
        path: log.path.display().to_string(),
        reason: format!("{e:?}"),
    };
    let mut out = LineWriter::new(&log.file);
    let mut serializer = V2DeflateSerializer::new();
    let begun = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "reqlife {} interval log: one histogram per interval and phase, values in nanoseconds",
            env!("CARGO_PKG_VERSION")
        ))
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1e6)
        .begin_log_with(&mut out, &mut serializer);
    let mut writer = match begun {
        Ok(w) => w,
        Err(e) => return (body(&mut |_| {}), Some(failed(&e))),
    };
    let mut error: Option<RecordError> = None;
    let r = body(&mut |snap| {
        if error.is_some() {
            return;
        }
        let start = interval.saturating_mul(u32::try_from(snap.index).unwrap_or(u32::MAX));
        for phase in Phase::ALL {
            let Some((_, bytes)) = snap.hists.iter().find(|(p, _)| *p == phase) else {
                continue;
            };
            // (The reason as the text it always was, quoted.)
            let written = hist::decode_bytes(bytes)
                .map_err(|e| failed(&e.to_string()))
                .and_then(|h| {
                    writer
                        .write_histogram(&h, start, interval, Tag::new(phase.name()))
                        .map_err(|e| failed(&e))
                });
            if let Err(e) = written {
                error = Some(e);
                return;
            }
        }
    });
    (r, error)
}
