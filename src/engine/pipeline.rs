//! HTTP/1.1 pipelining (`--pipeline N`, wrk's `pipeline.lua`): a connection's session sends
//! a batch of up to N requests in one write and reads their responses in order, each stamped
//! on its own (its first byte and its end arrive when the reads that brought them did), and
//! takes the next batch once the last response is in. A response that closes the connection
//! (`Connection: close`, nginx's `keepalive_requests`) leaves the batch's later requests
//! unanswered: they go again, in one write, on a new connection. A kept connection the
//! server closed as the batch went out is replaced once, as for a single request
//! (`retry_on_a_new_connection`). Any other failure fails the request it hit and
//! every later one of the batch (they were behind it on the connection), with its kind.

use super::http1::{drop_if_peer_closed, Http1Conn, Response};
use super::{arrival, EngineError, Outcome, Session};
use crate::model::{ErrorKind, Timestamps, Traffic};
use std::time::Instant;

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
    fn from(&self, from: usize) -> &[u8] {
        let start = if from == 0 { 0 } else { self.ends[from - 1] };
        &self.bytes[start..]
    }

    /// Request `i`'s response `r`, with the bytes written for the request, and (on plain TCP)
    /// the request's end on the connection: the write's end less the later requests' bytes.
    fn answered(&self, i: usize, r: Response) -> Response {
        let after = self.bytes.len() - self.ends[i];
        r.written(self.request(i).len() as u64)
            .ahead_of(after as u64)
    }
}

/// What became of the write of a batch's requests `from..`.
enum Sent {
    Written(Instant),
    /// The kept connection failed as the requests went out: send them on a new one.
    Again,
    Failed(EngineError),
}

/// What became of the reads of a batch's responses.
enum Read {
    /// All answered (the connection may have closed after the last).
    Done,
    /// Answered up to `next`, then the server closed the connection (after a response, or
    /// before any byte of `next`'s that may go once more): send `next..` on a new one.
    Again { next: usize, retried: bool },
    /// Request `at` failed with this error, and the later ones behind it.
    Failed { at: usize, error: EngineError },
}

impl Session {
    /// The pipeline depth (`--pipeline`): 1 without pipelining (and for every protocol but
    /// HTTP/1.1 and WebSocket).
    pub fn pipeline(&self) -> usize {
        self.config.pipeline()
    }

    /// Sends `batch`'s requests pipelined on this session's HTTP/1.1 connection (opened first
    /// if none is open: the first unanswered request stamps the connect) and calls `each`
    /// with every request's index, stamps and outcome, in order, as its response ends (or
    /// fails). Each response has the per-request timeout from its dispatch. A WebSocket
    /// session sends the batch's messages ([`crate::engine::websocket::batch`]).
    pub async fn request_batch(
        &mut self,
        batch: &mut Batch,
        mut each: impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let _awake = self.needs_thread_awake().then(arrival::awake::Needed::new);
        if self.is_websocket() {
            return self.ws_batch(batch, &mut each).await;
        }
        let n = batch.len();
        let mut next = 0;
        // One resend on a new connection for a kept one the server closed as we sent.
        let mut resent = false;
        // The next request to go found its kept connection closed by the server.
        let mut replaced = false;
        while next < n {
            let Some((_, _, conn, _)) = self.http1_parts() else {
                self.fail_from(batch, next, &not_http1(), &mut each);
                return;
            };
            if drop_if_peer_closed(conn) {
                replaced = true;
            }
            let reused = conn.is_some();
            let written = match self.send_from(batch, next, reused && !resent).await {
                Sent::Written(at) => at,
                Sent::Again => {
                    resent = true;
                    replaced = true;
                    continue;
                }
                Sent::Failed(error) => {
                    self.fail_from(batch, next, &error, &mut each);
                    return;
                }
            };
            for s in &mut batch.stamps[next..] {
                s.written = Some(written);
            }
            let read = self.read_from(batch, next, !resent, replaced, &mut each);
            match read.await {
                Read::Done => break,
                Read::Again { next: at, retried } => {
                    next = at;
                    resent |= retried;
                    replaced = retried;
                    for s in &mut batch.stamps[next..] {
                        s.written = None;
                    }
                }
                Read::Failed { at, error } => {
                    self.channel.close();
                    self.fail_from(batch, at, &error, &mut each);
                    return;
                }
            }
        }
        // Idle again: the read buffer goes back to the thread's pool (a server that sent more
        // than was asked keeps it until the next batch reads it as an answer, or fails).
        if let Some((_, _, Some(conn), _)) = self.http1_parts() {
            if !conn.has_carried() {
                conn.buf.release();
            }
        }
    }

    /// Opens the connection if needed (stamping request `from`) and writes requests `from..`
    /// in one write, within the timeout of request `from`.
    async fn send_from(&mut self, batch: &mut Batch, from: usize, may_resend: bool) -> Sent {
        let deadline = batch.stamps[from].dispatched + self.config.timeout;
        let timeout = self.config.timeout;
        let gate = self.gate.clone();
        let Some((_, wire, conn, _)) = self.http1_parts() else {
            return Sent::Failed(not_http1());
        };
        if conn.is_none() {
            if let Some(gate) = &gate {
                // Waiting for a connect slot (--max-connections-per-second) is in the write.
                let now = Instant::now();
                let slot = gate.reserve(now);
                if slot > now {
                    tokio::time::sleep_until(slot.into()).await;
                }
            }
            let _awake = arrival::awake::Needed::new();
            let connect = wire.connector.connect(&mut batch.stamps[from]);
            match tokio::time::timeout_at(deadline.into(), connect).await {
                Ok(Ok(socket)) => *conn = Some(Http1Conn::new(socket)),
                Ok(Err(e)) => return Sent::Failed(e),
                Err(_) => return Sent::Failed(timed_out(timeout)),
            }
        }
        let conn = conn.as_mut().expect("connection opened above");
        let write = conn.send_all(batch.from(from));
        let error = match tokio::time::timeout_at(deadline.into(), write).await {
            Ok(Ok(at)) => return Sent::Written(at),
            Ok(Err(e)) => e,
            Err(_) => timed_out(timeout),
        };
        self.channel.close();
        let stamps = &batch.stamps[from];
        if may_resend && super::retry_on_a_new_connection(&error, stamps, batch.request(from)) {
            Sent::Again
        } else {
            Sent::Failed(error)
        }
    }

    /// Reads the responses of requests `from..` in order, calling `each` as each ends.
    async fn read_from(
        &mut self,
        batch: &mut Batch,
        from: usize,
        may_resend: bool,
        replaced: bool,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) -> Read {
        let n = batch.len();
        for i in from..n {
            let deadline = batch.stamps[i].dispatched + self.config.timeout;
            self.kept.stream.idle();
            let response = {
                let Some((config, _, Some(conn), kept)) = self.http1_parts() else {
                    return Read::Failed {
                        at: i,
                        error: not_http1(),
                    };
                };
                let read = conn.read_response(
                    batch.heads[i],
                    config.max_header_bytes,
                    &mut batch.stamps[i],
                    kept.http1(),
                    true,
                );
                tokio::time::timeout_at(deadline.into(), read).await
            };
            if let Some((first, events)) = self.kept.stream.stamps() {
                batch.stamps[i].first_event = first;
                batch.stamps[i].events = Some(events);
            }
            let response: Response = match response {
                Ok(Ok(r)) => batch.answered(i, r),
                Ok(Err(e)) => {
                    if may_resend
                        && super::retry_on_a_new_connection(&e, &batch.stamps[i], batch.request(i))
                    {
                        // The server closed the connection before answering `i`.
                        self.channel.close();
                        return Read::Again {
                            next: i,
                            retried: true,
                        };
                    }
                    return Read::Failed { at: i, error: e };
                }
                Err(_) => {
                    return Read::Failed {
                        at: i,
                        error: timed_out(self.config.timeout),
                    }
                }
            };
            // Pipelining runs on kept connections only: a close is the server's.
            let closes = !response.keep_alive;
            let server_closed = closes || (i == from && replaced);
            let outcome = Outcome {
                result: Ok(response.status),
                bytes_read: response.bytes_read,
                bytes_written: response.bytes_written,
                traffic: response.traffic,
                server_closed,
                events: Default::default(),
                wire: response.wire,
            };
            each(i, batch.stamps[i], &outcome, self);
            if closes {
                self.channel.close();
                if i + 1 < n {
                    return Read::Again {
                        next: i + 1,
                        retried: false,
                    };
                }
            }
        }
        Read::Done
    }

    /// Requests `from..` of `batch` failed with `error` (the first of them hit it; the later
    /// ones were behind it on the connection).
    fn fail_from(
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

/// A batch given to a session of another protocol than HTTP/1.1 (the load layer pipelines
/// only where [`Session::pipeline`] is above 1).
fn not_http1() -> EngineError {
    EngineError::new(
        ErrorKind::Write,
        "internal: pipelining is HTTP/1.1's, not this run's protocol".into(),
    )
}

fn timed_out(timeout: std::time::Duration) -> EngineError {
    EngineError::new(
        ErrorKind::Timeout,
        format!("no complete response within {timeout:?}"),
    )
}
