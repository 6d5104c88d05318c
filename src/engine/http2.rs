//! HTTP/2 over the `h2` crate, used directly so each stream is timed exactly: h2 negotiated by
//! ALPN over TLS, or h2c with prior knowledge on `http://`. An [`H2Link`] is one connection
//! shared by the `--streams` sessions of a connection slot; its driver task runs beside them,
//! and when the connection ends (GOAWAY, reset, error) the next stream to need it reconnects,
//! stamping connect and TLS on its own request. The bytes the connection reads are counted
//! above TLS, frame by frame ([`WireCount`]), for h2load's traffic line: all bytes, and the
//! HEADERS and CONTINUATION payloads (the compressed header bytes).

use super::connect::{Connector, Stream};
use super::decode::{BodyDecoder, Codings};
use super::stream::StreamTracker;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Instant;

/// What a stream needs to build its request.
#[derive(Clone)]
pub struct H2Request {
    pub method: http::Method,
    pub uri: http::Uri,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl H2Request {
    /// The same target's request rendered as HTTP/1.1 bytes (`METHOD PATH HTTP/1.1`, headers,
    /// a blank line, the body), as a stream's request: the scheme and authority are this
    /// one's, the hop-by-hop headers and `Host` are dropped (`:authority` stands for it).
    pub fn from_http1(&self, bytes: &[u8]) -> Result<H2Request, String> {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut headers);
        let head_len = match req.parse(bytes) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => return Err("a rendered request is incomplete".into()),
            Err(e) => return Err(format!("a rendered request is not valid HTTP: {e}")),
        };
        let method = http::Method::from_bytes(req.method.unwrap_or("GET").as_bytes())
            .map_err(|e| format!("invalid method: {e}"))?;
        let mut parts = self.uri.clone().into_parts();
        parts.path_and_query = Some(
            req.path
                .unwrap_or("/")
                .parse()
                .map_err(|e| format!("invalid path '{}': {e}", req.path.unwrap_or("")))?,
        );
        let uri = http::Uri::from_parts(parts).map_err(|e| format!("invalid URL: {e}"))?;
        let mut map = http::HeaderMap::with_capacity(req.headers.len());
        for h in req.headers.iter() {
            let name = http::HeaderName::from_bytes(h.name.as_bytes())
                .map_err(|e| format!("invalid header name '{}': {e}", h.name))?;
            if matches!(
                name.as_str(),
                "connection"
                    | "keep-alive"
                    | "transfer-encoding"
                    | "upgrade"
                    | "host"
                    | "content-length"
            ) {
                continue;
            }
            let value = http::HeaderValue::from_bytes(h.value)
                .map_err(|e| format!("invalid value of header '{}': {e}", h.name))?;
            map.append(name, value);
        }
        Ok(H2Request {
            method,
            uri,
            headers: map,
            body: Bytes::copy_from_slice(&bytes[head_len..]),
        })
    }

    pub(super) fn build(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// A live connection: its sender, and what its driver task reports.
struct Live {
    sender: SendRequest<Bytes>,
    /// The driver task still runs.
    alive: Rc<Cell<bool>>,
    /// When the server's first frame (its SETTINGS) arrived.
    settings_at: Rc<Cell<Option<Instant>>>,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, as h2 applies it.
    max_streams: Rc<Cell<usize>>,
}

/// What a link's connections have read, shared with its streams: every byte, and the
/// payloads of HEADERS and CONTINUATION frames. Streams take the growth since the last take.
#[derive(Default)]
struct WireStats {
    read: Cell<u64>,
    header: Cell<u64>,
    written: Cell<u64>,
}

/// A stream's share of its connection's traffic (see [`H2Link::take_wire`]).
struct WireShare {
    read: u64,
    header: u64,
    written: u64,
}

/// HTTP/2 frame types whose payload is a header block (RFC 9113, section 6).
const HEADERS: u8 = 0x1;
const CONTINUATION: u8 = 0x9;

/// A stream that notes when its first bytes were read (on a new HTTP/2 connection those are
/// the server's SETTINGS frame) and counts what it reads, following the frame headers
/// (9 bytes: a 24-bit payload length, then the type) to tell header-block bytes apart. It
/// sits above TLS: application bytes only.
struct WireCount<S> {
    inner: S,
    at: Rc<Cell<Option<Instant>>>,
    stats: Rc<WireStats>,
    /// The frame header being read, and how much of it.
    frame_head: [u8; 9],
    frame_head_len: usize,
    /// Payload bytes of the current frame still to come.
    payload_left: usize,
}

impl<S> WireCount<S> {
    fn new(inner: S, at: Rc<Cell<Option<Instant>>>, stats: Rc<WireStats>) -> Self {
        WireCount {
            inner,
            at,
            stats,
            frame_head: [0; 9],
            frame_head_len: 0,
            payload_left: 0,
        }
    }

    /// Follows the frames through `data`, adding header-block payloads to the stats.
    fn scan(&mut self, mut data: &[u8]) {
        self.stats
            .read
            .set(self.stats.read.get() + data.len() as u64);
        while !data.is_empty() {
            if self.payload_left > 0 {
                let n = self.payload_left.min(data.len());
                self.payload_left -= n;
                data = &data[n..];
                continue;
            }
            let n = (9 - self.frame_head_len).min(data.len());
            self.frame_head[self.frame_head_len..self.frame_head_len + n]
                .copy_from_slice(&data[..n]);
            self.frame_head_len += n;
            data = &data[n..];
            if self.frame_head_len == 9 {
                let h = &self.frame_head;
                let len = (h[0] as usize) << 16 | (h[1] as usize) << 8 | h[2] as usize;
                if matches!(h[3], HEADERS | CONTINUATION) {
                    self.stats.header.set(self.stats.header.get() + len as u64);
                }
                self.payload_left = len;
                self.frame_head_len = 0;
            }
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WireCount<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        let after = buf.filled().len();
        if after > before {
            if self.at.get().is_none() {
                self.at.set(Some(Instant::now()));
            }
            self.scan(&buf.filled()[before..after]);
        }
        r
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WireCount<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = r {
            self.stats.written.set(self.stats.written.get() + n as u64);
        }
        r
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// One HTTP/2 connection shared by several streams.
#[derive(Default)]
pub struct H2Link {
    sender: RefCell<Option<Live>>,
    /// A stream is connecting: the others wait for it.
    connecting: Cell<bool>,
    connected: tokio::sync::Notify,
    /// What the link's connections read (over all of them).
    wire: Rc<WireStats>,
    /// The totals (read, header, written) at the last take ([`H2Link::take_wire`]).
    taken: Cell<(u64, u64, u64)>,
}

impl H2Link {
    /// A sender on a live connection, connecting first (and stamping) if there is none.
    async fn sender(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        loop {
            if let Some(live) = self.sender.borrow().as_ref() {
                if live.alive.get() {
                    return Ok(live.sender.clone());
                }
            }
            if !self.connecting.get() {
                break;
            }
            self.connected.notified().await;
        }
        self.connecting.set(true);
        let result = self.connect(connector, window, stamps).await;
        self.connecting.set(false);
        self.connected.notify_waiters();
        result
    }

    /// Opens the link's connection ahead of its first stream (stamping connect and TLS), or
    /// does nothing if it is live.
    pub async fn open(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.sender(connector, window, stamps).await.map(|_| ())
    }

    async fn connect(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        *self.sender.borrow_mut() = None;
        let stream = connector.connect(stamps).await?;
        if let Stream::Tls(tls) = &stream {
            // Over TLS, HTTP/2 needs the server to agree to h2 in ALPN; an HTTP/1.1 server
            // that ignores ALPN would take the preface for a bad request.
            let chosen = tls.get_ref().1.alpn_protocol();
            if chosen != Some(&b"h2"[..]) {
                let chosen =
                    chosen.map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned());
                return Err(EngineError::new(
                    ErrorKind::Tls,
                    format!("ALPN: the server did not agree to h2 (chosen: {chosen})"),
                )
                .with_cause(Some(super::cause::Cause::Alpn)));
            }
        }
        let settings_at = Rc::new(Cell::new(None));
        let stream = WireCount::new(stream, settings_at.clone(), self.wire.clone());
        let mut builder = h2::client::Builder::new();
        if let Some(w) = window {
            builder
                .initial_window_size(w)
                .initial_connection_window_size(w);
        }
        let (sr, mut conn) = builder
            .handshake::<_, Bytes>(stream)
            .await
            .map_err(|e| h2_error(&e, "HTTP/2 handshake"))?;
        let alive = Rc::new(Cell::new(true));
        let max_streams = Rc::new(Cell::new(usize::MAX));
        let (flag, max, seen) = (alive.clone(), max_streams.clone(), settings_at.clone());
        tokio::task::spawn_local(async move {
            // Drive the connection, noting the stream limit the server's SETTINGS give: asked
            // (it takes h2's lock) only until a poll after the SETTINGS arrived.
            let mut polls_after_settings = 0;
            let _ = std::future::poll_fn(|cx| {
                let r = std::pin::Pin::new(&mut conn).poll(cx);
                if polls_after_settings < 2 {
                    max.set(conn.max_concurrent_send_streams());
                    if seen.get().is_some() {
                        polls_after_settings += 1;
                    }
                }
                r
            })
            .await;
            flag.set(false);
        });
        *self.sender.borrow_mut() = Some(Live {
            sender: sr.clone(),
            alive,
            settings_at,
            max_streams,
        });
        Ok(sr)
    }

    /// The server's SETTINGS time and stream limit on the current connection.
    fn settings(&self) -> (Option<Instant>, Option<usize>) {
        match self.sender.borrow().as_ref() {
            Some(live) => (
                live.settings_at.get(),
                Some(live.max_streams.get()).filter(|m| *m != usize::MAX),
            ),
            None => (None, None),
        }
    }

    /// The bytes read (and the header-block bytes among them) and written since the last
    /// take: a stream's share of the connection's traffic (all of it, frames of other kinds
    /// included, goes to some stream, so the run's totals are exact).
    fn take_wire(&self) -> WireShare {
        let w = &self.wire;
        let now = (w.read.get(), w.header.get(), w.written.get());
        let before = self.taken.replace(now);
        WireShare {
            read: now.0 - before.0,
            header: now.1 - before.1,
            written: now.2 - before.2,
        }
    }

    /// Forgets the connection (after an error on it).
    fn reset(&self) {
        if let Some(live) = self.sender.borrow().as_ref() {
            live.alive.set(false);
        }
    }
}

/// The kind of an h2 error: a stream reset by the server is `reset` (with its code); a GOAWAY
/// from the server, or the connection closing under us, is `closed`; a violation h2 detected
/// itself (the peer does not speak HTTP/2) is `protocol`; other I/O is `read`.
fn h2_error(e: &h2::Error, what: &str) -> EngineError {
    let broken = e.get_io().is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
                | std::io::ErrorKind::ConnectionReset
        )
    });
    if e.is_reset() && e.is_remote() {
        let mut err = EngineError::new(ErrorKind::Reset, format!("{what}: {e}"));
        err.code = e.reason().map(u32::from);
        return err;
    }
    let kind = if e.is_library() {
        ErrorKind::Protocol
    } else if e.is_go_away() || broken {
        ErrorKind::Closed
    } else if e.is_io() {
        ErrorKind::Read
    } else {
        ErrorKind::Protocol
    };
    EngineError::new(kind, format!("{what}: {e}"))
}

/// Whether a failed stream was never processed by the server, so sending it again on a new
/// connection is safe: refused by a graceful GOAWAY (NO_ERROR: the server closes the
/// connection, as nginx does after `keepalive_requests`), or reset with REFUSED_STREAM.
fn unprocessed(e: &h2::Error) -> bool {
    match e.reason() {
        Some(h2::Reason::NO_ERROR) => e.is_go_away() && e.is_remote(),
        Some(h2::Reason::REFUSED_STREAM) => e.is_remote(),
        _ => false,
    }
}

/// A response: status, bytes, and whether the server closed the connection (GOAWAY)
/// under this request, which was then sent again on a new one.
pub struct H2Response {
    pub status: u16,
    /// The connection's bytes read and written since the previous response (this one's share).
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub traffic: Traffic,
    pub server_closed: bool,
    /// On a request that opened the connection: the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: Option<usize>,
}

/// One request to send on a stream (HTTP/2 or HTTP/3) and where its response goes: `timing`
/// receives the `Server-Timing` values of the response's headers and trailers; with a
/// `decoder` (`--compressed`), an encoded body is kept and decoded; a streamed response's
/// events go to `tracker` (one DATA frame is one unit).
pub struct Exchange<'a> {
    pub request: &'a H2Request,
    pub stamps: &'a mut Timestamps,
    pub timing: &'a mut Vec<u8>,
    pub decoder: Option<&'a mut BodyDecoder>,
    pub tracker: &'a mut StreamTracker,
}

impl Exchange<'_> {
    /// What one attempt at the exchange uses (the `Server-Timing` values cleared).
    pub(super) fn attempt(&mut self) -> (&H2Request, &mut Timestamps, &mut Vec<u8>, Body<'_>) {
        self.timing.clear();
        let body = Body {
            decoder: self.decoder.as_deref_mut(),
            tracker: &mut *self.tracker,
        };
        (self.request, &mut *self.stamps, &mut *self.timing, body)
    }
}

/// Sends one request on a stream of `link`. A stream the server refused unprocessed is sent
/// once more on a new connection.
pub async fn exchange(
    link: &H2Link,
    connector: &Connector,
    window: Option<u32>,
    mut x: Exchange<'_>,
) -> Result<H2Response, EngineError> {
    let mut server_closed = false;
    loop {
        let (request, stamps, timing, body) = x.attempt();
        let sr = link.sender(connector, window, stamps).await?;
        match stream(sr, request, stamps, timing, body).await {
            Ok((status, mut traffic)) => {
                let share = link.take_wire();
                traffic.header = share.header;
                // The request that opened the connection carries its handshake and limit.
                let mut max_streams = None;
                if stamps.connect_end.is_some() {
                    let (at, max) = link.settings();
                    stamps.h2_settings = at;
                    max_streams = max;
                }
                return Ok(H2Response {
                    status,
                    bytes_read: share.read,
                    bytes_written: share.written,
                    traffic,
                    server_closed,
                    max_streams,
                });
            }
            Err(StreamError::Decode(e)) => {
                return Err(EngineError::new(ErrorKind::Protocol, e));
            }
            Err(StreamError::H2(e)) if unprocessed(&e) && !server_closed => {
                link.reset();
                server_closed = true;
            }
            Err(StreamError::H2(e)) => {
                link.reset();
                return Err(h2_error(&e, "HTTP/2 stream"));
            }
        }
    }
}

/// Why a stream failed: HTTP/2 itself, or a body that would not decode.
enum StreamError {
    H2(h2::Error),
    Decode(String),
}

impl From<h2::Error> for StreamError {
    fn from(e: h2::Error) -> Self {
        StreamError::H2(e)
    }
}

/// The decoded size of a header field as h2load counts it: name and value lengths.
fn field_bytes(headers: &http::HeaderMap) -> u64 {
    headers
        .iter()
        .map(|(n, v)| (n.as_str().len() + v.len()) as u64)
        .sum()
}

/// Where a response body's bytes go besides the count: `--compressed`'s decoder, and the
/// tracker of a streamed response's events.
pub(super) struct Body<'a> {
    pub(super) decoder: Option<&'a mut BodyDecoder>,
    pub(super) tracker: &'a mut StreamTracker,
}

/// A response being received on a stream (HTTP/2 or HTTP/3): its `Server-Timing` values and
/// decoded header bytes, its body counted, kept for `--compressed`'s decoder and tracked for
/// events.
pub(super) struct Reception<'a> {
    timing: &'a mut Vec<u8>,
    header_decoded: u64,
    body_bytes: u64,
    codings: Option<Codings>,
    keeper: Option<&'a mut BodyDecoder>,
    tracker: Option<&'a mut StreamTracker>,
}

impl<'a> Reception<'a> {
    /// A response whose head (`headers`, after `:status`) arrived.
    pub(super) fn begin(
        headers: &http::HeaderMap,
        timing: &'a mut Vec<u8>,
        Body { decoder, tracker }: Body<'a>,
    ) -> Result<Self, String> {
        for v in headers.get_all("server-timing") {
            append(timing, v.as_bytes());
        }
        let codings = match (&decoder, headers.get(http::header::CONTENT_ENCODING)) {
            (Some(_), Some(v)) => Codings::parse(v.as_bytes())?,
            _ => None,
        };
        let event_stream = headers
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|v| super::stream::is_event_stream(v.as_bytes()));
        let tracker = tracker.begin(event_stream).then_some(tracker);
        let keeper = match (codings, decoder) {
            (Some(_), Some(d)) => {
                d.clear();
                Some(d)
            }
            _ => None,
        };
        Ok(Reception {
            timing,
            // `:status` and its three digits, then the other fields.
            header_decoded: 10 + field_bytes(headers),
            body_bytes: 0,
            codings,
            keeper,
            tracker,
        })
    }

    /// A piece of the body.
    pub(super) fn data(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.body_bytes += chunk.len() as u64;
        if let Some(d) = self.keeper.as_deref_mut() {
            d.keep(chunk)?;
        }
        super::stream::track(&mut self.tracker, chunk);
        Ok(())
    }

    /// The body ended (before any trailers).
    pub(super) fn body_end(&mut self) {
        if let Some(t) = self.tracker.as_deref_mut() {
            t.finish();
        }
    }

    /// The trailers.
    pub(super) fn trailers(&mut self, trailers: &http::HeaderMap) {
        self.header_decoded += field_bytes(trailers);
        for v in trailers.get_all("server-timing") {
            append(self.timing, v.as_bytes());
        }
    }

    /// The response is complete: stamps `done` (and `decoded`, decoding a kept body); its
    /// traffic, `header` (the bytes on the wire) left to the caller.
    pub(super) fn finish(self, stamps: &mut Timestamps) -> Result<Traffic, String> {
        stamps.done = Some(Instant::now());
        let mut traffic = Traffic {
            header: 0,
            header_decoded: self.header_decoded,
            body: self.body_bytes,
            body_decoded: self.body_bytes,
        };
        if let (Some(d), Some(c)) = (self.keeper, &self.codings) {
            traffic.body_decoded = d.decode(c)?;
            stamps.decoded = Some(Instant::now());
        }
        Ok(traffic)
    }
}

async fn stream(
    sr: SendRequest<Bytes>,
    request: &H2Request,
    stamps: &mut Timestamps,
    timing: &mut Vec<u8>,
    body: Body<'_>,
) -> Result<(u16, Traffic), StreamError> {
    let mut sr = sr.ready().await?;
    let has_body = !request.body.is_empty();
    let (response, mut send) = sr.send_request(request.build(), !has_body)?;
    if has_body {
        send.send_data(request.body.clone(), true)?;
    }
    stamps.written = Some(Instant::now());
    let response = response.await?;
    stamps.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    let mut reception =
        Reception::begin(response.headers(), timing, body).map_err(StreamError::Decode)?;
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        reception.data(&chunk).map_err(StreamError::Decode)?;
    }
    reception.body_end();
    if let Ok(Some(trailers)) = body.trailers().await {
        reception.trailers(&trailers);
    }
    let traffic = reception.finish(stamps).map_err(StreamError::Decode)?;
    Ok((status, traffic))
}

fn append(timing: &mut Vec<u8>, value: &[u8]) {
    if !timing.is_empty() {
        timing.extend_from_slice(b", ");
    }
    timing.extend_from_slice(value);
}
