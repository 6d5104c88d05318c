//! `--hdr-log FILE`: the standard HdrHistogram interval log (`#[BaseTime: …]`, then one line
//! per interval and phase: `Tag=<phase>,<start s>,<duration s>,<max>,<V2+DEFLATE base64>`), as
//! the Java HistogramLogProcessor reads it. Values are nanoseconds; the max column is in
//! milliseconds (MaxValueDivisor 1e6). Written from the run's interval snapshots.

use crate::model::Phase;
use crate::recorder::{hist, Measured};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::time::{Duration, SystemTime};

/// Writes the interval log of `measured` (intervals of `interval`, recording from `base`).
pub fn write(
    path: &std::path::Path,
    measured: &Measured,
    interval: Duration,
    base: SystemTime,
) -> Result<(), String> {
    let mut text: Vec<u8> = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut log = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "reqlife {} interval log: one histogram per interval and phase, values in nanoseconds",
                env!("CARGO_PKG_VERSION")
            ))
            .with_start_time(base)
            .with_base_time(base)
            .with_max_value_divisor(1e6)
            .begin_log_with(&mut text, &mut serializer)
            .map_err(|e| format!("cannot write the interval log: {e}"))?;
        for snap in &measured.intervals {
            let start = interval * snap.index as u32;
            for phase in Phase::ALL {
                let Some((_, bytes)) = snap.hists.iter().find(|(p, _)| *p == phase) else {
                    continue;
                };
                let h = hist::decode_bytes(bytes)?;
                let tag = Tag::new(phase.name());
                log.write_histogram(&h, start, interval, tag)
                    .map_err(|e| format!("cannot write the interval log: {e:?}"))?;
            }
        }
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write '{}': {e}", path.display()))
}
