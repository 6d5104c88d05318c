//! HTTP/2 over the `h2` crate, used directly so each stream is timed exactly: h2 negotiated by
//! ALPN over TLS, or h2c with prior knowledge on `http://`. An [`H2Link`] is one connection
//! shared by the `--streams` sessions of a connection slot; its driver task runs beside them,
//! and when the connection ends (GOAWAY, reset, error) the next stream to need it reconnects,
//! stamping connect and TLS on its own request. The bytes the connection reads are counted
//! above TLS, frame by frame ([`WireCount`]), for h2load's traffic line: all bytes, and the
//! HEADERS and CONTINUATION payloads (the compressed header bytes).

pub mod hpack;
mod reception;
mod wire;

use super::connect::{Connector, SharedConnect, Stream};
use super::decode::BodyDecoder;
use super::grpc::Status;
use super::request::Request;
use super::stream::StreamTracker;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic};
use bytes::Bytes;
use h2::client::SendRequest;
pub(super) use reception::Reception;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::rc::Rc;
use std::time::Instant;
use wire::{WireCount, WireShare, WireStats};

/// A live connection: its sender, and what its driver task reports.
struct Live {
    sender: SendRequest<Bytes>,
    /// The driver task still runs.
    alive: Rc<Cell<bool>>,
    /// When the server's first frame (its SETTINGS) arrived.
    settings_at: Rc<Cell<Option<Instant>>>,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, as h2 applies it.
    max_streams: Rc<Cell<usize>>,
    /// The server's first bytes were not a SETTINGS frame (an HTTP/1.x answer).
    not_h2: Rc<Cell<bool>>,
}

/// One HTTP/2 connection shared by several streams.
#[derive(Default)]
pub struct H2Link {
    sender: RefCell<Option<Live>>,
    /// One stream connects at a time; the others wait for it.
    connect: SharedConnect,
    /// What the link's connections read (over all of them).
    wire: Rc<WireStats>,
    /// The totals (read, header, written) at the last take ([`H2Link::take_wire`]).
    taken: Cell<(u64, u64, u64)>,
}

impl H2Link {
    /// A sender on a live connection, connecting first (and stamping) if there is none.
    pub(in crate::engine) async fn sender(
        &self,
        connector: &Connector,
        window: Option<u32>,
        stamps: &mut Timestamps,
    ) -> Result<SendRequest<Bytes>, EngineError> {
        let live = || {
            let sender = self.sender.borrow();
            sender
                .as_ref()
                .filter(|live| live.alive.get())
                .map(|live| live.sender.clone())
        };
        self.connect
            .get(live, || self.connect(connector, window, stamps))
            .await
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
        let not_h2 = Rc::new(Cell::new(false));
        let stream = WireCount::new(
            stream,
            settings_at.clone(),
            self.wire.clone(),
            not_h2.clone(),
        );
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
            not_h2,
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

    /// Whether the current connection's server answered with something else than HTTP/2.
    pub(in crate::engine) fn not_h2(&self) -> bool {
        self.sender
            .borrow()
            .as_ref()
            .is_some_and(|live| live.not_h2.get())
    }

    /// Forgets the connection (after an error on it, or after each request without
    /// keep-alive).
    pub(super) fn reset(&self) {
        if let Some(live) = self.sender.borrow().as_ref() {
            live.alive.set(false);
        }
    }
}

/// The kind of an h2 error: a stream reset by the server is `reset` (with its code); a GOAWAY
/// from the server, or the connection closing under us, is `closed`; a violation h2 detected
/// itself (the peer does not speak HTTP/2) is `protocol`; other I/O is `read`.
pub(in crate::engine) fn h2_error(e: &h2::Error, what: &str) -> EngineError {
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

/// The error of a connection whose server answered HTTP/2's preface with something else
/// ([`H2Link::not_h2`]), with its cause.
pub(in crate::engine) fn not_h2_error() -> EngineError {
    EngineError::new(
        ErrorKind::Protocol,
        "the server did not answer HTTP/2's connection preface with SETTINGS (HTTP/1.1?): it does not speak HTTP/2 on this port".into(),
    )
    .with_cause(Some(super::cause::Cause::NotH2))
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

/// Where what a response says goes besides its status and counts: `timing` receives the
/// `Server-Timing` values of its headers and trailers; with a `decoder` (`--compressed`), an
/// encoded body is kept and decoded; a streamed response's events go to `tracker` (one DATA
/// frame is one unit); a gRPC call's `grpc-status` and `grpc-message` go to `grpc`.
pub struct Sinks<'a> {
    pub timing: &'a mut Vec<u8>,
    pub decoder: Option<&'a mut BodyDecoder>,
    pub tracker: &'a mut StreamTracker,
    pub grpc: Option<&'a mut Status>,
}

/// Sends one request on a stream of `link`, what the response says going to `sinks`. A stream
/// the server refused unprocessed is sent once more on a new connection.
pub async fn exchange(
    link: &H2Link,
    connector: &Connector,
    window: Option<u32>,
    request: &Request,
    stamps: &mut Timestamps,
    mut sinks: Sinks<'_>,
) -> Result<H2Response, EngineError> {
    let mut server_closed = false;
    loop {
        sinks.timing.clear();
        let sr = link.sender(connector, window, stamps).await?;
        match stream(sr, request, stamps, &mut sinks).await {
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
                let not_h2 = link.not_h2();
                link.reset();
                if not_h2 {
                    return Err(not_h2_error());
                }
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

async fn stream(
    sr: SendRequest<Bytes>,
    request: &Request,
    stamps: &mut Timestamps,
    sinks: &mut Sinks<'_>,
) -> Result<(u16, Traffic), StreamError> {
    let mut sr = sr.ready().await?;
    let has_body = !request.body.is_empty();
    let (response, mut send) = sr.send_request(request.head(), !has_body)?;
    if has_body {
        send.send_data(request.body.clone(), true)?;
    }
    stamps.written = Some(Instant::now());
    let response = response.await?;
    stamps.first_byte = Some(Instant::now());
    let status = response.status().as_u16();
    let mut reception = Reception::begin(response.headers(), sinks).map_err(StreamError::Decode)?;
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
