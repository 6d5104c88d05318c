//! WebSocket messages (RFC 6455) over `ws://` and `wss://` targets, with a frame layer of the
//! project's own ([`frame`]). A connection opens as HTTP/1.1's (TCP, and TLS for `wss://`),
//! then upgrades ([`upgrade`]: the request, the server's `101` checked, stamped as the
//! `ws_upgrade` phase), or with `--http2` opens an HTTP/2 stream by an extended CONNECT
//! ([`over_h2`], RFC 8441: the server's SETTINGS and its `200`, stamped as the same phase); each request then sends the plan's message as one masked client frame
//! and reads the next data message as its reply (fragments reassembled, a ping answered with a
//! pong, a close frame ending the connection), stamping written, first byte and done as HTTP's
//! exchanges do. Once warm a message allocates nothing: the frame, the read buffer and a text
//! message's bytes (kept for the UTF-8 check) reuse their capacity. With `--compressed` the
//! upgrade offers permessage-deflate ([`deflate`]): where agreed, compressed messages are
//! inflated (the `decode` phase) by an inflater reused from message to message.

pub mod close;
pub mod deflate;
pub mod frame;
pub mod over_h2;
pub mod ping;
pub mod push;
pub mod upgrade;

use super::connect::Stream;
use super::stream::StreamTracker;
use super::{EngineError, WsWire};
use crate::model::{ErrorKind, Timestamps, Traffic};
use crate::util::rng::SplitMix64;
use base64::Engine;
use frame::{MessageReader, Step};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Size of a connection's read buffer (replies are counted through it; the answer to the
/// upgrade must fit in it).
const BUF_BYTES: usize = 16 * 1024;

/// One session's WebSocket connection: the stream, its read buffer (with the bytes read but
/// not yet taken), the outgoing frame, the reader of the server's frames, the masks' source,
/// its pings, and how it ended.
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
    /// `--ws-ping`: the connection's pings and the round trips of the last request (boxed:
    /// a channel of every protocol is as large as its largest).
    pub ping: Box<ping::Pinger>,
    /// How the connection ended during the last request, a [`close`] kind (`None`: it did
    /// not end, or ended by a timeout or an error of ours).
    pub ended: Option<u32>,
    /// Our close frame went (a subscription's end): the server's is awaited
    /// ([`WsConn::finish_close`]) before the connection is dropped.
    closing: bool,
    /// `--compressed`: what the connection's `101` agreed to (`None`: permessage-deflate not
    /// in effect on it).
    pub deflate: Option<deflate::Agreed>,
    /// `--compressed`: a connection upgraded since the last request was recorded, and whether
    /// it agreed permessage-deflate ([`deflate::AGREED`], [`deflate::NOT_AGREED`]); taken
    /// when counted (`summary.ws_deflate`).
    pub negotiated: std::cell::Cell<Option<u32>>,
    /// Inflates the compressed messages (made at the first connection that agreed).
    inflater: Option<Box<deflate::Inflater>>,
    /// `--max-body`: the inflater's limit on a message's decoded bytes.
    max_body_bytes: u64,
}

/// A complete reply: a data message (or a subscription's messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply's bytes: its frames' headers and its payload.
    pub bytes_read: u64,
    /// Bytes written for the request's frame.
    pub bytes_written: u64,
    /// The frames' headers (as header bytes) and the payload (as body bytes).
    pub traffic: Traffic,
    /// The connection is kept (`false`: the server closed it after the reply).
    pub keep_alive: bool,
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
            keep_alive: true,
        }
    }
}

impl WsConn {
    /// A connection slot, not yet connected, reading messages of at most `max_body_bytes`,
    /// pinging every `ping` (`--ws-ping`).
    pub fn new(max_body_bytes: u64, ping: Option<Duration>) -> Self {
        WsConn {
            stream: None,
            buf: vec![0; BUF_BYTES],
            at: 0,
            end: 0,
            out: Vec::new(),
            reader: MessageReader::new(max_body_bytes),
            masks: SplitMix64(0),
            read: 0,
            ping: Box::new(ping::Pinger::new(ping)),
            ended: None,
            closing: false,
            deflate: None,
            negotiated: std::cell::Cell::new(None),
            inflater: None,
            max_body_bytes,
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
        self.closing = false;
        let mut stream = wire.connector.connect(stamps).await?;
        let mut random = [0u8; 24];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut random).map_err(
            |_| EngineError::new(ErrorKind::Write, "no random bytes for the key".into()),
        )?;
        let key = base64::engine::general_purpose::STANDARD.encode(&random[..16]);
        self.masks = SplitMix64(u64::from_le_bytes(random[16..].try_into().expect("8")));
        let head = match &wire.connect {
            // RFC 8441: the WebSocket's bytes are a stream's DATA, none read past its 200.
            // Boxed: h2's handshake is a large future, and inline it would size every
            // connection's task for it (as the TLS handshake's is boxed). No extension is
            // offered over HTTP/2 (--compressed is refused with --http2).
            Some(connect) => {
                stream = Box::pin(over_h2::open(stream, connect, max_head, stamps)).await?;
                self.end = 0;
                self.deflate = None;
                0
            }
            None => {
                let (buf, end) = (&mut self.buf, &mut self.end);
                let head =
                    upgrade::handshake(&mut stream, &wire.head, &key, buf, end, max_head).await?;
                self.deflate = deflate::agreed_in(&self.buf[..head], wire.deflated.is_some())?;
                head
            }
        };
        self.start_inflater(wire.deflated.is_some());
        stamps.ws_upgraded = Some(Instant::now());
        self.at = head;
        self.reader.reset();
        self.ping.connected();
        self.stream = Some(stream);
        Ok(())
    }

    /// Sends the plan's message (opening and upgrading a connection first if none is open)
    /// and reads its reply, the next data message, stamping written, first byte and done; a
    /// subscription (`--stream messages`) reads the messages pushed after it, as `tracker`'s
    /// events ([`push`]).
    pub async fn exchange(
        &mut self,
        wire: &WsWire,
        max_head: usize,
        stamps: &mut Timestamps,
        tracker: &mut StreamTracker,
    ) -> Result<Reply, EngineError> {
        self.ended = None;
        self.ping.begin();
        if self.stream.is_none() {
            self.open(wire, max_head, stamps).await?;
        }
        if self.ping.due(Instant::now()).is_some() {
            self.send_ping().await?;
        }
        let opcode = [frame::BINARY, frame::TEXT][usize::from(wire.plan.text)];
        let mask = (self.masks.next_u64() as u32).to_le_bytes();
        let (message, rsv1) = deflate::outgoing(self.deflate, wire);
        frame::encode(&mut self.out, opcode, message, mask);
        if rsv1 {
            self.out[0] |= frame::RSV1;
        }
        self.write_out().await?;
        let written = Instant::now();
        stamps.written = Some(written);
        let bytes_written = self.out.len() as u64;
        self.read = 0;
        if wire.plan.subscribe {
            return self
                .subscribe(wire, stamps, tracker, written, bytes_written)
                .await;
        }
        // Bytes already read (after the upgrade's head, or after the last reply) count as
        // arrived now.
        match self.next_step(stamps, written).await? {
            (
                Step::Message {
                    text,
                    payload,
                    framing,
                },
                arrived,
            ) => {
                stamps.done = Some(arrived);
                let mut reply = Reply::of(framing, payload, bytes_written);
                reply.traffic.body_decoded = self.decoded(text, payload, stamps)?;
                Ok(reply)
            }
            (step, _) => Err(self
                .closed_by_server(step, "before the reply message")
                .await),
        }
    }

    /// Writes `out` whole and flushes it.
    async fn write_out(&mut self) -> Result<(), EngineError> {
        let write = |e: std::io::Error| EngineError::io(ErrorKind::Write, "write".into(), &e);
        let stream = self.stream.as_mut().expect("an open connection");
        stream.write_all(&self.out).await.map_err(write)?;
        stream.flush().await.map_err(write)
    }

    /// Sends a control frame of `opcode` with `payload` (at most 125 bytes).
    async fn send_control(&mut self, opcode: u8, payload: &[u8]) -> Result<(), EngineError> {
        let mask = (self.masks.next_u64() as u32).to_le_bytes();
        frame::encode(&mut self.out, opcode, payload, mask);
        self.write_out().await
    }

    /// Sends the next ping and notes when it went.
    async fn send_ping(&mut self) -> Result<(), EngineError> {
        self.send_control(frame::PING, &self.ping.payload()).await?;
        self.ping.sent(Instant::now());
        Ok(())
    }

    /// Reads until the server's bytes complete a data message or a close frame, answering
    /// pings, timing pongs and sending this connection's pings when due: the step, and when
    /// the bytes that completed it arrived (`arrived`: when the bytes already read did).
    /// Stamps `first_byte` when the first byte of a data message came.
    async fn next_step(
        &mut self,
        stamps: &mut Timestamps,
        mut arrived: Instant,
    ) -> Result<(Step, Instant), EngineError> {
        loop {
            if self.at == self.end {
                let n = self.fill().await?;
                arrived = Instant::now();
                (self.at, self.end) = (0, n);
                self.read += n as u64;
            }
            let (used, step) = self.reader.feed(&self.buf[self.at..self.end]);
            self.at += used;
            let step = step.map_err(|e| EngineError::new(ErrorKind::Protocol, e.to_string()))?;
            if stamps.first_byte.is_none()
                && (self.reader.in_message() || matches!(step, Step::Message { .. }))
            {
                stamps.first_byte = Some(arrived);
            }
            match step {
                Step::More => {}
                Step::Pong => self.ping.pong(self.reader.control(), arrived),
                Step::Ping => {
                    // A control frame's payload is at most 125 bytes: copied, not allocated.
                    let mut payload = [0u8; 125];
                    let control = self.reader.control();
                    payload[..control.len()].copy_from_slice(control);
                    let len = control.len();
                    self.send_control(frame::PONG, &payload[..len]).await?;
                }
                Step::Message { .. } | Step::Close(_) => return Ok((step, arrived)),
            }
        }
    }

    /// One read into the buffer (its byte count, never 0), sending the pings that fall due
    /// while it waits; the end of the connection (EOF or a reset) is an abnormal closure.
    async fn fill(&mut self) -> Result<usize, EngineError> {
        loop {
            let due = self.ping.due(Instant::now());
            let stream = self.stream.as_mut().expect("an open connection");
            let read = match due {
                None => Some(stream.read(&mut self.buf).await),
                Some(due) => {
                    let read = stream.read(&mut self.buf);
                    tokio::select! {
                        biased;
                        r = read => Some(r),
                        _ = self.ping.wait(due) => None,
                    }
                }
            };
            match read {
                None => self.send_ping().await?,
                Some(Ok(0)) => {
                    self.ended = Some(close::ABNORMAL);
                    return Err(EngineError::new(
                        ErrorKind::Closed,
                        "connection closed without a close frame before the reply message was complete"
                            .into(),
                    ));
                }
                Some(Ok(n)) => return Ok(n),
                Some(Err(e)) => {
                    self.ended = Some(close::ABNORMAL);
                    return Err(EngineError::io(ErrorKind::Read, "read".into(), &e));
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
