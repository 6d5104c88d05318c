//! The HPACK decoder over arbitrary bytes: a maximum table size from the first byte, then
//! blocks (each after a byte giving its length) decoded by one decoder; each block's fields
//! also go through the encoder and a second decoder, and must come back the same.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    reqlife::engine::http2::hpack::decode_any(data);
});
