//! RFC 6455's frames, both ways: [`encode`] writes one masked client frame (FIN set, the
//! payload's length in 7, 16 or 64 bits), and [`MessageReader`] is a pure state machine over
//! the server's bytes, fed in any pieces, that gives whole messages: data frames reassembled
//! from their fragments (control frames may come between them), a text message checked as
//! UTF-8, a message longer than the limit refused as soon as a frame header says so. A binary
//! message is counted, not kept (but by a reader that keeps all, [`MessageReader::keep_all`]);
//! a text message is kept (capacity reused) to check its UTF-8; a control frame's payload (at
//! most 125 bytes) is kept to answer a ping. Where permessage-deflate was agreed
//! ([`MessageReader::allow_compressed`]), a message whose first frame sets RSV1 is kept as
//! sent, for [`super::deflate`] to inflate (and check as UTF-8). A server's
//! reader ([`MessageReader::server`], the embedded target's) reads the client's masked frames
//! instead, unmasked as they come, and keeps every message ([`MessageReader::message`]).

mod pieces;

pub use pieces::{feed_in_pieces, read_any, Fed};

/// A continuation frame (the next fragment of a message).
pub const CONTINUATION: u8 = 0x0;
/// A text frame (UTF-8).
pub const TEXT: u8 = 0x1;
/// A binary frame.
pub const BINARY: u8 = 0x2;
/// A close frame.
pub const CLOSE: u8 = 0x8;
/// A ping frame (answered with a pong of the same payload).
pub const PING: u8 = 0x9;
/// A pong frame.
pub const PONG: u8 = 0xA;

/// The first header byte's RSV1 bit: a compressed message's first frame, where
/// permessage-deflate was agreed (RFC 7692, 6).
pub const RSV1: u8 = 0x40;

/// The longest control frame payload (RFC 6455, 5.5).
const MAX_CONTROL: usize = 125;

/// Writes one client frame into `out` (cleared first): FIN set, `opcode`, masked with `mask`.
pub fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.clear();
    append(out, opcode, payload, mask);
}

/// Appends one client frame to `out`, as [`encode`] writes it (frames back to back: a batch).
pub fn append(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | (opcode & 0x0F));
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if len <= usize::from(u16::MAX) {
        out.push(0x80 | 126);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&mask);
    let start = out.len();
    out.extend_from_slice(payload);
    for (i, b) in out[start..].iter_mut().enumerate() {
        *b ^= mask[i & 3];
    }
}

/// What the server's bytes broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WsError {
    /// A message longer than the limit (`--max-body`).
    TooLong {
        /// The message's length so far, with the frame that passed the limit, in bytes.
        announced: u64,
        /// The limit, in bytes.
        max: u64,
    },
    /// A text message whose payload is not UTF-8.
    InvalidUtf8,
    /// A frame that breaks RFC 6455 (what, in words).
    Invalid(&'static str),
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WsError::TooLong { announced, max } => write!(
                f,
                "a WebSocket message of at least {announced} bytes, more than --max-body {max}"
            ),
            WsError::InvalidUtf8 => write!(f, "a WebSocket text message that is not UTF-8"),
            WsError::Invalid(what) => write!(f, "an invalid WebSocket frame: {what}"),
        }
    }
}

/// What a piece of the server's bytes completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// More bytes are needed.
    More,
    /// A whole data message: text or binary, its payload's length, and the framing bytes of
    /// its frames (their headers).
    Message {
        /// A text message (else binary).
        text: bool,
        /// Its payload's bytes, over all its fragments.
        payload: u64,
        /// Its frames' header bytes.
        framing: u64,
    },
    /// A ping: its payload is [`MessageReader::control`], to send back in a pong.
    Ping,
    /// A pong (unasked for: nothing to do).
    Pong,
    /// A close frame, with its status code if it had one.
    Close(Option<u16>),
}

/// Where the reader is within a frame.
#[derive(Debug, Clone, Copy)]
enum State {
    /// In a frame's header: `have` of its bytes are in `head`.
    Header { have: usize },
    /// In a frame's payload: `left` bytes to come.
    Payload { left: u64, opcode: u8, fin: bool },
}

/// Reads the server's frames into messages (see the module's documentation).
#[derive(Debug, Clone)]
pub struct MessageReader {
    max: u64,
    state: State,
    head: [u8; 14],
    /// The data message in progress: its first frame's opcode (`None`: none).
    message: Option<u8>,
    /// Its payload and framing bytes so far.
    payload: u64,
    framing: u64,
    /// A text message's bytes (for the UTF-8 check); a server's reader keeps any message's.
    text: Vec<u8>,
    /// The last control frame's payload.
    control: Vec<u8>,
    /// A server's reader: frames must be masked, and are unmasked.
    server: bool,
    /// Binary messages are kept too (`--ws-match` reads any reply).
    keep: bool,
    /// The frame in progress's masking key, and how many of its payload bytes came so far.
    key: [u8; 4],
    unmasked: usize,
    /// permessage-deflate was agreed: a data message's first frame may set RSV1.
    deflate: bool,
    /// The data message in progress (or the last one) set RSV1: its payload is kept, to
    /// inflate ([`super::deflate`]), and not checked as UTF-8 here.
    compressed: bool,
    /// Bytes taken since the reader was made or reset; where the frame in progress and the
    /// data message in progress (or the last one) began among them.
    taken: u64,
    frame_start: u64,
    message_start: u64,
}

impl MessageReader {
    /// A reader of messages of at most `max` payload bytes.
    pub fn new(max: u64) -> Self {
        MessageReader {
            max,
            state: State::Header { have: 0 },
            head: [0; 14],
            message: None,
            payload: 0,
            framing: 0,
            text: Vec::new(),
            control: Vec::with_capacity(MAX_CONTROL),
            server: false,
            keep: false,
            key: [0; 4],
            unmasked: 0,
            deflate: false,
            compressed: false,
            taken: 0,
            frame_start: 0,
            message_start: 0,
        }
    }

    /// A server's reader of messages of at most `max` payload bytes: the client's frames must
    /// be masked (RFC 6455, 5.1), and every message is kept, unmasked, for
    /// [`MessageReader::message`].
    pub fn server(max: u64) -> Self {
        MessageReader {
            server: true,
            ..MessageReader::new(max)
        }
    }

    /// The payload of the last whole data message, unmasked: any message for a server's
    /// reader or one that keeps all, a text or compressed message only for another client's
    /// (a compressed one as sent).
    pub fn message(&self) -> &[u8] {
        &self.text
    }

    /// Keeps binary messages too (`keep`), for [`MessageReader::message`].
    pub fn keep_all(&mut self, keep: bool) {
        self.keep = keep;
    }

    /// Forgets any frame in progress (a new connection's reader), keeping the capacity.
    pub fn reset(&mut self) {
        self.state = State::Header { have: 0 };
        self.message = None;
        self.compressed = false;
        (self.taken, self.frame_start, self.message_start) = (0, 0, 0);
    }

    /// Where the data message in progress (or the last one) began and where the bytes taken
    /// end, counted in the bytes taken since the reader was made or reset: right after a
    /// [`Step::Message`], that message's first byte (its first frame's header) and the
    /// byte after its last.
    pub fn message_span(&self) -> (u64, u64) {
        (self.message_start, self.taken)
    }

    /// Whether a data message's first frame may set RSV1 (permessage-deflate agreed on this
    /// connection); without, any reserved bit is an invalid frame.
    pub fn allow_compressed(&mut self, on: bool) {
        self.deflate = on;
    }

    /// Whether the last data message was compressed (RSV1 set): its payload, as sent, is
    /// [`MessageReader::message`].
    pub fn compressed(&self) -> bool {
        self.compressed
    }

    /// The payload of the last control frame (a ping's, to answer with).
    pub fn control(&self) -> &[u8] {
        &self.control
    }

    /// Whether a data message has begun (a frame header of it read): its first byte came.
    pub fn in_message(&self) -> bool {
        self.message.is_some()
            || matches!(self.state, State::Header { have } if have > 0 && self.head[0] & 0x0F < 8)
    }

    /// Takes bytes from `data` up to the end of the next step: how many it took, and the step
    /// they completed ([`Step::More`] when it took them all and needs more).
    pub fn feed(&mut self, data: &[u8]) -> (usize, Result<Step, WsError>) {
        let mut used = 0;
        while used < data.len() {
            let rest = &data[used..];
            let (took, step) = match self.state {
                State::Header { have } => {
                    if have == 0 {
                        self.frame_start = self.taken + used as u64;
                    }
                    self.header(have, rest)
                }
                State::Payload { left, opcode, fin } => self.payload_bytes(left, opcode, fin, rest),
            };
            used += took;
            match step {
                Ok(Step::More) => {}
                other => {
                    self.taken += used as u64;
                    return (used, other);
                }
            }
        }
        self.taken += used as u64;
        (used, Ok(Step::More))
    }

    /// Takes header bytes; once the header is whole, checks it and moves to its payload.
    fn header(&mut self, mut have: usize, rest: &[u8]) -> (usize, Result<Step, WsError>) {
        let mut used = 0;
        // Twice at most: the first two bytes tell the extended length's size.
        let need = loop {
            let need = self.header_len(have);
            let take = (need - have).min(rest.len() - used);
            self.head[have..have + take].copy_from_slice(&rest[used..used + take]);
            (have, used) = (have + take, used + take);
            let need = self.header_len(have);
            if have == need {
                break need;
            }
            if used == rest.len() {
                self.state = State::Header { have };
                return (used, Ok(Step::More));
            }
        };
        match self.begin_frame(need) {
            Ok(Some(step)) => (used, Ok(step)),
            Ok(None) => (used, Ok(Step::More)),
            Err(e) => (used, Err(e)),
        }
    }

    /// A whole header of `len` bytes in `head`: checks it and starts its payload (a frame with
    /// none ends here).
    fn begin_frame(&mut self, len: usize) -> Result<Option<Step>, WsError> {
        let (b0, b1) = (self.head[0], self.head[1]);
        let (fin, opcode) = (b0 & 0x80 != 0, b0 & 0x0F);
        let rsv1 = b0 & 0x70 == RSV1 && self.deflate;
        if b0 & 0x70 != 0 && !rsv1 {
            return Err(WsError::Invalid(if self.deflate {
                "RSV2 or RSV3 set (only permessage-deflate's RSV1 was agreed)"
            } else {
                "reserved bits set (no extension was agreed)"
            }));
        }
        if rsv1 && !matches!(opcode, TEXT | BINARY) {
            return Err(WsError::Invalid(
                "RSV1 on a control frame or a continuation (permessage-deflate sets it on a message's first frame only)",
            ));
        }
        if matches!(opcode, TEXT | BINARY) {
            self.compressed = rsv1;
        }
        if b1 & 0x80 != 0 && !self.server {
            return Err(WsError::Invalid("a masked frame from the server"));
        }
        if b1 & 0x80 == 0 && self.server {
            return Err(WsError::Invalid("an unmasked frame from the client"));
        }
        if self.server {
            self.key.copy_from_slice(&self.head[len - 4..len]);
            self.unmasked = 0;
        }
        let left = match b1 & 0x7F {
            126 => u64::from(u16::from_be_bytes([self.head[2], self.head[3]])),
            127 => u64::from_be_bytes(self.head[2..10].try_into().expect("8 bytes")),
            n => u64::from(n),
        };
        if opcode >= 8 {
            if opcode > PONG {
                return Err(WsError::Invalid("an unknown control opcode"));
            }
            if !fin || left > MAX_CONTROL as u64 {
                return Err(WsError::Invalid(
                    "a control frame fragmented or over 125 bytes",
                ));
            }
            self.control.clear();
        } else {
            self.begin_data(opcode, left, len as u64)?;
        }
        self.state = State::Payload { left, opcode, fin };
        if left == 0 {
            return self.frame_end(opcode, fin).map(Some);
        }
        Ok(None)
    }

    /// A data frame's header: a message's first frame or the next fragment of one, its length
    /// checked against the limit.
    fn begin_data(&mut self, opcode: u8, left: u64, header: u64) -> Result<(), WsError> {
        match (opcode, self.message) {
            (CONTINUATION, None) => return Err(WsError::Invalid("a continuation of no message")),
            (CONTINUATION, Some(_)) => {}
            (TEXT | BINARY, None) => {
                self.message = Some(opcode);
                self.message_start = self.frame_start;
                self.payload = 0;
                self.framing = 0;
                self.text.clear();
            }
            (TEXT | BINARY, Some(_)) => {
                return Err(WsError::Invalid(
                    "a new message before the last one's final fragment",
                ))
            }
            _ => return Err(WsError::Invalid("an unknown data opcode")),
        }
        self.framing += header;
        let announced = self.payload.saturating_add(left);
        if announced > self.max {
            return Err(WsError::TooLong {
                announced,
                max: self.max,
            });
        }
        Ok(())
    }

    /// Takes payload bytes of the frame in progress.
    fn payload_bytes(
        &mut self,
        left: u64,
        opcode: u8,
        fin: bool,
        rest: &[u8],
    ) -> (usize, Result<Step, WsError>) {
        let take = left.min(rest.len() as u64) as usize;
        let bytes = &rest[..take];
        let kept = if opcode >= 8 {
            Some(&mut self.control)
        } else {
            self.payload += take as u64;
            (self.message == Some(TEXT) || self.server || self.compressed || self.keep)
                .then_some(&mut self.text)
        };
        if let Some(kept) = kept {
            let from = kept.len();
            kept.extend_from_slice(bytes);
            if self.server {
                for (i, b) in kept[from..].iter_mut().enumerate() {
                    *b ^= self.key[(self.unmasked + i) & 3];
                }
                self.unmasked += take;
            }
        }
        let left = left - take as u64;
        self.state = State::Payload { left, opcode, fin };
        if left > 0 {
            return (take, Ok(Step::More));
        }
        (take, self.frame_end(opcode, fin))
    }

    /// The frame in progress has all its payload: the next one's header comes next.
    fn frame_end(&mut self, opcode: u8, fin: bool) -> Result<Step, WsError> {
        self.state = State::Header { have: 0 };
        match opcode {
            PING => return Ok(Step::Ping),
            PONG => return Ok(Step::Pong),
            CLOSE => {
                let code = (self.control.len() >= 2)
                    .then(|| u16::from_be_bytes([self.control[0], self.control[1]]));
                return Ok(Step::Close(code));
            }
            _ => {}
        }
        if !fin {
            return Ok(Step::More);
        }
        let text = self.message.take() == Some(TEXT);
        if text && !self.compressed && std::str::from_utf8(&self.text).is_err() {
            return Err(WsError::InvalidUtf8);
        }
        Ok(Step::Message {
            text,
            payload: self.payload,
            framing: self.framing,
        })
    }
}

impl MessageReader {
    /// The frame header's length given its first `have` bytes: [`header_len`]'s, and the
    /// masking key's 4 bytes for a server's reader once the second byte says it is masked.
    fn header_len(&self, have: usize) -> usize {
        let masked = self.server && have >= 2 && self.head[1] & 0x80 != 0;
        header_len(&self.head, have) + if masked { 4 } else { 0 }
    }
}

/// A frame header's length given its first `have` bytes in `b`: 2 until the second byte is
/// in, then 2, 4 or 10 with the extended length.
fn header_len(b: &[u8], have: usize) -> usize {
    if have < 2 {
        return 2;
    }
    match b[1] & 0x7F {
        126 => 4,
        127 => 10,
        _ => 2,
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
