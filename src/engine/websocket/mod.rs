//! WebSocket messages (RFC 6455) over `ws://` and `wss://` targets, with a frame layer of the
//! project's own ([`frame`]). A connection opens as HTTP/1.1's (TCP, and TLS for `wss://`),
//! then upgrades ([`upgrade`]: the request, the server's `101` checked, stamped as the
//! `ws_upgrade` phase), or with `--http2` opens an HTTP/2 stream by an extended CONNECT
//! ([`over_h2`], RFC 8441: the server's SETTINGS and its `200`, stamped as the same phase);
//! each request then sends the plan's message (or the one rendered for it) as one masked
//! client frame and reads the next data message as its reply (fragments reassembled, a ping
//! answered with a pong, a close frame ending the connection), stamping written, first byte
//! and done as HTTP's exchanges do. With `--ws-match FIELD` the reply is the next message whose
//! JSON FIELD holds the value the message sent did ([`field`]); those before it answer nothing
//! and are counted ([`WsConn::extras`]). With `--pipeline N` a connection sends N
//! messages in one write and matches their replies ([`batch`]). Once warm a message allocates
//! nothing: the frames, the read buffer, a kept message's bytes (a text message's, for the
//! UTF-8 check, or any reply's when matched) and the values of the messages in flight reuse
//! their capacity. With `--compressed` the upgrade offers permessage-deflate ([`deflate`]):
//! where agreed, compressed messages are inflated (the `decode` phase) by an inflater reused
//! from message to message.

pub mod batch;
mod channel;
pub mod close;
pub mod deflate;
pub mod field;
pub mod frame;
pub mod over_h2;
pub mod ping;
pub mod push;
mod reply;
pub mod upgrade;

use super::connect::Socket;
use super::events::EventTracker;
use super::extras::{Extras, Tally};
use super::EngineError;
use crate::model::{ErrorKind, Phase, Timestamps, Wire};
use crate::util::rng::SplitMix64;
use base64::Engine;
use batch::InFlight;
use frame::{MessageReader, Step};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(in crate::engine) use channel::WsChannel;
pub use channel::WsWire;
pub use reply::{Placed, Reply};

/// Size of a connection's read buffer (replies are counted through it; the answer to the
/// upgrade must fit in it).
const BUF_BYTES: usize = 16 * 1024;

/// One session's WebSocket connection: the stream, its read buffer (with the bytes read but
/// not yet taken), the outgoing frame, the reader of the server's frames, the masks' source,
/// its pings, and how it ended.
pub struct WsConn {
    /// The upgraded connection; `None` before the first connect or after a failure closed it.
    pub stream: Option<Socket>,
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
    /// The messages in flight, their `--ws-match` values, the replies that matched none
    /// (boxed: made once per connection slot, kept out of every protocol's channel size).
    inflight: Box<InFlight>,
}

impl WsConn {
    /// A connection slot, not yet connected, reading messages of at most `max_body_bytes`,
    /// pinging every `ping` (`--ws-ping`), keeping every reply's bytes when they are matched
    /// (`matched`: `--ws-match`).
    pub fn new(max_body_bytes: u64, ping: Option<Duration>, matched: bool) -> Self {
        let mut reader = MessageReader::new(max_body_bytes);
        reader.keep_all(matched);
        WsConn {
            stream: None,
            buf: vec![0; BUF_BYTES],
            at: 0,
            end: 0,
            out: Vec::new(),
            reader,
            masks: SplitMix64(0),
            read: 0,
            ping: Box::new(ping::Pinger::new(ping)),
            ended: None,
            closing: false,
            deflate: None,
            negotiated: std::cell::Cell::new(None),
            inflater: None,
            max_body_bytes,
            inflight: Box::default(),
        }
    }

    /// What the last request told besides its outcome, into `extras`: how the connection
    /// ended ([`Tally::WsClose`]), whether one upgraded for it agreed permessage-deflate
    /// ([`Tally::WsDeflate`], taken: told once), the replies that matched no message in flight
    /// since the last call ([`Tally::WsUnmatched`], taken), and its pings' round trips.
    pub fn extras<'a>(&'a self, extras: &mut Extras<'a>) {
        if let Some(kind) = self.ended {
            extras.events.push(Tally::WsClose, kind.into());
        }
        if let Some(kind) = self.negotiated.take() {
            extras.events.push(Tally::WsDeflate, kind.into());
        }
        let unmatched = self.inflight.unmatched.replace(0);
        if unmatched > 0 {
            extras.events.push(Tally::WsUnmatched, unmatched);
        }
        let rtts = self.ping.rtts();
        if !rtts.is_empty() {
            extras.values = Some((Phase::WsPing, rtts));
        }
    }

    /// Opens the connection and upgrades it, stamping connect (and TLS) and `ws_upgraded`
    /// (by the clock: the thread is kept awake for them).
    pub async fn open(
        &mut self,
        wire: &WsWire,
        max_head: usize,
        stamps: &mut Timestamps,
    ) -> Result<(), EngineError> {
        let _awake = crate::engine::arrival::awake::Needed::new();
        self.stream = None;
        self.closing = false;
        let mut socket = wire.connector.connect(stamps).await?;
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
                socket = Box::pin(over_h2::open(socket, connect, max_head, stamps)).await?;
                self.end = 0;
                self.deflate = None;
                0
            }
            None => {
                let (buf, end) = (&mut self.buf, &mut self.end);
                let head =
                    upgrade::handshake(&mut socket, &wire.head, &key, buf, end, max_head).await?;
                self.deflate = deflate::agreed_in(&self.buf[..head], wire.deflated.is_some())?;
                head
            }
        };
        self.start_inflater(wire.deflated.is_some());
        stamps.ws_upgraded = Some(Instant::now());
        self.at = head;
        self.reader.reset();
        // The reader's first byte, the first after the upgrade's answer: on the connection,
        // the bytes read less those still buffered past that answer.
        let read = socket.tally().read;
        self.inflight.placed.rx_base = read.saturating_sub((self.end - head) as u64);
        self.ping.connected();
        self.stream = Some(socket);
        Ok(())
    }

    /// Sends `message` (the plan's, or the one rendered for this request; opening and
    /// upgrading a connection first if none is open) and reads its reply, the next data
    /// message (with `--ws-match`, the next that carries its value), stamping written, first
    /// byte and done; a subscription (`--stream messages`) reads the messages pushed after
    /// it, as `tracker`'s events ([`push`]).
    pub async fn exchange(
        &mut self,
        wire: &WsWire,
        message: &[u8],
        max_head: usize,
        stamps: &mut Timestamps,
        tracker: &mut EventTracker,
    ) -> Result<Reply, EngineError> {
        self.ended = None;
        self.ping.begin();
        if self.stream.is_none() {
            self.open(wire, max_head, stamps).await?;
        }
        if self.ping.due(Instant::now()).is_some() {
            self.send_ping().await?;
        }
        self.out.clear();
        self.inflight.clear();
        self.add_frame(wire, message);
        self.write_messages().await?;
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
        let mut arrived = written;
        loop {
            match self.next_step(&mut stamps.first_byte, arrived).await? {
                (
                    Step::Message {
                        text,
                        payload,
                        framing,
                    },
                    at,
                ) => {
                    if self.answered(wire).is_none() {
                        // Not this message's reply: its first byte was not the reply's.
                        stamps.first_byte = None;
                        arrived = at;
                        continue;
                    }
                    stamps.done = Some(at);
                    let mut reply = Reply::of(framing, payload, bytes_written);
                    reply.wire = self.wire_of(bytes_written, self.rx_message_start());
                    reply.traffic.body_decoded = self.decoded(text, payload, stamps)?;
                    return Ok(reply);
                }
                (step, _) => {
                    return Err(self
                        .closed_by_server(step, "before the reply message")
                        .await)
                }
            }
        }
    }

    /// Appends `message`'s frame to `out` (a text or binary frame, as the plan's; compressed
    /// where it may be), and puts the message in flight with its `--ws-match` value.
    fn add_frame(&mut self, wire: &WsWire, message: &[u8]) {
        let opcode = [frame::BINARY, frame::TEXT][usize::from(wire.plan.text)];
        let mask = (self.masks.next_u64() as u32).to_le_bytes();
        // Where permessage-deflate is in effect the plan's message goes as deflated once for
        // the run; a rendered one goes as it is (RFC 7692 lets any message go uncompressed).
        let (payload, rsv1) = match deflate::outgoing(self.deflate, wire) {
            (deflated, true) if message == wire.plan.message.as_slice() => (deflated, true),
            _ => (message, false),
        };
        let start = self.out.len();
        frame::append(&mut self.out, opcode, payload, mask);
        if rsv1 {
            self.out[start] |= frame::RSV1;
        }
        let value = match &wire.plan.match_path {
            Some(path) => field::value_of(message, path),
            None => None,
        };
        let frame = (self.out.len() - start) as u64;
        self.inflight.push(value, frame, self.out.len() as u64);
    }

    /// The message in flight the data message just read answers, taken out of flight: the
    /// first one in flight, or with `--ws-match` the first whose value it carries; `None`
    /// (counted as unmatched) when it answers none.
    fn answered(&mut self, wire: &WsWire) -> Option<usize> {
        let i = match &wire.plan.match_path {
            None => self.inflight.first(),
            Some(path) => match field::value_of(self.reader.message(), path) {
                Some(value) => self.inflight.find(value),
                None => None,
            },
        };
        match i {
            Some(i) => self.inflight.answer(i),
            None => self.inflight.unmatched(),
        }
        i
    }

    /// Writes the messages' frames in `out` whole and flushes them, noting where they lie on
    /// the connection ([`Placed`]).
    async fn write_messages(&mut self) -> Result<(), EngineError> {
        let before = self.stream.as_ref().map(Socket::tally).unwrap_or_default();
        (
            self.inflight.placed.tx_before,
            self.inflight.placed.rx_floor,
        ) = (before.written, before.read);
        self.write_out().await?;
        let after = self.stream.as_ref().map(Socket::tally).unwrap_or_default();
        self.inflight.placed.tx_after = after.written;
        Ok(())
    }

    /// Where a message whose frame ends `frame_end` bytes into the last messages' write, and
    /// whose reply began at `rx_first` and ends with the bytes the reader took, lay on the
    /// connection: exact on plain TCP; under TLS the write's TCP end and, for the reply, what
    /// was read before the write and when the reply was complete. None on HTTP/2's streams.
    fn wire_of(&self, frame_end: u64, rx_first: u64) -> Wire {
        let Some(socket) = &self.stream else {
            return Wire::default();
        };
        let tally = socket.tally();
        if tally.port == 0 {
            return Wire::default();
        }
        let p = &self.inflight.placed;
        let exact = socket.is_plain();
        Wire {
            port: tally.port,
            exact,
            tx_end: if exact {
                p.tx_before + frame_end
            } else {
                p.tx_after
            },
            rx_first,
            rx_end: if exact {
                p.rx_base + self.reader.message_span().1
            } else {
                tally.read
            },
        }
    }

    /// Where the data message the reader is in (or just completed) began on the connection:
    /// under TLS, the lower bound (the TCP bytes read before the messages' write).
    fn rx_message_start(&self) -> u64 {
        match self.stream.as_ref().is_some_and(Socket::is_plain) {
            true => self.inflight.placed.rx_base + self.reader.message_span().0,
            false => self.inflight.placed.rx_floor,
        }
    }

    /// Writes `out` whole and flushes it.
    async fn write_out(&mut self) -> Result<(), EngineError> {
        let write = |e: std::io::Error| EngineError::io(ErrorKind::Write, "write".into(), &e);
        let socket = self.stream.as_mut().expect("an open connection");
        socket.write_all(&self.out).await.map_err(write)?;
        socket.flush().await.map_err(write)
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
    /// Stamps `first_byte` (if not yet) when the first byte of a data message came.
    async fn next_step(
        &mut self,
        first_byte: &mut Option<Instant>,
        mut arrived: Instant,
    ) -> Result<(Step, Instant), EngineError> {
        loop {
            if self.at == self.end {
                let (n, stamp) = self.fill().await?;
                // The kernel's arrival stamp on plain TCP: a thread busy or asleep when the
                // bytes came does not lengthen the wait (engine::arrival). Never before the
                // bytes read earlier, nor before `written` (a thread preempted between its
                // write and the stamp: that time is the write's, as HTTP/1.1's is).
                arrived = stamp.map_or_else(Instant::now, |at| at.max(arrived));
                (self.at, self.end) = (0, n);
                self.read += n as u64;
            }
            let (used, step) = self.reader.feed(&self.buf[self.at..self.end]);
            self.at += used;
            let step = step.map_err(|e| EngineError::new(ErrorKind::Protocol, e.to_string()))?;
            if first_byte.is_none()
                && (self.reader.in_message() || matches!(step, Step::Message { .. }))
            {
                *first_byte = Some(arrived);
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

    /// One read into the buffer (its byte count, never 0, and on plain TCP the kernel's stamp
    /// of when its bytes arrived), sending the pings that fall due while it waits; the end of
    /// the connection (EOF or a reset) is an abnormal closure. A batch's `deadline` passed
    /// while it waits is a timeout error (the read, cancelled, took nothing: the connection
    /// stays whole).
    async fn fill(&mut self) -> Result<(usize, Option<Instant>), EngineError> {
        loop {
            let due = self.ping.due(Instant::now());
            let socket = self.stream.as_mut().expect("an open connection");
            let read = match (due, self.inflight.deadline) {
                (None, None) => Some(read_stamped(socket, &mut self.buf).await),
                (due, deadline) => {
                    let read = read_stamped(socket, &mut self.buf);
                    let now = Instant::now();
                    let ping = self.ping.wait(due.unwrap_or(now));
                    let end = tokio::time::sleep_until(deadline.unwrap_or(now).into());
                    tokio::select! {
                        biased;
                        r = read => Some(r),
                        _ = ping, if due.is_some() => None,
                        _ = end, if deadline.is_some() => return Err(batch::past_deadline()),
                    }
                }
            };
            match read {
                None => self.send_ping().await?,
                Some(Ok((0, _))) => {
                    self.ended = Some(close::ABNORMAL);
                    return Err(EngineError::new(
                        ErrorKind::Closed,
                        "connection closed without a close frame before the reply message was complete"
                            .into(),
                    ));
                }
                Some(Ok(read)) => return Ok(read),
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

/// Reads into `buf`: on plain TCP with the kernel's arrival stamp of the bytes read
/// ([`arrival::read`](crate::engine::arrival::read)), otherwise (TLS, an HTTP/2 stream) with none.
async fn read_stamped(
    socket: &mut Socket,
    buf: &mut [u8],
) -> std::io::Result<(usize, Option<Instant>)> {
    if let Socket::Plain(counted) = socket {
        let read = crate::engine::arrival::read(counted.get_ref(), buf).await;
        if let Ok((n, _)) = &read {
            counted.count_read(*n);
        }
        return read;
    }
    socket.read(buf).await.map(|n| (n, None))
}
