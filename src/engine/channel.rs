//! What a session's responses leave besides their counts ([`Kept`]: each protocol's module
//! says where its responses' parts go in it), and the protocol-neutral [`Answer`] each
//! protocol's own response type becomes (each protocol's module says how:
//! `impl From<…> for Answer`).

use super::decode;
use super::events::EventTracker;
use crate::model::Traffic;

/// What a response leaves besides its counts: its `Server-Timing` values, the decoder of an
/// encoded body (`--compressed`), the events of a streamed one (kept for their capacity).
pub(super) struct Kept {
    /// The last response's `Server-Timing` values.
    pub(super) timing: Vec<u8>,
    pub(super) decoder: Option<decode::BodyDecoder>,
    pub(super) stream: EventTracker,
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
