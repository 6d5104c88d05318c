//! The command line's unit parsers: durations, counts, rates, stages, segments, start times.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::util::units::*;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(d) = parse_duration(s) {
        // A parsed duration prints (in nanoseconds) and parses back to itself.
        assert_eq!(parse_duration(&format!("{}ns", d.as_nanos())).ok(), Some(d));
    }
    let _ = parse_count(s);
    let _ = parse_rate(s);
    let _ = parse_stages(s);
    let _ = reqlife::model::Segment::parse(s);
    let _ = parse_start_at(s);
});
