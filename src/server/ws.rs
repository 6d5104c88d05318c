//! The embedded target's WebSocket routes (RFC 6455): `/ws` echoes every message, `/ws/delay/{ms}`
//! echoes each one `ms` milliseconds after it came, and `/ws/push/{gap_ms}` pushes the client's
//! first message back every `gap_ms` (the first one gap after it came, on a fixed schedule) until
//! the client closes, reading and dropping the client's later messages. An HTTP/1.1 `GET` with
//! `Upgrade: websocket` on one of them is answered `101 Switching Protocols` with the
//! `Sec-WebSocket-Accept` of its key ([`crate::engine::websocket::upgrade::accept_of`]); the
//! connection is then served by a task of its own ([`serve`]): the client's frames read with
//! [`MessageReader::server`] (masked, as a client's must be), the server's written unmasked, a
//! ping answered with a pong, a close with a close (the same code), a frame that breaks the
//! protocol with a close naming it (1002, 1007 for a text message that is not UTF-8, 1009 for a
//! message over [`MAX_ECHO_BYTES`]). Over HTTP/2 an extended CONNECT (RFC 8441) opens the same
//! service on a stream ([`super::ws_h2`]). Any other request to these routes (no upgrade, a
//! plain HTTP/2 request, HTTP/3) is answered `426 Upgrade Required` by the router
//! ([`not_upgraded`]). A delay or a gap
//! is kept to within microseconds, not the millisecond of tokio's timer (which `/delay/{ms}`
//! has): [`until`] sleeps to 2 ms before the time, then yields to other tasks until it passes.

use super::routes::{self, route_of, Body, Route, MAX_DELAY_MS, MAX_ECHO_BYTES};
use crate::engine::websocket::frame::{self, MessageReader, Step, WsError};
use crate::engine::websocket::upgrade::accept_of;
use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What a WebSocket route does with the client's messages.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum WsRoute {
    /// `/ws`: each message back at once.
    Echo,
    /// `/ws/delay/{ms}`: each message back this long after it came.
    Delay(Duration),
    /// `/ws/push/{gap_ms}`: the first message back every gap until the client closes.
    Push(Duration),
}

impl WsRoute {
    /// The route's name, as the router's test names routes.
    #[cfg(test)]
    pub(super) fn name(self) -> &'static str {
        match self {
            WsRoute::Echo => "ws",
            WsRoute::Delay(_) => "ws_delay",
            WsRoute::Push(_) => "ws_push",
        }
    }
}

/// The longest reason of a close frame: its payload is at most 125 bytes, 2 of them the code.
const MAX_REASON: usize = 123;

/// How long before a due time tokio's timer is asked to wake (it wakes up to a millisecond
/// late); the rest is spent yielding.
const SPIN: Duration = Duration::from_millis(2);

/// `/ws/delay/{ms}`.
pub(super) fn delay_route(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if (0.0..=MAX_DELAY_MS).contains(&ms) => {
            Route::WebSocket(WsRoute::Delay(Duration::from_secs_f64(ms / 1000.0)))
        }
        _ => Route::BadRequest(format!(
            "bad delay '{v}': expected /ws/delay/{{ms}} with ms a number from 0 to {MAX_DELAY_MS}\n"
        )),
    }
}

/// `/ws/push/{gap_ms}`.
pub(super) fn push_route(v: &str) -> Route {
    match v.parse::<f64>() {
        Ok(ms) if (0.1..=MAX_DELAY_MS).contains(&ms) => {
            Route::WebSocket(WsRoute::Push(Duration::from_secs_f64(ms / 1000.0)))
        }
        _ => Route::BadRequest(format!(
            "bad gap '{v}': expected /ws/push/{{gap_ms}} with gap_ms a number from 0.1 to {MAX_DELAY_MS}\n"
        )),
    }
}

/// A WebSocket route asked without an upgrade (or over HTTP/2 or HTTP/3): the router's answer.
pub(super) fn not_upgraded() -> (StatusCode, Body, bool) {
    let msg = "426 Upgrade Required: a WebSocket route needs an HTTP/1.1 GET with Upgrade: websocket (reqlife run ws://HOST:PORT/ws --data TEXT)\n";
    (
        StatusCode::UPGRADE_REQUIRED,
        Body::Full(Some(msg.into())),
        false,
    )
}

/// Serves one request on an HTTP/1.1 or h2 connection: a WebSocket upgrade of a WebSocket
/// route is answered here (an extended CONNECT over HTTP/2 by [`super::ws_h2`]), anything else
/// by [`routes::handle`]. `slot` is the connection's
/// place among those served at once: an upgraded connection keeps it until it ends.
pub(super) async fn handle<T: Send + Sync + 'static>(
    req: Request<hyper::body::Incoming>,
    kv: Arc<super::kv::Kv>,
    slot: Arc<T>,
) -> Result<Response<Body>, Infallible> {
    if req.uri().path().starts_with("/ws") && wants_websocket(&req) {
        if let Route::WebSocket(route) = route_of(req.uri().path()) {
            return Ok(upgrade(req, route, slot));
        }
    }
    if req.uri().path().starts_with("/ws") && super::ws_h2::wants_websocket(&req) {
        if let Route::WebSocket(route) = route_of(req.uri().path()) {
            return Ok(super::ws_h2::accept(req, route, slot));
        }
    }
    routes::handle(req, kv).await
}

/// Whether `req` asks for a WebSocket: HTTP/1.1 with `Upgrade: websocket`.
fn wants_websocket<B>(req: &Request<B>) -> bool {
    req.version() == http::Version::HTTP_11
        && req
            .headers()
            .get_all(header::UPGRADE)
            .iter()
            .any(|v| has_token(v, "websocket"))
}

/// Whether a comma-separated header value has `token` (in any case).
fn has_token(v: &HeaderValue, token: &str) -> bool {
    v.to_str()
        .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
}

/// A plain answer to an upgrade that cannot be taken, naming why.
fn refuse(status: StatusCode, why: String) -> Response<Body> {
    let mut res = Response::new(Body::Full(Some(Bytes::from(why))));
    *res.status_mut() = status;
    if status == StatusCode::UPGRADE_REQUIRED {
        res.headers_mut()
            .insert("sec-websocket-version", HeaderValue::from_static("13"));
    }
    res
}

/// The answer to an upgrade request: `101` with the accept of its key (and the connection
/// served by a task of its own once hyper hands it over), or a 400/426 naming what is missing.
fn upgrade<T: Send + Sync + 'static>(
    mut req: Request<hyper::body::Incoming>,
    route: WsRoute,
    slot: Arc<T>,
) -> Response<Body> {
    let h = req.headers();
    if req.method() != http::Method::GET {
        let why = format!("a WebSocket upgrade is a GET, not {}\n", req.method());
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    if !h
        .get_all(header::CONNECTION)
        .iter()
        .any(|v| has_token(v, "upgrade"))
    {
        let why = "a WebSocket upgrade needs Connection: Upgrade\n".to_string();
        return refuse(StatusCode::BAD_REQUEST, why);
    }
    if h.get(header::SEC_WEBSOCKET_VERSION).map(|v| v.as_bytes()) != Some(b"13") {
        let why = "a WebSocket upgrade needs Sec-WebSocket-Version: 13\n".to_string();
        return refuse(StatusCode::UPGRADE_REQUIRED, why);
    }
    let Some(key) = h
        .get(header::SEC_WEBSOCKET_KEY)
        .and_then(|k| k.to_str().ok())
    else {
        let why = "a WebSocket upgrade needs a Sec-WebSocket-Key\n".to_string();
        return refuse(StatusCode::BAD_REQUEST, why);
    };
    let accept = accept_of(key.trim());
    let upgraded = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        if let Ok(io) = upgraded.await {
            serve(hyper_util::rt::TokioIo::new(io), route).await;
        }
        drop(slot);
    });
    let mut res = Response::new(Body::Full(None));
    *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = res.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    res
}

/// Waits until `due`, to within microseconds: tokio's timer to [`SPIN`] before it, then
/// yielding to the runtime's other tasks until it passes.
pub(super) async fn until(due: Instant) {
    if let Some(early) = due.checked_sub(SPIN) {
        if Instant::now() < early {
            tokio::time::sleep_until(early.into()).await;
        }
    }
    while Instant::now() < due {
        tokio::task::yield_now().await;
    }
}

/// Writes one server frame into `out` (cleared first): FIN set, `opcode`, unmasked.
pub(super) fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8]) {
    out.clear();
    out.push(0x80 | (opcode & 0x0F));
    let len = payload.len();
    if len < 126 {
        out.push(len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(payload);
}

/// The close code for a client's frames that broke the protocol (RFC 6455, 7.4.1).
fn close_code(e: &WsError) -> u16 {
    match e {
        WsError::TooLong { .. } => 1009,
        WsError::InvalidUtf8 => 1007,
        WsError::Invalid(_) => 1002,
    }
}

/// One upgraded connection: the client's frames, read as they come.
struct Conn<S> {
    io: S,
    buf: Vec<u8>,
    /// The bytes of `buf` read but not yet taken: `buf[at..end]`.
    at: usize,
    end: usize,
    reader: MessageReader,
    out: Vec<u8>,
}

/// What the client's bytes brought.
enum Got {
    /// A data message (its payload in the reader), and when its last bytes came.
    Message { text: bool, at: Instant },
    /// The connection is over: closed by either side, or broken.
    End,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// Takes the bytes already read, answering pings and a close, until a data message is
    /// whole (`Some`) or they run out (`None`: read more).
    async fn take(&mut self, arrived: Instant) -> Option<Got> {
        while self.at < self.end {
            let (used, step) = self.reader.feed(&self.buf[self.at..self.end]);
            self.at += used;
            match step {
                Ok(Step::More | Step::Pong) => {}
                Ok(Step::Message { text, .. }) => return Some(Got::Message { text, at: arrived }),
                Ok(Step::Ping) => {
                    encode(&mut self.out, frame::PONG, self.reader.control());
                    if self.io.write_all(&self.out).await.is_err() {
                        return Some(Got::End);
                    }
                }
                Ok(Step::Close(code)) => {
                    let code = code.map(u16::to_be_bytes);
                    self.close(code.as_ref().map_or(&[][..], |c| &c[..])).await;
                    return Some(Got::End);
                }
                Err(e) => {
                    let mut payload = close_code(&e).to_be_bytes().to_vec();
                    payload.extend(e.to_string().bytes().take(MAX_REASON));
                    self.close(&payload).await;
                    return Some(Got::End);
                }
            }
        }
        None
    }

    /// Reads until the next data message (answering pings and a close on the way).
    async fn next(&mut self) -> Got {
        let mut arrived = Instant::now();
        loop {
            if let Some(got) = self.take(arrived).await {
                return got;
            }
            match self.io.read(&mut self.buf).await {
                Ok(0) | Err(_) => return Got::End,
                Ok(n) => (self.at, self.end, arrived) = (0, n, Instant::now()),
            }
        }
    }

    /// Sends a close frame with `payload` (a code and a reason, or nothing) and ends the
    /// connection's writing side.
    async fn close(&mut self, payload: &[u8]) {
        encode(&mut self.out, frame::CLOSE, payload);
        let _ = self.io.write_all(&self.out).await;
        let _ = self.io.shutdown().await;
    }

    /// Sends the last message read back, as it came (text or binary).
    async fn send_message(&mut self, text: bool) -> bool {
        let opcode = if text { frame::TEXT } else { frame::BINARY };
        encode(&mut self.out, opcode, self.reader.message());
        self.io.write_all(&self.out).await.is_ok()
    }
}

/// Serves one upgraded connection on `route` until either side closes it.
pub(super) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(io: S, route: WsRoute) {
    let mut conn = Conn {
        io,
        buf: vec![0; 16 * 1024],
        at: 0,
        end: 0,
        reader: MessageReader::server(MAX_ECHO_BYTES as u64),
        out: Vec::new(),
    };
    loop {
        let Got::Message { text, at } = conn.next().await else {
            return;
        };
        match route {
            WsRoute::Echo => {}
            WsRoute::Delay(d) => until(at + d).await,
            WsRoute::Push(gap) => return push(&mut conn, text, at, gap).await,
        }
        if !conn.send_message(text).await {
            return;
        }
    }
}

/// `/ws/push/{gap_ms}` after the client's first message (which came at `first`): that message
/// back every `gap` on a fixed schedule, the client's frames read between (later messages
/// dropped), until either side closes.
async fn push<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut Conn<S>,
    text: bool,
    first: Instant,
    gap: Duration,
) {
    let payload = conn.reader.message().to_vec();
    let opcode = if text { frame::TEXT } else { frame::BINARY };
    let mut due = first + gap;
    let mut frame = Vec::new();
    encode(&mut frame, opcode, &payload);
    loop {
        tokio::select! {
            _ = until(due) => {
                if conn.io.write_all(&frame).await.is_err() {
                    return;
                }
                due += gap;
            }
            read = conn.io.read(&mut conn.buf) => {
                let Ok(n @ 1..) = read else { return };
                (conn.at, conn.end) = (0, n);
                while let Some(got) = conn.take(Instant::now()).await {
                    if let Got::End = got {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "ws_tests.rs"]
mod tests;
