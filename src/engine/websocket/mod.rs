//! WebSocket messages (RFC 6455) over `ws://` and `wss://` targets, with a frame layer of the
//! project's own ([`frame`]). A connection opens as HTTP/1.1's (TCP, and TLS for `wss://`),
//! then upgrades ([`upgrade`]: the request, the server's `101` checked, stamped as the
//! `ws_upgrade` phase); each request then sends the plan's message as one masked client frame
//! and reads the next data message as its reply (fragments reassembled, a ping answered with a
//! pong, a close frame ending the connection), stamping written, first byte and done as HTTP's
//! exchanges do. Once warm a message allocates nothing: the frame, the read buffer and a text
//! message's bytes (kept for the UTF-8 check) reuse their capacity.

pub mod frame;
pub mod upgrade;

use super::connect::Stream;
use super::{EngineError, WsWire};
use crate::model::{ErrorKind, Timestamps, Traffic};
use crate::util::rng::SplitMix64;
use base64::Engine;
use frame::{MessageReader, Step};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Size of a connection's read buffer (replies are counted through it; the answer to the
/// upgrade must fit in it).
const BUF_BYTES: usize = 16 * 1024;

/// One session's WebSocket connection: the stream, its read buffer (with the bytes read but
/// not yet taken), the outgoing frame, the reader of the server's frames and the masks' source.
pub struct WsConn {
    /// The upgraded connection; `None` before the first connect or after a failure closed it.
    pub stream: Option<Stream>,
    buf: Vec<u8>,
    /// The bytes of `buf` read but not yet taken: `buf[at..end]`.
    at: usize,
    end: usize,
    out: Vec<u8>,
    reader: MessageReader,
    masks: SplitMix64,
    /// Bytes read for the last request (also when it failed).
    pub read: u64,
}

/// A complete reply: a data message; the connection is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply's bytes: its frames' headers and its payload.
    pub bytes_read: u64,
    /// Bytes written for the request's frame.
    pub bytes_written: u64,
    /// The frames' headers (as header bytes) and the payload (as body bytes).
    pub traffic: Traffic,
}

impl Reply {
    /// A message of `framing` header bytes and `payload` bytes, answering a request frame of
    /// `bytes_written`.
    fn of(framing: u64, payload: u64, bytes_written: u64) -> Reply {
        Reply {
            bytes_read: framing + payload,
            bytes_written,
            traffic: Traffic {
                header: framing,
                header_decoded: framing,
                body: payload,
                body_decoded: payload,
            },
        }
    }
}

impl WsConn {
    /// A connection slot, not yet connected, reading messages of at most `max_body_bytes`.
    pub fn new(max_body_bytes: u64) -> Self {
        WsConn {
            stream: None,
            buf: vec![0; BUF_BYTES],
            at: 0,
            end: 0,
            out: Vec::new(),
            reader: MessageReader::new(max_body_bytes),
            masks: SplitMix64(0),
            read: 0,
        }
    }

    /// Opens the connection and upgrades it, stamping connect (and TLS) and `ws_upgraded`.
    pub async fn open(
        &mut self,
        wire: &WsWire,
        max_head: usize,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        self.stream = None;
        let mut stream = wire.connector.connect(stamps).await?;
        let mut random = [0u8; 24];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random).map_err(
            |_| EngineError::new(ErrorKind::Write, "no random bytes for the key".into()),
        )?;
        let key = base64::engine::general_purpose::STANDARD.encode(&random[..16]);
        self.masks = SplitMix64(u64::from_le_bytes(random[16..].try_into().expect("8")));
        let (buf, end) = (&mut self.buf, &mut self.end);
        let head = upgrade::handshake(&mut stream, &wire.head, &key, buf, end, max_head).await?;
        stamps.ws_upgraded = Some(Instant::now());
        self.at = head;
        self.reader.reset();
        self.stream = Some(stream);
        Ok(())
    }

    /// Sends the plan's message (opening and upgrading a connection first if none is open)
    /// and reads the next data message as its reply, stamping written, first byte and done.
    pub async fn exchange(
        &mut self,
        wire: &WsWire,
        max_head: usize,
        stamps: &mut Timestamps,
    ) -> Result<Reply, EngineError> {
        if self.stream.is_none() {
            self.open(wire, max_head, stamps).await?;
        }
        let opcode = [frame::BINARY, frame::TEXT][usize::from(wire.plan.text)];
        let mask = (self.masks.next_u64() as u32).to_le_bytes();
        frame::encode(&mut self.out, opcode, &wire.plan.message, mask);
        let WsConn {
            stream,
            buf,
            at,
            end,
            out,
            reader,
            masks,
            read,
        } = self;
        let stream = stream.as_mut().expect("opened above");
        let write = |e: std::io::Error| EngineError::io(ErrorKind::Write, "write".into(), &e);
        stream.write_all(out).await.map_err(write)?;
        stream.flush().await.map_err(write)?;
        let written = Instant::now();
        stamps.written = Some(written);
        let bytes_written = out.len() as u64;
        *read = 0;
        // Bytes already read (after the upgrade's head, or after the last reply) count as
        // arrived now.
        let mut arrived = written;
        loop {
            if *at == *end {
                let n = stream
                    .read(buf)
                    .await
                    .map_err(|e| EngineError::io(ErrorKind::Read, "read".into(), &e))?;
                if n == 0 {
                    return Err(EngineError::new(
                        ErrorKind::Closed,
                        "connection closed before the reply message was complete".into(),
                    ));
                }
                arrived = Instant::now();
                (*at, *end) = (0, n);
                *read += n as u64;
            }
            let (used, step) = reader.feed(&buf[*at..*end]);
            *at += used;
            let step = step.map_err(|e| EngineError::new(ErrorKind::Protocol, e.to_string()))?;
            if stamps.first_byte.is_none()
                && (reader.in_message() || matches!(step, Step::Message { .. }))
            {
                stamps.first_byte = Some(arrived);
            }
            match step {
                Step::More | Step::Pong => {}
                Step::Ping => {
                    let mask = (masks.next_u64() as u32).to_le_bytes();
                    frame::encode(out, frame::PONG, reader.control(), mask);
                    stream.write_all(out).await.map_err(write)?;
                    stream.flush().await.map_err(write)?;
                }
                Step::Close(code) => return Err(closed(code)),
                Step::Message {
                    payload, framing, ..
                } => {
                    stamps.done = Some(arrived);
                    return Ok(Reply::of(framing, payload, bytes_written));
                }
            }
        }
    }

    /// The bytes a request's frame takes on the wire (for a failed request).
    pub fn frame_len(message: usize) -> u64 {
        let len = match message {
            n if n < 126 => 2,
            n if n <= usize::from(u16::MAX) => 4,
            _ => 10,
        };
        (len + 4 + message) as u64
    }
}

/// The error of a close frame from the server, with its code.
fn closed(code: Option<u16>) -> EngineError {
    let code = code.map_or("no code".to_string(), |c| format!("code {c}"));
    EngineError::new(
        ErrorKind::Closed,
        format!("the server closed the WebSocket ({code}) before the reply message"),
    )
}
