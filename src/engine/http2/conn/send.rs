//! A stream's request queued on its connection: the stream opened (or the caller told to
//! wait for the server's limit), its header block encoded (or replayed) into HEADERS and
//! CONTINUATION frames, its body sent in DATA frames as the windows allow.

use super::{Core, Failure, Slot, Start, LAST_STREAM_ID};
use crate::engine::http2::frame;
use crate::engine::http2::hpack::Encoder;
use crate::engine::request::Request;
use crate::model::trace::TraceHeaders;
use bytes::Bytes;
use std::task::Waker;
use std::time::Instant;

impl Core {
    /// Opens a stream for `request` (`key`: the run's fixed request, whose header block is
    /// replayed; `None` for a request rendered for this send), dispatched at `since`. `turn`
    /// is the caller's place among the streams waiting for the server's limit (`None` until
    /// it has waited; given back with [`Core::leave`] if the caller gives up).
    pub(in crate::engine::http2) fn start(
        &mut self,
        request: &Request,
        trace: Option<&TraceHeaders<'_>>,
        key: Option<usize>,
        since: Instant,
        waker: &Waker,
        turn: &mut Option<u64>,
    ) -> Start {
        if let Some(f) = &self.failure {
            return Start::Gone(Failure::Connection(f.clone()));
        }
        if self.going_away || self.next_id > LAST_STREAM_ID {
            return Start::Gone(match self.goaway_code {
                Some(_) => Failure::Refused { by_reset: false },
                None => Failure::Retired,
            });
        }
        let full = self
            .max_streams
            .is_some_and(|max| self.open.len() >= max as usize);
        let first = self.turns.front().copied() == *turn;
        if full || !first {
            if turn.is_none() {
                *turn = Some(self.next_turn);
                self.turns.push_back(self.next_turn);
                self.next_turn += 1;
            }
            self.waiting.push(waker.clone());
            return Start::Wait;
        }
        if turn.take().is_some() {
            self.turns.pop_front();
            // The next in line may fit too.
            if !self.turns.is_empty() {
                self.wake_all_waiting();
            }
        }
        // A hold the driver knows of (it was woken when it began) and that goes on.
        let held = self.held();
        let id = self.next_id;
        self.next_id += 2;
        let i = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot::default());
            self.slots.len() - 1
        });
        let s = &mut self.slots[i];
        s.id = id;
        s.waker = Some(waker.clone());
        s.status = 0;
        s.written = None;
        s.first_byte = None;
        s.head.clear();
        s.trailers.clear();
        s.has_trailers = false;
        s.data.clear();
        s.frame_ends.clear();
        s.ended = false;
        s.failure = None;
        s.send_window = self.peer_window;
        s.unacked = 0;
        self.open.push((id, i));
        let end_stream = request.body.is_empty();
        self.put_headers(id, request, trace, key, end_stream);
        self.place_start(i, end_stream);
        self.queued.push(i);
        self.held_since = Some(self.held_since.map_or(since, |h| h.min(since)));
        if !end_stream {
            let s = &mut self.slots[i];
            s.body = request.body.clone();
            s.body_sent = 0;
            self.send_body(i);
        }
        if !(held && self.held()) {
            self.wake_driver();
        }
        Start::Open(i)
    }

    /// Queues the HEADERS (and CONTINUATION) frames of `request` on stream `id`, its trace
    /// headers last (literals never indexed: they change per request).
    fn put_headers(
        &mut self,
        id: u32,
        request: &Request,
        trace: Option<&TraceHeaders<'_>>,
        key: Option<usize>,
        end_stream: bool,
    ) {
        let start = self.out.len();
        self.out.extend_from_slice(&[0; 9]);
        let inserted = self.encoder.inserted();
        match &self.replay {
            Some((k, n, block)) if Some(*k) == key && *n == inserted => {
                self.out.extend_from_slice(block);
            }
            _ => {
                let at = self.out.len();
                encode(&mut self.encoder, request, &mut self.out);
                // A block that inserted nothing is the same bytes next time.
                if let (Some(k), true) = (key, self.encoder.inserted() == inserted) {
                    let mut block = match self.replay.take() {
                        Some((_, _, mut b)) => {
                            b.clear();
                            b
                        }
                        None => Vec::new(),
                    };
                    block.extend_from_slice(&self.out[at..]);
                    self.replay = Some((k, inserted, block));
                }
            }
        }
        for (name, value) in trace.iter().flat_map(|t| t.fields()) {
            self.encoder.literal(name.as_bytes(), value, &mut self.out);
        }
        let flags = if end_stream { frame::END_STREAM } else { 0 };
        let len = self.out.len() - start - 9;
        if len <= self.max_frame {
            let head = frame::head(len, frame::HEADERS, flags | frame::END_HEADERS, id);
            self.out[start..start + 9].copy_from_slice(&head);
            return;
        }
        // A block larger than a frame: HEADERS, then CONTINUATION frames.
        let block = self.out.split_off(start + 9);
        self.out.truncate(start);
        let mut pieces = block.chunks(self.max_frame).peekable();
        let mut kind = frame::HEADERS;
        let mut first_flags = flags;
        while let Some(piece) = pieces.next() {
            let end = if pieces.peek().is_none() {
                frame::END_HEADERS
            } else {
                0
            };
            frame::put_head(&mut self.out, piece.len(), kind, first_flags | end, id);
            self.out.extend_from_slice(piece);
            kind = frame::CONTINUATION;
            first_flags = 0;
        }
    }

    /// Queues as much of slot `i`'s request body as the windows allow.
    fn send_body(&mut self, i: usize) {
        if !self.settings_applied {
            return;
        }
        let s = &mut self.slots[i];
        while s.body_sent < s.body.len() {
            let room = s
                .send_window
                .min(self.send_window)
                .min(self.max_frame as i64);
            if room <= 0 {
                return;
            }
            let n = (s.body.len() - s.body_sent).min(room as usize);
            let last = s.body_sent + n == s.body.len();
            let flags = if last { frame::END_STREAM } else { 0 };
            frame::put_head(&mut self.out, n, frame::DATA, flags, s.id);
            self.out
                .extend_from_slice(&s.body[s.body_sent..s.body_sent + n]);
            s.body_sent += n;
            s.send_window -= n as i64;
            self.send_window -= n as i64;
        }
        s.body = Bytes::new();
        self.place_request_end(i);
    }

    /// Queues what the open streams' bodies still have to send, as the windows now allow.
    pub(super) fn send_bodies(&mut self) {
        for k in 0..self.open.len() {
            let i = self.open[k].1;
            if !self.slots[i].body.is_empty() {
                self.send_body(i);
            }
        }
    }
}

/// The header block of `request`: pseudo-fields, then its headers.
fn encode(encoder: &mut Encoder, request: &Request, out: &mut Vec<u8>) {
    let uri = &request.uri;
    let pseudo = [
        (&b":method"[..], request.method.as_str().as_bytes()),
        (b":scheme", uri.scheme_str().unwrap_or("http").as_bytes()),
        (
            b":authority",
            uri.authority().map_or("", |a| a.as_str()).as_bytes(),
        ),
        (
            b":path",
            uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes(),
        ),
    ];
    let headers = request
        .headers
        .iter()
        .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()));
    encoder.encode(pseudo.into_iter().chain(headers), out);
}
