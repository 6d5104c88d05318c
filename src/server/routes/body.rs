//! The embedded target's response [`Body`]: all at once, `n` bytes of a repeated pattern
//! streamed in 64 KiB chunks, or a timed stream of events, as hyper's body.

use crate::server::events::{EventSpec, Events};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

/// 64 KiB of a repeated pattern, the chunks of `/bytes/{n}`.
static PATTERN: [u8; 65536] = {
    let mut a = [0u8; 65536];
    let mut i = 0;
    while i < a.len() {
        a[i] = b'a' + (i % 26) as u8;
        i += 1;
    }
    a
};

/// A response body: all at once, `n` bytes streamed in 64 KiB chunks, or a timed stream of
/// events.
pub enum Body {
    /// The whole body at once (`None`: no body).
    Full(Option<Bytes>),
    /// A body of a repeated pattern, streamed in 64 KiB chunks.
    Pattern {
        /// Bytes still to send.
        remaining: u64,
    },
    /// A timed stream of events.
    Events(Box<Events>),
}

impl Body {
    /// The whole body `b` at once.
    pub(super) fn full(b: impl Into<Bytes>) -> Self {
        Body::Full(Some(b.into()))
    }

    /// No body.
    pub(super) fn empty() -> Self {
        Body::Full(None)
    }

    /// The timed stream of events `spec` says.
    pub(super) fn events(spec: EventSpec) -> Self {
        Body::Events(Box::new(Events::new(spec)))
    }
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Events(e) => e.poll_frame(cx).map(|f| f.map(Ok)),
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Pattern { remaining } => {
                if *remaining == 0 {
                    return Poll::Ready(None);
                }
                let n = (*remaining).min(PATTERN.len() as u64) as usize;
                *remaining -= n as u64;
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&PATTERN[..n])))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Full(b) => b.is_none(),
            Body::Pattern { remaining } => *remaining == 0,
            Body::Events(e) => e.ended(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Body::Pattern { remaining } => SizeHint::with_exact(*remaining),
            Body::Events(_) => SizeHint::default(),
        }
    }
}
