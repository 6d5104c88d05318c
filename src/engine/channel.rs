//! What a session's responses leave besides their counts ([`Kept`]), and the
//! protocol-neutral [`Answer`] each protocol's own response type becomes (each protocol's
//! module says how: `impl From<…> for Answer`).

use super::events::EventTracker;
use super::{decode, grpc, http1, http2};
use crate::model::trace::TraceHeaders;
use crate::model::Traffic;

/// What a response leaves besides its counts: its `Server-Timing` values, the decoder of an
/// encoded body (`--compressed`), the events of a streamed one (kept for their capacity).
pub(super) struct Kept {
    /// The last response's `Server-Timing` values.
    pub(super) timing: Vec<u8>,
    pub(super) decoder: Option<decode::BodyDecoder>,
    pub(super) stream: EventTracker,
}

impl Kept {
    /// Where an HTTP/1.1 response's parts go.
    pub(super) fn http1(&mut self) -> http1::Sinks<'_> {
        http1::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            stream: &mut self.stream,
        }
    }

    /// Where a stream's response parts go (a gRPC call's status to `grpc`).
    /// (`trace`: the request's trace headers, added to its header block).
    pub(super) fn streams<'a>(
        &'a mut self,
        grpc: Option<&'a mut grpc::Status>,
        trace: Option<TraceHeaders<'a>>,
    ) -> http2::Sinks<'a> {
        http2::Sinks {
            timing: &mut self.timing,
            decoder: self.decoder.as_mut(),
            tracker: &mut self.stream,
            grpc,
            trace,
        }
    }
}

/// A complete response of any protocol, as the session counts it.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) bytes_read: u64,
    pub(super) bytes_written: u64,
    pub(super) traffic: Traffic,
    /// The connection may carry another request (else the server ended it).
    pub(super) keep_alive: bool,
    /// HTTP/1.1: this request found its kept connection closed by the server, and replaced it.
    pub(super) found_closed: bool,
    /// What the protocol counted of it (HTTP/2: the server's stream limit, when this request
    /// opened the connection).
    pub(super) events: super::extras::Events,
    /// Where its bytes lay on the connection.
    pub(super) wire: crate::model::Wire,
}
