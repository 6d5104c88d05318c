//! Framed binary requests over TCP (`tcp://HOST:PORT --payload-file FILE`): Thrift's framed
//! transport and its kin. The request is a pre-built byte string sent as it is (its sequence
//! number written at a fixed offset when asked: Thrift's seqid); the reply is a 4-byte
//! big-endian length and that many bytes (`--framing u32be`), or exactly `--response-bytes`
//! bytes (`--framing none`). The reply is counted, never kept: [`FrameReader`] is a pure state
//! machine over the bytes received (fuzzed in `fuzz/`), holding only the length prefix.
//! Connections, keep-alive and the timestamps are the HTTP/1.1 path's ([`super::Session`]).

mod channel;

use super::connect::Socket;
use super::EngineError;
use crate::model::{ErrorKind, Timestamps, Traffic, Wire};
use crate::plan::{FramedPlan, Framing};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub(in crate::engine) use channel::FramedChannel;
pub use channel::FramedWire;

/// Size of a framed connection's read buffer (replies are counted through it, not kept).
const BUF_BYTES: usize = 16 * 1024;

/// What a reply's bytes broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// The length prefix announces more than the limit (`--max-body`).
    TooLong {
        /// The length the prefix announces, in bytes.
        announced: u64,
        /// The limit, in bytes.
        max: u64,
    },
    /// Bytes arrived after the end of the reply: the server sent more than it announced.
    Extra {
        /// The bytes past the end of the reply.
        extra: u64,
        /// The reply's length as announced, in bytes.
        total: u64,
    },
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLong { announced, max } => write!(
                f,
                "the reply frame announces {announced} bytes, more than --max-body {max}"
            ),
            FrameError::Extra { extra, total } => write!(
                f,
                "{extra} bytes after the end of the {total}-byte reply: the server sent more than one reply, or a frame length that lies"
            ),
        }
    }
}

/// Reads one reply from the bytes fed to it, in any pieces: how many have come, how many the
/// reply has (once the length prefix is in), and whether it is complete.
#[derive(Debug, Clone)]
pub struct FrameReader {
    framing: Framing,
    max_bytes: u64,
    /// Bytes of this reply received so far (prefix included).
    got: u64,
    prefix: [u8; 4],
    /// The whole reply's length, prefix included, once known.
    total: Option<u64>,
}

impl FrameReader {
    /// A reader for one reply delimited by `framing`, whose frame may announce at most
    /// `max_bytes` (not counting its prefix).
    pub fn new(framing: Framing, max_bytes: u64) -> Self {
        FrameReader {
            framing,
            max_bytes,
            got: 0,
            prefix: [0; 4],
            total: match framing {
                Framing::U32Be => None,
                Framing::Fixed(n) => Some(n),
            },
        }
    }

    /// Takes the next received bytes; `Ok(true)` once the reply is complete (every byte fed
    /// belongs to it), `Ok(false)` while more are needed.
    pub fn feed(&mut self, data: &[u8]) -> Result<bool, FrameError> {
        let mut rest = data;
        if self.total.is_none() {
            // U32Be: the prefix, possibly split over several reads.
            let at = self.got as usize;
            let take = (4 - at).min(rest.len());
            self.prefix[at..at + take].copy_from_slice(&rest[..take]);
            self.got += take as u64;
            rest = &rest[take..];
            if self.got < 4 {
                return Ok(false);
            }
            let announced = u64::from(u32::from_be_bytes(self.prefix));
            if announced > self.max_bytes {
                return Err(FrameError::TooLong {
                    announced,
                    max: self.max_bytes,
                });
            }
            self.total = Some(4 + announced);
        }
        let total = self.total.expect("known above");
        let after = self.got + rest.len() as u64;
        if after > total {
            return Err(FrameError::Extra {
                extra: after - total,
                total,
            });
        }
        self.got = after;
        Ok(self.got == total)
    }

    /// Bytes of this reply received so far.
    pub fn got(&self) -> u64 {
        self.got
    }

    /// The reply's whole length (prefix included), once known.
    pub fn total(&self) -> Option<u64> {
        self.total
    }

    /// Bytes of the reply that are framing (the length prefix), not payload.
    fn prefix_bytes(&self) -> u64 {
        match self.framing {
            Framing::U32Be => 4,
            Framing::Fixed(_) => 0,
        }
    }
}

/// One session's framed connection: the stream, the request (a copy of the payload, its
/// seqid slot rewritten per request) and the read buffer.
pub struct FramedConn {
    /// The connection; `None` before the first connect or after a failure closed it.
    pub stream: Option<Socket>,
    request: Vec<u8>,
    buf: Vec<u8>,
    /// Bytes read for the last request (also when it failed).
    pub read: u64,
}

impl FramedConn {
    /// A connection slot, not yet connected, for the plan's request.
    pub fn new(plan: &FramedPlan) -> Self {
        FramedConn {
            stream: None,
            request: plan.payload.clone(),
            buf: vec![0; BUF_BYTES],
            read: 0,
        }
    }

    /// Sends the payload as the request numbered `seq` (its seqid slot, if any, set to `seq`
    /// as a big-endian i32, wrapping), opening a connection first if none is open, and reads
    /// one reply, stamping written, first byte and done.
    pub async fn exchange(
        &mut self,
        wire: &FramedWire,
        max_body_bytes: u64,
        seq: u64,
        stamps: &mut Timestamps,
    ) -> Result<Reply, EngineError> {
        let plan = &wire.plan;
        let socket = match &mut self.stream {
            Some(s) => s,
            None => self.stream.insert(wire.connector.connect(stamps).await?),
        };
        if let Some(at) = plan.seqid_offset {
            self.request[at..at + 4].copy_from_slice(&(seq as u32).to_be_bytes());
        }
        let write = |e: std::io::Error| EngineError::io(ErrorKind::Write, "write".into(), &e);
        socket.write_all(&self.request).await.map_err(write)?;
        socket.flush().await.map_err(write)?;
        stamps.written = Some(Instant::now());
        // A reply is read whole and nothing past it (more is an error): it starts at the TCP
        // bytes read so far (under TLS, a lower bound).
        let sent = socket.tally();
        let mut reader = FrameReader::new(plan.framing, max_body_bytes);
        self.read = 0;
        loop {
            let n = socket
                .read(&mut self.buf)
                .await
                .map_err(|e| EngineError::io(ErrorKind::Read, "read".into(), &e))?;
            self.read += n as u64;
            if n == 0 {
                return Err(EngineError::new(ErrorKind::Closed, closed_detail(&reader)));
            }
            if reader.got() == 0 {
                stamps.first_byte = Some(Instant::now());
            }
            match reader.feed(&self.buf[..n]) {
                Ok(false) => continue,
                Ok(true) => break,
                Err(e) => return Err(EngineError::new(ErrorKind::Protocol, e.to_string())),
            }
        }
        stamps.done = Some(Instant::now());
        let header = reader.prefix_bytes();
        let body = reader.got() - header;
        let wire = Wire {
            port: sent.port,
            exact: socket.is_plain(),
            tx_end: sent.written,
            rx_first: sent.read,
            rx_end: socket.tally().read,
        };
        Ok(Reply {
            wire,
            bytes_read: reader.got(),
            bytes_written: self.request.len() as u64,
            traffic: Traffic {
                header,
                header_decoded: header,
                body,
                body_decoded: body,
            },
        })
    }
}

/// A complete framed reply: framing has no status, and keeps the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// Bytes read for the reply (its length prefix included).
    pub bytes_read: u64,
    /// Bytes written for its request.
    pub bytes_written: u64,
    /// The length prefix (as header bytes) and the rest (as body bytes).
    pub traffic: Traffic,
    /// Where the request's end and the reply lay on the connection.
    pub wire: Wire,
}

/// Why a connection that closed before the reply was complete failed.
fn closed_detail(reader: &FrameReader) -> String {
    match (reader.got(), reader.total()) {
        (0, _) => "connection closed before any reply byte".to_string(),
        (got, Some(total)) => format!("connection closed after {got} of {total} reply bytes"),
        (got, None) => format!("connection closed after {got} of the 4 length-prefix bytes"),
    }
}

/// The reader over arbitrary bytes, for the fuzz target (`fuzz/`) and the proptests: fed in
/// one piece and in pieces of `split` bytes, under each framing, it never panics and the two
/// agree; a complete reply has the length it announced.
#[doc(hidden)]
pub fn read_any(data: &[u8], split: usize, max_bytes: u64) {
    let fixed = data.first().map_or(0, |b| u64::from(*b));
    for framing in [Framing::U32Be, Framing::Fixed(fixed)] {
        let whole = FrameReader::new(framing, max_bytes).feed(data);
        let mut pieces = FrameReader::new(framing, max_bytes);
        let mut last = Ok(false);
        for piece in data.chunks(split.max(1)) {
            last = pieces.feed(piece);
            if last.is_err() {
                break;
            }
        }
        if data.is_empty() {
            continue;
        }
        match (&whole, &last) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{framing:?}"),
            (Err(FrameError::TooLong { .. }), Err(FrameError::TooLong { .. })) => {}
            (Err(FrameError::Extra { total: a, .. }), Err(FrameError::Extra { total: b, .. })) => {
                assert_eq!(a, b, "{framing:?}")
            }
            _ => panic!("{framing:?}: at once {whole:?}, in pieces {last:?}"),
        }
        if whole == Ok(true) {
            assert_eq!(Some(data.len() as u64), pieces.total());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(announced: u32, payload: usize) -> Vec<u8> {
        let mut v = announced.to_be_bytes().to_vec();
        v.extend(std::iter::repeat_n(7u8, payload));
        v
    }

    #[test]
    fn u32be_frames() {
        // (bytes, max, result of feeding them at once, total once known)
        type Row = (Vec<u8>, u64, Result<bool, FrameError>, Option<u64>);
        let rows: [Row; 7] = [
            (frame(10, 10), 100, Ok(true), Some(14)), // whole
            (frame(10, 3), 100, Ok(false), Some(14)), // partial payload
            (frame(0, 0), 100, Ok(true), Some(4)),    // empty frame
            (vec![0, 0], 100, Ok(false), None),       // partial prefix
            (
                frame(1000, 10),
                100,
                Err(FrameError::TooLong {
                    announced: 1000,
                    max: 100,
                }),
                None,
            ), // announces more than the limit
            (
                frame(2, 5),
                100,
                Err(FrameError::Extra { extra: 3, total: 6 }),
                Some(6),
            ), // more than announced
            (frame(100, 100), 100, Ok(true), Some(104)), // exactly the limit
        ];
        for (bytes, max, want, total) in rows {
            let mut r = FrameReader::new(Framing::U32Be, max);
            assert_eq!(r.feed(&bytes), want, "{bytes:?}");
            assert_eq!(r.total(), total, "{bytes:?}");
        }
    }

    #[test]
    fn byte_by_byte_is_the_same_as_at_once() {
        let bytes = frame(300, 300);
        let mut r = FrameReader::new(Framing::U32Be, 1 << 20);
        let done: Vec<bool> = bytes.iter().map(|b| r.feed(&[*b]).unwrap()).collect();
        assert_eq!(done.iter().filter(|d| **d).count(), 1);
        assert!(done[done.len() - 1]);
        assert_eq!((r.got(), r.total()), (304, Some(304)));
    }

    #[test]
    fn fixed_length_replies() {
        let mut r = FrameReader::new(Framing::Fixed(5), 10);
        assert_eq!(r.feed(b"ab"), Ok(false));
        assert_eq!(r.feed(b"cde"), Ok(true));
        let mut r = FrameReader::new(Framing::Fixed(5), 10);
        assert_eq!(
            r.feed(b"abcdef"),
            Err(FrameError::Extra { extra: 1, total: 5 })
        );
    }

    #[test]
    fn closed_details_say_how_far_the_reply_got() {
        let mut r = FrameReader::new(Framing::U32Be, 10_000);
        assert_eq!(closed_detail(&r), "connection closed before any reply byte");
        r.feed(&[0, 0]).unwrap();
        assert!(closed_detail(&r).contains("2 of the 4 length-prefix"));
        r.feed(&frame(1000, 10)[2..]).unwrap();
        assert_eq!(
            closed_detail(&r),
            "connection closed after 14 of 1004 reply bytes"
        );
    }

    proptest::proptest! {
        // Any bytes, in any pieces, under any bound: fuzz/fuzz_targets/framed_reply.rs.
        #[test]
        fn any_frame_reads_whole_in_any_pieces(len in 0u32..2000, split in 1usize..64) {
            let bytes = frame(len, len as usize);
            read_any(&bytes, split, 2000);
            let mut r = FrameReader::new(Framing::U32Be, 2000);
            let mut done = false;
            for piece in bytes.chunks(split) {
                proptest::prop_assert!(!done);
                done = r.feed(piece).unwrap();
            }
            proptest::prop_assert!(done);
        }
    }
}
