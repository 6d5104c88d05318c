//! The framed reply reader (`tcp://`, `--framing u32be` and `none`) over arbitrary bytes, fed
//! at once and in pieces of an arbitrary size, under an arbitrary `--max-body`.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| *b as usize % 64 + 1);
    let max = data.get(1).map_or(0, |b| u64::from(*b) * 16);
    reqlife::engine::framed::read_any(data, split, max);
});
