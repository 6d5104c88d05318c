//! HTTP/2 for the load, over reqlife's own client (`conn`): h2 negotiated by ALPN over TLS,
//! or h2c with prior knowledge on `http://`. An [`H2Link`] is one connection shared by the
//! `--streams` sessions of a connection slot; its driver task runs beside them, and when the
//! connection ends (GOAWAY, reset, error) the next stream to need it reconnects, stamping
//! connect and TLS on its own request. The connection counts the bytes it reads above TLS,
//! frame by frame, for h2load's traffic line: all bytes, and the HEADERS and CONTINUATION
//! payloads (the compressed header bytes). gRPC reflection, a call that streams both ways,
//! keeps the h2 crate (`crate_link`).

mod channel;
mod conn;
pub(in crate::engine) mod crate_link;
mod frame;
pub mod hpack;
mod link_bytes;
mod reception;

use super::connect::{Connector, SharedConnect, Socket};
use super::decode::BodyDecoder;
use super::events::EventTracker;
use super::extras::{Events, Tally};
use super::grpc::Status;
use super::request::Request;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic};
use conn::{BodyError, Conn, ConnFailure, Core, Failure, Start};
use link_bytes::{ByteShare, LinkBytes};
pub(in crate::engine) use reception::HeaderFields;
pub(super) use reception::Reception;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

pub(in crate::engine) use channel::H2Channel;
pub use channel::H2Wire;
#[doc(hidden)]
pub use conn::receive_any;
pub use frame::code_name;
pub(in crate::engine) use frame::{preface_setting, SETTINGS_ENABLE_CONNECT_PROTOCOL};

/// How a link's connections are set up.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// `--h2-window`: the client's stream and connection windows.
    pub window: Option<u32>,
    /// `--h2-coalesce`: how long new streams' frames may wait for the connection's streams
    /// in flight, to go out in one write (see `conn`'s `Core::hold`).
    pub coalesce: Option<std::time::Duration>,
    /// New streams' frames wait one turn of the runtime for others before their write (see
    /// `conn`'s `Core::gathers`); `false` (`--h2-writes at-once`): written at once.
    pub gather: bool,
    /// `--max-header-list`: the largest header block the client takes, in bytes (as received,
    /// HEADERS and CONTINUATION; and as decoded, RFC 9113's list size), advertised as
    /// SETTINGS_MAX_HEADER_LIST_SIZE.
    pub max_header_list: u32,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            window: None,
            coalesce: None,
            gather: true,
            max_header_list: crate::plan::MAX_HEADER_BYTES as u32,
        }
    }
}

/// One HTTP/2 connection shared by several streams.
#[derive(Default)]
pub struct H2Link {
    conn: RefCell<Option<Rc<Conn>>>,
    /// One stream connects at a time; the others wait for it.
    connect: SharedConnect,
    /// What the link's connections read and wrote (over all of them).
    bytes: Rc<LinkBytes>,
    /// The totals (read, header, written) at the last take ([`H2Link::take_bytes`]).
    taken: Cell<(u64, u64, u64)>,
    /// The server ended the link's last connection (GOAWAY, or its close), not yet told by
    /// a response ([`H2Link::take_server_close`]): one count per connection, not per stream.
    server_ended: Cell<bool>,
}

impl H2Link {
    /// The live connection, connecting first (and stamping) if there is none.
    async fn conn(
        &self,
        connector: &Connector,
        tuning: Tuning,
        stamps: &mut Timestamps,
    ) -> Result<Rc<Conn>, EngineError> {
        let live = || {
            let conn = self.conn.borrow();
            conn.as_ref().filter(|c| c.core.borrow().usable()).cloned()
        };
        self.connect
            .get(live, || self.connect(connector, tuning, stamps))
            .await
    }

    /// Opens the link's connection ahead of its first stream (stamping connect and TLS), or
    /// does nothing if it is live.
    pub async fn open(
        &self,
        connector: &Connector,
        tuning: Tuning,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.conn(connector, tuning, stamps).await.map(|_| ())
    }

    async fn connect(
        &self,
        connector: &Connector,
        tuning: Tuning,
        stamps: &mut Timestamps,
    ) -> Result<Rc<Conn>, EngineError> {
        self.reset();
        let socket = connector.connect(stamps).await?;
        check_alpn(&socket)?;
        let mut core = Core::new(tuning, self.bytes.clone());
        core.connected_on(socket.tally().port, socket.is_plain());
        let conn = Rc::new(Conn {
            core: RefCell::new(core),
        });
        tokio::task::spawn_local(conn::drive(conn.clone(), socket));
        *self.conn.borrow_mut() = Some(conn.clone());
        Ok(conn)
    }

    /// The server's SETTINGS time and stream limit on the current connection.
    fn settings(&self) -> (Option<Instant>, Option<usize>) {
        match self.conn.borrow().as_ref() {
            Some(c) => {
                let core = c.core.borrow();
                (core.settings_at, core.max_streams().map(|m| m as usize))
            }
            None => (None, None),
        }
    }

    /// The bytes read (and the header-block bytes among them) and written since the last
    /// take: a stream's share of the connection's traffic (all of it, frames of other kinds
    /// included, goes to some stream, so the run's totals are exact).
    fn take_bytes(&self) -> ByteShare {
        let w = &self.bytes;
        let now = (w.read.get(), w.header.get(), w.written.get());
        let before = self.taken.replace(now);
        ByteShare {
            read: now.0 - before.0,
            header: now.1 - before.1,
            written: now.2 - before.2,
        }
    }

    /// The bytes read and written since the last take, taken: a failed stream's share (the
    /// header-block bytes among them are not a response's).
    pub(super) fn take_failed(&self) -> (u64, u64) {
        let share = self.take_bytes();
        (share.read, share.written)
    }

    /// Forgets the connection (after an error on it, or after each request without
    /// keep-alive): it takes no new stream, and closes once its streams are done.
    pub(super) fn reset(&self) {
        if let Some(c) = self.conn.borrow_mut().take() {
            let mut core = c.core.borrow_mut();
            if core.ended_by_server() {
                self.server_ended.set(true);
            }
            core.retire();
        }
    }

    /// Whether the server ended the link's last connection since the last take: told once,
    /// by the response that took it.
    fn take_server_close(&self) -> bool {
        self.server_ended.replace(false)
    }
}

impl Drop for H2Link {
    fn drop(&mut self) {
        self.reset();
    }
}

/// Over TLS, HTTP/2 needs the server to agree to h2 in ALPN: an HTTP/1.1 server that ignores
/// ALPN would take the preface for a bad request.
pub(in crate::engine) fn check_alpn(socket: &Socket) -> Result<(), EngineError> {
    let Socket::Tls(tls) = socket else {
        return Ok(());
    };
    let chosen = tls.get_ref().1.alpn_protocol();
    if chosen == Some(&b"h2"[..]) {
        return Ok(());
    }
    let chosen = chosen.map_or("none".into(), |p| String::from_utf8_lossy(p).into_owned());
    Err(EngineError::new(
        ErrorKind::Tls,
        format!("ALPN: the server did not agree to h2 (chosen: {chosen})"),
    )
    .with_cause(Some(super::cause::Cause::Alpn)))
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

/// A response: status, bytes, and whether the server ended (GOAWAY, or a close) the
/// connection before it, once per such connection: the first response after it tells it.
pub struct H2Response {
    /// The HTTP status (`:status`).
    pub status: u16,
    /// The connection's bytes read and written since the previous response (this one's share).
    pub bytes_read: u64,
    /// The connection's bytes written since the previous response.
    pub bytes_written: u64,
    /// The response's header and body bytes, as received and decoded.
    pub traffic: Traffic,
    /// The server ended the connection (GOAWAY or a close) before this response; said once per
    /// connection.
    pub server_closed: bool,
    /// On a request that opened the connection: the server's SETTINGS_MAX_CONCURRENT_STREAMS.
    pub max_streams: Option<usize>,
    /// Where its request and its response lay on the connection.
    pub wire: crate::model::Wire,
}

impl H2Response {
    /// What the response tells besides its counts: the server's stream limit, when the
    /// request opened the connection ([`Tally::MaxStreams`]).
    pub fn events(&self) -> Events {
        let mut events = Events::default();
        if let Some(n) = self.max_streams {
            events.push(Tally::MaxStreams, n as u64);
        }
        events
    }
}

/// Where what a response says goes besides its status and counts: `timing` receives the
/// `Server-Timing` values of its headers and trailers; with a `decoder` (`--compressed`), an
/// encoded body is kept and decoded; a streamed response's events go to `tracker` (one DATA
/// frame is one unit); a gRPC call's `grpc-status` and `grpc-message` go to `grpc`.
pub struct Sinks<'a> {
    /// Receives the `Server-Timing` values of the headers and trailers.
    pub timing: &'a mut Vec<u8>,
    /// Keeps and decodes an encoded body (`--compressed`); `None`: bodies are counted, not kept.
    pub decoder: Option<&'a mut BodyDecoder>,
    /// Counts a streamed response's events (one DATA frame is one unit).
    pub tracker: &'a mut EventTracker,
    /// A gRPC call's `grpc-status` and `grpc-message`; `None` for plain HTTP/2.
    pub grpc: Option<&'a mut Status>,
    /// The trace headers the request carries (`--trace-context`), added to its header block.
    pub trace: Option<crate::model::trace::TraceHeaders<'a>>,
}

/// Sends one request on a stream of `link`, what the response says going to `sinks`
/// (`fixed`: the request is the run's fixed one, whose header block is replayed). A stream the
/// server refused unprocessed is sent once more on a new connection.
pub async fn exchange(
    link: &H2Link,
    connector: &Connector,
    tuning: Tuning,
    request: &Request,
    fixed: bool,
    stamps: &mut Timestamps,
    mut sinks: Sinks<'_>,
) -> Result<H2Response, EngineError> {
    let key = fixed.then_some(request as *const Request as usize);
    let mut resent = false;
    loop {
        sinks.timing.clear();
        let conn = link.conn(connector, tuning, stamps).await?;
        match stream(&conn, request, key, stamps, &mut sinks).await {
            Ok((status, mut traffic, wire)) => {
                let share = link.take_bytes();
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
                    // The server ended the connection before this one (however many of its
                    // streams it refused): one close, told by one response.
                    server_closed: link.take_server_close(),
                    max_streams,
                    wire,
                });
            }
            Err(StreamError::Decode(e)) => {
                return Err(EngineError::new(ErrorKind::Protocol, e));
            }
            Err(StreamError::H2(Failure::Retired)) => {}
            Err(StreamError::H2(Failure::Refused { by_reset })) if !resent => {
                // Refused by a GOAWAY: the connection is going away (the server closed it
                // under this request); by REFUSED_STREAM: it stays, and takes the stream again.
                if !by_reset {
                    link.reset();
                }
                resent = true;
            }
            // A stream the server reset, or whose response broke the rules (the client reset
            // it), leaves its connection to the other streams, as h2load does.
            Err(StreamError::H2(f @ (Failure::Reset(_) | Failure::Malformed(_)))) => {
                return Err(stream_error(f));
            }
            Err(StreamError::H2(f)) => {
                link.reset();
                return Err(stream_error(f));
            }
        }
    }
}

/// The engine's error for a stream that failed.
fn stream_error(f: Failure) -> EngineError {
    let reset = |code: u32| {
        let mut e = EngineError::new(
            ErrorKind::Reset,
            format!(
                "HTTP/2 stream: reset by the server ({})",
                frame::code_text(code)
            ),
        );
        e.code = Some(code);
        e
    };
    let (kind, text) = match f {
        Failure::Reset(code) => return reset(code),
        Failure::Refused { by_reset: true } => return reset(frame::REFUSED_STREAM),
        Failure::Refused { .. } | Failure::Retired => (
            ErrorKind::Closed,
            "HTTP/2 stream: not processed: the server sent GOAWAY (NO_ERROR) again".to_string(),
        ),
        Failure::GoAway(code) => (
            ErrorKind::Closed,
            format!(
                "HTTP/2 stream: the server sent GOAWAY ({})",
                frame::code_text(code)
            ),
        ),
        Failure::Malformed(what) => (ErrorKind::Protocol, format!("HTTP/2 stream: {what}")),
        Failure::Connection(ConnFailure::NotH2) => return not_h2_error(),
        Failure::Connection(ConnFailure::Closed(what, goaway)) => (
            ErrorKind::Closed,
            match goaway {
                Some(code) => format!(
                    "HTTP/2 connection: {what}, after its GOAWAY ({})",
                    frame::code_text(code)
                ),
                None => format!("HTTP/2 connection: {what}"),
            },
        ),
        Failure::Connection(ConnFailure::Io(what)) => {
            (ErrorKind::Read, format!("HTTP/2 connection: {what}"))
        }
        Failure::Connection(ConnFailure::Protocol(what)) => (ErrorKind::Protocol, what),
    };
    EngineError::new(kind, text)
}

/// Why a stream failed: HTTP/2 itself, or a body that would not decode.
enum StreamError {
    H2(Failure),
    Decode(String),
}

impl From<Failure> for StreamError {
    fn from(f: Failure) -> Self {
        StreamError::H2(f)
    }
}

/// A stream opened on a connection: its slot is given back however the exchange ends
/// (dropped at a timeout, the stream is reset with CANCEL).
struct Opened<'a> {
    conn: &'a Conn,
    slot: usize,
}

impl Drop for Opened<'_> {
    fn drop(&mut self) {
        self.conn.core.borrow_mut().finish(self.slot);
    }
}

/// A stream's place in line for the server's stream limit: left if the stream gives up
/// before its turn (dropped at a timeout, or its connection gone).
struct Turn<'a> {
    conn: &'a Conn,
    turn: Option<u64>,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.turn {
            self.conn.core.borrow_mut().leave(t);
        }
    }
}

async fn stream(
    conn: &Conn,
    request: &Request,
    key: Option<usize>,
    stamps: &mut Timestamps,
    sinks: &mut Sinks<'_>,
) -> Result<(u16, Traffic, crate::model::Wire), StreamError> {
    // The stream's turn among those waiting for the server's stream limit, once it waited:
    // then it opened at `stamps.stream_open` (the request's `stream_wait`), not when it could
    // be written.
    let mut turn = Turn { conn, turn: None };
    let mut waited = false;
    let slot = std::future::poll_fn(|cx| {
        match conn.core.borrow_mut().start(
            request,
            sinks.trace.as_ref(),
            key,
            stamps.dispatched,
            cx.waker(),
            &mut turn.turn,
        ) {
            Start::Open(i) => std::task::Poll::Ready(Ok(i)),
            Start::Wait => {
                waited = true;
                std::task::Poll::Pending
            }
            Start::Gone(f) => std::task::Poll::Ready(Err(f)),
        }
    })
    .await?;
    drop(turn);
    if waited {
        stamps.stream_open = Some(Instant::now());
    }
    let opened = Opened { conn, slot };
    // Queued now; written when the driver's write of it returns (stamped below).
    stamps.written = Some(Instant::now());
    let head = std::future::poll_fn(|cx| conn.core.borrow_mut().poll_head(slot, cx)).await?;
    if head.written.is_some() {
        stamps.written = head.written;
    }
    stamps.first_byte = head.first_byte;
    let mut reception =
        Reception::begin(conn.core.borrow().head(slot), sinks).map_err(StreamError::Decode)?;
    std::future::poll_fn(|cx| {
        conn.core
            .borrow_mut()
            .poll_body(slot, cx, |chunk| reception.data(chunk))
    })
    .await
    .map_err(|e| match e {
        BodyError::Stream(f) => StreamError::H2(f),
        BodyError::Sink(e) => StreamError::Decode(e),
    })?;
    reception.body_end();
    if let Some(trailers) = conn.core.borrow().trailers(slot) {
        reception.trailers(trailers);
    }
    let wire = conn.core.borrow().wire(slot);
    drop(opened);
    let traffic = reception.finish(stamps).map_err(StreamError::Decode)?;
    Ok((head.status, traffic, wire))
}
