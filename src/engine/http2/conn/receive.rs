//! A connection's frames as they arrive: each applied to the connection's state and its
//! streams' slots (RFC 9113, section 6), a violation answered with GOAWAY.

use super::{add, ConnFailure, Core, Failure, LAST_STREAM_ID};
use crate::engine::http2::frame::{self, Head};
use bytes::Bytes;
use std::time::Instant;

impl Core {
    /// Takes the whole frames at the start of the read buffer (`now`: when they arrived).
    pub(super) fn receive(&mut self, now: Instant) -> Result<(), ConnFailure> {
        let queued = self.out.len();
        let result = self.take_frames(now);
        // What the server's frames made the client queue (acknowledgements, window updates,
        // resets, bodies let go) goes out at once.
        self.urgent |= self.out.len() > queued;
        result
    }

    fn take_frames(&mut self, now: Instant) -> Result<(), ConnFailure> {
        let buffer = std::mem::take(&mut self.buffer);
        let mut at = 0;
        let result = loop {
            let rest = &buffer[at..self.filled];
            if self.settings_at.is_none() && rest.len() >= 4 {
                // A server's preface is a SETTINGS frame; `HTTP/1.1 400`'s fourth byte is 'P'.
                if rest[3] != frame::SETTINGS {
                    break Err(ConnFailure::NotH2);
                }
                self.settings_at = Some(now);
            }
            if rest.len() < 9 {
                break Ok(());
            }
            let head = Head::parse(rest);
            if head.len > frame::DEFAULT_MAX_FRAME {
                break Err(self.broken(frame::FRAME_SIZE_ERROR, "a frame larger than allowed"));
            }
            if rest.len() < 9 + head.len {
                break Ok(());
            }
            at += 9 + head.len;
            self.place_frame(at, 9 + head.len);
            if let Err(f) = self.frame(head, &rest[9..9 + head.len], now) {
                break Err(f);
            }
        };
        let mut buffer = buffer;
        buffer.copy_within(at..self.filled, 0);
        self.filled -= at;
        self.place_taken(at);
        self.buffer = buffer;
        result
    }

    /// The server broke the protocol: a GOAWAY with `code` is queued, and the failure made.
    fn broken(&mut self, code: u32, what: &str) -> ConnFailure {
        frame::put_goaway(&mut self.out, 0, code);
        ConnFailure::Protocol(format!("HTTP/2: {what} ({})", frame::code_text(code)))
    }

    fn frame(&mut self, h: Head, payload: &[u8], now: Instant) -> Result<(), ConnFailure> {
        if self.block.is_some() && h.kind != frame::CONTINUATION {
            return Err(self.broken(frame::PROTOCOL_ERROR, "a header block was interrupted"));
        }
        match h.kind {
            frame::DATA => self.data(h, payload),
            frame::HEADERS => self.headers(h, payload, now),
            frame::CONTINUATION => self.continuation(h, payload, now),
            frame::RST_STREAM => {
                if h.len != 4 || h.stream == 0 {
                    return Err(self.broken(frame::FRAME_SIZE_ERROR, "a bad RST_STREAM"));
                }
                let code = u32::from_be_bytes(payload[..4].try_into().expect("4 bytes"));
                if let Some((k, i)) = self.open_slot(h.stream) {
                    let s = &mut self.slots[i];
                    s.failure = Some(match code {
                        frame::REFUSED_STREAM => Failure::Refused { by_reset: true },
                        code => Failure::Reset(code),
                    });
                    s.wake();
                    self.close(k);
                }
                Ok(())
            }
            frame::SETTINGS => self.settings(h, payload),
            frame::PING => {
                if h.len != 8 || h.stream != 0 {
                    return Err(self.broken(frame::FRAME_SIZE_ERROR, "a bad PING"));
                }
                if h.flags & frame::ACK == 0 {
                    frame::put_head(&mut self.out, 8, frame::PING, frame::ACK, 0);
                    self.out.extend_from_slice(payload);
                }
                Ok(())
            }
            frame::GOAWAY => {
                if h.len < 8 || h.stream != 0 {
                    return Err(self.broken(frame::FRAME_SIZE_ERROR, "a bad GOAWAY"));
                }
                let last =
                    u32::from_be_bytes(payload[..4].try_into().expect("4 bytes")) & LAST_STREAM_ID;
                let code = u32::from_be_bytes(payload[4..8].try_into().expect("4 bytes"));
                self.goaway(last, code);
                Ok(())
            }
            frame::WINDOW_UPDATE => {
                if h.len != 4 {
                    return Err(self.broken(frame::FRAME_SIZE_ERROR, "a bad WINDOW_UPDATE"));
                }
                let step = (u32::from_be_bytes(payload[..4].try_into().expect("4 bytes"))
                    & LAST_STREAM_ID) as i64;
                if step == 0 {
                    return Err(self.broken(frame::PROTOCOL_ERROR, "a WINDOW_UPDATE of 0"));
                }
                if h.stream == 0 {
                    self.send_window += step;
                    if self.send_window > frame::MAX_WINDOW {
                        return Err(self.broken(frame::FLOW_CONTROL_ERROR, "a window past 2^31-1"));
                    }
                } else if let Some((_, i)) = self.open_slot(h.stream) {
                    self.slots[i].send_window += step;
                }
                self.send_bodies();
                Ok(())
            }
            frame::PUSH_PROMISE => Err(self.broken(
                frame::PROTOCOL_ERROR,
                "PUSH_PROMISE, though the client disabled push",
            )),
            // PRIORITY, and kinds this client does not know: ignored (RFC 9113, section 5.5).
            _ => Ok(()),
        }
    }

    fn data(&mut self, h: Head, payload: &[u8]) -> Result<(), ConnFailure> {
        if h.stream == 0 {
            return Err(self.broken(frame::PROTOCOL_ERROR, "DATA on stream 0"));
        }
        // Flow control counts the whole payload, padding included.
        self.unacked += h.len as u32;
        if self.unacked >= self.connection_window / 2 {
            frame::put_window_update(&mut self.out, 0, self.unacked);
            self.unacked = 0;
        }
        let Some(body) = frame::unpadded(h.flags, payload) else {
            return Err(self.broken(frame::PROTOCOL_ERROR, "a pad longer than its frame"));
        };
        let Some((k, i)) = self.open_slot(h.stream) else {
            // A stream the client reset, or one that never was: nobody wants its bytes.
            return Ok(());
        };
        let s = &mut self.slots[i];
        if s.status == 0 {
            s.failure = Some(Failure::Malformed("DATA before the response's HEADERS"));
            s.wake();
            frame::put_rst(&mut self.out, h.stream, frame::PROTOCOL_ERROR);
            self.close(k);
            return Ok(());
        }
        if !body.is_empty() {
            s.data.extend_from_slice(body);
            s.frame_ends.push(s.data.len());
        }
        if h.flags & frame::END_STREAM != 0 {
            s.ended = true;
            s.wake();
            self.place_end(i);
            self.end_remote(k, i);
        } else {
            s.unacked += h.len as u32;
            if s.unacked >= self.stream_window / 2 {
                frame::put_window_update(&mut self.out, h.stream, s.unacked);
                s.unacked = 0;
            }
            if !body.is_empty() {
                s.wake();
            }
        }
        Ok(())
    }

    /// The server ended stream `open[k]` (slot `i`): closed, its unsent body abandoned.
    fn end_remote(&mut self, k: usize, i: usize) {
        let s = &mut self.slots[i];
        if !s.body.is_empty() {
            // Answered before its request was whole: the rest is not sent (RFC 9113, 8.1).
            frame::put_rst(&mut self.out, s.id, frame::CANCEL);
            s.body = Bytes::new();
        }
        self.close(k);
    }

    fn headers(&mut self, h: Head, payload: &[u8], now: Instant) -> Result<(), ConnFailure> {
        add(&self.bytes.header, h.len);
        if h.stream == 0 {
            return Err(self.broken(frame::PROTOCOL_ERROR, "HEADERS on stream 0"));
        }
        let Some(mut fragment) = frame::unpadded(h.flags, payload) else {
            return Err(self.broken(frame::PROTOCOL_ERROR, "a pad longer than its frame"));
        };
        if h.flags & frame::PRIORITY != 0 {
            if fragment.len() < 5 {
                return Err(self.broken(frame::FRAME_SIZE_ERROR, "HEADERS too short"));
            }
            fragment = &fragment[5..];
        }
        if fragment.len() > self.max_header_list {
            return Err(self.too_large());
        }
        let end_stream = h.flags & frame::END_STREAM != 0;
        self.place_headers(h.stream);
        if h.flags & frame::END_HEADERS != 0 {
            return self.header_block(h.stream, end_stream, fragment, now);
        }
        self.block = Some((h.stream, end_stream));
        self.block_bytes.clear();
        self.block_bytes.extend_from_slice(fragment);
        Ok(())
    }

    fn continuation(&mut self, h: Head, payload: &[u8], now: Instant) -> Result<(), ConnFailure> {
        add(&self.bytes.header, h.len);
        let Some((stream, end_stream)) = self.block.filter(|(s, _)| *s == h.stream) else {
            return Err(self.broken(frame::PROTOCOL_ERROR, "CONTINUATION out of a header block"));
        };
        // HEADERS and endless CONTINUATIONs would grow the block without end.
        if self.block_bytes.len() + payload.len() > self.max_header_list {
            self.block = None;
            self.block_bytes = Vec::new();
            return Err(self.too_large());
        }
        self.block_bytes.extend_from_slice(payload);
        if h.flags & frame::END_HEADERS == 0 {
            return Ok(());
        }
        self.block = None;
        let block = std::mem::take(&mut self.block_bytes);
        let result = self.header_block(stream, end_stream, &block, now);
        self.block_bytes = block;
        result
    }

    /// A header block over `--max-header-list` as received: the connection fails (the
    /// decoder's table cannot follow a block it does not take).
    fn too_large(&mut self) -> ConnFailure {
        let what = format!(
            "a header block over {} bytes, the --max-header-list limit (raise it for larger heads)",
            self.max_header_list
        );
        self.broken(frame::ENHANCE_YOUR_CALM, &what)
    }

    /// A whole header block for `stream`: the response's head (an interim 1xx head is passed
    /// over) or its trailers. Its fields are kept up to `--max-header-list` as decoded (RFC
    /// 9113's list size: name, value and 32 bytes each); a longer list fails the stream.
    fn header_block(
        &mut self,
        stream: u32,
        end_stream: bool,
        block: &[u8],
        now: Instant,
    ) -> Result<(), ConnFailure> {
        let Some((k, i)) = self.open_slot(stream) else {
            // The table must follow every block, wanted or not.
            return match self.decoder.decode(block, |_, _| {}) {
                Ok(()) => Ok(()),
                Err(e) => Err(self.broken(frame::COMPRESSION_ERROR, &e.to_string())),
            };
        };
        let Core { decoder, slots, .. } = self;
        let s = &mut slots[i];
        // The list's size so far: over the limit, no more fields are kept.
        let (mut list, max) = (0usize, self.max_header_list);
        let mut fits = |name: &[u8], value: &[u8]| {
            list += name.len() + value.len() + 32;
            list <= max
        };
        let decoded = if s.status == 0 {
            let mut status = 0u16;
            s.head.clear();
            let head = &mut s.head;
            let r = decoder.decode(block, |name, value| {
                if !fits(name, value) {
                    return;
                }
                if name == b":status" {
                    status = status_of(value);
                } else if name.first() != Some(&b':') {
                    head.push(name, value);
                }
            });
            if r.is_ok() {
                if list > max {
                    s.failure = Some(Failure::Malformed(LIST_TOO_LONG));
                } else if status == 0 {
                    s.failure = Some(Failure::Malformed("a response without a valid :status"));
                } else if status >= 200 || end_stream {
                    s.status = status;
                    s.first_byte = Some(now);
                } else {
                    // An interim response: the final head follows.
                    s.head.clear();
                    return Ok(());
                }
            }
            r
        } else {
            s.trailers.clear();
            s.has_trailers = true;
            let trailers = &mut s.trailers;
            let r = decoder.decode(block, |name, value| {
                if fits(name, value) {
                    trailers.push(name, value)
                }
            });
            if r.is_ok() && list > max {
                s.failure = Some(Failure::Malformed(LIST_TOO_LONG));
            }
            r
        };
        if let Err(e) = decoded {
            return Err(self.broken(frame::COMPRESSION_ERROR, &e.to_string()));
        }
        let s = &mut self.slots[i];
        s.wake();
        if s.failure.is_some() {
            frame::put_rst(&mut self.out, stream, frame::PROTOCOL_ERROR);
            self.close(k);
        } else if end_stream {
            s.ended = true;
            self.place_end(i);
            self.end_remote(k, i);
        }
        Ok(())
    }

    fn settings(&mut self, h: Head, payload: &[u8]) -> Result<(), ConnFailure> {
        if h.stream != 0 {
            return Err(self.broken(frame::PROTOCOL_ERROR, "SETTINGS on a stream"));
        }
        if h.flags & frame::ACK != 0 {
            return Ok(());
        }
        if h.len % 6 != 0 {
            return Err(self.broken(frame::FRAME_SIZE_ERROR, "a bad SETTINGS"));
        }
        for setting in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([setting[0], setting[1]]);
            let value = u32::from_be_bytes(setting[2..6].try_into().expect("4 bytes"));
            match id {
                frame::SETTINGS_HEADER_TABLE_SIZE => {
                    // The next block may have to carry a table size update: encoded, not
                    // replayed.
                    self.encoder.set_max_table_size(value as usize);
                    self.replay = None;
                }
                frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.max_streams = Some(value),
                frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                    if value as i64 > frame::MAX_WINDOW {
                        return Err(self.broken(frame::FLOW_CONTROL_ERROR, "a window past 2^31-1"));
                    }
                    let change = value as i64 - self.peer_window;
                    self.peer_window = value as i64;
                    for &(_, i) in &self.open {
                        self.slots[i].send_window += change;
                    }
                }
                frame::SETTINGS_MAX_FRAME_SIZE => {
                    let v = value as usize;
                    if !(frame::DEFAULT_MAX_FRAME..=frame::LARGEST_MAX_FRAME).contains(&v) {
                        return Err(
                            self.broken(frame::PROTOCOL_ERROR, "a bad SETTINGS_MAX_FRAME_SIZE")
                        );
                    }
                    self.max_frame = v;
                }
                _ => {}
            }
        }
        frame::put_head(&mut self.out, 0, frame::SETTINGS, frame::ACK, 0);
        self.settings_applied = true;
        self.send_bodies();
        self.wake_all_waiting();
        Ok(())
    }

    /// A GOAWAY: streams above `last` were not processed (sent again if `code` is NO_ERROR);
    /// no new stream; those below finish.
    fn goaway(&mut self, last: u32, code: u32) {
        self.going_away = true;
        self.goaway_code = Some(code);
        let mut k = 0;
        while k < self.open.len() {
            let (id, i) = self.open[k];
            if id > last {
                let s = &mut self.slots[i];
                s.failure = Some(match code {
                    frame::NO_ERROR => Failure::Refused { by_reset: false },
                    code => Failure::GoAway(code),
                });
                s.wake();
                self.open.swap_remove(k);
            } else {
                k += 1;
            }
        }
        self.wake_all_waiting();
    }
}

/// A stream's failure when its header list is over `--max-header-list` once decoded.
const LIST_TOO_LONG: &str =
    "a header list over the --max-header-list limit once decoded (raise it for larger heads)";

/// `:status`'s three digits (0 if they are not).
fn status_of(value: &[u8]) -> u16 {
    match value {
        [a @ b'1'..=b'9', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
            (a - b'0') as u16 * 100 + (b - b'0') as u16 * 10 + (c - b'0') as u16
        }
        _ => 0,
    }
}

/// Arbitrary bytes from a server, after its SETTINGS and a stream with a body opened, fed in
/// pieces of `split` bytes: whatever they are, the connection's state takes them or fails,
/// and the stream's head and body are asked for; it never panics (the fuzz target's entry).
#[doc(hidden)]
pub fn receive_any(data: &[u8], split: usize) {
    use std::task::{Context, Waker};
    let mut core = Core::new(Default::default(), Default::default());
    let request = crate::engine::request::Request {
        method: http::Method::POST,
        uri: http::Uri::from_static("http://127.0.0.1:8080/"),
        headers: http::HeaderMap::new(),
        body: Bytes::from_static(b"body"),
    };
    let super::Start::Open(i) = core.start(
        &request,
        None,
        None,
        Instant::now(),
        Waker::noop(),
        &mut None,
    ) else {
        return;
    };
    let mut bytes = Vec::with_capacity(9 + data.len());
    frame::put_head(&mut bytes, 0, frame::SETTINGS, 0, 0);
    bytes.extend_from_slice(data);
    for piece in bytes.chunks(split.max(1)) {
        let at = core.filled;
        let n = piece.len().min(core.buffer.len() - at);
        core.buffer[at..at + n].copy_from_slice(&piece[..n]);
        core.filled += n;
        if core.receive(Instant::now()).is_err() {
            break;
        }
    }
    let mut cx = Context::from_waker(Waker::noop());
    let _ = core.poll_head(i, &mut cx);
    let _ = core.poll_body(i, &mut cx, |_| Ok::<(), ()>(()));
    core.finish(i);
}
