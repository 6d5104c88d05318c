//! The head of an HTTP/1.1 response, parsed with `httparse`: status, framing (Content-Length,
//! chunked, until close, or none for HEAD/204/304), whether the connection may be kept, the
//! content codings and the `Server-Timing` values (of the head and of a chunked body's
//! trailers). Interim (1xx) responses are dropped from the buffer; a 101 is refused.

use crate::engine::decode::Codings;
use crate::engine::EngineError;
use crate::model::ErrorKind;

/// Most headers a response may have.
const MAX_HEADERS: usize = 128;

/// How the body of a response is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Framing {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

/// The parsed head of a final response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    pub len: usize,
    pub status: u16,
    pub framing: Framing,
    pub keep_alive: bool,
    /// The body's content codings, when asked to decode them.
    pub codings: Option<Codings>,
    /// `Content-Type: text/event-stream`.
    pub event_stream: bool,
}

/// What parsing the buffered bytes gave.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    /// More bytes are needed.
    Partial,
    /// A 1xx interim response of this many bytes, to be skipped.
    Interim(usize),
    Final(Head),
}

/// Parses the buffered bytes, dropping interim responses from the buffer (their length is
/// added to `interim_bytes`), until a final head or the need for more bytes.
#[inline]
pub(super) fn parse_loop(
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
pub(super) fn trailer_timing(trailers: &[u8], timing: &mut Vec<u8>) {
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
#[inline]
pub(super) fn parse_head(
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
        Err(e) => return Err(invalid_response(bytes, e)),
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
    let fields = Fields::of(res.headers, res.version == Some(1), want_codings, timing)?;
    let (framing, keep_alive) = fields.framing(head_request || status == 204 || status == 304);
    Ok(Parsed::Final(Head {
        len,
        status,
        framing,
        keep_alive,
        codings: fields.codings.filter(|_| framing != Framing::None),
        event_stream: fields.event_stream,
    }))
}

/// Bytes that are not an HTTP response: what they start with, and what they look like.
#[cold]
fn invalid_response(bytes: &[u8], e: httparse::Error) -> EngineError {
    let shown: String = bytes[..bytes.len().min(40)].escape_ascii().to_string();
    EngineError::new(
        ErrorKind::Protocol,
        format!("invalid HTTP response ({e}): it starts with \"{shown}\""),
    )
    .with_cause(crate::engine::cause::of_response(bytes))
}

/// What a final head's header fields say about its body and its connection.
struct Fields {
    keep_alive: bool,
    length: Option<u64>,
    chunked: bool,
    transfer_encoding: bool,
    codings: Option<Codings>,
    event_stream: bool,
}

impl Fields {
    /// Reads `headers` (of an HTTP/1.1 response when `http11`), appending `Server-Timing`
    /// values to `timing`; with `want_codings`, `Content-Encoding` is parsed too.
    #[inline]
    fn of(
        headers: &[httparse::Header<'_>],
        http11: bool,
        want_codings: bool,
        timing: &mut Vec<u8>,
    ) -> Result<Fields, EngineError> {
        let mut f = Fields {
            keep_alive: http11,
            length: None,
            chunked: false,
            transfer_encoding: false,
            codings: None,
            event_stream: false,
        };
        for h in headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let value = content_length(h.value)?;
                if f.length.is_some_and(|l| l != value) {
                    return Err(EngineError::new(
                        ErrorKind::Protocol,
                        "conflicting Content-Length headers".to_string(),
                    ));
                }
                f.length = Some(value);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                f.transfer_encoding = true;
                f.chunked = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|last| last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if name.eq_ignore_ascii_case(b"server-timing") {
                append_timing(timing, h.value);
            } else if want_codings && name.eq_ignore_ascii_case(b"content-encoding") {
                f.codings = Codings::parse(h.value)
                    .map_err(|e| EngineError::new(ErrorKind::Protocol, e))?;
            } else if name.eq_ignore_ascii_case(b"content-type") {
                f.event_stream = crate::engine::events::is_event_stream(h.value);
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in h.value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    if token.eq_ignore_ascii_case(b"close") {
                        f.keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && !http11 {
                        f.keep_alive = true;
                    }
                }
            }
        }
        Ok(f)
    }

    /// The body's framing and whether the connection may be kept; `no_body`: the request was
    /// HEAD or the status is 204 or 304.
    #[inline]
    fn framing(&self, no_body: bool) -> (Framing, bool) {
        let mut keep_alive = self.keep_alive;
        let framing = if no_body {
            Framing::None
        } else if self.transfer_encoding {
            if self.length.is_some() {
                // Both framings: Transfer-Encoding wins, but the connection is suspect.
                keep_alive = false;
            }
            if self.chunked {
                Framing::Chunked
            } else {
                Framing::UntilClose
            }
        } else if let Some(len) = self.length {
            Framing::Length(len)
        } else {
            Framing::UntilClose
        };
        (framing, keep_alive)
    }
}

/// A `Content-Length` value: ASCII digits only (no sign), surrounding spaces allowed.
#[inline]
fn content_length(value: &[u8]) -> Result<u64, EngineError> {
    std::str::from_utf8(value)
        .ok()
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| {
            EngineError::new(
                ErrorKind::Protocol,
                format!("invalid Content-Length '{}'", value.escape_ascii()),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::chunked::ChunkDecoder;

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
