use super::*;
use crate::engine::websocket::frame::{MessageReader, Step, WsError, BINARY, CONTINUATION, TEXT};

/// RFC 7692 7.2.3.1's "Hello", compressed (the tail taken off).
const HELLO: [u8; 7] = [0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];

fn inflater(agreed: Agreed, max: u64) -> Inflater {
    let mut i = Inflater::new(max);
    i.start(agreed);
    i
}

#[test]
fn rfc_7692s_hello_inflates_and_deflates_to_its_bytes() {
    let mut i = inflater(Agreed::default(), 1 << 20);
    assert_eq!(i.message(&HELLO, true), Ok(5));
    assert_eq!(&i.out[..5], b"Hello");
    // Our deflater gives the same bytes, and the empty message is one 0x00 (7.2.3.6).
    assert_eq!(deflated(b"Hello"), HELLO);
    assert_eq!(deflated(b""), [0x00]);
    assert_eq!(i.message(&[0x00], true), Ok(0));
}

#[test]
fn the_window_is_kept_across_messages_unless_the_server_resets_it() {
    // 7.2.3.2: the second "Hello" refers back to the first one's bytes.
    let second = [0xf2, 0x00, 0x11, 0x00, 0x00];
    let mut i = inflater(Agreed::default(), 1 << 20);
    assert_eq!(i.message(&HELLO, true), Ok(5));
    assert_eq!(i.message(&second, true), Ok(5));
    assert_eq!(&i.out[..5], b"Hello");
    // With server_no_context_takeover each message is a stream of its own. (miniz_oxide
    // does not refuse a reference past a reset window, so that cannot be shown failing.)
    let fresh = Agreed {
        server_no_context_takeover: true,
        ..Agreed::default()
    };
    let mut i = inflater(fresh, 1 << 20);
    for _ in 0..3 {
        assert_eq!(i.message(&HELLO, true), Ok(5));
        assert_eq!(&i.out[..5], b"Hello");
    }
}

#[test]
fn a_stored_block_and_a_final_block_inflate_and_the_stream_restarts_after_one() {
    // 7.2.3.3: "Hello" in a stored block; 7.2.3.4 with BFINAL set (the tail then ignored).
    let stored = [
        0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
    ];
    let last = [0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00];
    let mut i = inflater(Agreed::default(), 1 << 20);
    assert_eq!(i.message(&stored, true), Ok(5));
    assert_eq!(i.message(&last, true), Ok(5));
    assert_eq!(i.message(&HELLO, true), Ok(5));
}

#[test]
fn a_bomb_is_cut_at_max_body_and_text_is_checked_once_inflated() {
    let zeros = deflated(&vec![0u8; 1 << 20]);
    assert!(zeros.len() < 2048, "{}", zeros.len());
    let mut i = inflater(Agreed::default(), 1 << 20);
    assert_eq!(i.message(&zeros, false), Ok(1 << 20));
    let mut i = inflater(Agreed::default(), 100_000);
    let e = i.message(&zeros, false).unwrap_err();
    assert!(e.contains("more than --max-body 100000 bytes"), "{e}");
    // UTF-8 split across the inflater's outputs is fine; a bad byte or a cut character is not.
    let text = "é€𝄞".repeat(20_000);
    let mut i = inflater(Agreed::default(), 1 << 20);
    assert_eq!(
        i.message(&deflated(text.as_bytes()), true),
        Ok(text.len() as u64)
    );
    for bad in [&b"ok \xc3\x28"[..], &b"cut \xe2\x82"[..]] {
        // (A failed message fails its connection: the next one starts afresh.)
        i.start(Agreed::default());
        let e = i.message(&deflated(bad), true).unwrap_err();
        assert!(e.contains("not UTF-8"), "{e}");
    }
    // Bytes that are not deflate.
    let e = i.message(&[0xff, 0xff, 0xff], false).unwrap_err();
    assert!(e.contains("does not inflate"), "{e}");
}

#[test]
fn the_101s_parameters_are_parsed_and_checked() {
    let got = |v: &str| negotiate([v.as_bytes()], true);
    assert_eq!(got(""), Ok(None));
    assert_eq!(got("permessage-deflate"), Ok(Some(Agreed::default())));
    let all = "permessage-deflate; server_no_context_takeover; client_no_context_takeover; server_max_window_bits=10; client_max_window_bits=\"15\"";
    let want = Agreed {
        server_no_context_takeover: true,
        client_no_context_takeover: true,
        server_max_window_bits: Some(10),
        client_max_window_bits: Some(15),
    };
    assert_eq!(got(all), Ok(Some(want)));
    assert!(want.compress_sent());
    let small = got("Permessage-Deflate; client_max_window_bits=9").unwrap();
    assert!(!small.unwrap().compress_sent());
    // (value, a part of the error)
    for (v, part) in [
        (
            "x-webkit-deflate-frame",
            "'x-webkit-deflate-frame', which the client did not offer",
        ),
        ("permessage-deflate, permessage-deflate", "twice"),
        (
            "permessage-deflate; foo",
            "'foo', which RFC 7692 does not define",
        ),
        (
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "twice",
        ),
        (
            "permessage-deflate; server_max_window_bits=16",
            "must be 8 to 15",
        ),
        (
            "permessage-deflate; server_max_window_bits=09",
            "must be 8 to 15",
        ),
        (
            "permessage-deflate; server_max_window_bits",
            "takes a value",
        ),
        (
            "permessage-deflate; client_no_context_takeover=1",
            "takes no value",
        ),
    ] {
        let e = got(v).unwrap_err();
        assert!(e.contains(part), "{v}: {e}");
    }
    // Not offered (no --compressed): any extension at all is refused.
    let e = negotiate([&b"permessage-deflate"[..]], false).unwrap_err();
    assert!(e.contains("did not offer (offered: none"), "{e}");
    assert_eq!(negotiate([], false), Ok(None));
}

#[test]
fn a_101_with_an_extension_not_offered_fails_with_its_cause() {
    let head = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=12\r\n\r\n";
    let e = agreed_in(head, false).unwrap_err();
    assert_eq!(e.cause, Some(Cause::WsExtension));
    assert!(!e.detail.contains('\n'));
    let agreed = agreed_in(head, true).unwrap().unwrap();
    assert_eq!(agreed.server_max_window_bits, Some(12));
    let plain = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n";
    assert_eq!(agreed_in(plain, true).unwrap(), None);
}

/// A server frame: FIN as given, RSV1 as given, `opcode`, unmasked.
fn frame(fin: bool, rsv1: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let b0 = u8::from(fin) << 7 | u8::from(rsv1) << 6 | opcode;
    let mut f = vec![b0, payload.len() as u8];
    f.extend_from_slice(payload);
    f
}

#[test]
fn the_reader_keeps_a_compressed_message_where_deflate_was_agreed_only() {
    let compressed = frame(true, true, TEXT, &HELLO);
    let mut r = MessageReader::new(1 << 20);
    let (_, step) = r.feed(&compressed);
    assert_eq!(
        step,
        Err(WsError::Invalid(
            "reserved bits set (no extension was agreed)"
        ))
    );
    let mut r = MessageReader::new(1 << 20);
    r.allow_compressed(true);
    // Fragmented: RSV1 on the first frame only; the payload kept as sent, not checked as UTF-8.
    let mut bytes = frame(false, true, TEXT, &HELLO[..3]);
    bytes.extend(frame(true, false, CONTINUATION, &HELLO[3..]));
    let (_, step) = r.feed(&bytes);
    assert!(
        matches!(step, Ok(Step::Message { payload: 7, .. })),
        "{step:?}"
    );
    assert!(r.compressed());
    assert_eq!(r.message(), HELLO);
    let mut i = inflater(Agreed::default(), 100);
    assert_eq!(i.message(r.message(), true), Ok(5));
    // A plain message after it is not compressed.
    let (_, step) = r.feed(&frame(true, false, BINARY, b"ab"));
    assert!(matches!(step, Ok(Step::Message { payload: 2, .. })));
    assert!(!r.compressed());
    // RSV1 on a continuation or a control frame, RSV2 anywhere: invalid frames.
    for bad in [
        [
            frame(false, false, TEXT, b"a"),
            frame(true, true, CONTINUATION, b"b"),
        ]
        .concat(),
        frame(true, true, 0x9, b""),
        vec![0x80 | 0x20 | TEXT, 0],
    ] {
        let mut r = MessageReader::new(1 << 20);
        r.allow_compressed(true);
        let (_, step) = r.feed(&bad);
        assert!(
            matches!(step, Err(WsError::Invalid(_))),
            "{bad:?}: {step:?}"
        );
    }
}
