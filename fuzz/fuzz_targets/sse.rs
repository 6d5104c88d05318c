//! The Server-Sent Events parser over arbitrary bytes: splitting the stream anywhere gives the
//! same events, the counting parser agrees with the collecting one, and nothing panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::engine::events::{parse_all, Count, SseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&split, stream)) = data.split_first() else {
        return;
    };
    let whole = parse_all(stream, stream.len().max(1));
    assert_eq!(parse_all(stream, usize::from(split).max(1)), whole);
    let mut p = SseParser::new();
    let n: u32 = stream.chunks(3).map(|b| p.feed(b, &mut Count)).sum();
    assert_eq!(n as usize, whole.len());
});
