//! The HTTP/1.1 response driver's parsers (head, interim responses, chunked framing and
//! trailers, content codings) over arbitrary bytes, split at an arbitrary size.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| *b as usize % 64 + 1);
    reqlife::engine::http1::parse_any(data, split);
});
