//! The Server-Timing parser over arbitrary header values.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut metrics = 0;
    let invalid = reqlife::engine::server_timing::parse(data, |_| metrics += 1);
    assert!(metrics + invalid as usize <= data.len() + 1);
});
