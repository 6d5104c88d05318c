//! W3C Trace Context (`--trace-context`): the identity a request carries to the server, so a
//! slow request in reqlife's record can be found in the server's traces and logs.
//!
//! A request's ids are a pure function of the run's seed, its worker thread and its sequence
//! number on that thread ([`TraceContext::ids`]): the n-th request of thread k carries the
//! same trace id in every run of the same `--seed`, and nothing is drawn or kept per
//! request. The sampled flag follows the trace id (the ratio rule of OpenTelemetry's
//! `TraceIdRatioBased` sampler, on the id's low 56 bits), so a server sampling by its parent
//! samples what reqlife said.

use crate::util::rng::SplitMix64;

/// The identity of one request: its trace id, its span id (the client span the server's
/// span is a child of) and whether it asks to be sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId {
    /// The 16-byte trace id (never 0).
    pub trace: u128,
    /// The 8-byte parent (span) id (never 0).
    pub span: u64,
    /// The `sampled` flag of `traceparent`.
    pub sampled: bool,
}

/// Length of a `traceparent` value: `00-<32 hex>-<16 hex>-<2 hex>`.
pub const TRACEPARENT_LEN: usize = 55;

const HEX: &[u8; 16] = b"0123456789abcdef";

fn put_hex(out: &mut [u8], mut v: u128, digits: usize) {
    for i in (0..digits).rev() {
        out[i] = HEX[(v & 0xf) as usize];
        v >>= 4;
    }
}

impl TraceId {
    /// The `traceparent` header value (version 00), rendered without allocation.
    pub fn traceparent(&self) -> [u8; TRACEPARENT_LEN] {
        let mut out = [b'-'; TRACEPARENT_LEN];
        out[0] = b'0';
        out[1] = b'0';
        put_hex(&mut out[3..35], self.trace, 32);
        put_hex(&mut out[36..52], self.span as u128, 16);
        out[53] = b'0';
        out[54] = if self.sampled { b'1' } else { b'0' };
        out
    }

    /// The trace id as 32 lower-case hex digits (as tracing back ends show it).
    pub fn trace_hex(&self) -> String {
        let mut out = [0u8; 32];
        put_hex(&mut out, self.trace, 32);
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The span id as 16 lower-case hex digits.
    pub fn span_hex(&self) -> String {
        let mut out = [0u8; 16];
        put_hex(&mut out, self.span as u128, 16);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// The run's trace context: how each request's ids are made and whether it is sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceContext {
    /// The run's seed (`--seed`): the same seed gives the same ids.
    pub seed: u64,
    /// The share of requests sent with the sampled flag (`--trace-sample`, 0..=1).
    pub sample: f64,
    /// A `tracestate` value sent as is with every request (`--tracestate`), if given.
    pub tracestate: Option<String>,
    /// Where a request's trace is shown: a URL with `{trace_id}` (`--trace-link`).
    pub link: Option<String>,
}

impl TraceContext {
    /// The ids of request `seq` of worker `thread`.
    #[inline]
    pub fn ids(&self, thread: usize, seq: u64) -> TraceId {
        let mut rng = SplitMix64(
            self.seed
                ^ (thread as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93)
                ^ seq.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17),
        );
        let hi = rng.next_u64();
        let lo = rng.next_u64();
        let trace = ((hi as u128) << 64 | lo as u128).max(1);
        let span = rng.next_u64().max(1);
        TraceId {
            trace,
            span,
            sampled: sampled(lo, self.sample),
        }
    }
}

/// OpenTelemetry's ratio rule on the trace id's low 56 bits: sampled when they are below
/// `ratio` × 2⁵⁶.
fn sampled(lo: u64, ratio: f64) -> bool {
    if ratio >= 1.0 {
        return true;
    }
    let bound = (ratio.max(0.0) * (1u64 << 56) as f64) as u64;
    (lo & ((1u64 << 56) - 1)) < bound
}

/// The trace headers of one request, ready to be written: `traceparent` and, when the run
/// has one, `tracestate`.
#[derive(Debug, Clone, Copy)]
pub struct TraceHeaders<'a> {
    /// The `traceparent` value.
    pub parent: [u8; TRACEPARENT_LEN],
    /// The run's `tracestate` value, if any.
    pub state: Option<&'a str>,
}

impl<'a> TraceHeaders<'a> {
    /// The headers of request `id` in the run's context `ctx`.
    #[inline]
    pub fn new(ctx: &'a TraceContext, id: &TraceId) -> Self {
        TraceHeaders {
            parent: id.traceparent(),
            state: ctx.tracestate.as_deref(),
        }
    }

    /// The fields (lower-case name, value) to add to the request.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, &[u8])> {
        std::iter::once(("traceparent", &self.parent[..]))
            .chain(self.state.map(|s| ("tracestate", s.as_bytes())))
    }
}

/// Checks a `tracestate` value (W3C Trace Context §3.3): at most 32 comma-separated
/// `key=value` members, keys of lower-case letters, digits and `_-*/` (with at most one `@`),
/// values of printable ASCII but `,` and `=` (no trailing space), 512 characters in all.
pub fn check_tracestate(v: &str) -> Result<(), String> {
    let what = "a tracestate is up to 32 comma-separated key=value members (keys: a-z 0-9 _ - * / and one @; values: printable ASCII but , and =), e.g. 'vendor=abc'";
    if v.len() > 512 {
        return Err(format!("tracestate is {} characters: at most 512", v.len()));
    }
    let members: Vec<&str> = v.split(',').map(|m| m.trim_matches([' ', '\t'])).collect();
    if members.len() > 32 {
        return Err(format!("tracestate has {} members: {what}", members.len()));
    }
    for m in members.iter().filter(|m| !m.is_empty()) {
        let Some((key, value)) = m.split_once('=') else {
            return Err(format!("tracestate member '{m}' has no '=': {what}"));
        };
        let key_ok = !key.is_empty()
            && key.len() <= 256
            && key.as_bytes()[0].is_ascii_lowercase() | key.as_bytes()[0].is_ascii_digit()
            && key.matches('@').count() <= 1
            && key
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b));
        let value_ok = !value.is_empty()
            && value.len() <= 256
            && !value.ends_with(' ')
            && value
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=');
        if !key_ok || !value_ok {
            return Err(format!("tracestate member '{m}' is malformed: {what}"));
        }
    }
    if members.iter().all(|m| m.is_empty()) {
        return Err(format!("tracestate is empty: {what}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_version_00_with_the_ids_in_hex() {
        let id = TraceId {
            trace: 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
            span: 0x00f0_67aa_0ba9_02b7,
            sampled: true,
        };
        assert_eq!(
            &id.traceparent()[..],
            b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(id.trace_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
        let unsampled = TraceId {
            sampled: false,
            ..id
        };
        assert!(unsampled.traceparent().ends_with(b"-00"));
    }

    #[test]
    fn ids_are_reproducible_by_seed_and_distinct_per_request() {
        let ctx = TraceContext {
            seed: 7,
            sample: 1.0,
            tracestate: None,
            link: None,
        };
        assert_eq!(ctx.ids(0, 5), ctx.ids(0, 5));
        let mut seen = std::collections::HashSet::new();
        for thread in 0..4 {
            for seq in 0..10_000 {
                let id = ctx.ids(thread, seq);
                assert!(seen.insert(id.trace), "a trace id repeated");
                assert!(id.sampled);
            }
        }
        let other = TraceContext {
            seed: 8,
            ..ctx.clone()
        };
        assert_ne!(other.ids(0, 5).trace, ctx.ids(0, 5).trace);
    }

    #[test]
    fn the_sampled_share_follows_the_ratio() {
        let ctx = TraceContext {
            seed: 1,
            sample: 0.1,
            tracestate: None,
            link: None,
        };
        let n = 100_000;
        let k = (0..n).filter(|&s| ctx.ids(0, s).sampled).count() as f64;
        // Binomial(100000, 0.1): sd ≈ 95; 5 sd either side.
        assert!((k - 10_000.0).abs() < 475.0, "{k} sampled of {n}");
        let none = TraceContext { sample: 0.0, ..ctx };
        assert!((0..1000).all(|s| !none.ids(0, s).sampled));
    }

    #[test]
    fn tracestate_is_checked() {
        assert!(check_tracestate("vendor=abc").is_ok());
        assert!(check_tracestate("a=1, b@c=x y").is_ok());
        for bad in ["", "novalue", "Up=1", "a=b,c", "a=", "k=v=w", "a=1 ,=2"] {
            assert!(check_tracestate(bad).is_err(), "{bad:?} passed");
        }
        assert!(check_tracestate(&"a=b,".repeat(33)).is_err());
    }
}
