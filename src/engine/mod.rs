//! Sending requests: [`connect`] opens TCP and TLS connections with timestamps, [`http1`]
//! drives HTTP/1.1 exchanges over them ([`framed`]: pre-built binary requests on `tcp://`
//! targets, with length-prefixed replies), and a [`Session`] is one connection slot of a worker
//! applying the connection policy (keep-alive, reconnect after `Connection: close` or an
//! error) and the per-request timeout ([`pipeline`]: several requests of one connection
//! in flight, `--pipeline`). HTTP/2 ([`http2`]) and HTTP/3 ([`http3`]) send
//! protocol-neutral [`request::Request`]s, and [`grpc`] makes unary gRPC calls over HTTP/2.
//! The protocol is one [`Wire`] variant at the engine's edge, each with its own parts, and
//! each protocol's module implements one interface (its shared part, its connection state:
//! `protocol`), dispatched by one `match` per method in one file; each
//! protocol's response becomes the protocol-neutral [`Outcome`] the recorder takes, and what
//! the protocol tells besides it travels as its [`extras::Extras`] (events by tally, a status,
//! values of a phase), which the recorder folds without naming the protocol.
//! Errors come back as values with a kind, never panics.

pub mod arrival;
pub mod buffer;
pub mod cause;
mod channel;
pub mod chunked;
mod config;
pub mod connect;
pub mod deadline;
pub mod decode;
pub mod events;
pub mod extras;
pub mod framed;
pub mod grpc;
pub mod http1;
pub mod http2;
pub mod http3;
pub mod pipeline;
mod protocol;
pub mod request;
pub mod server_timing;
mod session;
pub mod tally;
pub mod trace;
pub mod websocket;

pub use config::SessionConfig;
pub use protocol::Wire;
pub use session::Session;

use crate::model::{ErrorKind, Timestamps, Traffic};
use crate::workload::request::Rendered;
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A run's sessions that cannot be set up from its plan (a `--cacert` rustls refuses, a
/// server name or a header HTTP/2 cannot carry): one line naming it. Bad input: exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SetupError(pub String);

crate::util::exit::exit_code!(crate::util::exit::EXIT_USAGE => SetupError);

/// A failed request: its kind (for counting) and a human detail (for the first of a kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    /// The kind of failure, for counting.
    pub kind: ErrorKind,
    /// A human description, shown for the first error of its kind.
    pub detail: String,
    /// HTTP/2: the RST_STREAM error code of a reset stream.
    pub code: Option<u32>,
    /// A failed connection attempt whose reason names its own fix (refused, untrusted
    /// certificate, …): what the fail-fast rule looks at.
    pub cause: Option<cause::Cause>,
}

impl EngineError {
    /// An error of `kind` with `detail`, without a reset code or a cause.
    pub fn new(kind: ErrorKind, detail: String) -> Self {
        EngineError {
            kind,
            detail,
            code: None,
            cause: None,
        }
    }

    /// The same error, with the cause of a failed connection attempt.
    pub fn with_cause(mut self, cause: Option<cause::Cause>) -> Self {
        self.cause = cause;
        self
    }

    /// An I/O error during `what`; resets and broken pipes keep their OS wording.
    pub fn io(kind: ErrorKind, what: String, e: &std::io::Error) -> Self {
        EngineError {
            kind,
            detail: format!("{what}: {}", crate::model::io_reason(e)),
            code: None,
            cause: None,
        }
    }
}

/// What one request gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The response's status code, or why the request failed.
    pub result: Result<u16, EngineError>,
    /// Response bytes read.
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// Header and body bytes of the response, as received and decoded.
    pub traffic: Traffic,
    /// The server closed the connection after a complete response (this one, or over
    /// HTTP/1.1 the one before: this request found its kept connection closed, and replaced it).
    pub server_closed: bool,
    /// What its protocol counted of it (an HTTP/2 server's stream limit, when this request
    /// opened the connection and the server announced one): the start of its
    /// [`extras::Extras`] ([`Session::extras`]).
    pub events: extras::Events,
    /// Where the request's and the response's bytes lay on the connection (port 0: not
    /// known, as for a failed request).
    pub wire: crate::model::Wire,
}

/// What one send carries: the run's one fixed request (`seq`: its sequence number, for a
/// framed request's seqid slot), or a request rendered for this send (HTTP/1.1 bytes, or
/// the parts an HTTP/2 stream's request is built from).
#[derive(Debug, Clone, Copy)]
pub enum Send<'a> {
    /// The run's one fixed request.
    Fixed {
        /// Its sequence number, for a framed request's seqid slot.
        seq: u64,
    },
    /// A request rendered for this send.
    Rendered {
        /// The rendered request: HTTP/1.1 bytes, or an HTTP/2 request's parts.
        rendered: &'a Rendered,
        /// Its method is HEAD (the response has no body).
        head: bool,
    },
}

impl<'a> Send<'a> {
    /// A rendered request's body (a WebSocket message rendered for this send), or `fixed`.
    pub fn body_or<'b>(self, fixed: &'b [u8]) -> &'b [u8]
    where
        'a: 'b,
    {
        match self {
            Send::Rendered { rendered, .. } => &rendered.parts.body,
            Send::Fixed { .. } => fixed,
        }
    }
}

/// Spaces the new connections of one worker thread at least `gap` apart
/// (`--max-connections-per-second`, split evenly over the threads).
pub struct ConnectGate {
    gap: Duration,
    next: Cell<Option<Instant>>,
}

impl ConnectGate {
    /// A gate for one thread's share of `per_s` connections per second.
    pub fn new(per_s: f64, threads: usize) -> Self {
        ConnectGate {
            gap: Duration::from_secs_f64(threads as f64 / per_s),
            next: Cell::new(None),
        }
    }

    /// Reserves the next connect slot at or after `now`; returns its time.
    pub fn reserve(&self, now: Instant) -> Instant {
        let slot = self.next.get().map_or(now, |n| n.max(now));
        self.next.set(Some(slot + self.gap));
        slot
    }
}

/// Whether a request that failed on a kept connection goes once more on a new one: the
/// server closed that connection as the request went out (the race of an idle timeout: the
/// write failed, or the connection closed or reset before any response byte), and the method
/// is idempotent (RFC 9110 9.2.2), as browsers and curl do.
fn retry_on_a_new_connection(e: &EngineError, stamps: &Timestamps, request: &[u8]) -> bool {
    const IDEMPOTENT: [&[u8]; 6] = [
        b"GET ",
        b"HEAD ",
        b"PUT ",
        b"DELETE ",
        b"OPTIONS ",
        b"TRACE ",
    ];
    matches!(
        e.kind,
        ErrorKind::Write | ErrorKind::Read | ErrorKind::Closed
    ) && stamps.first_byte.is_none()
        && IDEMPOTENT.iter().any(|m| request.starts_with(m))
}
