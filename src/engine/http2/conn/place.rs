//! Where each stream's request and response lie on the connection ([`Wire`]), for the
//! server's probes to join them by. On h2c the connection's bytes are the TCP bytes: a
//! request ends just past its END_STREAM frame (HEADERS, or its body's last DATA) in the
//! client's output, wherever that frame falls in a write shared with other streams; its
//! response starts at the header of its first HEADERS frame (an interim 1xx's included) and
//! ends just past its END_STREAM frame in the server's. Under TLS the frames' bytes are not
//! the TCP bytes: a request ends at the TCP bytes written once the write that carried its
//! END_STREAM frame was flushed, its response starts no earlier than the TCP bytes read when
//! it was queued (a lower bound) and ends at the TCP bytes read when its END_STREAM frame was
//! taken. Offsets are counted from the connection's first byte (the preface and SETTINGS
//! included): `out` and the read buffer each know where their first byte lies.

use super::Core;
use crate::engine::tally::Tally;
use crate::model::Wire;

/// A connection's side of the offsets.
#[derive(Default)]
pub(super) struct Place {
    /// The connection's client port and whether its bytes are the TCP bytes (h2c).
    port: u16,
    exact: bool,
    /// Where `out[0]` and the read buffer's first byte lie on the connection.
    tx_base: u64,
    rx_base: u64,
    /// The frame being taken: where it starts and ends on the connection.
    frame: (u64, u64),
    /// Under TLS: the TCP bytes as the driver last saw them, and the streams whose
    /// END_STREAM frame is queued but not yet flushed.
    tcp: Tally,
    unflushed: Vec<usize>,
}

/// A stream's side of the offsets.
#[derive(Default)]
pub(super) struct StreamPlace {
    wire: Wire,
    /// Just past its END_STREAM frame in the connection's output (`None`: not queued yet).
    request_end: Option<u64>,
    /// The response's first HEADERS frame was taken.
    head_seen: bool,
}

impl Core {
    /// The connection is on client port `port`; `exact`: its bytes are the TCP bytes (h2c).
    pub(in crate::engine::http2) fn connected_on(&mut self, port: u16, exact: bool) {
        (self.place.port, self.place.exact) = (port, exact);
    }

    /// Slot `i` took a new stream whose HEADERS were just queued (`end_stream`: they end its
    /// request): under TLS its response comes after the TCP bytes read so far.
    pub(super) fn place_start(&mut self, i: usize, end_stream: bool) {
        let p = &self.place;
        self.slots[i].place = StreamPlace {
            wire: Wire {
                port: p.port,
                exact: p.exact,
                tx_end: 0,
                rx_first: if p.exact { 0 } else { p.tcp.read },
                rx_end: 0,
            },
            request_end: None,
            head_seen: false,
        };
        if end_stream {
            self.place_request_end(i);
        }
    }

    /// Slot `i`'s END_STREAM frame was just queued: its request ends at the end of `out`.
    pub(super) fn place_request_end(&mut self, i: usize) {
        self.slots[i].place.request_end = Some(self.place.tx_base + self.out.len() as u64);
        if !self.place.exact {
            self.place.unflushed.push(i);
        }
    }

    /// `out` is written whole (it is cleared next): the next `out` starts past it.
    pub(super) fn place_out_written(&mut self) {
        self.place.tx_base += self.out.len() as u64;
    }

    /// The frame of `len` bytes (header included) ending `end` bytes into the read buffer is
    /// being taken.
    pub(super) fn place_frame(&mut self, end: usize, len: usize) {
        let end = self.place.rx_base + end as u64;
        self.place.frame = (end - len as u64, end);
    }

    /// `taken` bytes at the read buffer's start were taken as frames (they leave it).
    pub(super) fn place_taken(&mut self, taken: usize) {
        self.place.rx_base += taken as u64;
    }

    /// A HEADERS frame of `stream` is being taken: the first of an open stream (an interim
    /// 1xx head's too) starts its response.
    pub(super) fn place_headers(&mut self, stream: u32) {
        let Some((_, i)) = self.open_slot(stream) else {
            return;
        };
        let s = &mut self.slots[i].place;
        if !s.head_seen {
            s.head_seen = true;
            if self.place.exact {
                s.wire.rx_first = self.place.frame.0;
            }
        }
    }

    /// Slot `i`'s response ended with the frame being taken.
    pub(super) fn place_end(&mut self, i: usize) {
        self.slots[i].place.wire.rx_end = match self.place.exact {
            true => self.place.frame.1,
            false => self.place.tcp.read,
        };
    }

    /// Under TLS, the driver read: the TCP bytes read so far, for the frames it took.
    pub(in crate::engine::http2) fn tcp_read(&mut self, tcp: Tally) {
        self.place.tcp = tcp;
    }

    /// Under TLS, the driver's write was flushed with the connection's TCP bytes at `tcp`:
    /// the streams whose END_STREAM frame it carried end there.
    pub(in crate::engine::http2) fn flushed(&mut self, tcp: Tally) {
        let written = self.place.tx_base + self.out_done as u64;
        let Core { place, slots, .. } = self;
        place.unflushed.retain(|&i| {
            let s = &mut slots[i].place;
            match s.request_end {
                Some(end) if end <= written => {
                    s.wire.tx_end = tcp.written;
                    false
                }
                _ => true,
            }
        });
    }

    /// Slot `i` is freed: none of its frames is waited for.
    pub(super) fn place_free(&mut self, i: usize) {
        if !self.place.unflushed.is_empty() {
            self.place.unflushed.retain(|&u| u != i);
        }
    }

    /// Where slot `i`'s request and response lay on the connection (port 0 for a stream
    /// whose connection is not a TCP connection of ours).
    pub(in crate::engine::http2) fn wire(&self, i: usize) -> Wire {
        let s = &self.slots[i].place;
        if self.place.port == 0 {
            return Wire::default();
        }
        let mut wire = s.wire;
        if self.place.exact {
            wire.tx_end = s.request_end.unwrap_or(self.place.tx_base);
        }
        wire
    }
}
