//! HTTP/1.1 chunked framing: an incremental decoder that counts and skips the data (keeping it
//! for `--compressed`, telling a streamed response's tracker where each chunk ends) and keeps
//! the trailer section, whose `Server-Timing` the exchange reads.

use super::decode::BodyDecoder;
use super::events::EventTracker;

/// Where a chunked-body decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size.
    Size,
    /// Skipping a chunk extension up to the line end.
    Ext,
    SizeLf,
    /// Skipping `remaining` data bytes.
    Data,
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line).
    TrailerStart,
    TrailerLine,
    TrailerLf,
    EndLf,
    Done,
}

/// An incremental decoder of chunked framing that counts and skips the data.
#[derive(Debug)]
pub struct ChunkDecoder {
    state: Chunk,
    size: u64,
    /// Data bytes seen (the body without its framing).
    data: u64,
    digits: u32,
    trailer_bytes: usize,
    max_trailer_bytes: usize,
}

impl ChunkDecoder {
    /// A decoder at the start of a chunked body that accepts at most `max_trailer_bytes` of
    /// trailer.
    pub fn new(max_trailer_bytes: usize) -> Self {
        ChunkDecoder {
            state: Chunk::Size,
            size: 0,
            data: 0,
            digits: 0,
            trailer_bytes: 0,
            max_trailer_bytes,
        }
    }

    /// Whether the body's last chunk and trailer have been read.
    pub fn is_done(&self) -> bool {
        self.state == Chunk::Done
    }

    /// The data bytes of the chunks so far (the body without its framing).
    pub fn data_bytes(&self) -> u64 {
        self.data
    }

    /// Consumes bytes of the body; returns how many were used (fewer than given only when
    /// the body ended inside `data`). Chunk data goes to `keeper` when a body is kept.
    pub fn feed(
        &mut self,
        data: &[u8],
        trailers: &mut Vec<u8>,
        keeper: &mut Option<&mut BodyDecoder>,
    ) -> Result<usize, &'static str> {
        self.feed_tracked(data, trailers, keeper, &mut None)
    }

    /// [`ChunkDecoder::feed`], chunk data going to `tracker` too when a streamed response is
    /// tracked (a chunk's end is a unit's end).
    pub fn feed_tracked(
        &mut self,
        data: &[u8],
        trailers: &mut Vec<u8>,
        keeper: &mut Option<&mut BodyDecoder>,
        tracker: &mut Option<&mut EventTracker>,
    ) -> Result<usize, &'static str> {
        let mut i = 0;
        while i < data.len() && self.state != Chunk::Done {
            if self.state == Chunk::Data {
                i += self.take_data(&data[i..], keeper, tracker)?;
                continue;
            }
            let b = data[i];
            i += 1;
            self.state = match (self.state, b) {
                (Chunk::Size, b) if b.is_ascii_hexdigit() => {
                    self.digits += 1;
                    if self.digits > 15 {
                        return Err("chunk size too large");
                    }
                    self.size = self.size * 16 + (b as char).to_digit(16).unwrap_or(0) as u64;
                    Chunk::Size
                }
                (Chunk::Size, b';' | b' ' | b'\t') if self.digits > 0 => Chunk::Ext,
                (Chunk::Size, b'\r') if self.digits > 0 => Chunk::SizeLf,
                (Chunk::Size, b'\n') if self.digits > 0 => self.after_size(),
                (Chunk::Size, _) => return Err("invalid chunk size line"),
                (Chunk::Ext, b'\r') => Chunk::SizeLf,
                (Chunk::Ext, b'\n') => self.after_size(),
                (Chunk::Ext, _) => Chunk::Ext,
                (Chunk::SizeLf, b'\n') => self.after_size(),
                (Chunk::SizeLf, _) => return Err("chunk size line not ended by CRLF"),
                (Chunk::DataCr, b'\r') => Chunk::DataLf,
                (Chunk::DataCr, b'\n') => Chunk::Size,
                (Chunk::DataCr, _) => return Err("chunk data longer than its size"),
                (Chunk::DataLf, b'\n') => Chunk::Size,
                (Chunk::DataLf, _) => return Err("chunk data not ended by CRLF"),
                (Chunk::TrailerStart, b'\r') => Chunk::EndLf,
                (Chunk::TrailerStart, b'\n') => Chunk::Done,
                (Chunk::TrailerStart | Chunk::TrailerLine, b) => {
                    self.trailer_bytes += 1;
                    if self.trailer_bytes > self.max_trailer_bytes {
                        return Err("chunked trailers too large");
                    }
                    trailers.push(b);
                    match b {
                        b'\r' => Chunk::TrailerLf,
                        b'\n' => Chunk::TrailerStart,
                        _ => Chunk::TrailerLine,
                    }
                }
                (Chunk::TrailerLf, b'\n') => Chunk::TrailerStart,
                (Chunk::TrailerLf, _) => return Err("trailer line not ended by CRLF"),
                (Chunk::EndLf, b'\n') => Chunk::Done,
                (Chunk::EndLf, _) => return Err("chunked body not ended by CRLF"),
                (Chunk::Data | Chunk::Done, _) => unreachable!("handled above"),
            };
            if self.state == Chunk::Size && matches!(b, b'\n') {
                self.size = 0;
                self.digits = 0;
            }
        }
        Ok(i)
    }

    /// Takes what `data` holds of the current chunk's data (to `keeper` and `tracker` too):
    /// how many bytes.
    #[inline]
    fn take_data(
        &mut self,
        data: &[u8],
        keeper: &mut Option<&mut BodyDecoder>,
        tracker: &mut Option<&mut EventTracker>,
    ) -> Result<usize, &'static str> {
        let take = data.len().min(self.size as usize) as u64;
        let take = take.min(self.size);
        if let Some(d) = keeper {
            d.keep(&data[..take as usize])
                .map_err(|_| "chunked body larger than --max-body")?;
        }
        if let Some(t) = tracker {
            t.body(&data[..take as usize])?;
        }
        self.size -= take;
        self.data += take;
        if self.size == 0 {
            self.state = Chunk::DataCr;
            if let Some(t) = tracker {
                t.unit_end();
            }
        }
        Ok(take as usize)
    }

    /// After a size line: data, or the trailers after the last chunk.
    fn after_size(&mut self) -> Chunk {
        if self.size == 0 {
            Chunk::TrailerStart
        } else {
            Chunk::Data
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunked_whole_and_byte_by_byte() {
        let body = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nServer-Timing: x;dur=1\r\n\r\nEXTRA";
        let mut d = ChunkDecoder::new(1024);
        let used = d.feed(body, &mut Vec::new(), &mut None).unwrap();
        assert!(d.is_done());
        assert_eq!(&body[used..], b"EXTRA");

        let mut d = ChunkDecoder::new(1024);
        let mut total = 0;
        for b in body.iter() {
            if d.is_done() {
                break;
            }
            total += d
                .feed(std::slice::from_ref(b), &mut Vec::new(), &mut None)
                .unwrap();
        }
        assert!(d.is_done());
        assert_eq!(total, used);
    }

    #[test]
    fn chunked_errors() {
        // (body, message)
        let rows: &[(&[u8], &str)] = &[
            (b"zz\r\n", "invalid chunk size line"),
            (b"\r\n", "invalid chunk size line"),
            (b"3\r\nabcd\r\n", "chunk data longer than its size"),
            (b"ffffffffffffffff\r\n", "chunk size too large"),
            (
                b"0\r\nX-Big: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n",
                "chunked trailers too large",
            ),
        ];
        for (body, want) in rows {
            let mut d = ChunkDecoder::new(16);
            assert_eq!(
                d.feed(body, &mut Vec::new(), &mut None),
                Err(*want),
                "{:?}",
                body.escape_ascii().to_string()
            );
        }
    }

    #[test]
    fn chunked_partial_is_not_done() {
        let mut d = ChunkDecoder::new(64);
        assert_eq!(
            d.feed(b"a\r\n01234", &mut Vec::new(), &mut None).unwrap(),
            8
        );
        assert!(!d.is_done());
        d.feed(b"56789\r\n0\r\n\r\n", &mut Vec::new(), &mut None)
            .unwrap();
        assert!(d.is_done());
    }
}
