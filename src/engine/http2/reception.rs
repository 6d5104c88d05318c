//! A response being received on a stream, HTTP/2's or HTTP/3's (the two share it): its
//! `Server-Timing` values, its decoded header bytes, its body counted, kept for
//! `--compressed`'s decoder and tracked for a streamed response's events, and a gRPC call's
//! status, each going to the exchange's [`Sinks`].

use super::Sinks;
use crate::engine::decode::{BodyDecoder, Codings};
use crate::engine::events::EventTracker;
use crate::engine::grpc::Status;
use crate::model::{Timestamps, Traffic};
use std::time::Instant;

/// A response whose head arrived, being received.
pub(in crate::engine) struct Reception<'a> {
    timing: &'a mut Vec<u8>,
    grpc: Option<&'a mut Status>,
    header_decoded: u64,
    body_bytes: u64,
    codings: Option<Codings>,
    keeper: Option<&'a mut BodyDecoder>,
    tracker: Option<&'a mut EventTracker>,
}

impl<'a> Reception<'a> {
    /// A response whose head (`headers`, after `:status`) arrived, what it says going to
    /// `sinks`.
    pub(in crate::engine) fn begin(
        headers: &impl HeaderFields,
        sinks: &'a mut Sinks<'_>,
    ) -> Result<Self, String> {
        let Sinks {
            timing,
            decoder,
            tracker,
            grpc,
            ..
        } = sinks;
        let (mut bytes, mut coding, mut event_stream) = (0, None, false);
        for (name, value) in headers.fields() {
            bytes += (name.len() + value.len()) as u64;
            match name {
                b"server-timing" => append(timing, value),
                b"content-encoding" => coding = Some(value),
                b"content-type" => {
                    event_stream = crate::engine::events::is_event_stream(value);
                }
                _ => {}
            }
        }
        let mut grpc = grpc.as_deref_mut();
        if let Some(g) = grpc.as_deref_mut() {
            // A trailers-only response (an error) carries its status in the headers.
            g.read(headers.fields());
        }
        let codings = match (&*decoder, coding) {
            (Some(_), Some(v)) => Codings::parse(v)?,
            _ => None,
        };
        let tracker: &'a mut EventTracker = tracker;
        let tracker = tracker.begin(event_stream).then_some(tracker);
        let keeper = match (codings, decoder.as_deref_mut()) {
            (Some(_), Some(d)) => {
                d.clear();
                Some(d)
            }
            _ => None,
        };
        Ok(Reception {
            timing,
            grpc,
            // `:status` and its three digits, then the other fields.
            header_decoded: 10 + bytes,
            body_bytes: 0,
            codings,
            keeper,
            tracker,
        })
    }

    /// A piece of the body (a body past `--max-body` on a tracked stream is an error).
    pub(in crate::engine) fn data(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.body_bytes += chunk.len() as u64;
        if let Some(d) = self.keeper.as_deref_mut() {
            d.keep(chunk)?;
        }
        crate::engine::events::track(&mut self.tracker, chunk).map_err(|e| e.detail)
    }

    /// The body ended (before any trailers).
    pub(in crate::engine) fn body_end(&mut self) {
        if let Some(t) = self.tracker.as_deref_mut() {
            t.finish();
        }
    }

    /// The trailers.
    pub(in crate::engine) fn trailers(&mut self, trailers: &impl HeaderFields) {
        for (name, value) in trailers.fields() {
            self.header_decoded += (name.len() + value.len()) as u64;
            if name == b"server-timing" {
                append(self.timing, value);
            }
        }
        if let Some(g) = self.grpc.as_deref_mut() {
            g.read(trailers.fields());
        }
    }

    /// The response is complete: stamps `done` (and `decoded`, decoding a kept body); its
    /// traffic, `header` (the bytes on the wire) left to the caller.
    pub(in crate::engine) fn finish(self, stamps: &mut Timestamps) -> Result<Traffic, String> {
        stamps.done = Some(Instant::now());
        let mut traffic = Traffic {
            header: 0,
            header_decoded: self.header_decoded,
            body: self.body_bytes,
            body_decoded: self.body_bytes,
        };
        if let (Some(d), Some(c)) = (self.keeper, &self.codings) {
            traffic.body_decoded = d.decode(c)?;
            stamps.decoded = Some(Instant::now());
        }
        Ok(traffic)
    }
}

/// The header fields of a response, however they are held: lowercase names (as HTTP/2 and
/// HTTP/3 send them) and values, in order. Their decoded size, as h2load counts it, is the
/// sum of the names' and values' lengths.
pub(in crate::engine) trait HeaderFields {
    fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])>;
}

impl HeaderFields for http::HeaderMap {
    fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.iter()
            .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()))
    }
}

impl HeaderFields for super::conn::Fields {
    fn fields(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.iter()
    }
}

fn append(timing: &mut Vec<u8>, value: &[u8]) {
    if !timing.is_empty() {
        timing.extend_from_slice(b", ");
    }
    timing.extend_from_slice(value);
}
