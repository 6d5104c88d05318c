//! A [`MessageReader`] fed in pieces, as a connection's reads bring the bytes: every step with
//! what the reader kept for it ([`feed_in_pieces`]), and the same bytes read every way for the
//! fuzz target (`fuzz/`) and the proptests ([`read_any`]), which must all agree.

use super::{MessageReader, Step, WsError};

/// One step of [`MessageReader::feed`] with what the reader kept for it: a data message's
/// payload ([`MessageReader::message`]) or a control frame's ([`MessageReader::control`]),
/// and [`MessageReader::message_span`] after it.
#[doc(hidden)]
pub type Fed = (Result<Step, WsError>, Vec<u8>, (u64, u64));

/// Feeds `bytes` to `reader` in pieces of `split` bytes, as a connection's reads bring them:
/// every step up to the first error, with what it kept. A step takes at least a byte, and
/// [`Step::More`] comes only at a piece's end (else this panics).
#[doc(hidden)]
pub fn feed_in_pieces(reader: &mut MessageReader, bytes: &[u8], split: usize) -> Vec<Fed> {
    let mut out = Vec::new();
    for piece in bytes.chunks(split.max(1)) {
        let mut at = 0;
        while at < piece.len() {
            let (used, step) = reader.feed(&piece[at..]);
            assert!(used > 0, "a step of no byte: {step:?}");
            at += used;
            let kept = match step {
                Ok(Step::More) => {
                    assert_eq!(at, piece.len(), "More before the piece's end");
                    continue;
                }
                Ok(Step::Message { .. }) => reader.message().to_vec(),
                Ok(_) => reader.control().to_vec(),
                Err(_) => Vec::new(),
            };
            let failed = step.is_err();
            out.push((step, kept, reader.message_span()));
            if failed {
                return out;
            }
        }
    }
    out
}

/// The reader over arbitrary bytes, for the fuzz target (`fuzz/`) and the proptests: a
/// client's reader of plain replies, one that keeps every message with permessage-deflate
/// agreed, and a server's, each fed `data` in pieces of `split` bytes and byte by byte, and
/// once more after [`MessageReader::reset`]: each way gives the steps (and kept bytes) it
/// gives fed at once, else this panics.
#[doc(hidden)]
pub fn read_any(data: &[u8], split: usize, max: u64) {
    for kind in 0..3 {
        let mut once = any_reader(kind, max);
        let whole = feed_in_pieces(&mut once, data, data.len());
        for split in [split, 1] {
            let pieces = feed_in_pieces(&mut any_reader(kind, max), data, split);
            assert_eq!(pieces, whole, "reader {kind}, pieces of {split} bytes");
        }
        // A reader reused for a new connection reads it as a new one does.
        once.reset();
        assert_eq!(
            feed_in_pieces(&mut once, data, split),
            whole,
            "reader {kind}, reset"
        );
    }
}

/// A reader of `max` bytes of each kind [`read_any`] tries: 0 a client's of plain replies, 1
/// a client's that keeps all with permessage-deflate agreed, 2 a server's.
pub(super) fn any_reader(kind: usize, max: u64) -> MessageReader {
    let mut r = if kind == 2 {
        MessageReader::server(max)
    } else {
        MessageReader::new(max)
    };
    r.keep_all(kind == 1);
    r.allow_compressed(kind == 1);
    r
}
