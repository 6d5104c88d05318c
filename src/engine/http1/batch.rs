//! HTTP/1.1's pipelined batch ([`crate::engine::pipeline`]): the requests written in one go
//! on the session's connection (opened first if none is open), their responses read in order.
//! A response that closes the connection (`Connection: close`, nginx's `keepalive_requests`)
//! leaves the batch's later requests unanswered: they go again, in one write, on a new
//! connection. A kept connection the server closed as the batch went out is replaced once, as
//! for a single request (`retry_on_a_new_connection`). Any other failure fails the request it
//! hit and every later one of the batch (they were behind it on the connection), with its
//! kind.

use super::{drop_if_peer_closed, Http1Conn, Http1Wire, Response};
use crate::engine::arrival;
use crate::engine::channel::Kept;
use crate::engine::pipeline::{timed_out, Batch};
use crate::engine::protocol::{not_pipelined, Channel};
use crate::engine::{retry_on_a_new_connection, EngineError, Outcome, Session, SessionConfig};
use crate::model::Timestamps;
use std::time::Instant;

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

/// Request `i`'s response `r`, with the bytes written for the request, and (on plain TCP)
/// the request's end on the connection: the write's end less the later requests' bytes.
fn answered(batch: &Batch, i: usize, r: Response) -> Response {
    r.written(batch.request(i).len() as u64)
        .ahead_of(batch.after(i) as u64)
}

impl Session {
    /// An HTTP/1.1 session's parts: the config, the wire, the connection and what responses
    /// leave; `None` for the other protocols.
    fn http1_parts(
        &mut self,
    ) -> Option<(
        &SessionConfig,
        &Http1Wire,
        &mut Option<Http1Conn>,
        &mut Kept,
    )> {
        match &mut self.channel {
            Channel::Http1(c) => Some((&self.config, &c.wire, &mut c.conn, &mut self.kept)),
            _ => None,
        }
    }

    /// Sends `batch`'s requests pipelined on this session's HTTP/1.1 connection (opened first
    /// if none is open: the first unanswered request stamps the connect) and calls `each`
    /// with every request's index, stamps and outcome, in order, as its response ends (or
    /// fails). Each response has the per-request timeout from its dispatch.
    pub(in crate::engine) async fn http1_batch(
        &mut self,
        batch: &mut Batch,
        each: &mut impl FnMut(usize, Timestamps, &Outcome, &Session),
    ) {
        let n = batch.len();
        let mut next = 0;
        // One resend on a new connection for a kept one the server closed as we sent.
        let mut resent = false;
        // The next request to go found its kept connection closed by the server.
        let mut replaced = false;
        while next < n {
            let Some((_, _, conn, _)) = self.http1_parts() else {
                self.fail_from(batch, next, &not_pipelined(), each);
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
                    self.fail_from(batch, next, &error, each);
                    return;
                }
            };
            for s in &mut batch.stamps[next..] {
                s.written = Some(written);
            }
            let read = self.read_from(batch, next, !resent, replaced, each);
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
                    self.fail_from(batch, at, &error, each);
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
            return Sent::Failed(not_pipelined());
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
        if may_resend && retry_on_a_new_connection(&error, stamps, batch.request(from)) {
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
                        error: not_pipelined(),
                    };
                };
                let read = conn.read_response(
                    batch.head(i),
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
                Ok(Ok(r)) => answered(batch, i, r),
                Ok(Err(e)) => {
                    if may_resend
                        && retry_on_a_new_connection(&e, &batch.stamps[i], batch.request(i))
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
}
