//! One HTTP/2 client connection built for load: the protocol's state without I/O ([`Core`]:
//! frames in, frames out, the streams' slots), and the task that moves its bytes ([`drive`]).
//!
//! The streams of a connection slot share one [`Conn`] on one thread. A stream opens with its
//! request's header block, encoded once per request shape and replayed afterwards (HPACK
//! indexed fields); its HEADERS and DATA go into the connection's output, which the driver
//! writes in one call for every stream that queued something since its last write. The driver
//! reads frames, decodes the responses' header blocks into the streams' slots (buffers kept
//! and reused: no allocation per stream once the slots exist) and wakes the streams. Windows
//! open in large steps: the client announces large windows and tops them up when half is used.

mod drive;
mod failure;
mod place;
mod receive;
mod send;
#[cfg(test)]
mod tests;

use super::frame;
use super::hpack::{Decoder, Encoder};
use super::link_bytes::LinkBytes;
use bytes::Bytes;
pub(super) use drive::{drive, Conn};
pub(super) use failure::{ConnFailure, Failure};
pub use receive::receive_any;
use std::cell::Cell;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// What the client's HPACK decoder may keep (SETTINGS_HEADER_TABLE_SIZE, left at its default).
const TABLE_SIZE: usize = 4096;
/// The read buffer: the largest frame the client accepts (it announces no larger
/// SETTINGS_MAX_FRAME_SIZE than the default), its header, and room for the next frames.
const READ_BUFFER: usize = 2 * frame::DEFAULT_MAX_FRAME + 2 * 9;
/// Stream and connection windows when the run gives no `--h2-window`.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;
/// The largest stream identifier; past it a connection takes no new stream.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;

/// The header fields of a response (or of its trailers) as decoded, pseudo-fields aside: their
/// names and values in one buffer, kept from one response to the next.
#[derive(Default)]
pub(super) struct Fields {
    bytes: Vec<u8>,
    /// Each field's name start, name end (its value's start) and value end in `bytes`.
    spans: Vec<(u32, u32, u32)>,
}

impl Fields {
    fn clear(&mut self) {
        self.bytes.clear();
        self.spans.clear();
    }

    fn push(&mut self, name: &[u8], value: &[u8]) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name);
        let mid = self.bytes.len() as u32;
        self.bytes.extend_from_slice(value);
        self.spans.push((start, mid, self.bytes.len() as u32));
    }

    /// The fields in order, as (name, value).
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.spans.iter().map(|&(a, b, c)| {
            (
                &self.bytes[a as usize..b as usize],
                &self.bytes[b as usize..c as usize],
            )
        })
    }
}

/// A stream's place in the connection: what arrived for it, until its task takes it.
#[derive(Default)]
struct Slot {
    /// The stream's identifier (0: a free slot).
    id: u32,
    waker: Option<Waker>,
    /// The response's status, once its head arrived (0 before).
    status: u16,
    written: Option<Instant>,
    first_byte: Option<Instant>,
    head: Fields,
    trailers: Fields,
    has_trailers: bool,
    /// DATA payloads not yet taken, and where each frame's ends.
    data: Vec<u8>,
    frame_ends: Vec<usize>,
    /// The server ended the stream (END_STREAM).
    ended: bool,
    failure: Option<Failure>,
    /// The request body not yet sent (flow control), and the stream's send window.
    body: Bytes,
    body_sent: usize,
    send_window: i64,
    /// DATA bytes received since the stream's window was last topped up.
    unacked: u32,
    /// Where its request and response lie on the connection.
    place: place::StreamPlace,
}

impl Slot {
    fn wake(&mut self) {
        if let Some(w) = &self.waker {
            w.wake_by_ref();
        }
    }
}

/// A response's head as a stream learns it: its status, when the driver wrote the request,
/// and when the head arrived.
pub(super) struct Head {
    pub(super) status: u16,
    pub(super) written: Option<Instant>,
    pub(super) first_byte: Option<Instant>,
}

/// What [`Core::start`] did with a new stream.
pub(super) enum Start {
    /// Opened in this slot.
    Open(usize),
    /// The server's stream limit is reached: the caller is woken when a stream closes.
    Wait,
    /// This connection takes no new stream.
    Gone(Failure),
}

/// The protocol state of one connection, without I/O.
pub(super) struct Core {
    /// Bytes to write, and how much of them is written.
    out: Vec<u8>,
    out_done: usize,
    /// Slots whose HEADERS are in `out`: stamped `written` when `out` is.
    queued: Vec<usize>,
    /// How long new streams' frames may wait for the streams in flight ([`Core::hold`]).
    coalesce: Option<std::time::Duration>,
    /// New streams' frames may wait one turn for others ([`Core::gathers`]; `--h2-writes`).
    gather: bool,
    /// `out` holds frames that must not wait: the preface, acknowledgements, window updates,
    /// resets, a body the server's window let go (anything but new streams' frames).
    urgent: bool,
    /// The earliest dispatch among the streams queued in `out`: the hold's start.
    held_since: Option<Instant>,
    encoder: Encoder,
    decoder: Decoder,
    /// The fixed request's header block as last encoded without inserting into the table:
    /// (request key, the encoder's insertion count then, the block).
    replay: Option<(usize, u64, Vec<u8>)>,
    slots: Vec<Slot>,
    free: Vec<usize>,
    /// The open streams: identifier and slot.
    open: Vec<(u32, usize)>,
    next_id: u32,
    /// The server's settings: stream limit, initial window of new streams, largest frame.
    max_streams: Option<u32>,
    peer_window: i64,
    max_frame: usize,
    /// The connection's send window.
    send_window: i64,
    /// The server's first SETTINGS were applied: bodies wait for them, since the stream
    /// window they give may be smaller than the default (even 0).
    settings_applied: bool,
    /// The client's windows, and the DATA bytes received on the connection since its last top-up.
    stream_window: u32,
    connection_window: u32,
    unacked: u32,
    /// A GOAWAY arrived (its code), or the link let the connection go: no new stream.
    going_away: bool,
    goaway_code: Option<u32>,
    failure: Option<ConnFailure>,
    /// When the server's first bytes (its SETTINGS) arrived.
    pub(super) settings_at: Option<Instant>,
    /// The read buffer and how much of it holds bytes not yet taken as frames.
    buffer: Box<[u8]>,
    filled: usize,
    /// A header block spread over CONTINUATION frames: its stream, END_STREAM, bytes so far.
    block: Option<(u32, bool)>,
    block_bytes: Vec<u8>,
    /// `--max-header-list`: the largest header block taken, as received and as decoded.
    max_header_list: usize,
    /// Bytes read, header-block bytes among them (HEADERS and CONTINUATION payloads), bytes
    /// written: added to the link's counts, over all its connections.
    bytes: Rc<LinkBytes>,
    /// Where the connection's bytes lie on it, for each stream's [`crate::model::Wire`].
    place: place::Place,
    /// Streams waiting for the stream limit, and the driver.
    waiting: Vec<Waker>,
    /// The turns of the streams waiting for the stream limit, first come first served: a
    /// stream that has just ended does not open its next one ahead of those already waiting
    /// (under a limit of one, the others would wait for the whole run). `next_turn` numbers
    /// them.
    turns: std::collections::VecDeque<u64>,
    next_turn: u64,
    driver: Option<Waker>,
}

impl Core {
    /// A new connection's state, its preface and SETTINGS (and its window top-up) queued:
    /// `window` is `--h2-window`, for streams and (at least 65,535) the connection; `bytes` the
    /// link's counts.
    pub(super) fn new(tuning: super::Tuning, bytes: Rc<LinkBytes>) -> Core {
        let (stream_window, connection_window) = match tuning.window {
            // A stream's window may be as small as the user likes; the connection's starts at
            // 65,535 and SETTINGS cannot shrink it (RFC 9113, 6.9.2): it is only topped up.
            Some(w) => (w, w.max(frame::DEFAULT_WINDOW as u32)),
            None => (STREAM_WINDOW, CONNECTION_WINDOW),
        };
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(frame::PREFACE);
        frame::put_settings(
            &mut out,
            &[
                (frame::SETTINGS_ENABLE_PUSH, 0),
                (frame::SETTINGS_INITIAL_WINDOW_SIZE, stream_window),
                (frame::SETTINGS_MAX_HEADER_LIST_SIZE, tuning.max_header_list),
            ],
        );
        let top_up = connection_window as i64 - frame::DEFAULT_WINDOW;
        if top_up > 0 {
            frame::put_window_update(&mut out, 0, top_up as u32);
        }
        Core {
            out,
            out_done: 0,
            queued: Vec::new(),
            coalesce: tuning.coalesce,
            gather: tuning.gather,
            urgent: true,
            held_since: None,
            encoder: Encoder::new(),
            decoder: Decoder::new(TABLE_SIZE),
            replay: None,
            slots: Vec::new(),
            free: Vec::new(),
            open: Vec::new(),
            next_id: 1,
            max_streams: None,
            peer_window: frame::DEFAULT_WINDOW,
            max_frame: frame::DEFAULT_MAX_FRAME,
            send_window: frame::DEFAULT_WINDOW,
            settings_applied: false,
            stream_window,
            connection_window,
            unacked: 0,
            going_away: false,
            goaway_code: None,
            failure: None,
            settings_at: None,
            buffer: vec![0; READ_BUFFER].into_boxed_slice(),
            filled: 0,
            block: None,
            block_bytes: Vec::new(),
            max_header_list: tuning.max_header_list as usize,
            bytes,
            place: place::Place::default(),
            waiting: Vec::new(),
            turns: std::collections::VecDeque::new(),
            next_turn: 0,
            driver: None,
        }
    }

    /// Whether a new stream may use this connection.
    pub(super) fn usable(&self) -> bool {
        !self.going_away && self.failure.is_none()
    }

    /// Whether the server ended this connection: its GOAWAY, or its close.
    pub(super) fn ended_by_server(&self) -> bool {
        self.goaway_code.is_some() || matches!(self.failure, Some(ConnFailure::Closed(..)))
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS, once its SETTINGS said.
    pub(super) fn max_streams(&self) -> Option<u32> {
        self.max_streams
    }

    /// Slot `i`'s response head, once it arrived.
    pub(super) fn poll_head(
        &mut self,
        i: usize,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Head, Failure>> {
        let s = &mut self.slots[i];
        if s.status != 0 {
            return Poll::Ready(Ok(Head {
                status: s.status,
                written: s.written,
                first_byte: s.first_byte,
            }));
        }
        if let Some(f) = s.failure.take() {
            return Poll::Ready(Err(f));
        }
        register(&mut s.waker, cx);
        Poll::Pending
    }

    /// Slot `i`'s response head fields.
    pub(super) fn head(&self, i: usize) -> &Fields {
        &self.slots[i].head
    }

    /// Gives slot `i`'s DATA frames that arrived to `each`, one call per frame; `Ready(Ok(()))`
    /// once the stream ended.
    pub(super) fn poll_body<E>(
        &mut self,
        i: usize,
        cx: &mut Context<'_>,
        mut each: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Poll<Result<(), BodyError<E>>> {
        let s = &mut self.slots[i];
        let mut from = 0;
        let mut result = Ok(());
        for &end in &s.frame_ends {
            if result.is_ok() {
                result = each(&s.data[from..end]);
            }
            from = end;
        }
        s.data.clear();
        s.frame_ends.clear();
        if let Err(e) = result {
            return Poll::Ready(Err(BodyError::Sink(e)));
        }
        if s.ended {
            return Poll::Ready(Ok(()));
        }
        if let Some(f) = s.failure.take() {
            return Poll::Ready(Err(BodyError::Stream(f)));
        }
        register(&mut s.waker, cx);
        Poll::Pending
    }

    /// A stream that waited for its turn gives up (a timeout, or its connection gone): the
    /// ones behind it move up.
    pub(super) fn leave(&mut self, turn: u64) {
        if let Some(k) = self.turns.iter().position(|&t| t == turn) {
            self.turns.remove(k);
            if k == 0 {
                self.wake_all_waiting();
            }
        }
    }

    /// Slot `i`'s trailers, if the response had them.
    pub(super) fn trailers(&self, i: usize) -> Option<&Fields> {
        let s = &self.slots[i];
        s.has_trailers.then_some(&s.trailers)
    }

    /// The stream of slot `i` is done with: reset (CANCEL) if it is still open, and its slot
    /// freed.
    pub(super) fn finish(&mut self, i: usize) {
        if let Some(k) = self.open.iter().position(|&(_, s)| s == i) {
            frame::put_rst(&mut self.out, self.open[k].0, frame::CANCEL);
            self.urgent = true;
            self.close(k);
        }
        let s = &mut self.slots[i];
        s.id = 0;
        s.waker = None;
        s.body = Bytes::new();
        self.free.push(i);
        self.queued.retain(|&q| q != i);
        self.place_free(i);
        if self.going_away || (!self.out.is_empty() && !self.held()) {
            self.wake_driver();
        }
    }

    /// Whether the new streams' frames in `out` wait (`now`: the clock, read only if it may):
    /// with `--h2-coalesce` (closed loops), while other streams of the connection are in
    /// flight or answered but not yet done with (their tasks' next requests join the same
    /// write), for at most that long from the earliest dispatch among the waiting ones. Each
    /// write is a TCP segment that the kernel sends, and on loopback also receives, on this
    /// thread's time: one write for a connection's streams instead of one for every few is
    /// most of HTTP/2's cost (h2load's loop batches the same way by being slower). The wait is
    /// the requests' `write` phase. Nothing else waits: the preface, acknowledgements, window
    /// updates, resets and bodies the server's window let go go out at once.
    pub(super) fn hold(&self, now: impl FnOnce() -> Instant) -> bool {
        self.held()
            && self
                .coalesce
                .zip(self.held_since)
                .is_some_and(|(max, since)| now().saturating_duration_since(since) < max)
    }

    /// [`Core::hold`] but for its time: the driver need not be woken for a stream queued or
    /// done with while this holds (an answer or its timer wakes it).
    fn held(&self) -> bool {
        self.coalesce.is_some()
            && !self.urgent
            && self.out_done == 0
            && !self.out.is_empty()
            && self.usable()
            && self.slots.len().saturating_sub(self.free.len()) > self.queued.len()
    }

    /// Whether the frames in `out` are new requests that may gather others before their write
    /// (the driver's `Step::Gather`): not while something must go at once (acknowledgements,
    /// resets, window updates: `urgent`), nor with `--h2-coalesce`, whose hold gathers them,
    /// nor with `--h2-writes at-once` (the benchmarks' before figure).
    pub(super) fn gathers(&self) -> bool {
        self.gather
            && !self.urgent
            && self.coalesce.is_none()
            && !self.queued.is_empty()
            && self.usable()
    }

    /// `out` was written whole.
    pub(super) fn written_out(&mut self, now: Instant) {
        self.place_out_written();
        self.out.clear();
        self.out_done = 0;
        self.urgent = false;
        self.held_since = None;
        for i in self.queued.drain(..) {
            self.slots[i].written = Some(now);
        }
    }

    /// Takes no new stream: the driver ends the connection once its streams are done.
    pub(super) fn retire(&mut self) {
        self.going_away = true;
        self.wake_all_waiting();
        self.wake_driver();
    }

    /// The stream at `k` in `open` is closed: it no longer counts toward the server's limit.
    fn close(&mut self, k: usize) {
        self.open.swap_remove(k);
        self.wake_all_waiting();
    }

    fn wake_all_waiting(&mut self) {
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    /// The slot of the open stream `id`.
    fn open_slot(&self, id: u32) -> Option<(usize, usize)> {
        self.open
            .iter()
            .position(|&(s, _)| s == id)
            .map(|k| (k, self.open[k].1))
    }

    /// Ends every open stream with `failure` (the connection ended).
    fn fail_all(&mut self, failure: ConnFailure) {
        let failure = match (failure, self.goaway_code) {
            (ConnFailure::Closed(m, None), Some(code)) => ConnFailure::Closed(m, Some(code)),
            (f, _) => f,
        };
        for &(_, i) in &self.open {
            let s = &mut self.slots[i];
            s.failure = Some(Failure::Connection(failure.clone()));
            s.wake();
        }
        self.open.clear();
        self.failure = Some(failure);
        self.wake_all_waiting();
    }

    /// Whether the driver has nothing left to do: the connection failed, or it is going
    /// away with no open stream, and its output is written.
    fn done(&self) -> bool {
        self.out.is_empty() && (self.failure.is_some() || (self.going_away && self.open.is_empty()))
    }
}

/// A stream's result as [`Core::poll_body`] gives it: the stream failed, or the sink did.
pub(super) enum BodyError<E> {
    Stream(Failure),
    Sink(E),
}

fn add(count: &Cell<u64>, n: usize) {
    count.set(count.get() + n as u64);
}

fn register(slot: &mut Option<Waker>, cx: &Context<'_>) {
    match slot {
        Some(w) if w.will_wake(cx.waker()) => {}
        _ => *slot = Some(cx.waker().clone()),
    }
}
