//! The embedded target's streamed responses: `/sse/{n}/{gap_ms}[/{jitter_ms}]` (Server-Sent
//! Events) and `/chunks/{n}/{gap_ms}[/{jitter_ms}]` (plain chunks, one line each). Event k
//! (from 1) is due one gap after event k−1, the first one gap after the response was made, on
//! a fixed schedule (a late timer shortens the next gap, so gaps average the gap exactly);
//! with a jitter each gap moves by a uniform amount in ±jitter. At the end a `Server-Timing`
//! trailer gives the stream's own time (`stream`), where the protocol allows: HTTP/2, and
//! HTTP/1.1 when the request says `TE: trailers`.

use super::routes::{nanos, origin, Route, MAX_DELAY_MS, SERVER_TIMING};
use bytes::Bytes;
use http::header;
use hyper::body::Frame;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Most events of `/sse/{n}/{gap_ms}` and chunks of `/chunks/{n}/{gap_ms}`.
pub const MAX_EVENTS: u64 = 10_000_000;

/// `/sse/…` and `/chunks/…`: what to stream and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EventSpec {
    /// Server-Sent Events (else plain chunks).
    pub sse: bool,
    pub n: u64,
    pub gap: Duration,
    /// Each gap is moved by a uniform amount in ±jitter.
    pub jitter: Duration,
}

/// A timed stream of events (see the module's documentation).
pub struct Events {
    spec: EventSpec,
    sent: u64,
    start: Instant,
    due: Instant,
    sleep: Pin<Box<tokio::time::Sleep>>,
    rng: u64,
    /// The trailers went (or there are none to send).
    ended: bool,
}

impl Events {
    pub(super) fn new(spec: EventSpec) -> Self {
        let start = Instant::now();
        let mut e = Events {
            spec,
            sent: 0,
            start,
            due: start,
            sleep: Box::pin(tokio::time::sleep_until(start.into())),
            rng: nanos(start.duration_since(origin())) | 1,
            ended: false,
        };
        e.schedule_next();
        e
    }

    fn schedule_next(&mut self) {
        let mut gap = self.spec.gap;
        if !self.spec.jitter.is_zero() {
            // xorshift64: a uniform offset in [-jitter, +jitter].
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = nanos(self.spec.jitter);
            let offset = self.rng % (2 * j + 1);
            gap = Duration::from_nanos((nanos(gap) + offset).saturating_sub(j));
        }
        self.due += gap;
        self.sleep.as_mut().reset(self.due.into());
    }

    fn event(&self, k: u64) -> Bytes {
        let n = self.spec.n;
        if self.spec.sse {
            Bytes::from(format!(
                ": event {k}\nevent: tick\nid: {k}\ndata: {k}\ndata: of {n}\n\n"
            ))
        } else {
            Bytes::from(format!("chunk {k} of {n}\n"))
        }
    }

    pub(super) fn is_sse(&self) -> bool {
        self.spec.sse
    }

    /// Whether the trailers went: nothing more to send.
    pub(super) fn ended(&self) -> bool {
        self.ended
    }

    pub(super) fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Frame<Bytes>>> {
        if self.sent == self.spec.n {
            if self.ended {
                return Poll::Ready(None);
            }
            self.ended = true;
            let ms = nanos(self.start.elapsed()) as f64 / 1e6;
            let mut trailers = http::HeaderMap::new();
            if let Ok(v) = header::HeaderValue::from_str(&format!("stream;dur={ms:.4}")) {
                trailers.insert(SERVER_TIMING, v);
            }
            return Poll::Ready(Some(Frame::trailers(trailers)));
        }
        if std::future::Future::poll(self.sleep.as_mut(), cx).is_pending() {
            return Poll::Pending;
        }
        self.sent += 1;
        let frame = Frame::data(self.event(self.sent));
        self.schedule_next();
        Poll::Ready(Some(frame))
    }
}

/// `/sse/{n}/{gap_ms}[/{jitter_ms}]` (`sse`) or `/chunks/…`, from the part after the prefix.
pub(super) fn events_route(sse: bool, v: &str) -> Route {
    let what = if sse { "/sse" } else { "/chunks" };
    let ms = |s: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|ms| (0.0..=MAX_DELAY_MS).contains(ms))
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
    };
    let parts: Vec<&str> = v.split('/').collect();
    let spec = match parts[..] {
        [n, gap] | [n, gap, _] => n
            .parse::<u64>()
            .ok()
            .filter(|n| *n <= MAX_EVENTS)
            .zip(ms(gap))
            .zip(parts.get(2).map_or(Some(Duration::ZERO), |j| ms(j)))
            .filter(|((_, gap), jitter)| jitter <= gap)
            .map(|((n, gap), jitter)| EventSpec {
                sse,
                n,
                gap,
                jitter,
            }),
        _ => None,
    };
    match spec {
        Some(spec) => Route::Events(spec),
        None => Route::BadRequest(format!(
            "bad stream '{v}': expected {what}/{{n}}/{{gap_ms}}[/{{jitter_ms}}] with n from 0 to {MAX_EVENTS}, gap_ms from 0 to {MAX_DELAY_MS} and jitter_ms at most gap_ms\n"
        )),
    }
}
