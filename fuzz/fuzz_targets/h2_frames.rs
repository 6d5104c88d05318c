//! The HTTP/2 client's connection state over a server's arbitrary bytes: after the server's
//! SETTINGS and with one stream (with a body) open, the bytes are taken as frames, split at an
//! arbitrary size; the stream's head and body are then asked for.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| *b as usize % 64 + 1);
    reqlife::engine::http2::receive_any(data.get(1..).unwrap_or(&[]), split);
});
