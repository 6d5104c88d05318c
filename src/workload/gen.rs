//! The generators behind template slots and their per-worker state: [`GenState`] (one per
//! worker thread: its random stream, its sequence counters, a scratch buffer), the samplers
//! ([`Zipf`], [`Pareto`], bounded uniform integers, random text and bytes, UUIDs), the
//! [`LineFile`] of `{line:FILE}`, and the split of sequences over workers ([`share`],
//! [`global_worker`]). Nothing here allocates once a worker is warmed up.
//!
//! # Workers and the split of sequences
//!
//! A *worker* is one thread of one process: with `n` processes (`--segment i/n`) of `T`
//! threads each there are `W = n·T` workers, and thread `t` of process `p` is worker
//! `w = p·T + t` ([`global_worker`]). Each worker owns a [`GenState`] made from
//! `(seed, w, W)` and never shares it.
//!
//! Sequences are split by **striding**, as the pacers split a schedule: the `k`-th render
//! (0-based) of a request by worker `w` has the sequence number `g = k·W + w`. The workers'
//! numbers are the residue classes of `g` modulo `W`, so two workers never produce the same `g`
//! and, together, they produce every `g` once. Striding was chosen over contiguous blocks
//! because it needs no total in advance (a timed phase, or `{seq}` with no end, has none) and
//! because it gives a prefix of the global sequence whenever the workers keep pace.
//!
//! Exact coverage of `0..N` (a fill phase of `N` requests) needs each worker to send exactly
//! its share, the number of `g < N` with `g ≡ w (mod W)`: [`share`]`(N, w, W) = ⌈(N − w)/W⌉`.
//! A run that stops on a shared count (whichever worker claims the next request) instead can
//! pass its own unique number to `render_at` (see `request::PreparedRequest::render_at`).
//!
//! # Random streams
//!
//! Each worker draws from its own SplitMix64 whose starting state is a hash of `(seed, w)`
//! (the SplitMix64 finaliser applied twice). SplitMix64 walks one cycle of 2⁶⁴ states, so two
//! workers' streams are two random points on that cycle: they overlap only if one starts
//! within the other's next draws, a chance of about `draws / 2⁶⁴` per pair (10⁻⁷ for 10¹²
//! draws). Starting states `seed + w·γ` would instead make worker 1 replay worker 0's stream
//! one draw behind. The same `(seed, w, W)` always gives the same values.

use crate::util::rng::SplitMix64;
use std::path::{Path, PathBuf};

/// The SplitMix64 finaliser: a bijective 64-bit mix.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The global index and count of thread `thread` of `threads` in process `segment` of
/// `segments`: `(segment·threads + thread, segments·threads)`.
pub fn global_worker(
    segment: usize,
    segments: usize,
    thread: usize,
    threads: usize,
) -> (usize, usize) {
    (segment * threads + thread, segments.max(1) * threads.max(1))
}

/// How many of the sequence numbers `0..total` belong to worker `worker` of `workers` under
/// striding: the count of `g < total` with `g ≡ worker (mod workers)`, `⌈(total − worker)/workers⌉`
/// (0 when `worker ≥ total`). The shares of all workers add up to `total`.
pub fn share(total: u64, worker: u64, workers: u64) -> u64 {
    let workers = workers.max(1);
    if worker >= total {
        return 0;
    }
    (total - worker).div_ceil(workers)
}

/// The generator state of one worker thread: its random stream, the number of renders of each
/// request so far, and a scratch buffer for bodies of unknown length. Create one per worker
/// with [`GenState::new`]; it is not shared between threads (wrap it in a `RefCell` to share
/// it between the connections of one thread: a render borrows it briefly and never awaits).
#[derive(Debug, Clone)]
pub struct GenState {
    rng: SplitMix64,
    worker: u64,
    workers: u64,
    /// Renders so far of each request id by this worker (grown on a request's first render).
    counters: Vec<u64>,
    /// Round-robin picks so far by this worker.
    picks: u64,
    /// Where a body of unknown length is rendered before its Content-Length is written.
    pub(crate) scratch: Vec<u8>,
}

impl GenState {
    /// The state of worker `worker` of `workers` (see the module doc for the numbering across
    /// threads and processes), with the run's `seed`.
    pub fn new(seed: u64, worker: usize, workers: usize) -> Self {
        let workers = workers.max(1) as u64;
        let worker = worker as u64 % workers;
        GenState {
            rng: SplitMix64(mix64(mix64(seed) ^ mix64(worker.wrapping_add(0x5EED)))),
            worker,
            workers,
            counters: Vec::new(),
            picks: 0,
            scratch: Vec::new(),
        }
    }

    /// This worker's global index.
    pub fn worker(&self) -> u64 {
        self.worker
    }

    /// The global number of workers.
    pub fn workers(&self) -> u64 {
        self.workers
    }

    /// The next sequence number of request `id` for this worker: `k·W + w` for its `k`-th
    /// render (0-based). The first call for an `id` grows the counter table (warm-up).
    pub fn next_seq(&mut self, id: usize) -> u64 {
        if id >= self.counters.len() {
            self.counters.resize(id + 1, 0);
        }
        let k = self.counters[id];
        self.counters[id] = k + 1;
        k.wrapping_mul(self.workers).wrapping_add(self.worker)
    }

    /// The next round-robin number of this worker (`k·W + w`, as [`GenState::next_seq`]).
    pub(crate) fn next_pick(&mut self) -> u64 {
        let k = self.picks;
        self.picks += 1;
        k.wrapping_mul(self.workers).wrapping_add(self.worker)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..range (`range ≥ 1`), exactly: Lemire's multiply-shift with rejection
    /// ("Fast random integer generation in an interval", 2019). The high half of
    /// `x·range` (x uniform on 64 bits) is the result; the low half tells the few `x` that would
    /// make some results one count more likely, and those are drawn again (fewer than
    /// `range/2⁶⁴` of draws).
    pub fn below(&mut self, range: u64) -> u64 {
        debug_assert!(range > 0);
        let mut m = self.rng.next_u64() as u128 * range as u128;
        if (m as u64) < range {
            // 2⁶⁴ mod range: the number of low halves to reject.
            let threshold = range.wrapping_neg() % range;
            while (m as u64) < threshold {
                m = self.rng.next_u64() as u128 * range as u128;
            }
        }
        (m >> 64) as u64
    }

    /// Uniform in `low..=high` (`low ≤ high`).
    pub fn uniform(&mut self, low: i64, high: i64) -> i64 {
        // The width as u64 wraps to 0 only for the full i64 range: then any 64 bits will do.
        let width = (high as u64).wrapping_sub(low as u64).wrapping_add(1);
        let offset = if width == 0 {
            self.rng.next_u64()
        } else {
            self.below(width)
        };
        (low as u64).wrapping_add(offset) as i64
    }
}

/// The 62 characters of `{random_text:N}`, then two fillers for the rejected chunks 62 and 63.
const ALNUM: &[u8; 64] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz__";

/// Appends `n` characters drawn uniformly from `[0-9A-Za-z]`: each 64-bit draw gives ten 6-bit
/// chunks, and a chunk of 62 or 63 is skipped, so every character has probability 1/62.
/// Written in place without a branch per character: every chunk is written at the next free
/// position, which only moves on when the chunk is kept (a skipped one is overwritten).
pub fn push_random_text(out: &mut Vec<u8>, n: usize, gen: &mut GenState) {
    let start = out.len();
    out.resize(start + n, 0);
    let dst = &mut out[start..];
    let mut i = 0;
    // Ten chunks fit whatever is kept: no bound to check inside.
    while n - i >= 10 {
        let mut bits = gen.next_u64();
        for _ in 0..10 {
            let c = (bits & 63) as usize;
            bits >>= 6;
            dst[i] = ALNUM[c];
            i += (c < 62) as usize;
        }
    }
    while i < n {
        let mut bits = gen.next_u64();
        for _ in 0..10 {
            let c = (bits & 63) as usize;
            bits >>= 6;
            dst[i] = ALNUM[c];
            i += (c < 62) as usize;
            if i == n {
                break;
            }
        }
    }
}

/// Appends `n` random bytes.
pub fn push_random_bytes(out: &mut Vec<u8>, n: usize, gen: &mut GenState) {
    out.reserve(n);
    let mut left = n;
    while left >= 8 {
        out.extend_from_slice(&gen.next_u64().to_le_bytes());
        left -= 8;
    }
    if left > 0 {
        out.extend_from_slice(&gen.next_u64().to_le_bytes()[..left]);
    }
}

/// Appends a random (version 4) UUID in its 36-character text form, e.g.
/// `3f2b8c1e-9d4a-4f6b-8e2d-7c5a1b0f9e83`: 122 random bits, the version nibble 4 and the
/// variant bits `10` (RFC 9562, section 5.4).
pub fn push_uuid(out: &mut Vec<u8>, gen: &mut GenState) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&gen.next_u64().to_le_bytes());
    b[8..].copy_from_slice(&gen.next_u64().to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
}

/// Appends `v` in decimal, without allocating.
pub fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` in decimal (a leading `-` when negative), without allocating.
pub fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

/// `log(1 + x)/x`, accurate near 0 (Taylor series there).
fn log1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - x * 0.25))
    }
}

/// `(exp(x) − 1)/x`, accurate near 0 (Taylor series there).
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + x * 0.25))
    }
}

/// Zipf's law over the ranks `1..=n` with exponent `s > 0`:
///
/// ```text
/// P(K = k) = k^(−s) / H(n, s),    H(n, s) = Σ_{i=1..n} i^(−s)
/// ```
///
/// sampled by **rejection-inversion** (Hörmann & Derflinger, "Rejection-inversion to generate
/// variates from monotone discrete distributions", 1996), in O(1) memory and time whatever `n`
/// (`n = 10⁷` costs the same as `n = 10`; a table would take 80 MB).
///
/// Let `h(x) = x^(−s)` and `I(x) = ∫₁ˣ h = (x^(1−s) − 1)/(1 − s)` (`ln x` when `s = 1`;
/// computed as `expm1((1−s)·ln x)/(1−s)`, which is exact at and near 1). Because `h` is convex
/// and decreasing, `h(k) ≤ I(k + ½) − I(k − ½)`: the bar of rank `k` fits under the hat
/// `h` over `[k − ½, k + ½]`. So:
///
/// 1. draw `u` uniform in `(I(n + ½), I(1.5) − h(1)]` — the hat's area from the top of rank
///    1's bar to the end of rank `n`;
/// 2. invert it: `x = I⁻¹(u) = exp(log1p((1−s)·u)/(1−s))`, and take `k = round(x)` (clamped to
///    `1..=n`);
/// 3. accept `k` when `u` lies in the top `h(k)` of rank `k`'s slice of the hat, i.e.
///    `u ≥ I(k + ½) − h(k)`; else draw again.
///
/// Each rank is accepted with a probability proportional to `h(k)`, which is the law above.
/// For rank 1 the slice is exactly `h(1)` long, so it is always accepted; the quick test
/// `k − x ≤ q` with `q = 2 − I⁻¹(I(2.5) − h(2))` accepts most other draws without computing
/// `I(k + ½)`. The hat's area exceeds the law's by little, so the loop runs about once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zipf {
    n: u64,
    s: f64,
    /// `I(1.5) − h(1)`.
    i_x1: f64,
    /// `I(n + ½)`.
    i_n: f64,
    /// The quick-acceptance bound `q`.
    q: f64,
}

impl Zipf {
    /// The law over `1..=n` with exponent `s`; `None` unless `n ≥ 1` and `s` is finite and
    /// positive.
    pub fn new(n: u64, s: f64) -> Option<Zipf> {
        if n == 0 || !(s.is_finite() && s > 0.0) {
            return None;
        }
        let mut z = Zipf {
            n,
            s,
            i_x1: 0.0,
            i_n: 0.0,
            q: 0.0,
        };
        z.i_x1 = z.integral(1.5) - 1.0;
        z.i_n = z.integral(n as f64 + 0.5);
        z.q = 2.0 - z.integral_inverse(z.integral(2.5) - z.h(2.0));
        Some(z)
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The exponent.
    pub fn s(&self) -> f64 {
        self.s
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        expm1_over_x((1.0 - self.s) * log_x) * log_x
    }

    fn integral_inverse(&self, u: f64) -> f64 {
        // (1−s)·u ≥ −1 in exact arithmetic; rounding can push it just below.
        let t = (u * (1.0 - self.s)).max(-1.0);
        (log1p_over_x(t) * u).exp()
    }

    /// One rank in `1..=n`.
    pub fn sample(&self, gen: &mut GenState) -> u64 {
        loop {
            let u = self.i_n + gen.unit() * (self.i_x1 - self.i_n);
            let x = self.integral_inverse(u);
            let k = (x + 0.5).clamp(1.0, self.n as f64) as u64;
            let kf = k as f64;
            if kf - x <= self.q || u >= self.integral(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }
}

/// A Pareto law bounded to the keys `1..=n`, with shape `α > 0`. The continuous bounded Pareto
/// on `[1, n + 1)` has
///
/// ```text
/// F(x) = (1 − x^(−α)) / (1 − (n+1)^(−α)),    1 ≤ x < n + 1
/// ```
///
/// and is sampled by inversion, `x = (1 − U·(1 − (n+1)^(−α)))^(−1/α)` with `U` uniform in
/// [0, 1); the key is `⌊x⌋`, so
///
/// ```text
/// P(K = k) = (k^(−α) − (k+1)^(−α)) / (1 − (n+1)^(−α))
/// ```
///
/// The tail is heavy: the chance of a key of at least `x` falls only as `x^(−α)`, so a
/// smaller shape spreads more draws over the high keys; every draw stays in `1..=n`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pareto {
    n: u64,
    shape: f64,
    /// `1 − (n+1)^(−α)`.
    mass: f64,
}

impl Pareto {
    /// The law over `1..=n` with shape `α`; `None` unless `n ≥ 1` and `α` is finite and
    /// positive.
    pub fn new(n: u64, shape: f64) -> Option<Pareto> {
        if n == 0 || !(shape.is_finite() && shape > 0.0) {
            return None;
        }
        let mass = -(-shape * (n as f64 + 1.0).ln()).exp_m1();
        Some(Pareto { n, shape, mass })
    }

    /// The number of keys.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The shape α.
    pub fn shape(&self) -> f64 {
        self.shape
    }

    /// `P(K = k)` (for tests and documentation).
    pub fn probability(&self, k: u64) -> f64 {
        let a = self.shape;
        ((k as f64).powf(-a) - (k as f64 + 1.0).powf(-a)) / self.mass
    }

    /// One key in `1..=n`.
    pub fn sample(&self, gen: &mut GenState) -> u64 {
        let u = gen.unit();
        // 1 − U·mass is in (0, 1], so x ≥ 1; ln keeps the power accurate for tiny shapes.
        let x = (-(-u * self.mass).ln_1p() / self.shape).exp();
        (x as u64).clamp(1, self.n)
    }
}

/// The lines of a data file for `{line:FILE}`, read once: blank lines are skipped and a
/// trailing `\r` is dropped. Stored as one buffer and the offsets of the lines (8 bytes a
/// line), so a file of 10⁷ keys costs its size plus 80 MB, not 10⁷ strings.
#[derive(Debug)]
pub struct LineFile {
    /// The path as written in the template (shown when the template is printed).
    pub(crate) written: String,
    data: Vec<u8>,
    /// Line i is `data[ends[i-1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

impl PartialEq for LineFile {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written && self.ends == other.ends && self.data == other.data
    }
}

impl LineFile {
    /// Reads `path` (shown as `written` in messages and when printed). An unreadable file or one
    /// with no line is an error naming the path.
    pub fn read(path: &Path, written: &str) -> Result<LineFile, String> {
        let raw = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read data file '{}': {}",
                path.display(),
                crate::model::io_reason(&e)
            )
        })?;
        let file = LineFile::from_bytes(written, &raw);
        if file.is_empty() {
            return Err(format!(
                "data file '{}' has no line: {{line:FILE}} needs at least one non-blank line",
                path.display()
            ));
        }
        Ok(file)
    }

    /// The lines of `raw` (blank lines skipped, `\r\n` endings accepted).
    pub fn from_bytes(written: &str, raw: &[u8]) -> LineFile {
        let mut data = Vec::with_capacity(raw.len());
        let mut ends = Vec::new();
        for line in raw.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            data.extend_from_slice(line);
            ends.push(data.len());
        }
        data.shrink_to_fit();
        LineFile {
            written: written.to_string(),
            data,
            ends,
        }
    }

    /// The number of lines.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i` (0-based, `i < len`).
    pub fn line(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Line `seq mod len`: the line of sequence number `seq`, cycling.
    pub fn line_of(&self, seq: u64) -> &[u8] {
        self.line((seq % self.ends.len() as u64) as usize)
    }

    /// The path as written in the template.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Resolves the path of `{line:PATH}`: absolute paths as they are, relative ones from
    /// `base_dir`.
    pub fn resolve(base_dir: &Path, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::rng::chi_square;

    #[test]
    fn uniform_integers_are_flat_and_inclusive() {
        // (low, high, draws, χ² bound): the bounds are the 99.9% points of χ² with
        // high − low degrees of freedom, so a correct sampler passes with any seed but one in
        // a thousand; the seed is fixed, so the test is deterministic.
        let rows: &[(i64, i64, u64, f64)] = &[
            (1, 10, 100_000, 27.88),   // 9 degrees of freedom
            (-3, 3, 70_000, 22.46),    // negatives, 6 degrees of freedom
            (0, 99, 1_000_000, 148.2), // 99 degrees of freedom
        ];
        for &(low, high, draws, bound) in rows {
            let mut gen = GenState::new(7, 0, 1);
            let mut counts = vec![0u64; (high - low + 1) as usize];
            for _ in 0..draws {
                let v = gen.uniform(low, high);
                assert!((low..=high).contains(&v), "{v} outside {low}..={high}");
                counts[(v - low) as usize] += 1;
            }
            let chi = chi_square(&counts);
            assert!(chi < bound, "{low}..={high}: χ² = {chi:.1} ≥ {bound}");
            assert!(counts.iter().all(|&c| c > 0), "both ends are reached");
        }
        // the degenerate and the full ranges
        let mut gen = GenState::new(1, 0, 1);
        assert_eq!(gen.uniform(5, 5), 5);
        let _ = gen.uniform(i64::MIN, i64::MAX);
    }

    /// H(n, s) = Σ i^(−s), summed from the small terms up.
    fn harmonic(n: u64, s: f64) -> f64 {
        (1..=n).rev().map(|i| (i as f64).powf(-s)).sum()
    }

    #[test]
    fn zipf_top_ranks_follow_the_law() {
        // (n, s): around s = 1 the sampler takes its series branches; n = 10⁷ checks that a
        // large range costs no table and still follows the law.
        let rows: &[(u64, f64)] = &[
            (1000, 1.1),       // the usual skew
            (1000, 1.0),       // s = 1: I(x) = ln x
            (1000, 0.8),       // s < 1: a flatter head
            (100, 2.5),        // steep: most draws are rank 1
            (10_000_000, 1.1), // a large key space
        ];
        let draws = 200_000u64;
        for &(n, s) in rows {
            let z = Zipf::new(n, s).unwrap();
            let mut gen = GenState::new(42, 0, 1);
            let mut top = [0u64; 6];
            for _ in 0..draws {
                let k = z.sample(&mut gen);
                assert!((1..=n).contains(&k), "rank {k} outside 1..={n}");
                if k <= 5 {
                    top[k as usize] += 1;
                }
            }
            let h = harmonic(n, s);
            for k in 1..=5u64 {
                let p = (k as f64).powf(-s) / h;
                let want = p * draws as f64;
                // 4.5 binomial standard deviations, plus 1% of the figure for rounding.
                let tol = 4.5 * (draws as f64 * p * (1.0 - p)).sqrt() + 0.01 * want;
                let got = top[k as usize] as f64;
                assert!(
                    (got - want).abs() <= tol,
                    "n={n} s={s} rank {k}: {got} draws, expected {want:.0} ± {tol:.0}"
                );
            }
        }
        // bad parameters are refused
        assert!(Zipf::new(0, 1.1).is_none());
        assert!(Zipf::new(10, 0.0).is_none());
        assert!(Zipf::new(10, f64::NAN).is_none());
    }

    #[test]
    fn pareto_is_bounded_and_heavy_tailed() {
        // (n, shape)
        let rows: &[(u64, f64)] = &[(1_000_000, 1.16), (1000, 0.5), (10, 3.0)];
        let draws = 200_000u64;
        for &(n, shape) in rows {
            let p = Pareto::new(n, shape).unwrap();
            let mut gen = GenState::new(3, 0, 1);
            let (mut ones, mut tail, mut top) = (0u64, 0u64, 0u64);
            let cut = n.div_ceil(10).max(2); // the keys ≥ cut make the upper 90% of the range
            for _ in 0..draws {
                let k = p.sample(&mut gen);
                assert!((1..=n).contains(&k), "key {k} outside 1..={n}");
                ones += (k == 1) as u64;
                tail += (k >= cut) as u64;
                top += (k == n) as u64;
            }
            // P(K = 1) and P(K ≥ cut) = ((cut)^(−α) − (n+1)^(−α)) / mass from the formula.
            let p1 = p.probability(1);
            let pt = ((cut as f64).powf(-shape) - (n as f64 + 1.0).powf(-shape)) / p.mass;
            for (what, got, want) in [("P(1)", ones, p1), ("P(tail)", tail, pt)] {
                let exp = want * draws as f64;
                let tol = 4.5 * (draws as f64 * want * (1.0 - want)).sqrt() + 0.01 * exp;
                assert!(
                    (got as f64 - exp).abs() <= tol,
                    "n={n} α={shape} {what}: {got}, expected {exp:.0} ± {tol:.0}"
                );
            }
            // heavy-tailed and skewed: key 1 is drawn far more often than the mean key
            assert!(ones as f64 > 5.0 * draws as f64 / n as f64, "n={n}: {ones}");
            // the upper bound is reachable when its probability is not negligible
            if p.probability(n) * draws as f64 > 20.0 {
                assert!(top > 0, "n={n} α={shape}: key n never drawn");
            }
        }
        assert!(Pareto::new(0, 1.0).is_none());
        assert!(Pareto::new(5, -1.0).is_none());
    }

    #[test]
    fn striding_covers_each_number_once() {
        // (process count, threads per process, total): every worker sends share(total) renders;
        // together they produce 0..total, each once.
        let rows: &[(usize, usize, u64)] = &[
            (1, 1, 1000), // one worker: the plain sequence
            (1, 4, 1003), // four threads, a total that does not divide
            (3, 2, 997),  // three processes of two threads
            (2, 8, 5),    // more workers than numbers: some send nothing
        ];
        for &(segments, threads, total) in rows {
            let mut seen = vec![false; total as usize];
            let mut sent = 0;
            for seg in 0..segments {
                for t in 0..threads {
                    let (w, workers) = global_worker(seg, segments, t, threads);
                    let mut gen = GenState::new(9, w, workers);
                    for _ in 0..share(total, w as u64, workers as u64) {
                        let g = gen.next_seq(3);
                        assert!(g < total, "{g} beyond {total}");
                        assert!(!seen[g as usize], "{g} sent twice");
                        seen[g as usize] = true;
                        sent += 1;
                    }
                }
            }
            assert_eq!(sent, total, "{segments}×{threads}");
            assert!(
                seen.iter().all(|&s| s),
                "{segments}×{threads}: a number was missed"
            );
        }
    }

    #[test]
    fn workers_streams_are_reproducible_and_distinct() {
        let draw = |seed, w| {
            let mut g = GenState::new(seed, w, 4);
            (0..8).map(|_| g.next_u64()).collect::<Vec<_>>()
        };
        assert_eq!(draw(5, 1), draw(5, 1), "same seed and worker, same stream");
        assert_ne!(draw(5, 1), draw(6, 1), "another seed, another stream");
        let (a, b) = (draw(5, 0), draw(5, 1));
        // not one worker's stream shifted by a draw or two (the trap of seed + w·γ)
        assert!(a.iter().all(|x| !b.contains(x)), "{a:?} {b:?}");
    }

    #[test]
    fn text_bytes_uuid_and_numbers() {
        let mut gen = GenState::new(11, 0, 1);
        let mut out = Vec::new();
        push_random_text(&mut out, 10_000, &mut gen);
        assert_eq!(out.len(), 10_000);
        assert!(out.iter().all(u8::is_ascii_alphanumeric));
        // all 62 characters appear in 10 000 draws (each is missed with probability ~1e-70)
        let mut seen = [false; 256];
        out.iter().for_each(|&b| seen[b as usize] = true);
        assert_eq!(seen.iter().filter(|&&s| s).count(), 62);

        for n in [0, 1, 7, 8, 9, 100] {
            let mut b = Vec::new();
            push_random_bytes(&mut b, n, &mut gen);
            assert_eq!(b.len(), n);
        }

        let mut u = Vec::new();
        push_uuid(&mut u, &mut gen);
        let u = String::from_utf8(u).unwrap();
        let parts: Vec<&str> = u.split('-').collect();
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(parts[2].starts_with('4'), "version 4: {u}");
        assert!(
            matches!(&parts[3][..1], "8" | "9" | "a" | "b"),
            "variant: {u}"
        );

        // (value, text)
        for (v, want) in [
            (0i64, "0"),
            (7, "7"),
            (-42, "-42"),
            (i64::MIN, "-9223372036854775808"),
        ] {
            let mut o = Vec::new();
            push_i64(&mut o, v);
            assert_eq!(o, want.as_bytes());
        }
        let mut o = Vec::new();
        push_u64(&mut o, u64::MAX);
        assert_eq!(o, b"18446744073709551615");
    }

    #[test]
    fn line_files_skip_blanks_and_cycle() {
        let f = LineFile::from_bytes("keys.txt", b"alpha\r\n\nbeta\n  \ngamma");
        assert_eq!(f.len(), 3);
        // (sequence number, line)
        for (seq, want) in [
            (0u64, "alpha"),
            (1, "beta"),
            (2, "gamma"),
            (3, "alpha"),
            (7, "beta"),
        ] {
            assert_eq!(f.line_of(seq), want.as_bytes(), "seq {seq}");
        }
        assert!(LineFile::from_bytes("e", b"\n\n").is_empty());
        let e = LineFile::read(Path::new("/nonexistent/keys.txt"), "keys.txt").unwrap_err();
        assert!(
            e.contains("cannot read data file '/nonexistent/keys.txt'"),
            "{e}"
        );
    }
}
