//! The HTTP/1.1 connection driver over `httparse`: writes a prepared request, stamps the end
//! of the write and the first response byte, parses the head (`head`: skipping 1xx interim
//! responses), and reads the body as framed (Content-Length, chunked, until close, or none for
//! HEAD/204/304) without keeping it: body bytes are counted, never stored, in a read buffer
//! borrowed only while a response is read ([`super::buffer`]). With `--compressed` a body the
//! server encoded is kept (bounded) and decoded once complete ([`super::decode`]).

mod any_bytes;
mod batch;
mod body;
mod channel;
mod head;

use super::connect::Socket;
use super::decode::BodyDecoder;
use super::events::EventTracker;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic, Wire};
use body::Body;
use head::{parse_loop, Framing, Head};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

pub use any_bytes::parse_any;
pub use channel::Http1Wire;
pub(in crate::engine) use channel::{drop_if_peer_closed, Http1Channel};

/// A complete response, as far as the load tester cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The HTTP status of the final response.
    pub status: u16,
    /// Bytes read for this response (interim responses, head, body framing and body).
    pub bytes_read: u64,
    /// Bytes written for its request.
    pub bytes_written: u64,
    /// Head and body bytes, as received and decoded.
    pub traffic: Traffic,
    /// The connection may carry another request.
    pub keep_alive: bool,
    /// Where its request's end and its own bytes lay on the connection (see
    /// [`Http1Conn::read_response`]).
    pub wire: Wire,
}

impl Response {
    /// The same response, with the bytes written for its request.
    pub fn written(mut self, bytes: u64) -> Self {
        self.bytes_written = bytes;
        self
    }

    /// The same response, its request followed by `rest` bytes of later requests in the same
    /// write (pipelined): on plain TCP the request ends that much before the write; under TLS
    /// it ends with the write (its records').
    pub fn ahead_of(mut self, rest: u64) -> Self {
        if self.wire.exact {
            self.wire.tx_end -= rest;
        }
        self
    }
}

/// Where a response's parts go besides its counts: its `Server-Timing` values (cleared
/// first, comma-joined), the decoder of an encoded body (`--compressed`), the tracker of a
/// streamed one's events (`--stream`).
pub struct Sinks<'a> {
    /// Receives the `Server-Timing` values.
    pub timing: &'a mut Vec<u8>,
    /// Decodes an encoded body (`--compressed`); `None`: bodies are counted, not kept.
    pub decoder: Option<&'a mut BodyDecoder>,
    /// Counts a streamed response's events (`--stream`).
    pub stream: &'a mut EventTracker,
}

/// What the server said to a head sent with `Expect: 100-continue`
/// ([`Http1Conn::await_continue`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continue {
    /// `100 Continue` (dropped from the buffer), or nothing within the bound: the body goes.
    Go,
    /// A final response began instead: left in the buffer for [`Http1Conn::read_response`];
    /// the body is not sent, and the connection ends after the response (the server may
    /// take whatever is sent next for the body it was told of).
    Answered,
}

/// A final head read by [`Http1Conn::read_head`], with what reading it took.
struct HeadRead {
    head: Head,
    /// Bytes in the buffer: the head and the body bytes that came with it.
    filled: usize,
    /// Bytes read for the head (interim responses included).
    bytes_read: u64,
    /// Interim (1xx) heads dropped from the buffer: they count as header bytes.
    interim_bytes: usize,
}

/// One HTTP/1.1 connection and its read buffer, held only while a response is read: the
/// session releases it once an exchange is over.
pub struct Http1Conn {
    pub(super) socket: Socket,
    pub(super) buf: super::buffer::ReadBuf,
    /// The trailer section of the last chunked response (kept for its capacity).
    trailers: Vec<u8>,
    /// When the bytes of the last read that returned any arrived, if the kernel said.
    arrival: Option<Instant>,
    /// Pipelined (`--pipeline`): bytes at the start of the buffer that came after the last
    /// response, the beginning of the next one (the buffer is held while there are any).
    carried: usize,
    /// Bytes read since the last write: what a request that failed while reading its
    /// response had read (a body cut at `--max-body`, or by the timeout).
    pub(super) read_since_send: u64,
    /// The connection's TCP bytes written after the last write (its flush).
    tx_after: u64,
    /// The TCP bytes read before the last write: under TLS, the lower bound of the next
    /// response's first byte.
    rx_floor: u64,
}

impl Http1Conn {
    /// An idle connection over `socket`.
    pub fn new(socket: Socket) -> Self {
        Http1Conn {
            socket,
            buf: Default::default(),
            trailers: Vec::new(),
            arrival: None,
            carried: 0,
            read_since_send: 0,
            tx_after: 0,
            rx_floor: 0,
        }
    }

    /// Pipelined: bytes of the next response are already in the buffer.
    pub fn has_carried(&self) -> bool {
        self.carried > 0
    }

    /// Writes `requests` (a request, or several back to back: `--pipeline`) in one write;
    /// returns when the write ended, the `written` stamp ([`Self::read_response`] reads the
    /// response).
    pub async fn send_all(&mut self, requests: &[u8]) -> Result<Instant, EngineError> {
        self.read_since_send = 0;
        self.rx_floor = self.socket.tally().read;
        self.socket
            .write_all(requests)
            .await
            .map_err(|e| EngineError::io(ErrorKind::Write, "write".into(), &e))?;
        self.socket
            .flush()
            .await
            .map_err(|e| EngineError::io(ErrorKind::Write, "write".into(), &e))?;
        self.tx_after = self.socket.tally().written;
        Ok(Instant::now())
    }

    /// After a request head sent with `Expect: 100-continue`: waits up to `bound` for the
    /// server's word (RFC 9110 §10.1.1, as curl does). Gives what it said, when the wait
    /// ended (the 100's arrival, or the bound), and the bytes of interim responses dropped
    /// (the 100, and any 1xx before it: header bytes).
    pub async fn await_continue(
        &mut self,
        bound: std::time::Duration,
        max_header_bytes: usize,
    ) -> Result<(Continue, Instant, usize), EngineError> {
        let deadline = tokio::time::Instant::now() + bound;
        let mut filled = std::mem::take(&mut self.carried);
        let mut interim = 0;
        let mut timing = Vec::new();
        loop {
            // Whatever is buffered first: a 1xx is dropped, a 100 lets the body go.
            loop {
                match head::parse_head(&self.buf[..filled], false, false, &mut timing)? {
                    head::Parsed::Partial => break,
                    head::Parsed::Interim(len) => {
                        let hundred = self.buf[..len].get(9..12) == Some(b"100".as_slice());
                        self.buf.copy_within(len..filled, 0);
                        filled -= len;
                        interim += len;
                        if hundred {
                            self.carried = filled;
                            return Ok((Continue::Go, self.arrived(), interim));
                        }
                    }
                    head::Parsed::Final(_) => {
                        self.carried = filled;
                        return Ok((Continue::Answered, self.arrived(), interim));
                    }
                }
            }
            self.room_for_head(filled, max_header_bytes)?;
            let n = match tokio::time::timeout_at(deadline, self.read_at(filled)).await {
                Ok(n) => n?,
                // No word within the bound: the body goes (a partial head stays buffered).
                Err(_) => {
                    self.carried = filled;
                    return Ok((Continue::Go, Instant::now(), interim));
                }
            };
            if n == 0 {
                return Err(EngineError::new(
                    ErrorKind::Closed,
                    "connection closed before the server said to send the body \
                     (Expect: 100-continue)"
                        .to_string(),
                ));
            }
            filled += n;
        }
    }

    /// An HTTP/1.1 request sent with `Expect: 100-continue` (`bytes`: head and body): its head
    /// first, then its body once the server says `100 Continue` or `bound` passes (the wait is the
    /// request's `continue` phase), and its response. A server that answers before the body is
    /// sent gets no body, and the connection ends after the response. A request without a body
    /// goes whole.
    pub async fn exchange_expecting(
        &mut self,
        bound: std::time::Duration,
        max_header_bytes: usize,
        stamps: &mut Timestamps,
        bytes: &[u8],
        head: bool,
        sinks: Sinks<'_>,
    ) -> Result<Response, EngineError> {
        let split = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(bytes.len(), |i| i + 4);
        let head_written = self.send_all(&bytes[..split]).await?;
        let mut sent = split;
        let mut interim = 0;
        let mut answered = false;
        if split < bytes.len() {
            stamps.head_written = Some(head_written);
            let (said, at, dropped) = self.await_continue(bound, max_header_bytes).await?;
            interim = dropped;
            match said {
                Continue::Go => {
                    stamps.continued = Some(at.max(head_written));
                    stamps.written = Some(self.send_body(&bytes[split..]).await?);
                    sent = bytes.len();
                }
                Continue::Answered => {
                    stamps.head_written = None;
                    answered = true;
                }
            }
        }
        if stamps.written.is_none() {
            stamps.written = Some(head_written);
        }
        let mut r = self
            .read_response(head, max_header_bytes, stamps, sinks, false)
            .await?
            .written(sent as u64);
        r.bytes_read += interim as u64;
        r.traffic.header += interim as u64;
        r.traffic.header_decoded += interim as u64;
        r.keep_alive &= !answered;
        Ok(r)
    }

    /// Writes the rest of a request whose head went first (`Expect: 100-continue`); returns
    /// when the write ended, the `written` stamp. Unlike [`Self::send_all`], what was read since
    /// the head (the 100) stays counted.
    pub async fn send_body(&mut self, body: &[u8]) -> Result<Instant, EngineError> {
        let read = self.read_since_send;
        let written = self.send_all(body).await;
        self.read_since_send = read;
        written
    }

    /// Reads the next response (its request written, `stamps.written` set; `head_request`:
    /// its method was HEAD): the head, then the body as the head frames it
    /// (`length_body`, `chunked_body`, `body_until_close`). `pipelined`: bytes after the response are the next
    /// response's, kept in the buffer for the next call; otherwise they are an error (the
    /// server's framing lies) or end the connection. Its `bytes_written` is 0: the caller
    /// knows what it wrote ([`Response::written`]).
    pub async fn read_response(
        &mut self,
        head_request: bool,
        max_header_bytes: usize,
        stamps: &mut Timestamps,
        sinks: Sinks<'_>,
        pipelined: bool,
    ) -> Result<Response, EngineError> {
        let Sinks {
            timing,
            decoder,
            stream: events,
        } = sinks;
        timing.clear();
        let want_codings = decoder.is_some();
        let rx_first = self.rx_first();
        let got = self
            .read_head(head_request, want_codings, max_header_bytes, stamps, timing)
            .await?;
        let head = got.head;
        let buffered = got.filled - head.len;
        // With --compressed, an encoded body is kept for decoding.
        let mut keeper = match (head.codings, decoder) {
            (Some(_), Some(d)) => {
                d.clear();
                Some(d)
            }
            _ => None,
        };
        let mut tracker = events.begin(head.event_stream).then_some(events);
        let (k, t) = (&mut keeper, &mut tracker);
        let body = match head.framing {
            Framing::None => Body {
                bytes: 0,
                read: 0,
                keep_alive: buffered == 0 || pipelined,
                rest: (pipelined && buffered > 0).then_some((head.len, got.filled)),
            },
            Framing::Length(len) => {
                self.length_body(head.len, buffered, len, k, t, pipelined)
                    .await?
            }
            Framing::Chunked => {
                let at = (head.len, got.filled);
                self.chunked_body(at, max_header_bytes, timing, k, t, pipelined)
                    .await?
            }
            Framing::UntilClose => self.body_until_close(head.len, got.filled, k, t).await?,
        };
        // Pipelined: the next response's first bytes move to the front of the buffer.
        let mut carried = 0;
        if let Some((a, b)) = body.rest {
            self.buf.copy_within(a..b, 0);
            carried = b - a;
        }
        self.carried = carried;
        tracker.map(EventTracker::finish);
        stamps.done = stamps.first_byte.map(|f| self.arrived().max(f));
        let header_bytes = (got.interim_bytes + head.len) as u64;
        let mut traffic = Traffic {
            header: header_bytes,
            header_decoded: header_bytes,
            body: body.bytes,
            body_decoded: body.bytes,
        };
        if let (Some(d), Some(codings)) = (keeper, &head.codings) {
            traffic.body_decoded = d
                .decode(codings)
                .map_err(|e| EngineError::new(ErrorKind::Protocol, e))?;
            stamps.decoded = Some(Instant::now());
        }
        Ok(Response {
            status: head.status,
            bytes_read: got.bytes_read + body.read - carried as u64,
            bytes_written: 0,
            traffic,
            keep_alive: head.keep_alive && body.keep_alive,
            wire: self.placed(rx_first, carried),
        })
    }

    /// Where the response about to be read starts on the connection: on plain TCP, the next
    /// byte to parse. Under TLS a read may have brought its first record along with the last
    /// response's end: only what was read before the request went is surely before it.
    #[inline]
    fn rx_first(&self) -> u64 {
        match self.socket.is_plain() {
            true => self.rx_offset(self.carried),
            false => self.rx_floor,
        }
    }

    /// Where the response just read lay on the connection (from `rx_first`, `carried` bytes
    /// of the next one buffered after it), and where its request's write ended.
    #[inline]
    fn placed(&self, rx_first: u64, carried: usize) -> Wire {
        Wire {
            port: self.socket.tally().port,
            exact: self.socket.is_plain(),
            tx_end: self.tx_after,
            rx_first,
            rx_end: self.rx_offset(carried),
        }
    }

    /// The offset on the connection of the next byte to parse, `unparsed` bytes being
    /// buffered ahead of it: on plain TCP the bytes read less those; under TLS, whose
    /// buffered bytes are the decryption's, the TCP bytes read.
    #[inline]
    fn rx_offset(&self, unparsed: usize) -> u64 {
        let read = self.socket.tally().read;
        match self.socket.is_plain() {
            true => read - unparsed as u64,
            false => read,
        }
    }

    /// Reads until a final head is parsed (dropping interim ones), growing the buffer up to
    /// `max_header_bytes`; stamps the first response byte.
    #[inline]
    async fn read_head(
        &mut self,
        head_request: bool,
        want_codings: bool,
        max_header_bytes: usize,
        stamps: &mut Timestamps,
        timing: &mut Vec<u8>,
    ) -> Result<HeadRead, EngineError> {
        // Pipelined: the bytes after the last response begin this one; they arrived with
        // the read that brought them.
        let mut filled = std::mem::take(&mut self.carried);
        let mut bytes_read = filled as u64;
        // Interim (1xx) heads dropped from the buffer: they count as header bytes.
        let mut interim_bytes = 0usize;
        // Carried bytes are parsed before anything is read.
        let mut read_first = filled == 0;
        if !read_first {
            stamps.first_byte = stamps.written.map(|w| self.arrived().max(w));
        }
        loop {
            if read_first {
                self.room_for_head(filled, max_header_bytes)?;
                let n = self.read_at(filled).await?;
                if n == 0 {
                    let detail = if bytes_read == 0 {
                        "connection closed before any response byte".to_string()
                    } else {
                        format!("connection closed in the response head after {bytes_read} bytes")
                    };
                    return Err(EngineError::new(ErrorKind::Closed, detail));
                }
                if bytes_read == 0 {
                    stamps.first_byte = stamps.written.map(|w| self.arrived().max(w));
                }
                bytes_read += n as u64;
                filled += n;
            }
            read_first = true;
            match parse_loop(
                &mut self.buf,
                &mut filled,
                head_request,
                want_codings,
                timing,
                &mut interim_bytes,
            )? {
                Some(head) => {
                    return Ok(HeadRead {
                        head,
                        filled,
                        bytes_read,
                        interim_bytes,
                    })
                }
                None if filled >= max_header_bytes => {
                    return Err(EngineError::new(
                        ErrorKind::Protocol,
                        format!("response head larger than {max_header_bytes} bytes"),
                    ))
                }
                None => continue,
            }
        }
    }

    /// Reads into the buffer at `at` (borrowing one once the socket is readable).
    async fn read_at(&mut self, at: usize) -> Result<usize, EngineError> {
        let (n, arrival) = super::buffer::read_at(&mut self.socket, &mut self.buf, at)
            .await
            .map_err(|e| EngineError::io(ErrorKind::Read, "read".into(), &e))?;
        if n > 0 {
            self.arrival = arrival;
        }
        self.read_since_send += n as u64;
        Ok(n)
    }

    /// Room to read more of a head of which `filled` bytes are buffered: the buffer doubled
    /// when full, up to `max_header_bytes`, past which the head is refused.
    #[inline]
    fn room_for_head(&mut self, filled: usize, max_header_bytes: usize) -> Result<(), EngineError> {
        if filled < self.buf.len() {
            return Ok(());
        }
        if self.buf.len() >= max_header_bytes {
            return Err(EngineError::new(
                ErrorKind::Protocol,
                format!("response head larger than {max_header_bytes} bytes"),
            ));
        }
        let grown = (self.buf.len() * 2).min(max_header_bytes);
        self.buf.resize(grown, 0);
        Ok(())
    }

    /// When the bytes of the last read arrived: the kernel's stamp on plain TCP
    /// ([`super::arrival`]), else now.
    fn arrived(&self) -> Instant {
        self.arrival.unwrap_or_else(Instant::now)
    }
}

#[cfg(test)]
mod tests;
