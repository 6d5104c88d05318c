//! gRPC unary calls over the HTTP/2 engine: the length-prefixed message framing (a flag byte,
//! then the message's length as a big-endian u32, then the message), the request message
//! encoded from JSON through its descriptor ([`Codec`], prost-reflect's dynamic messages), and
//! the call's status read from the response ([`Status`]: `grpc-status` and `grpc-message` in
//! the trailers, or in the headers of a trailers-only response; an HTTP status without a
//! `grpc-status` is mapped to a code as the gRPC spec says). [`reflect`] asks a server for
//! the descriptors of a service (gRPC server reflection) when no descriptor set is given.

mod channel;
pub mod reflect;

use super::extras::{self, Tally};
use crate::model::ErrorKind;
use prost::Message;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use std::time::Duration;

pub(in crate::engine) use channel::GrpcChannel;
pub use channel::GrpcWire;

/// The names of the gRPC status codes, by number (grpc/doc/statuscodes.md).
pub const CODES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// OK: the one status of a call that succeeded.
const OK: u32 = 0;

/// UNKNOWN: what a response that says nothing valid about its status counts as.
const UNKNOWN: u32 = 2;

/// The name of status `code` (`CODE_42` for a number outside the spec's).
pub fn code_name(code: u32) -> std::borrow::Cow<'static, str> {
    match CODES.get(code as usize) {
        Some(name) => (*name).into(),
        None => format!("CODE_{code}").into(),
    }
}

/// The code of an HTTP response that carries no `grpc-status` (grpc/doc/http-grpc-status-mapping.md).
pub fn code_of_http(status: u16) -> u32 {
    match status {
        400 => 13,             // INTERNAL
        401 => 16,             // UNAUTHENTICATED
        403 => 7,              // PERMISSION_DENIED
        404 => 12,             // UNIMPLEMENTED
        429 | 502..=504 => 14, // UNAVAILABLE
        _ => UNKNOWN,
    }
}

/// One length-prefixed, uncompressed message: flag 0, the length, the message.
pub fn frame(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// The `grpc-timeout` header's value for `d`: at most 8 digits and a unit (H, M, S, m, u, n),
/// the finest unit that fits, rounded up so the server's deadline is never shorter.
pub fn timeout_value(d: Duration) -> String {
    let ns = d.as_nanos().max(1);
    for (unit, per) in [
        ('n', 1u128),
        ('u', 1_000),
        ('m', 1_000_000),
        ('S', 1_000_000_000),
        ('M', 60_000_000_000),
        ('H', 3_600_000_000_000),
    ] {
        let n = ns.div_ceil(per);
        if n < 100_000_000 {
            return format!("{n}{unit}");
        }
    }
    "99999999H".into()
}

/// Encodes request messages of one type from JSON (protobuf's JSON mapping).
#[derive(Debug, Clone)]
pub struct Codec {
    input: MessageDescriptor,
}

impl Codec {
    /// A codec for a method whose input message is `input`.
    pub fn new(input: MessageDescriptor) -> Self {
        Codec { input }
    }

    /// The message that `json` describes, framed; the error says what does not match.
    pub fn frame_json(&self, json: &[u8]) -> Result<Vec<u8>, String> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let message = DynamicMessage::deserialize(self.input.clone(), &mut de)
            .and_then(|m| de.end().map(|_| m))
            .map_err(|e| format!("the data is not a {} in JSON: {e}", self.input.full_name()))?;
        Ok(frame(&message.encode_to_vec()))
    }
}

/// The status of a call as its response gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The code, once known (`None` until a `grpc-status` was read).
    pub code: Option<u32>,
    /// `grpc-message`, percent-decoded.
    pub message: String,
}

impl Status {
    /// Forgets the previous call's status.
    pub fn clear(&mut self) {
        self.code = None;
        self.message.clear();
    }

    /// Reads `grpc-status` and `grpc-message` from a header block (trailers, or the headers
    /// of a trailers-only response), if it has them.
    pub fn read<'f>(&mut self, fields: impl Iterator<Item = (&'f [u8], &'f [u8])>) {
        let (mut code, mut message) = (None, None);
        for (name, value) in fields {
            match name {
                b"grpc-status" => code = Some(value),
                b"grpc-message" => message = Some(value),
                _ => {}
            }
        }
        let Some(code) = code else {
            return;
        };
        self.code = Some(
            std::str::from_utf8(code)
                .ok()
                .and_then(|c| c.trim().parse().ok())
                .unwrap_or(UNKNOWN),
        );
        self.message.clear();
        if let Some(m) = message {
            self.message = percent_decode(m);
        }
    }

    /// The final code of a response with HTTP status `http`: its `grpc-status`, or what the
    /// HTTP status maps to when there was none (noting why in the message).
    pub fn finish(&mut self, http: u16) -> u32 {
        match self.code {
            Some(c) => c,
            None => {
                let c = if http == 200 {
                    UNKNOWN
                } else {
                    code_of_http(http)
                };
                self.message = format!("HTTP status {http} without grpc-status");
                self.code = Some(c);
                c
            }
        }
    }

    /// The call's status as its extras tell it ([`Tally::Grpc`]), once [`Status::finish`]ed:
    /// a code other than OK fails the call, whatever its HTTP status.
    pub fn told(&self) -> Option<extras::Status<'_>> {
        self.code.map(|code| extras::Status {
            tally: Tally::Grpc,
            code,
            message: &self.message,
            failed: (code != OK).then_some(ErrorKind::Grpc),
        })
    }
}

/// `grpc-message` is percent-encoded UTF-8; a malformed escape is kept as it is.
fn percent_decode(v: &[u8]) -> String {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (v[i], v.get(i + 1), v.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap() * 16 + hex(l).unwrap()) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::http2::HeaderFields;

    #[test]
    fn timeouts_fit_eight_digits_and_round_up() {
        // (duration, the header's value)
        let rows = [
            (Duration::from_millis(50), "50000000n"),
            (Duration::from_millis(250), "250000u"),
            (Duration::from_secs(10), "10000000u"),
            (Duration::from_secs(100), "100000m"),
            (Duration::from_nanos(1_000_000_001), "1000001u"),
            (Duration::from_secs(7_000_000_000), "1944445H"),
        ];
        for (d, want) in rows {
            assert_eq!(timeout_value(d), want, "{d:?}");
        }
    }

    #[test]
    fn statuses_from_trailers_or_from_http() {
        let mut s = Status::default();
        let mut h = http::HeaderMap::new();
        h.insert("grpc-status", "14".parse().unwrap());
        h.insert("grpc-message", "down%20for%2Fnow %zz".parse().unwrap());
        s.read(h.fields());
        assert_eq!(s.finish(200), 14);
        assert_eq!(s.message, "down for/now %zz");
        assert_eq!(code_name(14), "UNAVAILABLE");
        assert_eq!(code_name(99), "CODE_99");
        // no grpc-status: the HTTP status's code
        for (http, code) in [(200, 2), (404, 12), (503, 14), (401, 16), (500, 2)] {
            s.clear();
            s.read(http::HeaderMap::new().fields());
            assert_eq!(s.finish(http), code, "{http}");
            assert!(s.message.contains(&http.to_string()));
        }
        // a status that is not a number is UNKNOWN
        s.clear();
        h.insert("grpc-status", "x".parse().unwrap());
        s.read(h.fields());
        assert_eq!(s.finish(200), 2);
    }

    #[test]
    fn frames_are_length_prefixed() {
        assert_eq!(frame(b"abc"), [0, 0, 0, 0, 3, b'a', b'b', b'c']);
        assert_eq!(frame(b""), [0, 0, 0, 0, 0]);
    }
}
