//! Pipelining (`--pipeline N`, wrk's `pipeline.lua`): a connection's session sends a batch
//! of up to N requests in one write and reads their responses in order, each stamped on its
//! own (its first byte and its end arrive when the reads that brought them did), and takes
//! the next batch once the last response is in. The batch ([`Batch`]) and the session's
//! entry ([`Session::request_batch`]) are every pipelining protocol's; each sends the batch
//! its own way, chosen by the one dispatch of `engine::protocol`: HTTP/1.1's requests
//! (`http1::batch`: a connection closed after a response or as the batch went out, the
//! requests left sent again on a new one) and a WebSocket's messages
//! ([`crate::engine::websocket::batch`]). A failure fails the request it hit and every later
//! one of the batch (they were behind it on the connection), with its kind.

use super::{arrival, EngineError, Outcome, Session};
use crate::model::{ErrorKind, Timestamps, Traffic};

/// One batch's requests, back to back, and the stamps of each (kept for their capacity).
#[derive(Default)]
pub struct Batch {
    bytes: Vec<u8>,
    /// Where each request ends in `bytes`.
    ends: Vec<usize>,
    /// Each request's method was HEAD.
    heads: Vec<bool>,
    /// The stamps of each request in the batch, in send order.
    pub stamps: Vec<Timestamps>,
}

impl Batch {
    /// Empties the batch, keeping its buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.heads.clear();
        self.stamps.clear();
    }

    /// Adds a request: its bytes, whether it is a HEAD, its stamps (dispatched).
    pub fn push(&mut self, request: &[u8], head: bool, stamps: Timestamps) {
        self.bytes.extend_from_slice(request);
        self.ends.push(self.bytes.len());
        self.heads.push(head);
        self.stamps.push(stamps);
    }

    /// The number of requests in the batch.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether the batch holds no request.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Request `i`'s bytes (a WebSocket message's payload).
    pub fn request(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }

    /// Requests `from..` back to back.
    pub(super) fn from(&self, from: usize) -> &[u8] {
        let start = if from == 0 { 0 } else { self.ends[from - 1] };
        &self.bytes[start..]
    }

    /// Whether request `i`'s method is HEAD.
    pub(super) fn head(&self, i: usize) -> bool {
        self.heads[i]
    }

    /// The bytes of the requests after request `i`.
    pub(super) fn after(&self, i: usize) -> usize {
        self.bytes.len() - self.ends[i]
    }
}

impl Session {
    /// The pipeline depth (`--pipeline`): 1 without pipelining (and for every protocol but
    /// HTTP/1.1 and WebSocket).
    pub fn pipeline(&self) -> usize {
        self.config.pipeline()
    }

    /// Sends `batch`'s requests pipelined in the session's protocol's own way and calls `each`
    /// with every request's index, stamps and outcome, in order, as its response ends (or
    /// fails). Each response has the per-request timeout from its dispatch.
    pub async fn request_batch(
        &mut self,
        batch: &mut Batch,
        mut each: impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let _awake = self.needs_thread_awake().then(arrival::awake::Needed::new);
        self.protocol_batch(batch, &mut each).await;
    }

    /// Requests `from..` of `batch` failed with `error` (the first of them hit it; the later
    /// ones were behind it on the connection).
    pub(super) fn fail_from(
        &mut self,
        batch: &Batch,
        from: usize,
        error: &EngineError,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        self.channel.close();
        for i in from..batch.len() {
            let stamps = batch.stamps[i];
            let outcome = Outcome {
                result: Err(error.clone()),
                bytes_read: 0,
                bytes_written: if stamps.written.is_some() {
                    batch.request(i).len() as u64
                } else {
                    0
                },
                traffic: Traffic::default(),
                server_closed: false,
                events: Default::default(),
                wire: crate::model::Wire::default(),
            };
            each(i, stamps, &outcome, self);
        }
    }
}

/// No complete response within `timeout`.
pub(super) fn timed_out(timeout: std::time::Duration) -> EngineError {
    EngineError::new(
        ErrorKind::Timeout,
        format!("no complete response within {timeout:?}"),
    )
}
