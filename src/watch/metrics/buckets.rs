//! The exported latency histograms' fixed log buckets: their bounds ([`BOUNDS_NS`], the
//! Renard R20 series from 1 µs to 100 s), one phase's cumulative counts with their exemplars
//! ([`Buckets`]), and [`seconds`], the bounds and values as written.

/// The mantissas of the Renard R20 series (×100): 20 buckets per decade, and 1-2-5 among
/// them.
const R20: [u64; 20] = [
    100, 112, 125, 140, 160, 180, 200, 224, 250, 280, 315, 355, 400, 450, 500, 560, 630, 710, 800,
    900,
];

/// Decades covered: from 1 µs (100 × 10 ns) up to 100 s.
const DECADES: u32 = 8;

/// Number of finite bucket bounds.
pub const BUCKETS: usize = R20.len() * DECADES as usize + 1;

/// The upper bounds of the latency buckets, in nanoseconds: 1 µs, 1.12 µs, … 90 s, 100 s.
pub const BOUNDS_NS: [u64; BUCKETS] = bounds();

const fn bounds() -> [u64; BUCKETS] {
    let mut out = [0u64; BUCKETS];
    let mut d = 0;
    let mut scale = 10u64;
    while d < DECADES as usize {
        let mut i = 0;
        while i < R20.len() {
            out[d * R20.len() + i] = R20[i] * scale;
            i += 1;
        }
        scale *= 10;
        d += 1;
    }
    out[BUCKETS - 1] = 100 * scale;
    out
}

/// Nanoseconds as seconds in decimal, exactly (no float): 1120 → `0.00000112`.
pub fn seconds(ns: u64) -> String {
    let whole = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:09}");
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

/// One phase's cumulative histogram in the fixed buckets.
#[derive(Debug, Clone)]
pub(super) struct Buckets {
    /// Per bucket (the last one: above the largest bound), not cumulative.
    pub(super) counts: Vec<u64>,
    /// The sum of the values, in nanoseconds.
    pub(super) sum_ns: f64,
    /// The number of values.
    pub(super) count: u64,
    /// Per bucket, the newest kept request with a trace id that fell in it (trace id, ns):
    /// its OpenMetrics exemplar. Empty until one comes (runs without `--trace-context`). A
    /// server phase's (`--server-probes`): the joined requests', by their value in it.
    exemplars: Vec<Option<(u128, u64)>>,
}

impl Buckets {
    /// No value yet.
    pub(super) fn new() -> Self {
        Buckets {
            counts: vec![0; BUCKETS + 1],
            sum_ns: 0.0,
            count: 0,
            exemplars: Vec::new(),
        }
    }

    /// Keeps each traced request of `kept` (an interval's: its slowest, then one per latency
    /// bucket) with a `value` in this histogram (its total, or one of its server phases) as
    /// the bucket of that value's exemplar: the newest interval's win, and within one its
    /// slowest requests (which its record keeps) over the others.
    pub(super) fn add_exemplars(
        &mut self,
        kept: &[crate::recorder::exemplar::Exemplar],
        value: impl Fn(&crate::recorder::exemplar::Exemplar) -> Option<u64>,
    ) {
        for e in kept.iter().rev() {
            let (Some(t), Some(ns)) = (e.trace, value(e)) else {
                continue;
            };
            if self.exemplars.is_empty() {
                self.exemplars = vec![None; BUCKETS + 1];
            }
            let i = BOUNDS_NS.partition_point(|&b| b < ns);
            self.exemplars[i] = Some((t.trace, ns));
        }
    }

    /// The exemplar of bucket `i`, as written after its value (` # {trace_id="…"} 0.0123`).
    pub(super) fn exemplar(&self, i: usize) -> String {
        match self.exemplars.get(i).copied().flatten() {
            Some((trace, ns)) => format!(" # {{trace_id=\"{trace:032x}\"}} {}", seconds(ns)),
            None => String::new(),
        }
    }

    /// Adds the values of `h`.
    pub(super) fn add(&mut self, h: &hdrhistogram::Histogram<u64>) {
        for v in h.iter_recorded() {
            let ns = v.value_iterated_to();
            let n = v.count_at_value();
            let i = BOUNDS_NS.partition_point(|&b| b < ns);
            self.counts[i] += n;
            self.count += n;
            self.sum_ns += h.median_equivalent(ns) as f64 * n as f64;
        }
    }
}
