//! The HTTP/1.1 response parsers over arbitrary bytes ([`parse_any`]), for the fuzz targets
//! (`fuzz/`) and the proptests: whatever the bytes, they return.

use super::head::{parse_head, parse_loop, trailer_timing};
use crate::engine::chunked::ChunkDecoder;
use crate::engine::decode::{BodyDecoder, Codings};

/// The response parsers run over arbitrary bytes, for the fuzz targets (`fuzz/`) and the
/// proptests: the head parser (with and without `HEAD`, codings on and off), interim responses
/// dropped from a buffer, and the chunked decoder fed the rest in pieces of `split` bytes.
/// Whatever the bytes, this returns; it never panics.
#[doc(hidden)]
pub fn parse_any(data: &[u8], split: usize) {
    let mut timing = Vec::new();
    for (head, codings) in [(false, true), (true, false)] {
        let _ = parse_head(data, head, codings, &mut timing);
    }
    let mut buf = data.to_vec();
    let mut filled = buf.len();
    let mut interim = 0;
    let head = parse_loop(
        &mut buf,
        &mut filled,
        false,
        true,
        &mut timing,
        &mut interim,
    );
    let body = match head {
        Ok(Some(h)) if h.len <= filled => &buf[h.len..filled],
        _ => data,
    };
    let mut decoder = ChunkDecoder::new(1024);
    let mut trailers = Vec::new();
    let mut keep = BodyDecoder::new(4096);
    let mut keeper = Some(&mut keep);
    for piece in body.chunks(split.max(1)) {
        if decoder.feed(piece, &mut trailers, &mut keeper).is_err() || decoder.is_done() {
            break;
        }
    }
    trailer_timing(&trailers, &mut timing);
    if let Ok(Some(c)) = Codings::parse(data) {
        let mut d = BodyDecoder::new(1 << 16);
        let _ = d.keep(body);
        let _ = d.decode(&c);
    }
}
