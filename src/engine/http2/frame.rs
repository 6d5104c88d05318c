//! HTTP/2 frames as the client writes and reads them (RFC 9113, section 4 and 6): the 9-byte
//! frame header, the kinds, flags, settings and error codes the client uses, and the small
//! frames it writes.

/// The client's connection preface (RFC 9113, section 3.4).
pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

pub(super) const DATA: u8 = 0x0;
pub(super) const HEADERS: u8 = 0x1;
pub(super) const RST_STREAM: u8 = 0x3;
pub(super) const SETTINGS: u8 = 0x4;
pub(super) const PUSH_PROMISE: u8 = 0x5;
pub(super) const PING: u8 = 0x6;
pub(super) const GOAWAY: u8 = 0x7;
pub(super) const WINDOW_UPDATE: u8 = 0x8;
pub(super) const CONTINUATION: u8 = 0x9;

pub(super) const END_STREAM: u8 = 0x1;
pub(super) const ACK: u8 = 0x1;
pub(super) const END_HEADERS: u8 = 0x4;
pub(super) const PADDED: u8 = 0x8;
pub(super) const PRIORITY: u8 = 0x20;

pub(super) const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub(super) const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub(super) const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub(super) const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub(super) const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub(super) const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

pub(super) const NO_ERROR: u32 = 0x0;
pub(super) const PROTOCOL_ERROR: u32 = 0x1;
pub(super) const FLOW_CONTROL_ERROR: u32 = 0x3;
pub(super) const FRAME_SIZE_ERROR: u32 = 0x6;
pub(super) const REFUSED_STREAM: u32 = 0x7;
pub(super) const CANCEL: u32 = 0x8;
pub(super) const COMPRESSION_ERROR: u32 = 0x9;
pub(super) const ENHANCE_YOUR_CALM: u32 = 0xb;

/// The default (and smallest allowed) maximum frame size, and the largest.
pub(super) const DEFAULT_MAX_FRAME: usize = 16_384;
pub(super) const LARGEST_MAX_FRAME: usize = (1 << 24) - 1;
/// The largest flow-control window (2^31 - 1).
pub(super) const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The flow-control window every stream and the connection start with.
pub(super) const DEFAULT_WINDOW: i64 = 65_535;

/// A frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    pub(super) len: usize,
    pub(super) kind: u8,
    pub(super) flags: u8,
    pub(super) stream: u32,
}

impl Head {
    /// The header at the start of `b` (at least 9 bytes).
    pub(super) fn parse(b: &[u8]) -> Head {
        Head {
            len: (b[0] as usize) << 16 | (b[1] as usize) << 8 | b[2] as usize,
            kind: b[3],
            flags: b[4],
            stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & 0x7fff_ffff,
        }
    }
}

/// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 8441, section 3): the extended CONNECT that opens a
/// WebSocket on a stream.
pub(in crate::engine) const SETTINGS_ENABLE_CONNECT_PROTOCOL: u16 = 0x8;

/// A server's preface, the SETTINGS frame at the start of `bytes` (RFC 9113, section 3.4), once
/// whole (`None`: not yet): the value it gives setting `id` (the last, if given twice), or
/// `Err` as soon as the first frame is seen not to be SETTINGS.
pub(in crate::engine) fn preface_setting(bytes: &[u8], id: u16) -> Option<Result<Option<u32>, ()>> {
    if bytes.len() >= 4 && bytes[3] != SETTINGS {
        return Some(Err(()));
    }
    if bytes.len() < 9 {
        return None;
    }
    let body = bytes.get(9..9 + Head::parse(bytes).len)?;
    let value = body
        .chunks_exact(6)
        .rev()
        .find(|s| u16::from_be_bytes([s[0], s[1]]) == id)
        .map(|s| u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
    Some(Ok(value))
}

/// A frame header's bytes.
pub(super) fn head(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// Appends a frame header.
pub(super) fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&head(len, kind, flags, stream));
}

/// Appends a SETTINGS frame with `settings`.
pub(super) fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, 6 * settings.len(), SETTINGS, 0, 0);
    for (id, value) in settings {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&value.to_be_bytes());
    }
}

/// Appends a WINDOW_UPDATE frame.
pub(super) fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&increment.to_be_bytes());
}

/// Appends an RST_STREAM frame.
pub(super) fn put_rst(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

/// Appends a GOAWAY frame.
pub(super) fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&last_stream.to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A frame's payload without its padding (RFC 9113, section 6.1): `None` when the pad length
/// does not fit the payload.
pub(super) fn unpadded(flags: u8, payload: &[u8]) -> Option<&[u8]> {
    if flags & PADDED == 0 {
        return Some(payload);
    }
    let (&pad, rest) = payload.split_first()?;
    rest.len().checked_sub(pad as usize).map(|end| &rest[..end])
}

/// The name of an HTTP/2 error code (RFC 9113, section 7), if it has one.
pub fn code_name(code: u32) -> Option<&'static str> {
    const NAMES: [&str; 14] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(code as usize).copied()
}

/// An error code for a message: its name, or its number.
pub(super) fn code_text(code: u32) -> std::borrow::Cow<'static, str> {
    match code_name(code) {
        Some(name) => name.into(),
        None => format!("error code {code:#x}").into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_header_reads_back_as_written_and_padding_is_checked() {
        let mut out = Vec::new();
        put_head(
            &mut out,
            0x01_02_03,
            HEADERS,
            END_HEADERS | PADDED,
            0x8000_0005,
        );
        assert_eq!(out.len(), 9);
        // The reserved bit is not part of the stream identifier.
        let h = Head::parse(&out);
        assert_eq!(
            h,
            Head {
                len: 0x01_02_03,
                kind: HEADERS,
                flags: END_HEADERS | PADDED,
                stream: 5
            }
        );
        assert_eq!(unpadded(PADDED, &[2, b'a', b'b', 0, 0]), Some(&b"ab"[..]));
        assert_eq!(unpadded(PADDED, &[5, b'a']), None);
        assert_eq!(unpadded(PADDED, &[]), None);
        assert_eq!(unpadded(0, b"ab"), Some(&b"ab"[..]));
        assert_eq!(code_name(7), Some("REFUSED_STREAM"));
        assert_eq!(code_text(0x42), "error code 0x42");
    }
}
