//! permessage-deflate (RFC 7692) with `--compressed` on a `ws://` or `wss://` target: the
//! upgrade request offers it ([`OFFER`]), the server's `101` agrees or not ([`negotiate`]: an
//! extension not offered, or a broken parameter, fails the connection with
//! [`Cause::WsExtension`], which stops the run), and where it agreed, a message whose first
//! frame sets RSV1 is inflated once whole ([`Inflater`]), as HTTP's `--compressed` decodes a
//! body once complete: the time it takes is the `decode` phase, its bytes the body decoded.
//!
//! The offer is `permessage-deflate; client_no_context_takeover`: the client's message is the
//! same for every request, so it is deflated once for the run ([`deflated`], a fresh window
//! each time) and sent compressed (RSV1) on every connection that agreed, which costs the
//! client nothing per message and still makes the server inflate each one. No
//! `client_max_window_bits` is offered, so the server may not shrink the client's window below
//! the 32 KiB the deflater uses; should a server name one below 15 anyway, the message goes
//! uncompressed there (RFC 7692 lets any message go with RSV1 clear). The server's window is
//! its choice (`server_max_window_bits`, 8 to 15): the inflater's is 32 KiB, which decodes a
//! stream made with any smaller one (miniz_oxide, flate2's backend, has no other). The window
//! is kept from message to message unless the server said `server_no_context_takeover`.

use super::WsConn;
use crate::engine::cause::Cause;
use crate::engine::websocket::WsWire;
use crate::engine::EngineError;
use crate::model::{ErrorKind, Timestamps};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use std::time::Instant;

/// The upgrade request's header line that offers permessage-deflate (`--compressed`).
pub const OFFER: &[u8] =
    b"Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n";

/// The extension's name.
const NAME: &str = "permessage-deflate";

/// A connection upgraded with `--compressed` whose `101` agreed permessage-deflate.
pub const AGREED: u32 = 1;
/// A connection upgraded with `--compressed` whose `101` did not: its messages uncompressed.
pub const NOT_AGREED: u32 = 0;

/// The record's name of a connection's outcome (`summary.ws_deflate`): `agreed`, `not_agreed`.
pub fn name(kind: u32) -> String {
    if kind == AGREED {
        "agreed"
    } else {
        "not_agreed"
    }
    .into()
}

/// The bytes a sender takes off a compressed message's end and the receiver puts back (an
/// empty stored block's, RFC 7692 7.2.2).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The inflater's output, reused: decoded bytes land here, are counted (and checked as
/// UTF-8 for a text message), then dropped.
const OUT_BYTES: usize = 16 * 1024;

/// A compressed message that does not inflate.
const BROKEN: &str = "a compressed WebSocket message that does not inflate (raw deflate, RFC 7692)";

/// A compressed text message whose decoded bytes are not UTF-8.
const NOT_UTF8: &str = "a WebSocket text message that is not UTF-8 (once inflated)";

/// What the server's `101` agreed to (RFC 7692, 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Agreed {
    /// The server starts each message with a fresh window (the inflater is reset).
    pub server_no_context_takeover: bool,
    /// The client may not use its window across messages (it never does).
    pub client_no_context_takeover: bool,
    /// The server's window, in bits (8 to 15; `None`: 15).
    pub server_max_window_bits: Option<u8>,
    /// The client's window, in bits (8 to 15; `None`: 15).
    pub client_max_window_bits: Option<u8>,
}

impl Agreed {
    /// Whether the client's messages may go compressed: its deflater's window is 15 bits,
    /// too large for a server that asked for fewer.
    pub fn compress_sent(&self) -> bool {
        self.client_max_window_bits.is_none_or(|b| b == 15)
    }
}

/// A `101` whose extensions the client cannot accept: a protocol error with the cause that
/// stops the run.
fn refused(detail: String) -> EngineError {
    EngineError::new(ErrorKind::Protocol, detail).with_cause(Some(Cause::WsExtension))
}

/// The extensions of a `101` (`values`: its `Sec-WebSocket-Extensions` values), with
/// permessage-deflate `offered` or not: what was agreed (`None`: no extension); an error
/// for an extension not offered, offered twice, or with a parameter unknown, repeated or out
/// of range (RFC 6455 9.1, RFC 7692 7.1).
pub fn negotiate<'a>(
    values: impl IntoIterator<Item = &'a [u8]>,
    offered: bool,
) -> Result<Option<Agreed>, String> {
    let mut agreed = None;
    for value in values {
        let value = String::from_utf8_lossy(value);
        for extension in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let mut parts = extension.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            if !name.eq_ignore_ascii_case(NAME) || !offered {
                let offer = if offered {
                    NAME
                } else {
                    "none (no --compressed)"
                };
                return Err(format!(
                    "the server's 101 agrees to the WebSocket extension '{name}', which the client did not offer (offered: {offer})"
                ));
            }
            if agreed.is_some() {
                return Err(format!("the server's 101 agrees to {NAME} twice"));
            }
            agreed = Some(parameters(parts)?);
        }
    }
    Ok(agreed)
}

/// permessage-deflate's parameters in a `101`.
fn parameters<'a>(parts: impl Iterator<Item = &'a str>) -> Result<Agreed, String> {
    let mut a = Agreed::default();
    let mut seen = [false; 4];
    for part in parts {
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n.trim(), Some(v.trim().trim_matches('"'))),
            None => (part, None),
        };
        let at = match name.to_ascii_lowercase().as_str() {
            "server_no_context_takeover" => 0,
            "client_no_context_takeover" => 1,
            "server_max_window_bits" => 2,
            "client_max_window_bits" => 3,
            _ => {
                return Err(format!(
                    "the server's 101 gives {NAME} the parameter '{part}', which RFC 7692 does not define"
                ))
            }
        };
        if std::mem::replace(&mut seen[at], true) {
            return Err(format!(
                "the server's 101 gives {NAME} the parameter {name} twice"
            ));
        }
        match (at, value) {
            (0, None) => a.server_no_context_takeover = true,
            (1, None) => a.client_no_context_takeover = true,
            (2 | 3, Some(v)) => {
                let bits = window_bits(v).ok_or_else(|| {
                    format!("the server's 101 gives {NAME} {name}={v}: it must be 8 to 15")
                })?;
                *[&mut a.server_max_window_bits, &mut a.client_max_window_bits][at - 2] =
                    Some(bits);
            }
            _ => {
                return Err(format!(
                    "the server's 101 gives {NAME} '{part}': {name} takes {}",
                    if at < 2 {
                        "no value"
                    } else {
                        "a value, 8 to 15"
                    }
                ))
            }
        }
    }
    Ok(a)
}

/// A window's bits: a decimal 8 to 15 without a leading zero.
fn window_bits(v: &str) -> Option<u8> {
    let bits: u8 = v.parse().ok().filter(|_| !v.starts_with('0'))?;
    (8..=15).contains(&bits).then_some(bits)
}

/// The agreement in a whole `101` head (`head`, as read), permessage-deflate `offered` or
/// not ([`negotiate`]).
pub fn agreed_in(head: &[u8], offered: bool) -> Result<Option<Agreed>, EngineError> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut resp = httparse::Response::new(&mut headers);
    // The head parsed once already, to be checked: it parses the same again.
    let _ = resp.parse(head);
    let values = resp
        .headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("sec-websocket-extensions"))
        .map(|h| h.value);
    negotiate(values, offered).map_err(refused)
}

/// `message` deflated as one permessage-deflate message with a fresh window: raw deflate,
/// synced, its 4-byte tail taken off (RFC 7692 7.2.1).
pub fn deflated(message: &[u8]) -> Vec<u8> {
    let mut z = Compress::new(Compression::default(), false);
    let mut out = Vec::with_capacity(message.len() / 2 + 64);
    loop {
        let from = z.total_in() as usize;
        z.compress_vec(&message[from..], &mut out, FlushCompress::Sync)
            .expect("deflating into memory does not fail");
        if z.total_in() as usize == message.len() && out.len() < out.capacity() {
            break;
        }
        out.reserve(out.capacity().max(64));
    }
    if out.ends_with(&TAIL) {
        out.truncate(out.len() - TAIL.len());
    }
    out
}

/// A connection's inflater: the window (kept across messages unless the server said
/// `server_no_context_takeover`) and a reused output buffer. Made once per connection slot
/// and reset for each connection: a message allocates nothing.
pub struct Inflater {
    z: Decompress,
    out: Vec<u8>,
    /// A text message: the bytes of an incomplete UTF-8 character at `out`'s front, awaiting
    /// the next output.
    carry: usize,
    agreed: Agreed,
    max: u64,
}

impl Inflater {
    /// An inflater of messages of at most `max` decoded bytes (`--max-body`).
    pub fn new(max: u64) -> Self {
        Inflater {
            z: Decompress::new(false),
            out: vec![0; OUT_BYTES],
            carry: 0,
            agreed: Agreed::default(),
            max,
        }
    }

    /// A new connection that agreed `agreed`: a fresh window.
    pub fn start(&mut self, agreed: Agreed) {
        self.z.reset(false);
        self.agreed = agreed;
    }

    /// Inflates one whole message's payload as sent (`payload`, its tail put back): its
    /// decoded length; an error for a stream that does not inflate, more than `--max-body`
    /// decoded bytes (counted as they come: a bomb is cut there), or a text message that is
    /// not UTF-8.
    pub fn message(&mut self, payload: &[u8], text: bool) -> Result<u64, String> {
        if self.agreed.server_no_context_takeover {
            self.z.reset(false);
        }
        self.carry = 0;
        let mut total = 0;
        let ended = self.feed(payload, text, &mut total)? || self.feed(&TAIL, text, &mut total)?;
        if ended {
            // A final block (BFINAL) ended the stream: the next message starts a new one.
            self.z.reset(false);
        }
        if text && self.carry > 0 {
            return Err(NOT_UTF8.into());
        }
        Ok(total)
    }

    /// Inflates `input` until it is all taken and the output drained, adding the decoded
    /// bytes to `total`: `true` when the stream ended (a final block).
    fn feed(&mut self, mut input: &[u8], text: bool, total: &mut u64) -> Result<bool, String> {
        loop {
            let (was_in, was_out) = (self.z.total_in(), self.z.total_out());
            let space = self.out.len() - self.carry;
            let status = self
                .z
                .decompress(input, &mut self.out[self.carry..], FlushDecompress::Sync)
                .map_err(|e| format!("{BROKEN} ({e})"))?;
            let took = (self.z.total_in() - was_in) as usize;
            let made = (self.z.total_out() - was_out) as usize;
            input = &input[took..];
            *total += made as u64;
            if *total > self.max {
                return Err(format!(
                    "a compressed WebSocket message that inflates to more than --max-body {} bytes (cut there)",
                    self.max
                ));
            }
            if text {
                self.check_utf8(made)?;
            }
            if status == Status::StreamEnd {
                return Ok(true);
            }
            if input.is_empty() && made < space {
                return Ok(false);
            }
            if took == 0 && made == 0 {
                return Err(BROKEN.into());
            }
        }
    }

    /// Checks the `made` bytes just decoded after the carried ones as UTF-8, carrying an
    /// incomplete last character to the next output.
    fn check_utf8(&mut self, made: usize) -> Result<(), String> {
        let end = self.carry + made;
        self.carry = match std::str::from_utf8(&self.out[..end]) {
            Ok(_) => 0,
            Err(e) if e.error_len().is_none() => {
                let from = e.valid_up_to();
                self.out.copy_within(from..end, 0);
                end - from
            }
            Err(_) => return Err(NOT_UTF8.into()),
        };
        Ok(())
    }
}

/// The inflater over arbitrary bytes, for the fuzz target (`fuzz/`): `data`'s first byte
/// sets the limit (0: 1 MiB, else 64 bytes a step), its second whether the messages are text
/// (bit 0) and whether the server resets its window (bit 1); the rest is cut into messages,
/// each after a byte of its length. Each message is inflated as it came (a failure starts a
/// new connection, as it would), then [`deflated`] and inflated back, which must give its
/// length, or fail for a message over the limit or text that is not UTF-8 (else this
/// panics).
#[doc(hidden)]
pub fn inflate_any(data: &[u8]) {
    let [limit, flags, rest @ ..] = data else {
        return;
    };
    let max = if *limit == 0 {
        1 << 20
    } else {
        u64::from(*limit) * 64
    };
    let text = flags & 1 != 0;
    let agreed = Agreed {
        server_no_context_takeover: flags & 2 != 0,
        ..Agreed::default()
    };
    let (mut sent, mut back) = (Inflater::new(max), Inflater::new(max));
    sent.start(agreed);
    back.start(Agreed::default());
    let mut rest = rest;
    while let [len, tail @ ..] = rest {
        let message = &tail[..tail.len().min(usize::from(*len))];
        rest = &tail[message.len()..];
        if sent.message(message, text).is_err() {
            sent.start(agreed);
        }
        let got = back.message(&deflated(message), text);
        let over = message.len() as u64 > max;
        let not_utf8 = text && std::str::from_utf8(message).is_err();
        match &got {
            Ok(n) => assert!(*n == message.len() as u64 && !over && !not_utf8, "{got:?}"),
            Err(e) => {
                assert!(over || (not_utf8 && e == NOT_UTF8), "{e}");
                back.start(Agreed::default());
            }
        }
    }
}

/// The payload of the request's message on a connection that agreed `agreed` (`None`: not
/// in effect), and whether it is compressed (RSV1 to set): the message deflated once for the
/// run where it may be, else as given.
pub fn outgoing(agreed: Option<Agreed>, wire: &WsWire) -> (&[u8], bool) {
    match (&wire.deflated, agreed) {
        (Some(deflated), Some(a)) if a.compress_sent() => (deflated, true),
        _ => (&wire.plan.message, false),
    }
}

impl WsConn {
    /// A connection just upgraded (permessage-deflate `offered` or not): its reader told
    /// whether RSV1 may come, its outcome noted for the record, its inflater (made the first
    /// time) given a fresh window.
    pub(super) fn start_inflater(&mut self, offered: bool) {
        self.reader.allow_compressed(self.deflate.is_some());
        if offered {
            let agreed = self.deflate.is_some();
            self.negotiated
                .set(Some(if agreed { AGREED } else { NOT_AGREED }));
        }
        if let Some(agreed) = self.deflate {
            let max = self.max_body_bytes;
            let inflater = self
                .inflater
                .get_or_insert_with(|| Box::new(Inflater::new(max)));
            inflater.start(agreed);
        }
    }

    /// The decoded length of the data message just read (`text` or binary, `payload` bytes
    /// as sent): a compressed one is inflated, `decoded` stamped after (the `decode` phase);
    /// any other is its payload, and leaves no `decode` phase.
    pub(super) fn decoded(
        &mut self,
        text: bool,
        payload: u64,
        stamps: &mut Timestamps,
    ) -> Result<u64, EngineError> {
        stamps.decoded = None;
        if !self.reader.compressed() {
            return Ok(payload);
        }
        let inflater = self
            .inflater
            .as_mut()
            .expect("made when deflate was agreed");
        let decoded = inflater
            .message(self.reader.message(), text)
            .map_err(|e| EngineError::new(ErrorKind::Protocol, e))?;
        stamps.decoded = Some(Instant::now());
        Ok(decoded)
    }
}

#[cfg(test)]
#[path = "deflate_tests.rs"]
mod tests;
