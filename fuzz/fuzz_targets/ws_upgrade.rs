//! The answer to the WebSocket upgrade over arbitrary bytes (after a proper `101`'s start when
//! the first byte is odd): read in pieces of an arbitrary size and byte by byte, it comes out
//! as it does read at once; a whole `101`'s extensions are then negotiated.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| *b as usize % 64 + 1);
    reqlife::engine::websocket::upgrade::answer_any(data.get(1..).unwrap_or(&[]), split);
});
