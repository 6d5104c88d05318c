//! Streamed responses (`--stream sse|chunks|lines`, or an `text/event-stream` response):
//! what counts as an event, and the time each one completed. [`SseParser`] follows the HTML
//! standard's event-stream interpretation (9.2.6): lines end with CRLF, LF or CR; a line
//! starting with `:` is a comment; `field: value` with one optional space after the colon;
//! `data` lines accumulate; an empty line dispatches the event, unless no `data` field came
//! (then nothing is dispatched); a leading UTF-8 BOM is skipped; an event left incomplete at
//! the end of the stream is dropped. It is an incremental state machine over byte slices
//! (an event may straddle reads) that keeps no bytes: an [`SseSink`] sees the field values,
//! for those who want them ([`Collect`], the reference the tests read); the engine only counts.
//!
//! A [`EventTracker`] follows one response: it stamps the first event, keeps the gaps
//! between events (nanoseconds, capacity kept across responses, at most [`MAX_GAPS`] per
//! response) and the count. Events that complete in the same read share its time (gap 0).
//! Events that never end are bounded by `--timeout` (a timeout) and by `--max-body`: a
//! tracked body longer than that is cut there, a protocol error ([`TOO_LONG`]), as a
//! `--compressed` body over it is.

use super::EngineError;
use crate::model::{ErrorKind, EventMode};
use std::time::Instant;

/// Most gaps kept for one response; later ones are counted as events but not as gaps.
pub const MAX_GAPS: usize = 1 << 16;

/// Why a streamed response was cut: its body went past `--max-body`.
pub const TOO_LONG: &str =
    "streamed body longer than --max-body (a stream that never ends is cut there)";

/// The fields of the event-stream format that mean something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `event`: the event type.
    Event,
    /// `data`: a line of the event's data.
    Data,
    /// `id`: the event ID.
    Id,
    /// `retry`: the reconnection time, in milliseconds.
    Retry,
    /// Any other field: ignored.
    Other,
}

/// Where the parser is within a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the very start of the stream: matching a UTF-8 BOM (bytes matched so far).
    Bom(u8),
    /// At the start of a line.
    LineStart,
    /// In a field name (its first bytes kept to recognise it).
    Name,
    /// Just after the colon: one space is skipped.
    ValueStart,
    Value,
    /// In a comment line.
    Comment,
}

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// What a parser reports besides the count of events.
pub trait SseSink {
    /// A line `field: value` began.
    fn field(&mut self, _field: Field) {}
    /// Bytes of the current field's value (a value may come in several pieces).
    fn value(&mut self, _bytes: &[u8]) {}
    /// The current line ended.
    fn line_end(&mut self) {}
    /// An empty line: the event is dispatched when `data` is true (a `data` field came).
    fn blank(&mut self, _data: bool) {}
}

/// The sink that wants nothing: the engine's.
pub struct Count;

impl SseSink for Count {}

/// An incremental parser of `text/event-stream`.
#[derive(Debug, Clone)]
pub struct SseParser {
    state: State,
    /// The field name's first bytes (enough to tell the four names apart) and its length.
    name: [u8; 5],
    name_len: usize,
    /// A CR ended the last line: an LF right after it belongs to the same line end.
    after_cr: bool,
    /// A `data` field came since the last dispatch.
    data: bool,
}

impl Default for SseParser {
    fn default() -> Self {
        SseParser::new()
    }
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        SseParser {
            state: State::Bom(0),
            name: [0; 5],
            name_len: 0,
            after_cr: false,
            data: false,
        }
    }

    /// Consumes `bytes`; returns how many events were dispatched within them.
    pub fn feed(&mut self, bytes: &[u8], sink: &mut impl SseSink) -> u32 {
        let mut events = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    i += 1;
                    continue;
                }
            }
            match self.state {
                State::Bom(k) => {
                    if b == BOM[k as usize] {
                        i += 1;
                        self.state = if k == 2 {
                            State::LineStart
                        } else {
                            State::Bom(k + 1)
                        };
                    } else if k == 0 {
                        self.state = State::LineStart;
                    } else {
                        // A partial BOM: its bytes begin a field name no one knows.
                        self.state = State::Name;
                        self.name_len = self.name.len() + 1;
                    }
                }
                State::LineStart => {
                    let (used, dispatched) = self.line_start(b, sink);
                    i += used;
                    events += dispatched;
                }
                State::Name => {
                    i += 1;
                    match b {
                        b':' => {
                            self.begin_field(sink);
                            self.state = State::ValueStart;
                        }
                        b'\r' | b'\n' => {
                            // A line with no colon: the whole line is the name, the value empty.
                            self.begin_field(sink);
                            self.end_line(b, sink);
                        }
                        _ => {
                            if self.name_len < self.name.len() {
                                self.name[self.name_len] = b;
                            }
                            self.name_len = self.name_len.saturating_add(1);
                        }
                    }
                }
                State::ValueStart | State::Value => i += self.value(&bytes[i..], sink),
                State::Comment => {
                    let rest = &bytes[i..];
                    match rest.iter().position(|&c| c == b'\r' || c == b'\n') {
                        Some(end) => {
                            i += end + 1;
                            self.after_cr = rest[end] == b'\r';
                            self.state = State::LineStart;
                        }
                        None => i = bytes.len(),
                    }
                }
            }
        }
        events
    }

    /// At the start of a line: an empty line (dispatching the event if a `data` field came), a
    /// comment, or a field name. Returns the bytes used and the events dispatched.
    fn line_start(&mut self, b: u8, sink: &mut impl SseSink) -> (usize, u32) {
        match b {
            b'\r' | b'\n' => {
                self.after_cr = b == b'\r';
                sink.blank(self.data);
                let events = u32::from(self.data);
                self.data = false;
                (1, events)
            }
            b':' => {
                self.state = State::Comment;
                (1, 0)
            }
            _ => {
                self.name_len = 0;
                self.state = State::Name;
                (0, 0)
            }
        }
    }

    /// In a value (after the one space a value may start with): up to the line end. Returns
    /// the bytes used.
    fn value(&mut self, rest: &[u8], sink: &mut impl SseSink) -> usize {
        if self.state == State::ValueStart {
            self.state = State::Value;
            if rest[0] == b' ' {
                return 1;
            }
        }
        let end = rest
            .iter()
            .position(|&c| c == b'\r' || c == b'\n')
            .unwrap_or(rest.len());
        if end > 0 {
            sink.value(&rest[..end]);
        }
        if end == rest.len() {
            return end;
        }
        self.end_line(rest[end], sink);
        end + 1
    }

    /// The field named by the kept name bytes begins.
    fn begin_field(&mut self, sink: &mut impl SseSink) {
        let name = &self.name[..self.name_len.min(self.name.len())];
        let field = match (self.name_len, name) {
            (5, b"event") => Field::Event,
            (4, b"data") => Field::Data,
            (2, b"id") => Field::Id,
            (5, b"retry") => Field::Retry,
            _ => Field::Other,
        };
        if field == Field::Data {
            self.data = true;
        }
        sink.field(field);
    }

    fn end_line(&mut self, b: u8, sink: &mut impl SseSink) {
        self.after_cr = b == b'\r';
        self.state = State::LineStart;
        sink.line_end();
    }
}

/// One dispatched event, as the HTML standard's interpretation makes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    /// The event type (`message` when none was given).
    pub event: String,
    /// The event's data, its lines joined with LF.
    pub data: String,
    /// The last event ID after this event.
    pub id: String,
    /// The reconnection time set before this event, if any.
    pub retry: Option<u64>,
}

/// A sink that builds the events (for tests and the fuzz target; it allocates).
#[derive(Debug, Default)]
pub struct Collect {
    /// The events dispatched so far, in order.
    pub events: Vec<Event>,
    field: Option<Field>,
    value: Vec<u8>,
    event: Vec<u8>,
    data: Vec<u8>,
    last_id: Vec<u8>,
    retry: Option<u64>,
}

impl SseSink for Collect {
    fn field(&mut self, field: Field) {
        self.field = Some(field);
        self.value.clear();
    }
    fn value(&mut self, bytes: &[u8]) {
        self.value.extend_from_slice(bytes);
    }
    fn line_end(&mut self) {
        match self.field.take() {
            Some(Field::Event) => self.event = std::mem::take(&mut self.value),
            Some(Field::Data) => {
                self.data.extend_from_slice(&self.value);
                self.data.push(b'\n');
            }
            Some(Field::Id) if !self.value.contains(&0) => {
                self.last_id = std::mem::take(&mut self.value)
            }
            Some(Field::Retry)
                if !self.value.is_empty() && self.value.iter().all(u8::is_ascii_digit) =>
            {
                self.retry = String::from_utf8_lossy(&self.value).parse().ok();
            }
            _ => {}
        }
        self.value.clear();
    }
    fn blank(&mut self, data: bool) {
        if data {
            self.data.pop();
            let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
            let event = if self.event.is_empty() {
                "message".to_string()
            } else {
                text(&self.event)
            };
            self.events.push(Event {
                event,
                data: text(&self.data),
                id: text(&self.last_id),
                retry: self.retry,
            });
        }
        self.data.clear();
        self.event.clear();
    }
}

/// Parses a whole stream, fed in pieces of `split` bytes, into its events.
pub fn parse_all(bytes: &[u8], split: usize) -> Vec<Event> {
    let mut p = SseParser::new();
    let mut c = Collect::default();
    let mut n = 0;
    for piece in bytes.chunks(split.max(1)) {
        n += p.feed(piece, &mut c);
    }
    debug_assert_eq!(n as usize, c.events.len());
    c.events
}

/// Gives a read of a body (not chunked: one unit) to the tracker, if the response is
/// tracked; an error once the body went past `--max-body`.
pub fn track(tracker: &mut Option<&mut EventTracker>, data: &[u8]) -> Result<(), EngineError> {
    if let Some(t) = tracker.as_deref_mut().filter(|_| !data.is_empty()) {
        t.body(data)
            .map_err(|e| EngineError::new(ErrorKind::Protocol, e.into()))?;
        t.unit_end();
    }
    Ok(())
}

/// When the bytes just read arrived: the kernel's stamp on plain TCP, else now (events are
/// counted right after the read that brought them).
fn arrived() -> Instant {
    super::arrival::of_last_read().unwrap_or_else(Instant::now)
}

/// Whether a `Content-Type` value is `text/event-stream` (parameters aside).
pub fn is_event_stream(value: &[u8]) -> bool {
    value
        .split(|&b| b == b';')
        .next()
        .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"text/event-stream"))
}

/// What one streamed response gave: events, when they completed, the gaps between them.
#[derive(Debug, Default)]
pub struct EventTracker {
    /// The run's `--stream` mode, if any.
    mode: Option<EventMode>,
    /// `--max-body`: the most body bytes of one tracked response.
    max_body: u64,
    /// Body bytes of this response so far.
    body_bytes: u64,
    /// This response's mode (`--stream`, or SSE by its content type), while tracking.
    active: Option<EventMode>,
    sse: Option<SseParser>,
    /// Lines mode: bytes since the last line end.
    line_open: bool,
    first: Option<Instant>,
    last: Option<Instant>,
    events: u32,
    gaps: Vec<u64>,
}

impl EventTracker {
    /// A tracker for the run's `--stream` `mode`, cutting a body past `max_body` bytes.
    pub fn new(mode: Option<EventMode>, max_body: u64) -> Self {
        EventTracker {
            mode,
            max_body,
            ..Default::default()
        }
    }

    /// A response begins; `event_stream`: its content type is `text/event-stream`. Returns
    /// whether it is tracked (with `--stream`, or by its content type).
    pub fn begin(&mut self, event_stream: bool) -> bool {
        self.active = self.mode.or(event_stream.then_some(EventMode::Sse));
        if self.active.is_some() {
            super::arrival::awake::from_now_on();
        }
        self.first = None;
        self.last = None;
        self.events = 0;
        self.gaps.clear();
        self.line_open = false;
        self.body_bytes = 0;
        if self.active == Some(EventMode::Sse) {
            self.sse = Some(SseParser::new());
        }
        self.active.is_some()
    }

    /// No response is tracked (e.g. before the next one's head).
    pub fn idle(&mut self) {
        self.active = None;
        self.first = None;
        self.events = 0;
        self.gaps.clear();
    }

    /// Body bytes as received (without chunk framing); [`TOO_LONG`] once the body went past
    /// `--max-body` (the bytes past it are not parsed).
    pub fn body(&mut self, data: &[u8]) -> Result<(), &'static str> {
        self.body_bytes += data.len() as u64;
        if self.body_bytes > self.max_body {
            return Err(TOO_LONG);
        }
        let n = match self.active {
            Some(EventMode::Sse) => match &mut self.sse {
                Some(p) => p.feed(data, &mut Count),
                None => 0,
            },
            Some(EventMode::Lines) => {
                let n = data.iter().filter(|&&b| b == b'\n').count() as u32;
                if !data.is_empty() {
                    self.line_open = data.last() != Some(&b'\n');
                }
                n
            }
            // Chunks: counted by `unit_end`; WebSocket messages: by `message`.
            Some(EventMode::Chunks | EventMode::Messages) | None => 0,
        };
        if n > 0 {
            self.events_at(n, arrived());
        }
        Ok(())
    }

    /// A transport unit ended: an HTTP/1.1 chunk, an HTTP/2 DATA frame, or a read of a body
    /// that is not chunked (`--stream chunks` counts them).
    pub fn unit_end(&mut self) {
        if self.active == Some(EventMode::Chunks) {
            self.events_at(1, arrived());
        }
    }

    /// A WebSocket message of a subscription (`--stream messages`) completed, its bytes
    /// arrived `at`: one event.
    pub fn message(&mut self, at: Instant) {
        if self.active == Some(EventMode::Messages) {
            self.events_at(1, at);
        }
    }

    /// The body ended: lines mode counts an unterminated last line.
    pub fn finish(&mut self) {
        if self.active == Some(EventMode::Lines) && self.line_open {
            self.line_open = false;
            self.events_at(1, arrived());
        }
    }

    fn events_at(&mut self, n: u32, now: Instant) {
        let mut gaps = n;
        if let Some(last) = self.last {
            self.push_gap(now.saturating_duration_since(last).as_nanos() as u64);
        } else {
            self.first = Some(now);
        }
        gaps -= 1;
        for _ in 0..gaps {
            self.push_gap(0);
        }
        self.last = Some(now);
        self.events = self.events.saturating_add(n);
    }

    fn push_gap(&mut self, ns: u64) {
        if self.gaps.len() < MAX_GAPS {
            self.gaps.push(ns);
        }
    }

    /// The time the first event completed, and the count: `None` when not tracking.
    pub fn stamps(&self) -> Option<(Option<Instant>, u32)> {
        self.active.map(|_| (self.first, self.events))
    }

    /// The gaps between the events of the last response, nanoseconds.
    pub fn gaps(&self) -> &[u64] {
        if self.active.is_some() {
            &self.gaps
        } else {
            &[]
        }
    }
}

#[cfg(test)]
mod tests;
