//! A response's body read as its head framed it: by Content-Length, chunked, or until the
//! server closes; counted (and, with `--compressed`, kept for decoding), never stored.

use super::head::trailer_timing;
use super::Http1Conn;
use crate::engine::chunked::ChunkDecoder;
use crate::engine::decode::BodyDecoder;
use crate::engine::events::{track, EventTracker};
use crate::engine::EngineError;
use crate::model::ErrorKind;

/// A body read as its head framed it.
pub(super) struct Body {
    /// Body bytes (chunked: the data, without the framing).
    pub(super) bytes: u64,
    /// Bytes read for it beyond those that came with the head.
    pub(super) read: u64,
    /// Nothing followed the body (or, pipelined, what followed is the next response's), so
    /// the connection may carry another request.
    pub(super) keep_alive: bool,
    /// Pipelined: the bytes after the body in the buffer (`buf[a..b]`), the next response's.
    pub(super) rest: Option<(usize, usize)>,
}

impl Http1Conn {
    /// A body of Content-Length `len`, of which `buffered` bytes already follow the head
    /// (which ends at `start`); `pipelined`: bytes beyond it are the next response's.
    #[inline]
    pub(super) async fn length_body(
        &mut self,
        start: usize,
        buffered: usize,
        len: u64,
        keeper: &mut Option<&mut BodyDecoder>,
        tracker: &mut Option<&mut EventTracker>,
        pipelined: bool,
    ) -> Result<Body, EngineError> {
        if buffered as u64 > len && !pipelined {
            return Err(longer_than_its_length(buffered as u64 - len, len));
        }
        let first = (buffered as u64).min(len) as usize;
        keep(keeper, &self.buf[start..start + first])?;
        track(tracker, &self.buf[start..start + first])?;
        let mut remaining = len - first as u64;
        let mut read = 0u64;
        let mut rest = (first < buffered).then_some((start + first, start + buffered));
        while remaining > 0 {
            let n = self.read_at(0).await?;
            if n == 0 {
                return Err(EngineError::new(
                    ErrorKind::Closed,
                    format!(
                        "connection closed after {} of {len} body bytes",
                        len - remaining
                    ),
                ));
            }
            read += n as u64;
            if n as u64 > remaining && !pipelined {
                return Err(longer_than_its_length(n as u64 - remaining, len));
            }
            let take = (n as u64).min(remaining) as usize;
            keep(keeper, &self.buf[..take])?;
            track(tracker, &self.buf[..take])?;
            remaining -= take as u64;
            if take < n {
                rest = Some((take, n));
            }
        }
        Ok(Body {
            bytes: len,
            read,
            keep_alive: true,
            rest,
        })
    }

    /// A chunked body, whose first bytes are `buf[start..filled]`; the `Server-Timing` of
    /// its trailers go to `timing`; `pipelined`: bytes after it are the next response's.
    #[inline]
    pub(super) async fn chunked_body(
        &mut self,
        (mut start, mut filled): (usize, usize),
        max_header_bytes: usize,
        timing: &mut Vec<u8>,
        keeper: &mut Option<&mut BodyDecoder>,
        tracker: &mut Option<&mut EventTracker>,
        pipelined: bool,
    ) -> Result<Body, EngineError> {
        let mut decoder = ChunkDecoder::new(max_header_bytes);
        let mut read = 0u64;
        self.trailers.clear();
        loop {
            let used = decoder
                .feed_tracked(
                    &self.buf[start..filled],
                    &mut self.trailers,
                    keeper,
                    tracker,
                )
                .map_err(|e| EngineError::new(ErrorKind::Protocol, e.to_string()))?;
            if decoder.is_done() {
                trailer_timing(&self.trailers, timing);
                let end = start + used;
                return Ok(Body {
                    bytes: decoder.data_bytes(),
                    read,
                    keep_alive: end == filled || pipelined,
                    rest: (pipelined && end < filled).then_some((end, filled)),
                });
            }
            // All fed bytes are consumed by the decoder (it keeps its own state).
            start = 0;
            let n = self.read_at(0).await?;
            if n == 0 {
                return Err(EngineError::new(
                    ErrorKind::Closed,
                    "connection closed in the middle of a chunked body".to_string(),
                ));
            }
            read += n as u64;
            filled = n;
        }
    }

    /// A body delimited by the end of the connection, whose first bytes are
    /// `buf[start..filled]`.
    #[inline]
    pub(super) async fn body_until_close(
        &mut self,
        start: usize,
        filled: usize,
        keeper: &mut Option<&mut BodyDecoder>,
        tracker: &mut Option<&mut EventTracker>,
    ) -> Result<Body, EngineError> {
        keep(keeper, &self.buf[start..filled])?;
        track(tracker, &self.buf[start..filled])?;
        let mut bytes = (filled - start) as u64;
        let mut read = 0u64;
        loop {
            let n = self.read_at(0).await?;
            if n == 0 {
                break;
            }
            read += n as u64;
            bytes += n as u64;
            keep(keeper, &self.buf[..n])?;
            track(tracker, &self.buf[..n])?;
        }
        Ok(Body {
            bytes,
            read,
            keep_alive: false,
            rest: None,
        })
    }
}

/// Bytes after a body of Content-Length `len`: the server's framing lies (no request was
/// pipelined, so nothing else may follow the response).
fn longer_than_its_length(extra: u64, len: u64) -> EngineError {
    EngineError::new(
        ErrorKind::Protocol,
        format!("{extra} bytes after a body of Content-Length {len}: the response is longer than it says"),
    )
}

/// Keeps body bytes for decoding, when a body is being kept.
fn keep(keeper: &mut Option<&mut BodyDecoder>, data: &[u8]) -> Result<(), EngineError> {
    match keeper {
        Some(d) => d
            .keep(data)
            .map_err(|e| EngineError::new(ErrorKind::Protocol, e)),
        None => Ok(()),
    }
}
