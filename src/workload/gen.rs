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

mod line_file;

pub use line_file::LineFile;

use crate::util::rng::SplitMix64;

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

#[cfg(test)]
mod tests;
