use super::pieces::any_reader;
use super::*;

/// A server frame (unmasked): FIN as given, `opcode`, `payload`.
fn server(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    any_frame((fin, false, opcode), payload, 0, None)
}

/// Every step `bytes` gives, fed in pieces of `split` bytes (an error ends it).
fn steps(reader: &mut MessageReader, bytes: &[u8], split: usize) -> Vec<Result<Step, WsError>> {
    let fed = feed_in_pieces(reader, bytes, split);
    fed.into_iter().map(|(step, _, _)| step).collect()
}

#[test]
fn rfc_6455_examples_encode_as_the_rfc_writes_them() {
    // 5.7: a single-frame masked text message "Hello".
    let mut out = Vec::new();
    encode(&mut out, TEXT, b"Hello", [0x37, 0xfa, 0x21, 0x3d]);
    assert_eq!(
        out,
        [0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58]
    );
    // 5.7: the unmasked one, read back.
    let mut r = MessageReader::new(100);
    let unmasked = [0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f];
    assert_eq!(r.feed(&unmasked), (7, Ok(msg(true, 5, 2))));
}

fn msg(text: bool, payload: u64, framing: u64) -> Step {
    Step::Message {
        text,
        payload,
        framing,
    }
}

#[test]
fn lengths_take_7_16_or_64_bits_and_masking_undoes_itself() {
    // (payload length, header length: 2 + extended length + 4 of mask)
    for (len, header) in [(0, 6), (125, 6), (126, 8), (65_535, 8), (65_536, 14)] {
        let payload: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mask = [1, 2, 3, 0xff];
        let mut out = Vec::new();
        encode(&mut out, BINARY, &payload, mask);
        assert_eq!(out.len(), header + len, "{len}");
        assert_eq!(out[0], 0x82);
        assert!(out[1] & 0x80 != 0, "masked");
        let unmasked: Vec<u8> = out[header..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        assert_eq!(unmasked, payload, "{len}");
        // The server's frame of that length reads back whole, in any pieces.
        let frame = server(true, BINARY, &payload);
        for split in [1, 3, 1000, frame.len()] {
            let mut r = MessageReader::new(1 << 20);
            let framing = (header - 4) as u64;
            assert_eq!(
                steps(&mut r, &frame, split),
                [Ok(msg(false, len as u64, framing))],
                "{len} by {split}"
            );
        }
    }
}

#[test]
fn fragments_are_reassembled_with_control_frames_between_them() {
    let mut bytes = server(false, TEXT, b"Hel");
    bytes.extend(server(true, PING, b"are you there"));
    bytes.extend(server(false, CONTINUATION, b"l"));
    bytes.extend(server(true, PONG, b""));
    bytes.extend(server(true, CONTINUATION, "o, wörld".as_bytes()));
    for split in [1, 2, 5, bytes.len()] {
        let mut r = MessageReader::new(100);
        let got = steps(&mut r, &bytes, split);
        let payload = "Hello, wörld".len() as u64;
        assert_eq!(
            got,
            [Ok(Step::Ping), Ok(Step::Pong), Ok(msg(true, payload, 6))],
            "by {split}"
        );
        // The next message starts afresh.
        assert_eq!(
            steps(&mut r, &server(true, BINARY, b"xy"), split),
            [Ok(msg(false, 2, 2))]
        );
    }
    // The ping's payload is kept for the pong.
    let mut r = MessageReader::new(100);
    assert_eq!(r.feed(&server(true, PING, b"abc")).1, Ok(Step::Ping));
    assert_eq!(r.control(), b"abc");
}

#[test]
fn a_message_over_the_limit_is_refused_at_its_header() {
    // One frame over the limit: refused before its payload comes.
    let mut r = MessageReader::new(10);
    let frame = server(true, BINARY, &[0; 11]);
    assert_eq!(
        r.feed(&frame[..2]),
        (
            2,
            Err(WsError::TooLong {
                announced: 11,
                max: 10
            })
        )
    );
    // Fragments that add up to more than the limit.
    let mut r = MessageReader::new(10);
    let mut bytes = server(false, TEXT, b"123456");
    bytes.extend(server(true, CONTINUATION, b"78901"));
    assert_eq!(
        steps(&mut r, &bytes, 100),
        [Err(WsError::TooLong {
            announced: 11,
            max: 10
        })]
    );
    // Exactly the limit is fine.
    let mut r = MessageReader::new(10);
    assert_eq!(
        steps(&mut r, &server(true, TEXT, b"1234567890"), 100),
        [Ok(msg(true, 10, 2))]
    );
}

#[test]
fn invalid_utf8_and_broken_frames_are_protocol_errors() {
    // Invalid UTF-8, also split across fragments where each half alone is not whole.
    let mut r = MessageReader::new(100);
    let bad = server(true, TEXT, &[b'a', 0xff, b'b']);
    assert_eq!(steps(&mut r, &bad, 100), [Err(WsError::InvalidUtf8)]);
    let mut r = MessageReader::new(100);
    let mut split_char = server(false, TEXT, &"é".as_bytes()[..1]);
    split_char.extend(server(true, CONTINUATION, &"é".as_bytes()[1..]));
    assert_eq!(steps(&mut r, &split_char, 1), [Ok(msg(true, 2, 4))]);
    // (bytes, what the error says)
    let rows: [(Vec<u8>, &str); 6] = [
        (vec![0x81, 0x81, 1, 2, 3, 4, b'a'], "masked"),
        (vec![0xC1, 0x00], "reserved bits"),
        (
            server(true, CONTINUATION, b"x"),
            "continuation of no message",
        ),
        (server(false, PING, b"x"), "control frame"),
        (server(true, PING, &[0; 126]), "control frame"),
        (server(true, 0x3, b"x"), "unknown data opcode"),
    ];
    for (bytes, want) in rows {
        let mut r = MessageReader::new(1000);
        let got = steps(&mut r, &bytes, 100);
        match got.as_slice() {
            [Err(e)] => assert!(e.to_string().contains(want), "{bytes:?}: {e}"),
            other => panic!("{bytes:?}: {other:?}"),
        }
    }
    // A new message before the last one's final fragment.
    let mut r = MessageReader::new(100);
    let mut bytes = server(false, TEXT, b"a");
    bytes.extend(server(true, BINARY, b"b"));
    assert!(matches!(
        steps(&mut r, &bytes, 100).as_slice(),
        [Err(WsError::Invalid(w))] if w.contains("new message")
    ));
}

#[test]
fn a_close_frame_gives_its_code() {
    let mut r = MessageReader::new(100);
    let close = server(true, CLOSE, &[0x03, 0xE8, b'b', b'y', b'e']);
    assert_eq!(steps(&mut r, &close, 2), [Ok(Step::Close(Some(1000)))]);
    let mut r = MessageReader::new(100);
    assert_eq!(
        r.feed(&server(true, CLOSE, b"")),
        (2, Ok(Step::Close(None)))
    );
}

#[test]
fn a_message_has_begun_once_its_first_byte_is_in() {
    let mut r = MessageReader::new(100);
    assert!(!r.in_message());
    assert_eq!(r.feed(&[0x09]), (1, Ok(Step::More)));
    assert!(!r.in_message(), "a ping's first byte");
    let mut r = MessageReader::new(100);
    assert_eq!(r.feed(&[0x81]), (1, Ok(Step::More)));
    assert!(r.in_message());
}

#[test]
fn a_message_s_span_runs_from_its_first_frame_s_header_to_its_last_byte() {
    // A ping first, then a message in two fragments with a pong between, then another message.
    let ping = server(true, PING, b"p");
    let first = server(false, TEXT, b"ab");
    let pong = server(true, PONG, b"");
    let last = server(true, CONTINUATION, &[b'c'; 200]);
    let second = server(true, BINARY, b"xyz");
    let mut bytes = [ping.clone(), first.clone(), pong.clone(), last.clone()].concat();
    let start = ping.len() as u64;
    let end = bytes.len() as u64;
    bytes.extend(&second);
    for split in [1, 3, 7, bytes.len()] {
        let mut r = MessageReader::new(1000);
        let mut spans = Vec::new();
        for piece in bytes.chunks(split) {
            let mut at = 0;
            while at < piece.len() {
                let (used, step) = r.feed(&piece[at..]);
                at += used;
                if let Ok(Step::Message { .. }) = step {
                    spans.push(r.message_span());
                }
            }
        }
        let total = bytes.len() as u64;
        assert_eq!(
            spans,
            [(start, end), (end, total)],
            "fed {split} bytes at a time"
        );
        // A new connection's reader counts from 0 again.
        r.reset();
        assert_eq!(r.message_span(), (0, 0));
    }
}

/// A frame as the split proptests write it: FIN, RSV1, the opcode, the payload, the length's
/// width (0: the shortest; 1 and 2: 16 and 64 bits, longer than needed but readable) and the
/// masking key (a client's frame) or none (a server's).
fn any_frame(
    (fin, rsv1, opcode): (bool, bool, u8),
    payload: &[u8],
    width: u8,
    mask: Option<[u8; 4]>,
) -> Vec<u8> {
    let mut v = vec![if fin { 0x80 } else { 0 } | if rsv1 { RSV1 } else { 0 } | opcode];
    let m = if mask.is_some() { 0x80 } else { 0 };
    match (payload.len(), width) {
        (n, 0) if n < 126 => v.push(m | n as u8),
        (n, 0 | 1) if n <= 0xFFFF => {
            v.push(m | 126);
            v.extend_from_slice(&(n as u16).to_be_bytes());
        }
        (n, _) => {
            v.push(m | 127);
            v.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    let key = mask.unwrap_or_default();
    if mask.is_some() {
        v.extend_from_slice(&key);
    }
    v.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i & 3]));
    v
}

/// The steps of `bytes` fed in two pieces, split after byte `at`.
fn split_at(reader: &mut MessageReader, bytes: &[u8], at: usize) -> Vec<Fed> {
    let mut fed = feed_in_pieces(reader, &bytes[..at], at);
    if !fed.last().is_some_and(|(step, _, _)| step.is_err()) {
        fed.extend(feed_in_pieces(reader, &bytes[at..], bytes.len()));
    }
    fed
}

/// A data message as fragments (RSV1 on its first frame or not), each maybe followed by a
/// control frame, then a byte of the whole stream maybe flipped: a stream that reads to the
/// end, or breaks at some frame, for every reader.
fn frames(mask: Option<[u8; 4]>) -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::collection::vec;
    use proptest::prelude::*;
    let control = (
        prop_oneof![Just(PING), Just(PONG), Just(CLOSE)],
        vec(any::<u8>(), 0..8),
    );
    let fragment = (
        vec(any::<u8>(), 0..140),
        0u8..3,
        proptest::option::weighted(0.3, control),
    );
    let text = prop_oneof![
        3 => ".{0,6}".prop_map(|s: String| s.into_bytes()),
        1 => Just(Vec::new()),
    ];
    let message = (
        any::<bool>(),
        prop::bool::weighted(0.1),
        text,
        vec(fragment, 1..4),
    );
    let flip = proptest::option::weighted(0.2, (any::<prop::sample::Index>(), 1u8..=255));
    (vec(message, 0..4), flip).prop_map(move |(messages, flip)| {
        let mut out = Vec::new();
        for (binary, rsv1, text, fragments) in messages {
            let last = fragments.len() - 1;
            for (i, (payload, width, control)) in fragments.into_iter().enumerate() {
                let opcode = match (i, binary) {
                    (0, true) => BINARY,
                    (0, false) => TEXT,
                    _ => CONTINUATION,
                };
                // A text message's first fragment is text; the rest any bytes (some not UTF-8).
                let payload = if i == 0 && !binary { &text } else { &payload };
                out.extend(any_frame(
                    (i == last, rsv1 && i == 0, opcode),
                    payload,
                    width,
                    mask,
                ));
                if let Some((opcode, payload)) = control {
                    out.extend(any_frame((true, false, opcode), &payload, 0, mask));
                }
            }
        }
        if let (Some((at, by)), false) = (flip, out.is_empty()) {
            let at = at.index(out.len());
            out[at] ^= by;
        }
        out
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    // Frames split at every byte, and fed byte by byte: the steps, what each kept and the
    // spans are those of the whole stream fed at once, for each reader (a client's plain
    // and keep-all with deflate agreed, a server's) and each side's frames.
    #[test]
    fn frames_read_alike_split_at_every_byte(
        server_frames in frames(None),
        client_frames in frames(Some([0x37, 0xfa, 0x21, 0x3d])),
        max in proptest::prop_oneof![proptest::strategy::Just(1u64 << 20), 0u64..300],
    ) {
        for bytes in [&server_frames, &client_frames] {
            read_any(bytes, 1, max);
            for kind in 0..3 {
                let whole = feed_in_pieces(&mut any_reader(kind, max), bytes, bytes.len());
                for at in 1..bytes.len() {
                    let split = split_at(&mut any_reader(kind, max), bytes, at);
                    proptest::prop_assert_eq!(&split, &whole, "reader {} split at {}", kind, at);
                }
            }
        }
    }
}
