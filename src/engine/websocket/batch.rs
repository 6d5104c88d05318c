//! `--pipeline N` on a WebSocket connection, in the shape of HTTP/1.1's pipelining
//! ([`crate::engine::pipeline`]): the session sends a batch of up to N messages in one write
//! (one frame each, back to back) and reads replies until every message of the batch is
//! answered or failed, then the load takes the next batch. Each message is stamped on its own:
//! written when the write completed, first byte and done when its reply's first and last bytes
//! arrived, so its `wait` holds the replies the server sent before it.
//!
//! Which message a reply answers: the first one still in flight (in order), or with
//! `--ws-match` the first in flight whose value it carries, in any order ([`InFlight`]); a
//! reply that matches none is counted (`ws_unmatched`) and answers nothing. Each message has
//! its own timeout from its dispatch: in order, a message not answered in time fails with
//! every later one and the connection is dropped (a late reply would answer the wrong
//! message); matched, it fails alone and the connection stays, so that its reply, should it
//! come, is counted as unmatched. A close frame, a broken frame or the end of the connection
//! fails every message still in flight.
//!
//! The values in flight are a table of N slots whose buffers keep their capacity: once warm a
//! batch allocates nothing. A reply is matched by a linear scan of the batch's values (N is at
//! most `--pipeline`'s 1024).

use super::frame::Step;
use super::{Reply, WsConn};
use crate::engine::pipeline::Batch;
use crate::engine::protocol::Channel;
use crate::engine::websocket::WsWire;
use crate::engine::{EngineError, Outcome, Session};
use crate::model::{ErrorKind, Timestamps, Traffic};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// The messages in flight on a connection, in send order, each with its `--ws-match` value;
/// the replies that matched none; a batch's deadline.
#[derive(Debug, Default)]
pub struct InFlight {
    slots: Vec<Slot>,
    /// The slots in use: `slots[..n]`.
    n: usize,
    /// Replies that matched no message in flight, not yet taken by the recorder.
    pub unmatched: Cell<u64>,
    /// A batch's reads end with a timeout error at this instant ([`WsConn`]'s read).
    pub deadline: Option<Instant>,
    /// Where the messages' write and their replies lie on the connection (here, out of
    /// every protocol's channel size).
    pub placed: super::Placed,
}

/// One message in flight.
#[derive(Debug, Default)]
struct Slot {
    /// Its `--ws-match` value (capacity kept).
    value: Vec<u8>,
    /// It has one (a message without one is answered by no reply).
    keyed: bool,
    /// Not yet answered, nor failed.
    open: bool,
    /// Its frame's bytes (compressed or not).
    frame: u64,
    /// Where its frame ends in the batch's write.
    end: u64,
}

impl InFlight {
    /// No message in flight.
    pub fn clear(&mut self) {
        self.n = 0;
    }

    /// Puts the next message in flight, with its value (`None`: none), its frame's length and
    /// where the frame ends in the write.
    pub fn push(&mut self, value: Option<&[u8]>, frame: u64, end: u64) {
        if self.n == self.slots.len() {
            self.slots.push(Slot::default());
        }
        let slot = &mut self.slots[self.n];
        slot.value.clear();
        slot.value.extend_from_slice(value.unwrap_or_default());
        slot.keyed = value.is_some();
        slot.open = true;
        slot.frame = frame;
        slot.end = end;
        self.n += 1;
    }

    /// The first message still in flight.
    pub fn first(&self) -> Option<usize> {
        self.slots[..self.n].iter().position(|s| s.open)
    }

    /// The first message in flight whose value is `value`.
    pub fn find(&self, value: &[u8]) -> Option<usize> {
        self.slots[..self.n]
            .iter()
            .position(|s| s.open && s.keyed && s.value == value)
    }

    /// Counts a reply that matched no message in flight.
    pub fn unmatched(&self) {
        self.unmatched.set(self.unmatched.get() + 1);
    }

    /// Message `i` is answered (or failed): out of flight.
    pub fn answer(&mut self, i: usize) {
        self.slots[i].open = false;
    }

    /// The messages in flight.
    fn open(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n).filter(|&i| self.slots[i].open)
    }

    /// The bytes of message `i`'s frame (0 for one not sent).
    fn frame(&self, i: usize) -> u64 {
        self.slots[..self.n].get(i).map_or(0, |s| s.frame)
    }

    /// Where message `i`'s frame ends in the batch's write (0 for one not sent).
    fn end(&self, i: usize) -> u64 {
        self.slots[..self.n].get(i).map_or(0, |s| s.end)
    }

    /// Whether message `i` is in flight.
    fn is_open(&self, i: usize) -> bool {
        self.slots[..self.n].get(i).is_some_and(|s| s.open)
    }
}

/// The error [`WsConn`]'s read gives when a batch's deadline passed as it waited.
pub(super) fn past_deadline() -> EngineError {
    EngineError::new(ErrorKind::Timeout, "a batch's deadline passed".into())
}

fn timed_out(timeout: Duration) -> EngineError {
    EngineError::new(
        ErrorKind::Timeout,
        format!("no complete response within {timeout:?}"),
    )
}

impl WsConn {
    /// Opens the connection if none is open (stamping the batch's first message), sends a
    /// ping if one is due, then `batch`'s messages in one write: when it completed.
    async fn send_batch(
        &mut self,
        wire: &WsWire,
        max_head: usize,
        batch: &mut Batch,
    ) -> Result<Instant, EngineError> {
        self.ended = None;
        self.ping.begin();
        self.read = 0;
        if self.stream.is_none() {
            self.open(wire, max_head, &mut batch.stamps[0]).await?;
        }
        if self.ping.due(Instant::now()).is_some() {
            self.send_ping().await?;
        }
        self.out.clear();
        self.inflight.clear();
        for i in 0..batch.len() {
            self.add_frame(wire, batch.request(i));
        }
        self.write_messages().await?;
        Ok(Instant::now())
    }
}

impl Session {
    /// This session's WebSocket wire and connection (`None` for the other protocols).
    fn ws_parts(&mut self) -> Option<(&WsWire, &mut WsConn)> {
        match &mut self.channel {
            Channel::WebSocket(c) => Some((&c.wire, &mut c.conn)),
            _ => None,
        }
    }

    /// Sends `batch`'s messages on this session's WebSocket connection (opened first if none
    /// is open) and calls `each` with every message's index, stamps and outcome as its reply
    /// comes (or it fails); see the module's documentation.
    pub(in crate::engine) async fn ws_batch(
        &mut self,
        batch: &mut Batch,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let timeout = self.config.timeout;
        let max_head = self.config.max_header_bytes;
        let gate = self.gate.clone();
        let Some((wire, conn)) = self.ws_parts() else {
            return;
        };
        if conn.stream.is_none() {
            if let Some(gate) = &gate {
                // Waiting for a connect slot (--max-connections-per-second) is in the write.
                let now = Instant::now();
                let slot = gate.reserve(now);
                if slot > now {
                    tokio::time::sleep_until(slot.into()).await;
                }
            }
        }
        let deadline = batch.stamps[0].dispatched + timeout;
        let send = conn.send_batch(wire, max_head, batch);
        let written = match tokio::time::timeout_at(deadline.into(), send).await {
            Ok(Ok(at)) => at,
            Ok(Err(e)) => return self.ws_fail_all(batch, &e, each),
            Err(_) => return self.ws_fail_all(batch, &timed_out(timeout), each),
        };
        for s in &mut batch.stamps {
            s.written = Some(written);
        }
        self.ws_replies(batch, written, each).await;
        if let Some((_, conn)) = self.ws_parts() {
            conn.inflight.deadline = None;
        }
    }

    /// Reads the replies of `batch`, written at `written`, until none is in flight.
    async fn ws_replies(
        &mut self,
        batch: &mut Batch,
        written: Instant,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let timeout = self.config.timeout;
        let (mut arrived, mut first) = (written, None);
        loop {
            let Some((wire, conn)) = self.ws_parts() else {
                return;
            };
            let matched = wire.plan.match_path.is_some();
            let now = Instant::now();
            let due = |i: usize| batch.stamps[i].dispatched + timeout;
            let expired = conn.inflight.open().find(|&i| due(i) <= now);
            if let Some(i) = expired {
                if !matched {
                    return self.ws_fail_all(batch, &timed_out(timeout), each);
                }
                conn.inflight.answer(i);
                self.ws_fail(batch, i, &timed_out(timeout), each);
                continue;
            }
            let Some(deadline) = conn.inflight.open().map(due).min() else {
                return;
            };
            conn.inflight.deadline = Some(deadline);
            let step = conn.next_step(&mut first, arrived).await;
            let (wire, conn) = self.ws_parts().expect("a WebSocket session");
            let (text, payload, framing, at) = match step {
                Ok((
                    Step::Message {
                        text,
                        payload,
                        framing,
                    },
                    at,
                )) => (text, payload, framing, at),
                // The deadline passed: the next turn fails what it must.
                Err(e) if e.kind == ErrorKind::Timeout => continue,
                Err(e) => return self.ws_fail_all(batch, &e, each),
                Ok((step, _)) => {
                    let e = conn
                        .closed_by_server(step, "before the reply message")
                        .await;
                    return self.ws_fail_all(batch, &e, each);
                }
            };
            arrived = at;
            let Some(i) = conn.answered(wire) else {
                first = None;
                continue;
            };
            (batch.stamps[i].first_byte, batch.stamps[i].done) = (first.take(), Some(at));
            if !self.ws_answer(batch, i, (text, payload, framing), each) {
                return;
            }
        }
    }

    /// Message `i` of `batch` has its reply (`text` or binary, `payload` and `framing`
    /// bytes), stamped: inflated if compressed, then told; false when it did not inflate
    /// (it failed, with every message still in flight: the window is lost).
    fn ws_answer(
        &mut self,
        batch: &mut Batch,
        i: usize,
        (text, payload, framing): (bool, u64, u64),
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) -> bool {
        let Some((_, conn)) = self.ws_parts() else {
            return false;
        };
        let mut reply = Reply::of(framing, payload, conn.inflight.frame(i));
        reply.wire = conn.wire_of(conn.inflight.end(i), conn.rx_message_start());
        match conn.decoded(text, payload, &mut batch.stamps[i]) {
            Ok(decoded) => reply.traffic.body_decoded = decoded,
            Err(e) => {
                self.ws_fail(batch, i, &e, each);
                self.ws_fail_all(batch, &e, each);
                return false;
            }
        }
        // What is left of the bytes read (pongs', strays', a reply's begun) goes with a
        // failure, if one comes, as a failed request's bytes do.
        conn.read = conn.read.saturating_sub(reply.bytes_read);
        let outcome = Outcome {
            result: Ok(200),
            bytes_read: reply.bytes_read,
            bytes_written: reply.bytes_written,
            traffic: reply.traffic,
            server_closed: false,
            events: Default::default(),
            wire: reply.wire,
        };
        self.ws_each(i, batch.stamps[i], &outcome, each);
        true
    }

    /// Calls `each` for message `i`, then forgets what its connection told with it (the
    /// pings' round trips, how the connection ended), told once.
    fn ws_each(
        &mut self,
        i: usize,
        stamps: Timestamps,
        outcome: &Outcome,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        each(i, stamps, outcome, self);
        if let Some((_, conn)) = self.ws_parts() {
            conn.ping.clear_rtts();
            conn.ended = None;
        }
    }

    /// Message `i` of `batch` failed with `error`.
    fn ws_fail(
        &mut self,
        batch: &Batch,
        i: usize,
        error: &EngineError,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let stamps = batch.stamps[i];
        let (read, frame) = self.ws_parts().map_or((0, 0), |(_, c)| {
            (std::mem::take(&mut c.read), c.inflight.frame(i))
        });
        let outcome = Outcome {
            result: Err(error.clone()),
            bytes_read: read,
            bytes_written: if stamps.written.is_some() { frame } else { 0 },
            traffic: Traffic::default(),
            server_closed: false,
            events: Default::default(),
            wire: crate::model::Wire::default(),
        };
        self.ws_each(i, stamps, &outcome, each);
    }

    /// Every message of `batch` still in flight (all of them before the write) failed with
    /// `error`; the connection is dropped.
    fn ws_fail_all(
        &mut self,
        batch: &Batch,
        error: &EngineError,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        self.channel.close();
        let sent = batch.stamps[0].written.is_some();
        for i in 0..batch.len() {
            let Some((_, conn)) = self.ws_parts() else {
                return;
            };
            conn.inflight.deadline = None;
            if sent {
                if !conn.inflight.is_open(i) {
                    continue;
                }
                conn.inflight.answer(i);
            }
            self.ws_fail(batch, i, error, each);
        }
    }
}
