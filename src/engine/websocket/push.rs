//! Server-pushed messages (`--stream messages`): a request is a subscription. Its message is
//! sent, then the data messages the server pushes are read, each an event of the request's
//! stream ([`EventTracker::message`]: `first_event`, `event_gap`, `events`, as SSE's events
//! are timed). `first_byte` is the first pushed message's first byte, `done` the last one's
//! arrival. A subscription ends after `--ws-messages N` messages, with our close handshake
//! (the frame goes at once; the server's answer is awaited after the request,
//! [`WsConn::finish_close`]); without N, when the server closes the connection with code 1000
//! after at least one message (the connection dropped, the next request connects anew). Any
//! other close, or a close before the N-th message, is an error of kind `closed`; a server
//! that neither stops nor closes is bounded by `--timeout` (a timeout error, its events not recorded) and
//! `--max-body` per message. No subscription outlives its request: the next one always starts
//! on a new connection.

use super::frame::Step;
use super::{Reply, WsConn};
use crate::engine::events::EventTracker;
use crate::engine::websocket::WsWire;
use crate::engine::EngineError;
use crate::model::{Timestamps, Traffic};
use std::time::Instant;

/// The normal closure (RFC 6455, 7.4.1), which ends a subscription without `--ws-messages`.
const NORMAL: u16 = 1000;

impl WsConn {
    /// Reads a subscription's pushed messages (its message written at `written`,
    /// `bytes_written` long) until it ends (see the module's documentation).
    pub(super) async fn subscribe(
        &mut self,
        wire: &WsWire,
        stamps: &mut Timestamps,
        tracker: &mut EventTracker,
        written: Instant,
        bytes_written: u64,
    ) -> Result<Reply, EngineError> {
        tracker.begin(false);
        let limit = wire.plan.messages;
        let mut reply = Reply::of(0, 0, bytes_written);
        let mut count = 0u32;
        let mut arrived = written;
        // Where the first pushed message began: the reply's first byte.
        let mut rx_first = 0;
        loop {
            let (step, at) = self.next_step(&mut stamps.first_byte, arrived).await?;
            arrived = at;
            match step {
                Step::Message {
                    text,
                    payload,
                    framing,
                } => {
                    count += 1;
                    if count == 1 {
                        rx_first = self.rx_message_start();
                    }
                    reply.wire = self.wire_of(bytes_written, rx_first);
                    // Compressed: inflated here (the last message's inflate is the
                    // request's `decode` phase).
                    let decoded = self.decoded(text, payload, stamps)?;
                    add(&mut reply.traffic, framing, payload, decoded);
                    reply.bytes_read += framing + payload;
                    tracker.message(at);
                    stamps.done = Some(at);
                    if limit == Some(count) {
                        self.start_close().await?;
                        return Ok(reply);
                    }
                }
                Step::Close(Some(NORMAL)) if limit.is_none() && count > 0 => {
                    let _ = self.closed_by_server(step, "").await;
                    self.stream = None;
                    reply.keep_alive = false;
                    return Ok(reply);
                }
                step => {
                    let when = match limit {
                        Some(n) => format!("after {count} of --ws-messages {n} messages"),
                        None if count == 0 => "before the first pushed message".to_string(),
                        None => format!("after {count} pushed messages"),
                    };
                    return Err(self.closed_by_server(step, &when).await);
                }
            }
        }
    }
}

/// Adds a message's `framing` and `payload` bytes (`decoded` once inflated) to `traffic`.
fn add(traffic: &mut Traffic, framing: u64, payload: u64, decoded: u64) {
    traffic.header += framing;
    traffic.header_decoded += framing;
    traffic.body += payload;
    traffic.body_decoded += decoded;
}
