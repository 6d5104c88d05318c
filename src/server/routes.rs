//! The embedded target's routes and the `Server-Timing` header every response carries:
//! `/` → `Hello World!`; `/delay/{ms}`; `/echo`; `/status/{code}`; `/bytes/{n}`; and
//! `/stall/{ms}`, which answers at once but makes the whole server hold every other response
//! until `ms` have passed (a garbage-collection pause, to show coordinated omission). The server
//! measures its own phases: `parse` (routing the request), `queue` (handing the work from the
//! connection's I/O task to a worker task, as thread-pool servers do), `handler` (the route's
//! work), `serialize` (building the response) and `total` (from the call of the service to the
//! response ready).

use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// Largest `/echo` body accepted.
pub const MAX_ECHO_BYTES: usize = 16 * 1024 * 1024;
/// Largest `/bytes/{n}`.
pub const MAX_BYTES: u64 = 1 << 30;
/// Longest `/delay/{ms}`.
pub const MAX_DELAY_MS: f64 = 600_000.0;

const HELLO: &[u8] = b"Hello World!";
const ROUTES: &str =
    "not found: the routes are /, /delay/{ms}, /echo, /status/{code}, /bytes/{n}, /stall/{ms}\n";

/// The end of the current stall, in nanoseconds since [`origin`] (0: none).
static STALL_UNTIL_NS: AtomicU64 = AtomicU64::new(0);

fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

/// Waits out a stall started by `/stall/{ms}`, if one is on.
async fn wait_out_stall() {
    let until = STALL_UNTIL_NS.load(Ordering::Relaxed);
    if until == 0 {
        return;
    }
    let until = origin() + Duration::from_nanos(until);
    if Instant::now() < until {
        tokio::time::sleep_until(until.into()).await;
    }
}

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

/// A response body: all at once, or `n` bytes streamed in 64 KiB chunks.
pub enum Body {
    Full(Option<Bytes>),
    Pattern { remaining: u64 },
}

impl Body {
    fn full(b: impl Into<Bytes>) -> Self {
        Body::Full(Some(b.into()))
    }

    fn empty() -> Self {
        Body::Full(None)
    }
}

impl HttpBody for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
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
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            Body::Pattern { remaining } => SizeHint::with_exact(*remaining),
        }
    }
}

/// The server's own phases of one request, in milliseconds.
#[derive(Default)]
struct Timing {
    parse_ms: f64,
    queue_ms: Option<f64>,
    handler_ms: f64,
    serialize_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e6
}

/// What a route decided, before the response is built.
enum Route {
    Hello,
    Delay(Duration),
    Echo,
    Status(StatusCode),
    Bytes(u64),
    Stall(Duration),
    BadRequest(String),
    NotFound,
}

fn route_of(method: &Method, path: &str) -> Route {
    let _ = method;
    match path {
        "/" => Route::Hello,
        "/echo" => Route::Echo,
        _ => {
            if let Some(v) = path.strip_prefix("/delay/") {
                match v.parse::<f64>() {
                    Ok(ms) if (0.0..=MAX_DELAY_MS).contains(&ms) => {
                        Route::Delay(Duration::from_secs_f64(ms / 1000.0))
                    }
                    _ => Route::BadRequest(format!(
                        "bad delay '{v}': expected /delay/{{ms}} with ms a number from 0 to {MAX_DELAY_MS}\n"
                    )),
                }
            } else if let Some(v) = path.strip_prefix("/status/") {
                match v.parse::<u16>().ok().filter(|c| (200..=599).contains(c)) {
                    Some(code) => match StatusCode::from_u16(code) {
                        Ok(s) => Route::Status(s),
                        Err(_) => Route::BadRequest(format!("bad status '{v}'\n")),
                    },
                    None => Route::BadRequest(format!(
                        "bad status '{v}': expected /status/{{code}} with code from 200 to 599\n"
                    )),
                }
            } else if let Some(v) = path.strip_prefix("/stall/") {
                match v.parse::<f64>() {
                    Ok(ms) if (0.0..=MAX_DELAY_MS).contains(&ms) => {
                        Route::Stall(Duration::from_secs_f64(ms / 1000.0))
                    }
                    _ => Route::BadRequest(format!(
                        "bad stall '{v}': expected /stall/{{ms}} with ms a number from 0 to {MAX_DELAY_MS}\n"
                    )),
                }
            } else if let Some(v) = path.strip_prefix("/bytes/") {
                match v.parse::<u64>().ok().filter(|n| *n <= MAX_BYTES) {
                    Some(n) => Route::Bytes(n),
                    None => Route::BadRequest(format!(
                        "bad size '{v}': expected /bytes/{{n}} with n from 0 to {MAX_BYTES}\n"
                    )),
                }
            } else {
                Route::NotFound
            }
        }
    }
}

/// The route's own work.
async fn run_route(route: Route, req: Request<Incoming>) -> (StatusCode, Body) {
    match route {
        Route::Hello => (StatusCode::OK, Body::full(Bytes::from_static(HELLO))),
        Route::Delay(d) => {
            tokio::time::sleep(d).await;
            (StatusCode::OK, Body::full(Bytes::from_static(HELLO)))
        }
        Route::Echo => {
            let limited = http_body_util::Limited::new(req.into_body(), MAX_ECHO_BYTES);
            match limited.collect().await {
                Ok(c) => (StatusCode::OK, Body::full(c.to_bytes())),
                Err(_) => (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Body::full(format!("body larger than {MAX_ECHO_BYTES} bytes\n")),
                ),
            }
        }
        Route::Status(s) if s == StatusCode::NO_CONTENT || s == StatusCode::NOT_MODIFIED => {
            (s, Body::empty())
        }
        Route::Status(s) => (s, Body::full(format!("{}\n", s.as_u16()))),
        Route::Bytes(n) => (StatusCode::OK, Body::Pattern { remaining: n }),
        Route::Stall(d) => {
            let until = (Instant::now() + d).duration_since(origin()).as_nanos() as u64;
            STALL_UNTIL_NS.fetch_max(until, Ordering::Relaxed);
            (StatusCode::OK, Body::full(format!("stalling for {d:?}\n")))
        }
        Route::BadRequest(msg) => (StatusCode::BAD_REQUEST, Body::full(msg)),
        Route::NotFound => (StatusCode::NOT_FOUND, Body::full(ROUTES)),
    }
}

/// Serves one request.
pub async fn handle(req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let start = Instant::now();
    let route = route_of(req.method(), req.uri().path());
    if !matches!(route, Route::Stall(_)) {
        wait_out_stall().await;
    }
    let routed = Instant::now();
    let mut timing = Timing {
        parse_ms: ms(routed - start),
        ..Timing::default()
    };
    // Hand the route's work from the connection's I/O task to a task of its own, as a server
    // with a worker pool would: the handover is the `queue` phase.
    let queued = Instant::now();
    let work = tokio::spawn(async move {
        let began = Instant::now();
        let (status, body) = run_route(route, req).await;
        (began, Instant::now(), status, body)
    });
    let (status, body) = match work.await {
        Ok((began, ended, status, body)) => {
            timing.queue_ms = Some(ms(began.saturating_duration_since(queued)));
            timing.handler_ms = ms(ended.saturating_duration_since(began));
            (status, body)
        }
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Body::full(Bytes::from_static(b"the handler failed\n")),
        ),
    };
    let handled = Instant::now();
    let mut res = Response::new(body);
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain"),
    );
    timing.serialize_ms = ms(handled.elapsed());
    let total_ms = ms(start.elapsed());
    let mut st = String::with_capacity(112);
    // Milliseconds with 4 decimals: 100 ns resolution, enough for this fast server.
    let _ = write!(st, "parse;dur={:.4}", timing.parse_ms);
    if let Some(q) = timing.queue_ms {
        let _ = write!(st, ", queue;dur={q:.4}");
    }
    let _ = write!(
        st,
        ", handler;dur={:.4}, serialize;dur={:.4}, total;dur={total_ms:.4}",
        timing.handler_ms.max(0.0),
        timing.serialize_ms
    );
    if let Ok(v) = header::HeaderValue::from_str(&st) {
        res.headers_mut().insert("server-timing", v);
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_and_bad_parameters() {
        let m = Method::GET;
        assert!(matches!(route_of(&m, "/"), Route::Hello));
        assert!(matches!(route_of(&m, "/echo"), Route::Echo));
        assert!(
            matches!(route_of(&m, "/delay/0.5"), Route::Delay(d) if d == Duration::from_micros(500))
        );
        assert!(matches!(route_of(&m, "/status/503"), Route::Status(s) if s.as_u16() == 503));
        assert!(matches!(route_of(&m, "/bytes/10"), Route::Bytes(10)));
        assert!(matches!(route_of(&m, "/nope"), Route::NotFound));
        // (path, a part of the message)
        for (path, want) in [
            ("/delay/abc", "/delay/{ms}"),
            ("/delay/-1", "/delay/{ms}"),
            ("/status/99", "from 200 to 599"),
            ("/status/x", "from 200 to 599"),
            ("/bytes/99999999999999", "/bytes/{n}"),
        ] {
            match route_of(&m, path) {
                Route::BadRequest(msg) => assert!(msg.contains(want), "{path}: {msg}"),
                _ => panic!("{path} should be a bad request"),
            }
        }
    }

    #[test]
    fn pattern_body_streams_exactly_n_bytes() {
        let mut b = Body::Pattern { remaining: 100_000 };
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let mut total = 0;
        while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut b).poll_frame(&mut cx) {
            total += frame.into_data().map(|d| d.len()).unwrap_or(0);
        }
        assert_eq!(total, 100_000);
        assert!(b.is_end_stream());
    }
}
