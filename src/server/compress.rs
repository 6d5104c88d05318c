//! Response compression for the embedded target's `/text/{n}` route: the coding is chosen
//! from the request's `Accept-Encoding` (the client's order; `q=0` refuses a coding) among
//! gzip, br and deflate, and the body is compressed per request, so that the cost shows in
//! the server's `compress` metric and the client's `decode` phase (`--compressed`).

use crate::engine::decode::Coding;
use std::io::Write;

/// gzip and zlib level (flate2's default, as nginx's `gzip_comp_level` 1-9 scale).
const FLATE_LEVEL: u32 = 6;
/// Brotli quality (0-11) and window (log2 bytes): a middle setting for dynamic content.
const BROTLI_QUALITY: u32 = 5;
const BROTLI_WINDOW: u32 = 22;

/// The coding to answer with, from an `Accept-Encoding` value: the first the client lists
/// that the target supports and does not refuse with `q=0`.
pub fn negotiate(accept: &[u8]) -> Option<Coding> {
    accept.split(|&b| b == b',').find_map(|item| {
        let mut parts = item.split(|&b| b == b';');
        let name = parts.next()?.trim_ascii();
        let refused = parts.any(|p| {
            let p = p.trim_ascii();
            p.len() > 2
                && p[..2].eq_ignore_ascii_case(b"q=")
                && std::str::from_utf8(&p[2..])
                    .ok()
                    .and_then(|q| q.trim().parse::<f64>().ok())
                    == Some(0.0)
        });
        if refused {
            return None;
        }
        [
            (&b"gzip"[..], Coding::Gzip),
            (b"br", Coding::Br),
            (b"deflate", Coding::Deflate),
        ]
        .into_iter()
        .find(|(n, _)| name.eq_ignore_ascii_case(n))
        .map(|(_, c)| c)
    })
}

/// The `Content-Encoding` name of a coding.
pub fn name(c: Coding) -> &'static str {
    match c {
        Coding::Gzip => "gzip",
        Coding::Deflate => "deflate",
        Coding::Br => "br",
    }
}

/// `data` compressed with `coding`.
pub fn compress(coding: Coding, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 4 + 64);
    // Writing into memory cannot fail.
    match coding {
        Coding::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(FLATE_LEVEL));
            let _ = e.write_all(data);
            out = e.finish().unwrap_or_default();
        }
        Coding::Deflate => {
            let mut e = flate2::write::ZlibEncoder::new(out, flate2::Compression::new(FLATE_LEVEL));
            let _ = e.write_all(data);
            out = e.finish().unwrap_or_default();
        }
        Coding::Br => {
            let mut w =
                brotli::CompressorWriter::new(&mut out, 4096, BROTLI_QUALITY, BROTLI_WINDOW);
            let _ = w.write_all(data);
        }
    }
    out
}

/// `n` bytes of text: a sentence repeated, as compressible as ordinary prose or JSON.
pub fn text(n: usize) -> Vec<u8> {
    const SENTENCE: &[u8] =
        b"The life of a request: queue, connect, TLS, write, wait for the first byte, read. ";
    SENTENCE.iter().copied().cycle().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::decode::{BodyDecoder, Codings};

    #[test]
    fn the_clients_order_and_refusals_decide() {
        use Coding::*;
        // (Accept-Encoding, coding answered)
        let rows: [(&str, Option<Coding>); 7] = [
            ("gzip, deflate, br", Some(Gzip)),
            ("br, gzip", Some(Br)), // the client's order, not ours
            ("deflate", Some(Deflate)),
            ("identity", None),                   // nothing we compress with
            ("zstd, br;q=0.5", Some(Br)),         // unknown ones are skipped
            ("gzip;q=0, deflate", Some(Deflate)), // q=0 refuses
            ("", None),
        ];
        for (accept, want) in rows {
            assert_eq!(negotiate(accept.as_bytes()), want, "{accept}");
        }
    }

    #[test]
    fn compressed_text_decodes_back_with_the_client_decoder() {
        let plain = text(10_000);
        for c in [Coding::Gzip, Coding::Deflate, Coding::Br] {
            let packed = compress(c, &plain);
            assert!(
                packed.len() < plain.len() / 10,
                "{}: {}",
                name(c),
                packed.len()
            );
            let codings = Codings::parse(name(c).as_bytes()).unwrap().unwrap();
            let mut d = BodyDecoder::new(1 << 20);
            d.keep(&packed).unwrap();
            assert_eq!(d.decode(&codings), Ok(10_000), "{}", name(c));
        }
    }
}
