//! Why an HTTP/2 connection ended under its streams ([`ConnFailure`]), and why a stream
//! ended without its response ([`Failure`]).

/// Why a connection ended under its streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::engine::http2) enum ConnFailure {
    /// The server closed it (end of stream, reset, broken pipe), after a GOAWAY with this code
    /// if one came.
    Closed(String, Option<u32>),
    /// Reading or writing failed otherwise.
    Io(String),
    /// The server broke the protocol, as the client found (it sent GOAWAY and closed).
    Protocol(String),
    /// The server's first bytes were not a SETTINGS frame: it does not speak HTTP/2.
    NotH2,
}

/// Why a stream ended without its response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::engine::http2) enum Failure {
    /// The server reset it with this code (not REFUSED_STREAM).
    Reset(u32),
    /// The server did not process it, so it may be sent again: reset with REFUSED_STREAM
    /// (`by_reset`), or above the last stream of a graceful GOAWAY, or refused by a connection
    /// already going away.
    Refused { by_reset: bool },
    /// Above the last stream of a GOAWAY with this error code.
    GoAway(u32),
    /// The link let the connection go (after an error on another stream) before this stream
    /// opened: it goes on a new connection.
    Retired,
    /// The response broke HTTP/2's rules for a response (no `:status`, DATA before HEADERS).
    Malformed(&'static str),
    /// The connection ended.
    Connection(ConnFailure),
}
