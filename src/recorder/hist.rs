//! HdrHistogram helpers shared by the recorder and the reports: the one histogram shape used
//! for every phase (nanoseconds, 3 significant digits, up to one hour), its summary
//! statistics in microseconds, and its portable form (HdrHistogram V2 + DEFLATE, base64),
//! which the Java HistogramLogProcessor and every later tool can read.

use super::RecordError;
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Largest value a phase histogram holds: one hour in nanoseconds. Larger values are
/// recorded as this value (and still counted).
pub const MAX_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits kept (0.1% relative precision).
pub const SIGFIG: u8 = 3;

/// A new phase histogram covering 1 ns .. 1 h.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, SIGFIG).expect("valid static bounds")
}

/// A small histogram that grows as values arrive (for per-interval snapshots).
pub fn new_interval_hist() -> Histogram<u64> {
    let mut h = Histogram::new_with_max(1_000_000, SIGFIG).expect("valid static bounds");
    h.auto(true);
    h
}

/// A histogram at its smallest (2,048 counts, 16 KiB: values up to 2 µs exact) that grows as
/// values arrive: for the phases that most requests do not have (a connection's opening, a
/// decoded or streamed body), of which a thread keeps one per phase in each of its interval
/// sets. Growing writes its new counts (resident from then on); one that records nothing
/// stays at 16 KiB.
pub fn new_growing_hist() -> Histogram<u64> {
    let mut h = Histogram::new_with_max(2, SIGFIG).expect("valid static bounds");
    h.auto(true);
    h
}

/// Records `ns`, clamped to [`MAX_NS`].
#[inline]
pub fn record(h: &mut Histogram<u64>, ns: u64) {
    // Cannot fail: the value is clamped into range (and auto-resizing ones grow).
    let _ = h.record(ns.min(MAX_NS));
}

/// HdrHistogram's cookie of a V2 + DEFLATE encoding (`V2_COMPRESSED_COOKIE`).
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// The V2 + DEFLATE encoder of one thread: its V2 buffer and its DEFLATE state are kept from
/// one histogram to the next. `V2DeflateSerializer` makes a new compressor (about 300 KB,
/// zeroed) for every histogram: on the collector, nine page-faulting allocations per interval.
struct Encoder {
    v2: V2Serializer,
    plain: Vec<u8>,
    zlib: flate2::Compress,
}

thread_local! {
    static ENCODER: std::cell::RefCell<Encoder> = std::cell::RefCell::new(Encoder {
        v2: V2Serializer::new(),
        plain: Vec::new(),
        // `V2DeflateSerializer`'s settings: zlib framing, the default level.
        zlib: flate2::Compress::new(flate2::Compression::default(), true),
    });
}

impl Encoder {
    /// The bytes `V2DeflateSerializer` writes for `h`: the cookie, the compressed length, and
    /// the V2 encoding compressed with zlib framing.
    fn encode(&mut self, h: &Histogram<u64>) -> Vec<u8> {
        self.plain.clear();
        self.v2
            .serialize(h, &mut self.plain)
            .expect("serializing into memory cannot fail");
        let mut out = Vec::with_capacity(8 + self.plain.len() / 2 + 64);
        out.extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        self.zlib.reset();
        loop {
            let read = self.zlib.total_in() as usize;
            let status = self
                .zlib
                .compress_vec(&self.plain[read..], &mut out, flate2::FlushCompress::Finish)
                .expect("compressing into memory cannot fail");
            if status == flate2::Status::StreamEnd {
                break;
            }
            out.reserve(out.capacity().max(64));
        }
        let len = (out.len() - 8) as u32;
        out[4..8].copy_from_slice(&len.to_be_bytes());
        out
    }
}

/// Serializes as HdrHistogram V2 + DEFLATE bytes (byte for byte `V2DeflateSerializer`'s).
pub fn encode_bytes(h: &Histogram<u64>) -> Vec<u8> {
    ENCODER.with(|e| e.borrow_mut().encode(h))
}

/// Serializes as base64 of HdrHistogram V2 + DEFLATE.
pub fn encode(h: &Histogram<u64>) -> String {
    base64::engine::general_purpose::STANDARD.encode(encode_bytes(h))
}

/// Reads V2 (+DEFLATE) bytes.
pub fn decode_bytes(bytes: &[u8]) -> Result<Histogram<u64>, RecordError> {
    Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| RecordError::HistogramBytes(format!("{e:?}")))
}

/// Reads base64 of V2 (+DEFLATE).
pub fn decode(text: &str) -> Result<Histogram<u64>, RecordError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| RecordError::HistogramEncoding(e.to_string()))?;
    decode_bytes(&bytes)
}

/// Summary statistics of a phase, in microseconds. Values are `None` when nothing was
/// recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Values recorded (requests, for a request phase).
    pub count: u64,
    /// The smallest value.
    pub min_us: Option<f64>,
    /// The mean.
    pub mean_us: Option<f64>,
    /// The standard deviation.
    pub stdev_us: Option<f64>,
    /// The median (50th percentile).
    pub p50_us: Option<f64>,
    /// The 90th percentile.
    pub p90_us: Option<f64>,
    /// The 99th percentile.
    pub p99_us: Option<f64>,
    /// The 99.9th percentile.
    pub p999_us: Option<f64>,
    /// The 99.99th percentile.
    pub p9999_us: Option<f64>,
    /// The largest value.
    pub max_us: Option<f64>,
    /// Values at the histogram's highest trackable value ([`MAX_NS`], one hour, within its
    /// 0.1% precision): those beyond it are recorded there, still counted, never dropped.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub clamped: u64,
    /// The 95% intervals of the percentiles, `[low, high]` in µs (a bound is null where too
    /// few values lie beyond the percentile to bound it): set on a run's summaries by
    /// `analysis::precision`, absent elsewhere and in records made before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci_us: Option<Ci>,
    /// p90's interval (as [`Stats::p50_ci_us`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_ci_us: Option<Ci>,
    /// p99's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ci_us: Option<Ci>,
    /// p99.9's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ci_us: Option<Ci>,
    /// p99.99's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p9999_ci_us: Option<Ci>,
    /// Where batch means over the run's intervals gave a wider interval than order
    /// statistics (and so is the one kept): for which percentiles, and its batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci_batches: Option<CiBatches>,
}

/// A 95% interval, `[low, high]` (µs); a bound the values cannot give is `None`.
pub type Ci = [Option<f64>; 2];

/// The batches of a batch-means interval (`analysis::precision`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CiBatches {
    /// Batches.
    pub batches: u64,
    /// The run's intervals in each batch (the last may hold a few more).
    pub intervals_each: u64,
    /// The lag-1 correlation of the batches' shares at or below the percentile.
    pub lag1: f64,
    /// The percentiles whose interval is the batch means' (`p50` … `p99.99`).
    pub percentiles: Vec<String>,
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Rounds microseconds to nanosecond resolution (3 decimals) for a stable JSON.
fn round_us(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

impl Stats {
    /// The statistics of `h`. Percentiles are HdrHistogram's (the highest value equivalent
    /// to the value at that quantile), within 0.1% of the exact sample quantile. In debug
    /// builds the invariants of [`Stats::violations`] are asserted.
    pub fn of(h: &Histogram<u64>) -> Stats {
        Self::checked(Stats::of_with(h, 1000.0))
    }

    /// `s`, its invariants ([`Stats::violations`]) asserted in debug builds.
    fn checked(s: Stats) -> Stats {
        debug_assert!(
            s.violations().is_empty(),
            "summary invariants: {:?} in {s:?}",
            s.violations()
        );
        s
    }

    /// The statistics of `phase`'s histogram: [`Stats::of`], but those of `events`, a
    /// histogram of counts, are the counts as they are in the `_us` fields.
    pub fn of_phase(phase: crate::model::Phase, h: &Histogram<u64>) -> Stats {
        match phase {
            crate::model::Phase::Events => Self::checked(Stats::of_with(h, 1.0)),
            _ => Stats::of(h),
        }
    }

    /// `per_us`: recorded units per reported unit.
    fn of_with(h: &Histogram<u64>, per_us: f64) -> Stats {
        let unit = |v: u64| v as f64 / per_us;
        let count = h.len();
        if count == 0 {
            return Stats::default();
        }
        let q = |q: f64| Some(unit(h.value_at_quantile(q)));
        Stats {
            clamped: clamped(h),
            count,
            min_us: Some(unit(h.min())),
            mean_us: Some(round_us(h.mean() / per_us)),
            stdev_us: Some(round_us(h.stdev() / per_us)),
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            p9999_us: q(0.9999),
            max_us: Some(unit(h.max())),
            ..Stats::default()
        }
    }
}

/// The values of `h` at its highest trackable value, [`MAX_NS`] (where [`record`] clamps
/// longer ones).
pub fn clamped(h: &Histogram<u64>) -> u64 {
    if h.max() < h.lowest_equivalent(MAX_NS) {
        return 0;
    }
    h.count_between(MAX_NS, h.max())
}

impl Stats {
    /// The percentile named `name` (`p50` to `p99.99`) and its interval, µs.
    pub fn named(&self, name: &str) -> Option<(Option<f64>, Option<Ci>)> {
        Some(match name {
            "p50" => (self.p50_us, self.p50_ci_us),
            "p90" => (self.p90_us, self.p90_ci_us),
            "p99" => (self.p99_us, self.p99_ci_us),
            "p99.9" => (self.p999_us, self.p999_ci_us),
            "p99.99" => (self.p9999_us, self.p9999_ci_us),
            _ => return None,
        })
    }

    /// What breaks the invariants of a summary: every percentile within [min, max], the
    /// percentiles in order, the mean within [min, max], nothing but a zero count when empty,
    /// no more values clamped than counted. Empty when they hold.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        let (Some(min), Some(max)) = (self.min_us, self.max_us) else {
            let any = self.count > 0
                || self.min_us.is_some()
                || self.max_us.is_some()
                || self.p50_us.is_some()
                || self.mean_us.is_some();
            if any {
                out.push(format!(
                    "an empty summary has figures (count {})",
                    self.count
                ));
            }
            return out;
        };
        if min > max {
            out.push(format!("min {min} > max {max}"));
        }
        let ps = [
            ("p50", self.p50_us),
            ("p90", self.p90_us),
            ("p99", self.p99_us),
            ("p99.9", self.p999_us),
            ("p99.99", self.p9999_us),
        ];
        let mut last = ("min", min);
        for (name, v) in ps {
            let Some(v) = v else {
                out.push(format!("{name} missing"));
                continue;
            };
            if v < last.1 {
                out.push(format!("{name} {v} < {} {}", last.0, last.1));
            }
            if v > max {
                out.push(format!("{name} {v} > max {max}"));
            }
            last = (name, v);
        }
        // The mean is of values that lie in [min, max] (within the rounding of its 3
        // decimals, and of HdrHistogram's equivalent values).
        if let Some(mean) = self.mean_us {
            let slack = 0.001 + max * 0.001;
            if mean < min - slack || mean > max + slack {
                out.push(format!("mean {mean} outside [{min}, {max}]"));
            }
        }
        if self.clamped > self.count {
            out.push(format!(
                "{} clamped of {} counted",
                self.clamped, self.count
            ));
        }
        out
    }
}

/// Small per-interval statistics of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalStats {
    /// Values recorded in the interval.
    pub count: u64,
    /// The median, µs (0 when nothing was recorded).
    pub p50_us: f64,
    /// The 99th percentile, µs (0 when nothing was recorded).
    pub p99_us: f64,
    /// The largest value, µs (0 when nothing was recorded).
    pub max_us: f64,
}

impl IntervalStats {
    /// The statistics of one interval's histogram (nanoseconds in, µs out).
    pub fn of(h: &Histogram<u64>) -> IntervalStats {
        IntervalStats {
            count: h.len(),
            p50_us: us(h.value_at_quantile(0.5)),
            p99_us: us(h.value_at_quantile(0.99)),
            max_us: us(h.max()),
        }
    }
}

#[cfg(test)]
mod tests;
