//! The bytes an HTTP/2 link reads and writes, for h2load's traffic line ([`LinkBytes`],
//! counted by the connection as it takes frames), and a stream's share of them
//! ([`ByteShare`]).

use std::cell::Cell;

/// What a link's connections have read, shared with its streams: every byte, and the
/// payloads of HEADERS and CONTINUATION frames; and what they wrote. Streams take the growth
/// since the last take.
#[derive(Default)]
pub(super) struct LinkBytes {
    pub(super) read: Cell<u64>,
    pub(super) header: Cell<u64>,
    pub(super) written: Cell<u64>,
}

/// A stream's share of its connection's traffic (see [`super::H2Link::take_bytes`]).
pub(super) struct ByteShare {
    pub(super) read: u64,
    pub(super) header: u64,
    pub(super) written: u64,
}
