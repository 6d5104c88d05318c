//! `--compressed`: which content codings a response applied (its `Content-Encoding`) and
//! decoding its body, so that the client's decoding cost is a phase of its own (`decode`).
//! gzip and deflate go through flate2 (deflate as HTTP means it: zlib-wrapped, with raw
//! deflate accepted too, as browsers do), br through the brotli crate. A body is kept (up to
//! `--max-body`) while it is read and decoded once complete; the decoded bytes are counted and
//! dropped, never kept whole.

use std::io::Read;

/// A content coding reqlife decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip`.
    Gzip,
    /// `deflate` (zlib, or raw deflate as some servers send it).
    Deflate,
    /// `br` (Brotli).
    Br,
}

/// Most codings stacked on one body.
const MAX_CODINGS: usize = 4;

/// The codings of a body, in the order the server applied them (decoded in reverse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codings {
    list: [Coding; MAX_CODINGS],
    len: u8,
}

impl Codings {
    /// The codings applied, first applied first.
    pub fn as_slice(&self) -> &[Coding] {
        &self.list[..self.len as usize]
    }

    /// Parses a `Content-Encoding` value: `None` for no coding (absent or `identity`); an error
    /// names a coding reqlife does not decode.
    pub fn parse(value: &[u8]) -> Result<Option<Codings>, String> {
        let mut out = Codings {
            list: [Coding::Gzip; MAX_CODINGS],
            len: 0,
        };
        for token in value.split(|&b| b == b',') {
            let token = token.trim_ascii();
            let coding =
                if token.eq_ignore_ascii_case(b"gzip") || token.eq_ignore_ascii_case(b"x-gzip") {
                    Coding::Gzip
                } else if token.eq_ignore_ascii_case(b"deflate") {
                    Coding::Deflate
                } else if token.eq_ignore_ascii_case(b"br") {
                    Coding::Br
                } else if token.is_empty() || token.eq_ignore_ascii_case(b"identity") {
                    continue;
                } else {
                    return Err(format!(
                        "Content-Encoding '{}' is not one reqlife decodes (gzip, deflate, br)",
                        token.escape_ascii()
                    ));
                };
            if out.len as usize == MAX_CODINGS {
                return Err(format!(
                    "Content-Encoding '{}' stacks more than {MAX_CODINGS} codings",
                    value.escape_ascii()
                ));
            }
            out.list[out.len as usize] = coding;
            out.len += 1;
        }
        Ok((out.len > 0).then_some(out))
    }
}

/// Whether `bytes` start with a zlib header (RFC 1950: CM = 8, and the check bits).
fn zlib_wrapped(bytes: &[u8]) -> bool {
    match bytes {
        [cmf, flg, ..] => cmf & 0x0f == 8 && (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 == 0,
        _ => false,
    }
}

/// A reader that undoes `coding` over `input`.
fn reader<'a>(coding: Coding, input: &'a [u8]) -> Box<dyn Read + 'a> {
    match coding {
        Coding::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(input)),
        Coding::Deflate if zlib_wrapped(input) => {
            Box::new(flate2::bufread::ZlibDecoder::new(input))
        }
        Coding::Deflate => Box::new(flate2::bufread::DeflateDecoder::new(input)),
        Coding::Br => Box::new(brotli::Decompressor::new(input, 4096)),
    }
}

fn name(c: Coding) -> &'static str {
    match c {
        Coding::Gzip => "gzip",
        Coding::Deflate => "deflate",
        Coding::Br => "br",
    }
}

/// Keeps a body being read with `--compressed` and decodes it once complete. One per
/// connection slot; its buffers are reused from response to response.
#[derive(Debug)]
pub struct BodyDecoder {
    /// The body as received (bounded by `max_bytes`).
    body: Vec<u8>,
    /// Decoded bytes land here and are dropped.
    scratch: Vec<u8>,
    /// An inner layer's output, for stacked codings.
    layer: Vec<u8>,
    max_bytes: u64,
}

impl BodyDecoder {
    /// A decoder that keeps at most `max_bytes` of a body.
    pub fn new(max_bytes: u64) -> Self {
        BodyDecoder {
            body: Vec::new(),
            scratch: vec![0; 16 * 1024],
            layer: Vec::new(),
            max_bytes,
        }
    }

    /// Starts a new body.
    pub fn clear(&mut self) {
        self.body.clear();
    }

    /// Keeps more body bytes; an error when the body outgrows `--max-body`.
    pub fn keep(&mut self, data: &[u8]) -> Result<(), String> {
        if (self.body.len() + data.len()) as u64 > self.max_bytes {
            return Err(format!(
                "compressed body larger than --max-body ({} bytes)",
                self.max_bytes
            ));
        }
        self.body.extend_from_slice(data);
        Ok(())
    }

    /// Decodes the kept body (`codings` undone last first) and returns its decoded length; an
    /// error when it is not valid in its coding or decodes to more than `--max-body`.
    pub fn decode(&mut self, codings: &Codings) -> Result<u64, String> {
        let list = codings.as_slice();
        let Some((&outer, inner)) = list.split_last() else {
            return Ok(self.body.len() as u64);
        };
        let max = self.max_bytes;
        let mut input = std::mem::take(&mut self.body);
        // Inner layers (stacked codings, rare) are decoded into a buffer; the last one is
        // only counted.
        let mut coding = outer;
        for &next in inner.iter().rev() {
            self.layer.clear();
            let r = reader(coding, &input)
                .take(max + 1)
                .read_to_end(&mut self.layer);
            if let Err(e) = r {
                self.body = input;
                return Err(format!("invalid {} body: {e}", name(coding)));
            }
            if self.layer.len() as u64 > max {
                self.body = input;
                return Err(format!(
                    "body decodes to more than --max-body ({max} bytes)"
                ));
            }
            std::mem::swap(&mut input, &mut self.layer);
            coding = next;
        }
        let result =
            count_decoded(reader(coding, &input), &mut self.scratch, max).map_err(|e| match e {
                Some(e) => format!("invalid {} body: {e}", name(coding)),
                None => format!("body decodes to more than --max-body ({max} bytes)"),
            });
        self.body = input;
        result
    }
}

/// Reads `r` to its end through `scratch`, counting; `Err(None)` past `max` bytes.
fn count_decoded(
    mut r: impl Read,
    scratch: &mut [u8],
    max: u64,
) -> Result<u64, Option<std::io::Error>> {
    let mut total = 0u64;
    loop {
        match r.read(scratch) {
            Ok(0) => return Ok(total),
            Ok(n) => {
                total += n as u64;
                if total > max {
                    return Err(None);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Some(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const TEXT: &[u8] = b"the life of a request, split into phases; the life of a request, again";

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn br(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut w = brotli::CompressorWriter::new(&mut out, 4096, 5, 22);
            w.write_all(data).unwrap();
        }
        out
    }

    fn decode(header: &str, body: &[u8], max: u64) -> Result<u64, String> {
        let codings = Codings::parse(header.as_bytes())?.expect("a coding");
        let mut d = BodyDecoder::new(max);
        d.clear();
        d.keep(body)?;
        d.decode(&codings)
    }

    #[test]
    fn content_encoding_values() {
        use Coding::*;
        // (header value, codings, or a part of the error)
        type Want = Result<Option<&'static [Coding]>, &'static str>;
        let rows: [(&str, Want); 8] = [
            ("gzip", Ok(Some(&[Gzip]))),
            ("x-gzip", Ok(Some(&[Gzip]))),       // the old alias
            (" DEFLATE ", Ok(Some(&[Deflate]))), // case and spaces
            ("br", Ok(Some(&[Br]))),
            ("deflate, br", Ok(Some(&[Deflate, Br]))), // applied in this order
            ("identity", Ok(None)),                    // no coding
            ("zstd", Err("'zstd' is not one reqlife decodes")),
            ("gzip, gzip, gzip, gzip, gzip", Err("more than 4")),
        ];
        for (value, want) in rows {
            let got = Codings::parse(value.as_bytes());
            match want {
                Ok(list) => {
                    assert_eq!(got.unwrap().as_ref().map(|c| c.as_slice()), list, "{value}")
                }
                Err(part) => assert!(got.unwrap_err().contains(part), "{value}"),
            }
        }
    }

    #[test]
    fn every_coding_decodes_to_the_original_length() {
        let n = TEXT.len() as u64;
        // (Content-Encoding, body as sent)
        let rows = [
            ("gzip", gzip(TEXT)),
            ("deflate", zlib(TEXT)),        // deflate as HTTP means it: zlib
            ("deflate", raw_deflate(TEXT)), // and the raw form some servers send
            ("br", br(TEXT)),
            ("gzip, br", br(&gzip(TEXT))), // stacked: br applied last, undone first
        ];
        for (header, body) in rows {
            assert_eq!(decode(header, &body, 1 << 20), Ok(n), "{header}");
        }
    }

    #[test]
    fn bad_bodies_and_limits_are_errors() {
        let bomb = gzip(&vec![0u8; 100_000]);
        // (Content-Encoding, body, --max-body, a part of the error)
        let rows = [
            (
                "gzip",
                b"not gzip at all".to_vec(),
                1 << 20,
                "invalid gzip body",
            ),
            ("br", vec![0xff; 64], 1 << 20, "invalid br body"),
            (
                "gzip",
                bomb.clone(),
                50_000,
                "decodes to more than --max-body",
            ),
            ("gzip", gzip(TEXT), 8, "larger than --max-body"), // the body as received
        ];
        for (header, body, max, want) in rows {
            let err = decode(header, &body, max).unwrap_err();
            assert!(err.contains(want), "{header}: {err}");
        }
        // The same bomb within the limit decodes.
        assert_eq!(decode("gzip", &bomb, 200_000), Ok(100_000));
    }
}
