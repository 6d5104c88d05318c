//! permessage-deflate's inflater over arbitrary messages, under an arbitrary `--max-body`,
//! text or binary, with the server's window kept or reset: each message inflated as it came,
//! then deflated and inflated back to its length.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    reqlife::engine::websocket::deflate::inflate_any(data);
});
