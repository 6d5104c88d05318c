use super::*;

proptest::proptest! {
    // Any bytes, in any pieces: fuzz/fuzz_targets/http1_response.rs. What random bytes
    // seldom reach, a status line, header lines and chunked framing, is generated here.
    #[test]
    fn any_response_like_bytes_parse_without_panic(
        status in 100u16..600,
        headers in proptest::collection::vec("[A-Za-z-]{1,12}: [ -~]{0,20}", 0..6),
        chunked in proptest::bool::ANY,
        body in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        split in 1usize..32,
    ) {
        let mut r = format!("HTTP/1.1 {status} X\r\n").into_bytes();
        for h in &headers {
            r.extend_from_slice(h.as_bytes());
            r.extend_from_slice(b"\r\n");
        }
        if chunked {
            r.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        r.extend_from_slice(b"\r\n");
        r.extend_from_slice(&body);
        parse_any(&r, split);
    }
}
