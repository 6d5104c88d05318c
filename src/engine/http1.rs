//! The HTTP/1.1 connection driver over `httparse`: writes a prepared request, stamps the end
//! of the write and the first response byte, parses the head (skipping 1xx interim
//! responses), and reads the body as framed (Content-Length, chunked, until close, or none for
//! HEAD/204/304) without keeping it: body bytes are counted, never stored, in a read buffer
//! borrowed only while a response is read ([`super::buffer`]). With `--compressed` a body the
//! server encoded is kept (bounded) and decoded once complete ([`super::decode`]).

use super::chunked::ChunkDecoder;
use super::connect::Stream;
use super::decode::{BodyDecoder, Codings};
use super::stream::{track, StreamTracker};
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic};
use std::time::Instant;
use tokio::io::AsyncWriteExt;

/// Most headers a response may have.
const MAX_HEADERS: usize = 128;

/// A complete response, as far as the load tester cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Bytes read for this response (interim responses, head, body framing and body).
    pub bytes_read: u64,
    /// Bytes written for its request.
    pub bytes_written: u64,
    /// Head and body bytes, as received and decoded.
    pub traffic: Traffic,
    /// The connection may carry another request.
    pub keep_alive: bool,
}

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// The parsed head of a final response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    len: usize,
    status: u16,
    framing: Framing,
    keep_alive: bool,
    /// The body's content codings, when asked to decode them.
    codings: Option<Codings>,
    /// `Content-Type: text/event-stream`.
    event_stream: bool,
}

/// What parsing the buffered bytes gave.
#[derive(Debug, PartialEq, Eq)]
enum Parsed {
    /// More bytes are needed.
    Partial,
    /// A 1xx interim response of this many bytes, to be skipped.
    Interim(usize),
    Final(Head),
}

/// One HTTP/1.1 connection and its read buffer, held only while a response is read: the
/// session releases it once an exchange is over.
pub struct Http1Conn {
    pub(super) stream: Stream,
    pub(super) buf: super::buffer::ReadBuf,
    /// The trailer section of the last chunked response (kept for its capacity).
    trailers: Vec<u8>,
    /// When the bytes of the last read that returned any arrived, if the kernel said.
    arrival: Option<Instant>,
}

impl Http1Conn {
    pub fn new(stream: Stream) -> Self {
        Http1Conn {
            stream,
            buf: Default::default(),
            trailers: Vec::new(),
            arrival: None,
        }
    }

    /// Sends `request` and reads its response. `head_request`: the method was HEAD.
    /// The values of the response's `Server-Timing` headers and trailers are left in
    /// `timing` (comma-joined), which is cleared first and keeps its capacity. With a
    /// `decoder` (`--compressed`), an encoded body is kept and decoded (stamping `decoded`).
    /// A streamed response's events go to `stream` (see [`StreamTracker::begin`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn exchange(
        &mut self,
        request: &[u8],
        head_request: bool,
        max_header_bytes: usize,
        stamps: &mut Timestamps,
        timing: &mut Vec<u8>,
        decoder: Option<&mut BodyDecoder>,
        stream: &mut StreamTracker,
    ) -> Result<Response, EngineError> {
        timing.clear();
        let want_codings = decoder.is_some();
        self.stream
            .write_all(request)
            .await
            .map_err(|e| EngineError::io(ErrorKind::Write, "write".into(), &e))?;
        self.stream
            .flush()
            .await
            .map_err(|e| EngineError::io(ErrorKind::Write, "write".into(), &e))?;
        stamps.written = Some(Instant::now());

        let mut filled = 0usize;
        let mut bytes_read = 0u64;
        // Interim (1xx) heads dropped from the buffer: they count as header bytes.
        let mut interim_bytes = 0usize;
        let head = loop {
            if filled == self.buf.len() {
                if self.buf.len() >= max_header_bytes {
                    return Err(EngineError::new(
                        ErrorKind::Protocol,
                        format!("response head larger than {max_header_bytes} bytes"),
                    ));
                }
                let grown = (self.buf.len() * 2).min(max_header_bytes);
                self.buf.resize(grown, 0);
            }
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
            match parse_loop(
                &mut self.buf,
                &mut filled,
                head_request,
                want_codings,
                timing,
                &mut interim_bytes,
            )? {
                Some(head) => break head,
                None if filled >= max_header_bytes => {
                    return Err(EngineError::new(
                        ErrorKind::Protocol,
                        format!("response head larger than {max_header_bytes} bytes"),
                    ))
                }
                None => continue,
            }
        };

        let mut keep_alive = head.keep_alive;
        let buffered = filled - head.len;
        // With --compressed, an encoded body is kept for decoding.
        let mut keeper = match (head.codings, decoder) {
            (Some(_), Some(d)) => {
                d.clear();
                Some(d)
            }
            _ => None,
        };
        let mut tracker = stream.begin(head.event_stream).then_some(stream);
        let body_bytes;
        match head.framing {
            Framing::None => {
                keep_alive &= buffered == 0;
                body_bytes = 0;
            }
            Framing::Length(len) => {
                if buffered as u64 > len {
                    return Err(longer_than_its_length(buffered as u64 - len, len));
                }
                let first = (buffered as u64).min(len) as usize;
                keep(&mut keeper, &self.buf[head.len..head.len + first])?;
                track(&mut tracker, &self.buf[head.len..head.len + first])?;
                let mut remaining = len - first as u64;
                while remaining > 0 {
                    let n = self.read_at(0).await?;
                    if n == 0 {
                        return Err(EngineError::new(
                            ErrorKind::Closed,
                            format!(
                                "connection closed after {} of {len} body bytes",
                                len - remaining
                            ),
                        ));
                    }
                    bytes_read += n as u64;
                    if n as u64 > remaining {
                        return Err(longer_than_its_length(n as u64 - remaining, len));
                    }
                    let take = n;
                    keep(&mut keeper, &self.buf[..take])?;
                    track(&mut tracker, &self.buf[..take])?;
                    remaining -= take as u64;
                }
                body_bytes = len;
            }
            Framing::Chunked => {
                let mut decoder = ChunkDecoder::new(max_header_bytes);
                let mut start = head.len;
                self.trailers.clear();
                loop {
                    let used = decoder
                        .feed_tracked(
                            &self.buf[start..filled],
                            &mut self.trailers,
                            &mut keeper,
                            &mut tracker,
                        )
                        .map_err(|e| EngineError::new(ErrorKind::Protocol, e.to_string()))?;
                    if decoder.is_done() {
                        keep_alive &= start + used == filled;
                        trailer_timing(&self.trailers, timing);
                        body_bytes = decoder.data_bytes();
                        break;
                    }
                    // All fed bytes are consumed by the decoder (it keeps its own state).
                    start = 0;
                    let n = self.read_at(0).await?;
                    if n == 0 {
                        return Err(EngineError::new(
                            ErrorKind::Closed,
                            "connection closed in the middle of a chunked body".to_string(),
                        ));
                    }
                    bytes_read += n as u64;
                    filled = n;
                }
            }
            Framing::UntilClose => {
                keep_alive = false;
                keep(&mut keeper, &self.buf[head.len..filled])?;
                track(&mut tracker, &self.buf[head.len..filled])?;
                let mut body = buffered as u64;
                loop {
                    let n = self.read_at(0).await?;
                    if n == 0 {
                        break;
                    }
                    bytes_read += n as u64;
                    body += n as u64;
                    keep(&mut keeper, &self.buf[..n])?;
                    track(&mut tracker, &self.buf[..n])?;
                }
                body_bytes = body;
            }
        }
        tracker.map(StreamTracker::finish);
        stamps.done = Some(self.arrived());
        let header_bytes = (interim_bytes + head.len) as u64;
        let mut traffic = Traffic {
            header: header_bytes,
            header_decoded: header_bytes,
            body: body_bytes,
            body_decoded: body_bytes,
        };
        if let (Some(d), Some(codings)) = (keeper, &head.codings) {
            traffic.body_decoded = d
                .decode(codings)
                .map_err(|e| EngineError::new(ErrorKind::Protocol, e))?;
            stamps.decoded = Some(Instant::now());
        }
        Ok(Response {
            status: head.status,
            bytes_read,
            bytes_written: request.len() as u64,
            traffic,
            keep_alive,
        })
    }

    /// Reads into the buffer at `at` (borrowing one once the socket is readable).
    async fn read_at(&mut self, at: usize) -> Result<usize, EngineError> {
        let (n, arrival) = super::buffer::read_at(&mut self.stream, &mut self.buf, at)
            .await
            .map_err(|e| EngineError::io(ErrorKind::Read, "read".into(), &e))?;
        if n > 0 {
            self.arrival = arrival;
        }
        Ok(n)
    }

    /// When the bytes of the last read arrived: the kernel's stamp on plain TCP
    /// ([`super::arrival`]), else now.
    fn arrived(&self) -> Instant {
        self.arrival.unwrap_or_else(Instant::now)
    }
}

/// Bytes after a body of Content-Length `len`: the server's framing lies (no request was
/// pipelined, so nothing else may follow the response).
fn longer_than_its_length(extra: u64, len: u64) -> EngineError {
    EngineError::new(
        ErrorKind::Protocol,
        format!("{extra} bytes after a body of Content-Length {len}: the response is longer than it says"),
    )
}

/// Keeps body bytes for decoding, when a body is being kept.
fn keep(keeper: &mut Option<&mut BodyDecoder>, data: &[u8]) -> Result<(), EngineError> {
    match keeper {
        Some(d) => d
            .keep(data)
            .map_err(|e| EngineError::new(ErrorKind::Protocol, e)),
        None => Ok(()),
    }
}

/// Parses the buffered bytes, dropping interim responses from the buffer (their length is
/// added to `interim_bytes`), until a final head or the need for more bytes.
fn parse_loop(
    buf: &mut [u8],
    filled: &mut usize,
    head_request: bool,
    want_codings: bool,
    timing: &mut Vec<u8>,
    interim_bytes: &mut usize,
) -> Result<Option<Head>, EngineError> {
    loop {
        match parse_head(&buf[..*filled], head_request, want_codings, timing)? {
            Parsed::Partial => return Ok(None),
            Parsed::Final(head) => return Ok(Some(head)),
            Parsed::Interim(len) => {
                buf.copy_within(len..*filled, 0);
                *filled -= len;
                *interim_bytes += len;
            }
        }
    }
}

/// Appends a `Server-Timing` value to `timing`, comma-separated from earlier ones.
fn append_timing(timing: &mut Vec<u8>, value: &[u8]) {
    if !timing.is_empty() {
        timing.extend_from_slice(b", ");
    }
    timing.extend_from_slice(value);
}

/// Takes the `Server-Timing` fields out of a chunked body's trailer section.
fn trailer_timing(trailers: &[u8], timing: &mut Vec<u8>) {
    // The decoder keeps the line ends' CR (or a bare LF); either ends a line.
    for line in trailers.split(|&b| b == b'\n' || b == b'\r') {
        if let Some(colon) = line.iter().position(|&b| b == b':') {
            if line[..colon]
                .trim_ascii()
                .eq_ignore_ascii_case(b"server-timing")
            {
                append_timing(timing, line[colon + 1..].trim_ascii());
            }
        }
    }
}

/// Parses a response head from `bytes`; the final head's `Server-Timing` values are
/// appended to `timing`; with `want_codings`, its `Content-Encoding` is parsed too.
fn parse_head(
    bytes: &[u8],
    head_request: bool,
    want_codings: bool,
    timing: &mut Vec<u8>,
) -> Result<Parsed, EngineError> {
    // Uninitialized header slots: no 4 KiB memset per response.
    let mut headers = [const { std::mem::MaybeUninit::<httparse::Header>::uninit() }; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut res,
        bytes,
        &mut headers,
    ) {
        Ok(httparse::Status::Partial) => return Ok(Parsed::Partial),
        Ok(httparse::Status::Complete(len)) => len,
        Err(e) => {
            let shown: String = bytes[..bytes.len().min(40)].escape_ascii().to_string();
            return Err(EngineError::new(
                ErrorKind::Protocol,
                format!("invalid HTTP response ({e}): it starts with \"{shown}\""),
            )
            .with_cause(super::cause::of_response(bytes)));
        }
    };
    let status = res.code.unwrap_or(0);
    if status == 101 {
        return Err(EngineError::new(
            ErrorKind::Protocol,
            "the server switched protocols (101), which reqlife does not follow".to_string(),
        ));
    }
    if (100..200).contains(&status) {
        return Ok(Parsed::Interim(len));
    }
    let http11 = res.version == Some(1);
    let mut keep_alive = http11;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut transfer_encoding = false;
    let mut codings = None;
    let mut event_stream = false;
    for h in res.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            let value = std::str::from_utf8(h.value)
                .ok()
                .map(str::trim)
                .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    EngineError::new(
                        ErrorKind::Protocol,
                        format!("invalid Content-Length '{}'", h.value.escape_ascii()),
                    )
                })?;
            if length.is_some_and(|l| l != value) {
                return Err(EngineError::new(
                    ErrorKind::Protocol,
                    "conflicting Content-Length headers".to_string(),
                ));
            }
            length = Some(value);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            transfer_encoding = true;
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case(b"server-timing") {
            append_timing(timing, h.value);
        } else if want_codings && name.eq_ignore_ascii_case(b"content-encoding") {
            codings =
                Codings::parse(h.value).map_err(|e| EngineError::new(ErrorKind::Protocol, e))?;
        } else if name.eq_ignore_ascii_case(b"content-type") {
            event_stream = super::stream::is_event_stream(h.value);
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    keep_alive = false;
                } else if token.eq_ignore_ascii_case(b"keep-alive") && !http11 {
                    keep_alive = true;
                }
            }
        }
    }
    let framing = if head_request || status == 204 || status == 304 {
        Framing::None
    } else if transfer_encoding {
        if length.is_some() {
            // Both framings: Transfer-Encoding wins, but the connection is suspect.
            keep_alive = false;
        }
        if chunked {
            Framing::Chunked
        } else {
            Framing::UntilClose
        }
    } else if let Some(len) = length {
        Framing::Length(len)
    } else {
        Framing::UntilClose
    };
    Ok(Parsed::Final(Head {
        len,
        status,
        framing,
        keep_alive,
        codings: codings.filter(|_| framing != Framing::None),
        event_stream,
    }))
}

/// The response parsers run over arbitrary bytes, for the fuzz targets (`fuzz/`) and the
/// proptests: the head parser (with and without `HEAD`, codings on and off), interim responses
/// dropped from a buffer, and the chunked decoder fed the rest in pieces of `split` bytes.
/// Whatever the bytes, this returns; it never panics.
#[doc(hidden)]
pub fn parse_any(data: &[u8], split: usize) {
    let mut timing = Vec::new();
    for (head, codings) in [(false, true), (true, false)] {
        let _ = parse_head(data, head, codings, &mut timing);
    }
    let mut buf = data.to_vec();
    let mut filled = buf.len();
    let mut interim = 0;
    let head = parse_loop(
        &mut buf,
        &mut filled,
        false,
        true,
        &mut timing,
        &mut interim,
    );
    let body = match head {
        Ok(Some(h)) if h.len <= filled => &buf[h.len..filled],
        _ => data,
    };
    let mut decoder = ChunkDecoder::new(1024);
    let mut trailers = Vec::new();
    let mut keep = BodyDecoder::new(4096);
    let mut keeper = Some(&mut keep);
    for piece in body.chunks(split.max(1)) {
        if decoder.feed(piece, &mut trailers, &mut keeper).is_err() || decoder.is_done() {
            break;
        }
    }
    trailer_timing(&trailers, &mut timing);
    if let Ok(Some(c)) = Codings::parse(data) {
        let mut d = BodyDecoder::new(1 << 16);
        let _ = d.keep(body);
        let _ = d.decode(&c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        // Any bytes, in any pieces: fuzz/fuzz_targets/http1_response.rs. What random bytes
        // seldom reach, a status line, header lines and chunked framing, is generated here.
        #[test]
        fn any_response_like_bytes_parse_without_panic(
            status in 100u16..600,
            headers in proptest::collection::vec("[A-Za-z-]{1,12}: [ -~]{0,20}", 0..6),
            chunked in proptest::bool::ANY,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            split in 1usize..32,
        ) {
            let mut r = format!("HTTP/1.1 {status} X\r\n").into_bytes();
            for h in &headers {
                r.extend_from_slice(h.as_bytes());
                r.extend_from_slice(b"\r\n");
            }
            if chunked {
                r.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
            }
            r.extend_from_slice(b"\r\n");
            r.extend_from_slice(&body);
            parse_any(&r, split);
        }
    }

    fn head(s: &str) -> Result<Parsed, String> {
        parse_head(s.as_bytes(), false, false, &mut Vec::new()).map_err(|e| e.detail)
    }

    fn final_head(s: &str) -> Head {
        match head(s).unwrap() {
            Parsed::Final(h) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn framing_and_keep_alive() {
        // (response head, status, framing, keep-alive)
        let rows = [
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n",
                200,
                Framing::Length(12),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                200,
                Framing::Chunked,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                200,
                Framing::Chunked,
                true,
            ),
            ("HTTP/1.1 200 OK\r\n\r\n", 200, Framing::UntilClose, true), // no length: read to close
            ("HTTP/1.1 204 No Content\r\n\r\n", 204, Framing::None, true),
            (
                "HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n",
                304,
                Framing::None,
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\n",
                200,
                Framing::Length(1),
                false,
            ),
            (
                "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n",
                200,
                Framing::Length(1),
                false,
            ), // 1.0 closes by default
            (
                "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n",
                200,
                Framing::Length(1),
                true,
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
                200,
                Framing::Chunked,
                false,
            ),
        ];
        for (text, status, framing, keep_alive) in rows {
            let h = final_head(text);
            assert_eq!(
                (h.status, h.framing, h.keep_alive),
                (status, framing, keep_alive),
                "{text:?}"
            );
            assert_eq!(h.len, text.len());
        }
    }

    #[test]
    fn head_request_has_no_body() {
        let p = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n",
            true,
            false,
            &mut Vec::new(),
        )
        .unwrap();
        assert!(matches!(
            p,
            Parsed::Final(Head {
                framing: Framing::None,
                ..
            })
        ));
    }

    #[test]
    fn interim_and_partial() {
        assert_eq!(
            head("HTTP/1.1 100 Continue\r\n\r\n").unwrap(),
            Parsed::Interim(25)
        );
        assert_eq!(
            head("HTTP/1.1 200 OK\r\nContent-Le").unwrap(),
            Parsed::Partial
        );
        let mut buf =
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec();
        let mut filled = buf.len();
        let mut interim = 0;
        let h = parse_loop(
            &mut buf,
            &mut filled,
            false,
            false,
            &mut Vec::new(),
            &mut interim,
        )
        .unwrap()
        .unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(filled, h.len);
        assert_eq!(interim, 25, "the interim head counts as header bytes");
    }

    #[test]
    fn bad_heads() {
        // (response, a part of the message)
        let rows = [
            ("garbage\r\n\r\n", "invalid HTTP response"),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
                "invalid Content-Length",
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
                "invalid Content-Length",
            ),
            (
                "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "conflicting",
            ),
            (
                "HTTP/1.1 101 Switching Protocols\r\n\r\n",
                "switched protocols",
            ),
        ];
        for (text, want) in rows {
            let e = head(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn server_timing_from_headers_and_trailers() {
        let mut timing = Vec::new();
        let p = parse_head(
            b"HTTP/1.1 200 OK\r\nServer-Timing: a;dur=1\r\nserver-timing: b;dur=2\r\nContent-Length: 0\r\n\r\n",
            false,
            false,
            &mut timing,
        )
        .unwrap();
        assert!(matches!(p, Parsed::Final(_)));
        assert_eq!(timing, b"a;dur=1, b;dur=2");
        let mut trailers = Vec::new();
        let mut d = ChunkDecoder::new(1024);
        d.feed(
            b"1\r\nx\r\n0\r\nServer-Timing: total;dur=3\r\nX-Other: y\r\n\r\n",
            &mut trailers,
            &mut None,
        )
        .unwrap();
        assert!(d.is_done());
        trailer_timing(&trailers, &mut timing);
        assert_eq!(timing, b"a;dur=1, b;dur=2, total;dur=3");
    }
}
