//! The reply-field scanner of `--ws-match FIELD` over an arbitrary message, for a path of one
//! to three names taken from the input: whatever the bytes, a value found is a piece of the
//! message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::engine::websocket::field::{parse_path, value_of};

fuzz_target!(|data: &[u8]| {
    // The path, up to the first newline; the message, after it.
    let at = data.iter().position(|b| *b == b'\n').unwrap_or(data.len());
    let (path, message) = (&data[..at], data.get(at + 1..).unwrap_or(&[]));
    let Some(path) = std::str::from_utf8(path).ok().and_then(parse_path) else {
        return;
    };
    if let Some(value) = value_of(message, &path) {
        let range = message.as_ptr_range();
        let inside = range.start <= value.as_ptr() && value.as_ptr_range().end <= range.end;
        assert!(inside, "a value outside the message");
    }
});
