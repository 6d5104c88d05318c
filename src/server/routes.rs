//! The embedded target's routes and the `Server-Timing` header every response carries:
//! `/` → `Hello World!`; `/delay/{ms}`; `/echo`; `/status/{code}`; `/bytes/{n}`; `/text/{n}`
//! (n bytes of text, compressed as the request's `Accept-Encoding` allows, the work reported as
//! the `compress` metric); `/kv/{key}` (a key-value store: PUT, GET, HEAD, DELETE, the
//! store's work reported as `lookup`, `insert` or `delete`); `/serial/{ms}` (one request at a time, each taking `ms`: a server
//! of known capacity, 1000/ms requests per second, for finding a knee); and
//! `/drift/{ms}` (a delay of `ms` that grows by a tenth of `ms` each second since the process's
//! first `/drift` request, to 4× `ms` at most: a server whose speed drifts over time, to show
//! that `compare --run` does not call a drift a change); `/random/{ms}` (a delay drawn from the
//! exponential distribution of mean `ms`: a latency distribution known in advance and the same
//! all run long, to measure how often a percentile's interval holds the true one); and
//! `/sse/{n}/{gap_ms}[/{jitter_ms}]` and `/chunks/{n}/{gap_ms}[/{jitter_ms}]` (a streamed
//! response of `n` Server-Sent Events or chunks, the first one gap after the head and each
//! next one a gap later on a fixed schedule, each gap moved by up to ±jitter; a `stream`
//! metric in a `Server-Timing` trailer where the protocol allows: HTTP/2, and HTTP/1.1 when
//! the request says `TE: trailers`); and
//! `/stall/{ms}`, which answers at once but makes every embedded target in the process hold
//! its other responses until `ms` have passed (a garbage-collection pause, to show coordinated
//! omission); and the WebSocket routes of `server/ws.rs`. The server measures its own phases
//! ([`handle`] says exactly where each begins and ends): `parse` (routing the request),
//! `queue` (waiting for a stall, then the handover of the work from the connection's I/O task
//! to a task of its own, as thread-pool servers do), `handler` (the route's work), `serialize`
//! (building the response) and `total`.

mod body;
mod delays;
mod path;

use super::compress;
use super::kv::Kv;
use crate::engine::decode::Coding;
pub use body::Body;
use bytes::Bytes;
use http::{header, HeaderName, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Body as HttpBody;
pub(super) use path::{route_of, Route};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A request body the routes read: hyper's, or an HTTP/3 request's (read whole first).
pub trait RequestBody:
    HttpBody<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
    + Send
    + Unpin
    + 'static
{
}

impl<T> RequestBody for T where
    T: HttpBody<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static
{
}

/// Largest `/echo` body accepted.
pub const MAX_ECHO_BYTES: usize = 16 * 1024 * 1024;
/// Largest `/bytes/{n}`.
pub const MAX_BYTES: u64 = 1 << 30;
/// Largest `/text/{n}` (made and compressed whole, per request).
pub const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;
/// Longest `/delay/{ms}`.
pub const MAX_DELAY_MS: f64 = 600_000.0;

const HELLO: &[u8] = b"Hello World!";
pub(super) const SERVER_TIMING: HeaderName = HeaderName::from_static("server-timing");

/// The routes `route_of` knows, as `serve` lists them when it starts, `serve --help` ends with
/// them and a 404 names them (a unit test routes each one and checks that every route is here;
/// `tests/checks/drift.rs` checks the manual's list against it).
pub const ROUTES: [&str; 16] = [
    "/",
    "/delay/{ms}",
    "/echo",
    "/status/{code}",
    "/bytes/{n}",
    "/text/{n}",
    "/kv/{key}",
    "/serial/{ms}",
    "/drift/{ms}",
    "/random/{ms}",
    "/stall/{ms}",
    "/sse/{n}/{gap_ms}[/{jitter_ms}]",
    "/chunks/{n}/{gap_ms}[/{jitter_ms}]",
    "/ws",
    "/ws/delay/{ms}",
    "/ws/push/{gap_ms}",
];

/// The end of the current stall, in nanoseconds since [`origin`] (0: none).
static STALL_UNTIL_NS: AtomicU64 = AtomicU64::new(0);

pub(super) fn origin() -> Instant {
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

/// The server's own phases of one request, as nanoseconds.
struct Timing {
    parse_ns: u64,
    queue_ns: u64,
    handler_ns: u64,
    /// `/text/{n}` with a coding: compressing the body (part of the handler's time).
    compress_ns: Option<u64>,
    /// `/kv/{key}`: the store's own work (`lookup`, `insert` or `delete`; part of the
    /// handler's time).
    store: Option<(&'static str, u64)>,
    serialize_ns: u64,
    total_ns: u64,
}

pub(super) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A `Server-Timing` value formatted on the stack (the header value copies it once).
struct HeaderBuf {
    buf: [u8; 320],
    len: usize,
}

impl std::fmt::Write for HeaderBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

impl Timing {
    /// `parse;dur=0.0040, queue;dur=0.0100, handler;dur=…, [compress;dur=…,] serialize;dur=…,
    /// total;dur=…`: milliseconds with 4 decimals (100 ns resolution), written with integer
    /// arithmetic.
    fn header_value(&self) -> Option<header::HeaderValue> {
        let mut out = HeaderBuf {
            buf: [0; 320],
            len: 0,
        };
        let metrics = [
            Some(("parse", self.parse_ns)),
            Some(("queue", self.queue_ns)),
            Some(("handler", self.handler_ns)),
            self.compress_ns.map(|ns| ("compress", ns)),
            self.store,
            Some(("serialize", self.serialize_ns)),
            Some(("total", self.total_ns)),
        ];
        for (i, (name, ns)) in metrics.into_iter().flatten().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let (whole_ms, frac) = (ns / 1_000_000, (ns % 1_000_000) / 100);
            write!(out, "{sep}{name};dur={whole_ms}.{frac:04}").ok()?;
        }
        header::HeaderValue::from_bytes(&out.buf[..out.len]).ok()
    }
}

/// What a route answered: the status, the body, whether it is binary, and the coding it was
/// compressed with (and how long that took).
struct Answer {
    status: StatusCode,
    body: Body,
    binary: bool,
    compressed: Option<(Coding, Duration)>,
    /// `/kv`: the store's operation and how long it took.
    store: Option<(&'static str, Duration)>,
    /// `/kv`: a `HEAD`'s value length (the body is empty).
    content_length: Option<usize>,
}

impl From<(StatusCode, Body, bool)> for Answer {
    fn from((status, body, binary): (StatusCode, Body, bool)) -> Self {
        Answer {
            status,
            body,
            binary,
            compressed: None,
            store: None,
            content_length: None,
        }
    }
}

/// `/kv/{key}`: the store's answer to `method`.
async fn kv_route(kv: &Kv, key: &str, method: &http::Method, body: impl RequestBody) -> Answer {
    use super::kv::KvAnswer;
    let key = key.as_bytes();
    let value = if method == http::Method::PUT {
        match read_body(body).await {
            Ok(v) => Some(v),
            Err(answer) => return answer.into(),
        }
    } else {
        drain(body).await;
        None
    };
    let started = Instant::now();
    let (op, answer) = match (method.as_str(), value) {
        ("GET", _) => ("lookup", kv.get(key)),
        ("HEAD", _) => ("lookup", kv.head(key)),
        ("PUT", Some(v)) => ("insert", kv.put(key, v)),
        ("DELETE", _) => ("delete", kv.delete(key)),
        _ => {
            let msg =
                format!("method {method} not allowed on /kv/{{key}}: GET, HEAD, PUT, DELETE\n");
            return (StatusCode::METHOD_NOT_ALLOWED, Body::full(msg), false).into();
        }
    };
    let store = Some((op, started.elapsed()));
    let (status, body, content_length) = match answer {
        KvAnswer::Created => (StatusCode::CREATED, Body::empty(), None),
        KvAnswer::Replaced | KvAnswer::Deleted => (StatusCode::NO_CONTENT, Body::empty(), None),
        KvAnswer::Found(v) => (StatusCode::OK, Body::full(v), None),
        KvAnswer::Exists(n) => (StatusCode::OK, Body::empty(), Some(n)),
        KvAnswer::NotFound => (StatusCode::NOT_FOUND, Body::empty(), None),
    };
    Answer {
        status,
        body,
        binary: true,
        compressed: None,
        store,
        content_length,
    }
}

/// The route's own work; `coding` is what the request's `Accept-Encoding` allows.
async fn run_route(
    route: Route,
    method: http::Method,
    body: impl RequestBody,
    coding: Option<Coding>,
    kv: Arc<Kv>,
) -> Answer {
    if let Route::Kv(key) = &route {
        return kv_route(&kv, key, &method, body).await;
    }
    if let Route::Text(n) = route {
        drain(body).await;
        let plain = compress::text(n);
        return match coding {
            None => (StatusCode::OK, Body::full(plain), false).into(),
            Some(c) => {
                let started = Instant::now();
                let packed = compress::compress(c, &plain);
                Answer {
                    compressed: Some((c, started.elapsed())),
                    ..(StatusCode::OK, Body::full(packed), false).into()
                }
            }
        };
    }
    run_plain_route(route, body).await.into()
}

/// The routes that never compress: the status, the body and whether the body is binary.
async fn run_plain_route(route: Route, body: impl RequestBody) -> (StatusCode, Body, bool) {
    if let Route::Echo = route {
        let (status, body) = echo(body).await;
        return (status, body, status == StatusCode::OK);
    }
    drain(body).await;
    match route {
        Route::Echo | Route::Text(_) | Route::Kv(_) => unreachable!("answered above"),
        Route::Hello => (StatusCode::OK, Body::full(Bytes::from_static(HELLO)), false),
        Route::Delay(d) => {
            tokio::time::sleep(d).await;
            (StatusCode::OK, Body::full(Bytes::from_static(HELLO)), false)
        }
        Route::Drift(d) => {
            tokio::time::sleep(delays::drift(d)).await;
            (StatusCode::OK, Body::full(Bytes::from_static(HELLO)), false)
        }
        Route::Random(mean) => {
            tokio::time::sleep(delays::random(mean)).await;
            (StatusCode::OK, Body::full(Bytes::from_static(HELLO)), false)
        }
        Route::Serial(d) => {
            delays::serial(d).await;
            (StatusCode::OK, Body::full(Bytes::from_static(HELLO)), false)
        }
        Route::Status(s) if s == StatusCode::NO_CONTENT || s == StatusCode::NOT_MODIFIED => {
            (s, Body::empty(), false)
        }
        Route::Status(s) => (s, Body::full(format!("{}\n", s.as_u16())), false),
        Route::Bytes(n) => (StatusCode::OK, Body::Pattern { remaining: n }, true),
        Route::Stall(d) => {
            let until = (Instant::now() + d).duration_since(origin()).as_nanos() as u64;
            STALL_UNTIL_NS.fetch_max(until, Ordering::Relaxed);
            let body = Body::full(format!("stalling for {d:?}\n"));
            (StatusCode::OK, body, false)
        }
        Route::Events(spec) => (StatusCode::OK, Body::events(spec), false),
        Route::WebSocket(_) => super::ws::not_upgraded(),
        Route::BadRequest(msg) => (StatusCode::BAD_REQUEST, Body::full(msg), false),
        Route::NotFound => (
            StatusCode::NOT_FOUND,
            Body::full(format!("not found: the routes are {}\n", ROUTES.join(", "))),
            false,
        ),
    }
}

/// Reads and discards a request body the route does not use (up to [`MAX_ECHO_BYTES`]), so
/// that hyper can keep the connection alive: a POST to `/` must not cost a new connection.
async fn drain(mut body: impl RequestBody) {
    if body.is_end_stream() {
        return;
    }
    let mut left = MAX_ECHO_BYTES;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            match left.checked_sub(data.len()) {
                Some(l) => left = l,
                None => return, // Too much to be worth it: hyper closes the connection.
            }
        }
    }
}

/// `/echo`: the request body back, or 413 above [`MAX_ECHO_BYTES`].
async fn echo(body: impl RequestBody) -> (StatusCode, Body) {
    match read_body(body).await {
        Ok(b) => (StatusCode::OK, Body::full(b)),
        Err((status, body, _)) => (status, body),
    }
}

/// A request body of at most [`MAX_ECHO_BYTES`], or the answer to give instead (413, 400).
async fn read_body(body: impl RequestBody) -> Result<Bytes, (StatusCode, Body, bool)> {
    let too_large = || {
        let msg = format!("body larger than {MAX_ECHO_BYTES} bytes: at most 16 MiB\n");
        (StatusCode::PAYLOAD_TOO_LARGE, Body::full(msg), false)
    };
    // A declared Content-Length above the cap is refused before reading anything.
    if body.size_hint().lower() > MAX_ECHO_BYTES as u64 {
        return Err(too_large());
    }
    match http_body_util::Limited::new(body, MAX_ECHO_BYTES)
        .collect()
        .await
    {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err((
            StatusCode::BAD_REQUEST,
            Body::full(format!("cannot read the request body: {e}\n")),
            false,
        )),
    }
}

/// Serves one request.
///
/// Phases: `parse` is from the call until the route is decided; `queue` from then until the
/// route's task starts (a wait for a `/stall` to end, and the handover from the connection's
/// I/O task to a task of its own, as a server with a worker pool does: under load this is the
/// time spent behind other ready tasks); `handler` the route's work (for `/echo`, reading the
/// body); `serialize` building the response; `total` from the call until the response is built.
pub async fn handle(
    req: Request<impl RequestBody>,
    kv: Arc<Kv>,
) -> Result<Response<Body>, Infallible> {
    let start = Instant::now();
    let route = route_of(req.uri().path());
    let coding = match route {
        Route::Text(_) => req
            .headers()
            .get(header::ACCEPT_ENCODING)
            .and_then(|v| compress::negotiate(v.as_bytes())),
        _ => None,
    };
    let routed = Instant::now();
    if !matches!(route, Route::Stall(_)) {
        wait_out_stall().await;
    }
    let method = req.method().clone();
    let (began, handled, answer) = on_its_task(route, method, req.into_body(), coding, kv).await;
    let serializing = Instant::now();
    let sse = matches!(&answer.body, Body::Events(e) if e.is_sse());
    let streamed = matches!(&answer.body, Body::Events(_));
    let mut res = Response::new(answer.body);
    *res.status_mut() = answer.status;
    if let Some(n) = answer.content_length {
        res.headers_mut()
            .insert(header::CONTENT_LENGTH, header::HeaderValue::from(n));
    }
    if let Some((c, _)) = answer.compressed {
        let h = res.headers_mut();
        h.insert(
            header::CONTENT_ENCODING,
            header::HeaderValue::from_static(compress::name(c)),
        );
        h.insert(
            header::VARY,
            header::HeaderValue::from_static("accept-encoding"),
        );
    }
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(content_type(sse, answer.binary)),
    );
    let end = Instant::now();
    let timing = Timing {
        parse_ns: nanos(routed - start),
        queue_ns: nanos(began.saturating_duration_since(routed)),
        handler_ns: nanos(handled.saturating_duration_since(began)),
        compress_ns: answer.compressed.map(|(_, d)| nanos(d)),
        store: answer.store.map(|(op, d)| (op, nanos(d))),
        serialize_ns: nanos(end - serializing),
        total_ns: nanos(end - start),
    };
    if let Some(v) = timing.header_value() {
        res.headers_mut().insert(SERVER_TIMING, v);
    }
    if streamed {
        announce_trailer(&mut res);
    }
    Ok(res)
}

/// Runs the route on a task of its own: when it began and ended, and its answer (500 if the
/// task failed).
async fn on_its_task(
    route: Route,
    method: http::Method,
    body: impl RequestBody,
    coding: Option<Coding>,
    kv: Arc<Kv>,
) -> (Instant, Instant, Answer) {
    let work = tokio::spawn(async move {
        let began = Instant::now();
        let answer = run_route(route, method, body, coding, kv).await;
        (began, Instant::now(), answer)
    });
    match work.await {
        Ok(done) => done,
        Err(_) => {
            let now = Instant::now();
            let body = Body::full(Bytes::from_static(b"the handler failed\n"));
            (
                now,
                now,
                (StatusCode::INTERNAL_SERVER_ERROR, body, false).into(),
            )
        }
    }
}

/// The `Content-Type` of an answer: an event stream, bytes, or text.
fn content_type(sse: bool, binary: bool) -> &'static str {
    if sse {
        "text/event-stream"
    } else if binary {
        "application/octet-stream"
    } else {
        "text/plain"
    }
}

/// A streamed response's headers: its own time comes as a trailer (HTTP/1.1: when the
/// request allows them), and it is not cached.
fn announce_trailer(res: &mut Response<Body>) {
    res.headers_mut().insert(
        header::TRAILER,
        header::HeaderValue::from_static("server-timing"),
    );
    res.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
}

#[cfg(test)]
mod tests;
