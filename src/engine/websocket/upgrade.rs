//! The opening handshake of RFC 6455 (section 4): the HTTP/1.1 upgrade request with a fresh
//! `Sec-WebSocket-Key`, and the server's answer checked: `101 Switching Protocols`,
//! `Upgrade: websocket`, `Connection: Upgrade` and the `Sec-WebSocket-Accept` the key asks for.
//! Any other answer fails the connection with the cause that stops the run early
//! ([`Cause::NotWebSocket`]), its status named.

use crate::engine::cause::Cause;
use crate::engine::connect::Socket;
use crate::engine::EngineError;
use crate::model::ErrorKind;
use base64::Engine;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// RFC 6455's GUID, appended to the key before hashing.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The `Sec-WebSocket-Accept` a server must answer the key `key` (base64, as sent) with:
/// base64(SHA-1(key + GUID)).
pub fn accept_of(key: &str) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    ctx.update(key.as_bytes());
    ctx.update(GUID.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(ctx.finish())
}

/// The upgrade request: `head` (the request line, Host and the user's headers, each line
/// ended) with the WebSocket headers and `key` (base64) added, and the blank line.
pub fn request(head: &[u8], key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.len() + 160);
    out.extend_from_slice(head);
    out.extend_from_slice(
        b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n",
    );
    out.extend_from_slice(b"Sec-WebSocket-Key: ");
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\r\n\r\n");
    out
}

/// An upgrade the server refused or answered wrongly: a protocol error with the cause that
/// stops the run early.
fn refused(detail: String) -> EngineError {
    EngineError::new(ErrorKind::Protocol, detail).with_cause(Some(Cause::NotWebSocket))
}

/// Checks a whole response head to the upgrade with `key`: `Ok` for a proper `101`.
pub fn check(resp: &httparse::Response<'_, '_>, key: &str) -> Result<(), EngineError> {
    let code = resp.code.unwrap_or(0);
    if code != 101 {
        return Err(refused(format!(
            "the server answered the WebSocket upgrade with {code} {}, not 101 Switching Protocols",
            resp.reason.unwrap_or("")
        )));
    }
    let header = |name: &str| {
        resp.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
    };
    let upgrade = header("upgrade").unwrap_or_default();
    let connection = header("connection").unwrap_or_default();
    let has_upgrade = connection
        .split(',')
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    if !upgrade.eq_ignore_ascii_case("websocket") || !has_upgrade {
        return Err(refused(format!(
            "the server's 101 does not upgrade to websocket (Upgrade: '{upgrade}', Connection: '{connection}')"
        )));
    }
    let want = accept_of(key);
    match header("sec-websocket-accept") {
        Some(got) if got == want => Ok(()),
        got => Err(refused(format!(
            "the server's 101 has Sec-WebSocket-Accept '{}', not '{want}' (the key's)",
            got.unwrap_or_default()
        ))),
    }
}

/// Sends the upgrade request on `socket` and reads the answer's head into `buf`, within
/// `max_head` bytes: `Ok(n)` once a proper `101` came, its head `n` bytes long; the bytes read
/// past it (the server's first frames) are `buf[n..end]`, `end` set.
pub async fn handshake(
    socket: &mut Socket,
    head: &[u8],
    key: &str,
    buf: &mut [u8],
    end: &mut usize,
    max_head: usize,
) -> Result<usize, EngineError> {
    let write = |e: std::io::Error| EngineError::io(ErrorKind::Write, "upgrade request".into(), &e);
    socket.write_all(&request(head, key)).await.map_err(write)?;
    socket.flush().await.map_err(write)?;
    *end = 0;
    loop {
        let limit = buf.len().min(max_head.max(1024));
        if *end == limit {
            return Err(too_long(limit));
        }
        let n = socket
            .read(&mut buf[*end..limit])
            .await
            .map_err(|e| EngineError::io(ErrorKind::Read, "upgrade answer".into(), &e))?;
        if n == 0 {
            return Err(EngineError::new(
                ErrorKind::Closed,
                "connection closed before the answer to the WebSocket upgrade".into(),
            ));
        }
        *end += n;
        if let Some(len) = answer(&buf[..*end], key)? {
            return Ok(len);
        }
    }
}

/// The answer to the upgrade with `key` as read so far (`read`): `Ok(Some(n))` once its head
/// is whole, `n` bytes long, and a proper `101` ([`check`]); `Ok(None)` while the head is not
/// whole.
pub fn answer(read: &[u8], key: &str) -> Result<Option<usize>, EngineError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    match resp.parse(read) {
        Ok(httparse::Status::Complete(len)) => check(&resp, key).map(|()| Some(len)),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(e) => Err(refused(format!(
            "the answer to the WebSocket upgrade is not HTTP/1.1: {e}"
        ))),
    }
}

/// An answer whose head is not whole within `limit` bytes.
fn too_long(limit: usize) -> EngineError {
    refused(format!(
        "the answer to the WebSocket upgrade has a head of more than {limit} bytes"
    ))
}

/// The key of RFC 6455's example (section 1.3), and the start of a proper `101` to it.
const EXAMPLE_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";
const EXAMPLE_101: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
    Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n";

/// The answer to the upgrade over arbitrary bytes, for the fuzz target (`fuzz/`): `data` (after
/// [`EXAMPLE_101`]'s start when its first byte is odd, so that its extensions' headers
/// are reached) read as [`handshake`] reads it, in pieces of `split` bytes into a head of at
/// most 1,024 bytes, and byte by byte, must come out as it does read at once (else this
/// panics); a whole `101`'s extensions are then negotiated, permessage-deflate offered and
/// not.
#[doc(hidden)]
pub fn answer_any(data: &[u8], split: usize) {
    let Some((first, rest)) = data.split_first() else {
        return;
    };
    let bytes = [if first & 1 == 1 { EXAMPLE_101 } else { b"" }, rest].concat();
    let read = |split: usize| {
        let mut buf = Vec::new();
        for piece in bytes.chunks(split.max(1)) {
            buf.extend_from_slice(&piece[..piece.len().min(1024 - buf.len())]);
            if let Some(len) = answer(&buf, EXAMPLE_KEY)? {
                return Ok(Some(len));
            }
            // The next read would find the head's room full.
            if buf.len() == 1024 {
                return Err(too_long(1024));
            }
        }
        Ok(None)
    };
    let whole = read(bytes.len());
    assert_eq!(read(split), whole, "in pieces of {split} bytes");
    assert_eq!(read(1), whole, "byte by byte");
    if let Ok(Some(len)) = whole {
        for offered in [true, false] {
            let _ = super::deflate::agreed_in(&bytes[..len], offered);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_accept_of_rfc_6455s_example_key() {
        // RFC 6455, section 1.3 (its text writes the value as here: 9kYG).
        assert_eq!(
            accept_of("dGhlIHNhbXBsZSBub25jZQ=="),
            "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        );
    }

    fn checked(head: &str, key: &str) -> Result<(), String> {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        assert!(resp.parse(head.as_bytes()).unwrap().is_complete());
        check(&resp, key).map_err(|e| {
            assert_eq!(e.cause, Some(Cause::NotWebSocket));
            e.detail
        })
    }

    #[test]
    fn an_answer_is_a_proper_101_or_refused_naming_why() {
        let key = "dGhlIHNhbXBsZSBub25jZQ==";
        let ok = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
        assert_eq!(checked(ok, key), Ok(()));
        // (answer, a part of the error)
        let rows = [
            ("HTTP/1.1 200 OK\r\n\r\n", "with 200 OK, not 101"),
            ("HTTP/1.1 404 Not Found\r\n\r\n", "with 404 Not Found"),
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
                "does not upgrade to websocket",
            ),
            (
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: x\r\n\r\n",
                "Sec-WebSocket-Accept 'x'",
            ),
        ];
        for (head, want) in rows {
            let e = checked(head, key).unwrap_err();
            assert!(e.contains(want), "{head:?}: {e}");
        }
    }

    #[test]
    fn an_answer_reads_alike_in_any_pieces_and_whole() {
        let mut head = EXAMPLE_101.to_vec();
        head.extend_from_slice(b"Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n");
        assert_eq!(answer(&head, EXAMPLE_KEY), Ok(Some(head.len())));
        assert_eq!(answer(&head[..head.len() - 1], EXAMPLE_KEY), Ok(None));
        // (The fuzz target's way: a first byte of 1 puts EXAMPLE_101 first.)
        answer_any(&[&[1][..], &head[EXAMPLE_101.len()..]].concat(), 7);
        let long = format!("HTTP/1.1 101 X\r\nX: {}\r\n\r\n", "a".repeat(2000));
        let e = answer(long.as_bytes(), EXAMPLE_KEY).unwrap_err();
        assert!(e.detail.contains("does not upgrade"), "{}", e.detail);
        answer_any(&[&[0][..], long.as_bytes()].concat(), 100);
    }

    #[test]
    fn the_request_has_the_upgrade_headers_and_the_key() {
        let r = request(b"GET /chat HTTP/1.1\r\nHost: h\r\n", "a2V5");
        let r = String::from_utf8(r).unwrap();
        assert!(r.starts_with("GET /chat HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n"));
        assert!(r.ends_with("Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a2V5\r\n\r\n"));
    }
}
