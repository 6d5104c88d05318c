//! The WebSocket frame reader (a client's of plain replies, one that keeps every message with
//! permessage-deflate agreed, a server's) over arbitrary bytes, under an arbitrary
//! `--max-body`: fed in pieces of an arbitrary size and byte by byte, each gives what it gives
//! fed at once.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| *b as usize % 64 + 1);
    let max = data.get(1).map_or(0, |b| u64::from(*b) * 16);
    reqlife::engine::websocket::frame::read_any(data.get(2..).unwrap_or(&[]), split, max);
});
