//! What a WebSocket request gives back: the complete [`Reply`] (a data message, or a
//! subscription's messages) and where its connection's messages and replies lay ([`Placed`]).

use crate::model::{Traffic, Wire};

/// What places a connection's messages and replies on it ([`Wire`]): the TCP bytes written
/// before the last messages' write and after it, the TCP bytes read before it (under TLS, the
/// lower bound of their replies' first bytes), and the offset on the connection of the
/// reader's first byte (after the upgrade's answer).
#[derive(Debug, Default, Clone, Copy)]
pub struct Placed {
    /// The TCP bytes written before the last messages' write.
    pub(super) tx_before: u64,
    /// The TCP bytes written after it.
    pub(super) tx_after: u64,
    /// The TCP bytes read before it.
    pub(super) rx_floor: u64,
    /// The offset on the connection of the reader's first byte.
    pub(super) rx_base: u64,
}

/// A complete reply: a data message (or a subscription's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply's bytes: its frames' headers and its payload.
    pub bytes_read: u64,
    /// Bytes written for the request's frame.
    pub bytes_written: u64,
    /// The frames' headers (as header bytes) and the payload (as body bytes).
    pub traffic: Traffic,
    /// The connection is kept (`false`: the server closed it after the reply).
    pub keep_alive: bool,
    /// Where the message's frame ended and the reply lay on the connection.
    pub wire: Wire,
}

impl Reply {
    /// A message of `framing` header bytes and `payload` bytes, answering a request frame of
    /// `bytes_written`.
    pub(super) fn of(framing: u64, payload: u64, bytes_written: u64) -> Reply {
        Reply {
            bytes_read: framing + payload,
            bytes_written,
            traffic: Traffic {
                header: framing,
                header_decoded: framing,
                body: payload,
                body_decoded: payload,
            },
            keep_alive: true,
            wire: Wire::default(),
        }
    }
}
