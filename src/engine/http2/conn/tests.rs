//! The connection's state fed a server's frames by hand: what the streams see, and what the
//! client writes back.

use super::*;
use crate::engine::http2::frame::{self, Head as FrameHead};
use crate::engine::http2::hpack;
use crate::engine::request::Request;
use std::task::Waker;

fn request(path: &str, body: &'static [u8]) -> Request {
    let mut headers = http::HeaderMap::new();
    headers.insert("user-agent", "reqlife-test".parse().unwrap());
    Request {
        method: if body.is_empty() {
            http::Method::GET
        } else {
            http::Method::POST
        },
        uri: format!("http://127.0.0.1:8080{path}").parse().unwrap(),
        headers,
        body: Bytes::from_static(body),
    }
}

fn new_core() -> Core {
    Core::new(Default::default(), Rc::default())
}

/// One frame's bytes.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    frame::put_head(&mut b, payload.len(), kind, flags, stream);
    b.extend_from_slice(payload);
    b
}

/// A server's header block for `fields`.
fn block(server: &mut hpack::Encoder, fields: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    server.encode(
        fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())),
        &mut b,
    );
    b
}

/// Feeds `bytes` from the server, in pieces of `split` bytes.
fn feed(core: &mut Core, bytes: &[u8], split: usize) -> Result<(), ConnFailure> {
    for piece in bytes.chunks(split) {
        let at = core.filled;
        core.buffer[at..at + piece.len()].copy_from_slice(piece);
        core.filled += piece.len();
        core.receive(Instant::now())?;
    }
    Ok(())
}

/// The frames the client queued (after its preface), taken.
fn written(core: &mut Core) -> Vec<(FrameHead, Vec<u8>)> {
    let out = std::mem::take(&mut core.out);
    let mut rest = out.strip_prefix(frame::PREFACE).unwrap_or(&out);
    let mut frames = Vec::new();
    while rest.len() >= 9 {
        let h = FrameHead::parse(rest);
        frames.push((h, rest[9..9 + h.len].to_vec()));
        rest = &rest[9 + h.len..];
    }
    assert!(rest.is_empty(), "a partial frame in the output");
    frames
}

/// A connection whose server allows one stream at a time (SETTINGS_MAX_CONCURRENT_STREAMS 1).
fn core_allowing_one_stream() -> Core {
    let mut core = new_core();
    feed(
        &mut core,
        &frame(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 1]),
        64,
    )
    .unwrap();
    core
}

/// The server resets stream `id` with `code`.
fn reset(core: &mut Core, id: u32, code: u32) {
    feed(
        core,
        &frame(frame::RST_STREAM, 0, id, &code.to_be_bytes()),
        64,
    )
    .unwrap();
}

fn open(core: &mut Core, req: &Request, key: Option<usize>) -> usize {
    match core.start(req, None, key, Instant::now(), Waker::noop(), &mut None) {
        Start::Open(i) => i,
        _ => panic!("the stream did not open"),
    }
}

fn head(core: &mut Core, i: usize) -> Poll<Result<u16, Failure>> {
    let mut cx = Context::from_waker(Waker::noop());
    core.poll_head(i, &mut cx).map(|r| r.map(|h| h.status))
}

/// The body frames that arrived, and whether the stream ended.
fn body(core: &mut Core, i: usize) -> (Vec<Vec<u8>>, Poll<Result<(), Failure>>) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut frames = Vec::new();
    let r = core.poll_body(i, &mut cx, |chunk| {
        frames.push(chunk.to_vec());
        Ok::<(), ()>(())
    });
    let r = r.map(|r| {
        r.map_err(|e| match e {
            BodyError::Stream(f) => f,
            BodyError::Sink(()) => unreachable!(),
        })
    });
    (frames, r)
}

#[test]
fn a_stream_is_answered_in_pieces_of_any_size() {
    for split in [1, 7, 4096] {
        let mut core = new_core();
        let req = request("/a", b"");
        let i = open(&mut core, &req, None);
        let frames = written(&mut core);
        // SETTINGS (push off, a 1 MiB window), the connection's top-up to 16 MiB, HEADERS.
        let kinds: Vec<u8> = frames.iter().map(|(h, _)| h.kind).collect();
        assert_eq!(
            kinds,
            [frame::SETTINGS, frame::WINDOW_UPDATE, frame::HEADERS]
        );
        let (h, fields) = &frames[2];
        assert_eq!(h.stream, 1);
        assert_eq!(h.flags, frame::END_HEADERS | frame::END_STREAM);
        let mut decoded = Vec::new();
        hpack::Decoder::new(4096)
            .decode(fields, |n, v| decoded.push((n.to_vec(), v.to_vec())))
            .unwrap();
        let names: Vec<&[u8]> = decoded.iter().map(|(n, _)| n.as_slice()).collect();
        assert_eq!(
            names,
            [
                &b":method"[..],
                b":scheme",
                b":authority",
                b":path",
                b"user-agent"
            ]
        );
        assert_eq!(decoded[2].1, b"127.0.0.1:8080");
        assert_eq!(decoded[3].1, b"/a");

        let mut server = hpack::Encoder::new();
        let mut bytes = frame(frame::SETTINGS, 0, 0, &[0, 3, 0, 0, 0, 100]);
        let interim = block(&mut server, &[(":status", "103")]);
        bytes.extend(frame(frame::HEADERS, frame::END_HEADERS, 1, &interim));
        let fields = block(
            &mut server,
            &[(":status", "200"), ("server-timing", "app;dur=1.5")],
        );
        // The head split over HEADERS and a CONTINUATION, then a padded DATA frame and an
        // empty one that ends the stream.
        bytes.extend(frame(frame::HEADERS, 0, 1, &fields[..2]));
        bytes.extend(frame(
            frame::CONTINUATION,
            frame::END_HEADERS,
            1,
            &fields[2..],
        ));
        bytes.extend(frame(
            frame::DATA,
            frame::PADDED,
            1,
            &[3, b'o', b'k', 0, 0, 0],
        ));
        bytes.extend(frame(frame::DATA, frame::END_STREAM, 1, b""));
        feed(&mut core, &bytes, split).unwrap();
        assert_eq!(core.max_streams(), Some(100));
        assert!(core.settings_at.is_some());
        assert_eq!(head(&mut core, i), Poll::Ready(Ok(200)));
        let head_fields: Vec<_> = core
            .head(i)
            .iter()
            .map(|(n, v)| (n.to_vec(), v.to_vec()))
            .collect();
        assert_eq!(
            head_fields,
            [(b"server-timing".to_vec(), b"app;dur=1.5".to_vec())]
        );
        assert_eq!(
            body(&mut core, i),
            (vec![b"ok".to_vec()], Poll::Ready(Ok(())))
        );
        assert!(core.trailers(i).is_none());
        // The server's SETTINGS acknowledged; every byte read counted, the header blocks apart.
        let acks: Vec<_> = written(&mut core)
            .into_iter()
            .map(|(h, _)| (h.kind, h.flags))
            .collect();
        assert_eq!(acks, [(frame::SETTINGS, frame::ACK)]);
        assert_eq!(
            core.bytes.header.get(),
            (interim.len() + fields.len()) as u64
        );
        core.finish(i);
        assert!(core.open.is_empty());
        assert!(
            written(&mut core).is_empty(),
            "a finished stream is not reset"
        );
    }
}

#[test]
fn the_fixed_requests_header_block_is_replayed_once_it_inserts_nothing() {
    let mut core = new_core();
    let req = request("/", b"");
    let key = Some(&req as *const Request as usize);
    let mut blocks = Vec::new();
    for _ in 0..3 {
        let i = open(&mut core, &req, key);
        let frames = written(&mut core);
        blocks.push(frames.last().unwrap().1.clone());
        core.finish(i);
        written(&mut core);
    }
    // The first block inserts into the server's table; the next ones refer to it.
    assert!(blocks[1].len() < blocks[0].len(), "{blocks:?}");
    assert_eq!(blocks[1], blocks[2]);
    let (_, _, replayed) = core.replay.as_ref().expect("a block kept for replay");
    assert_eq!(replayed, &blocks[2]);
    // The server shrinks its table to nothing: the next block is encoded anew, its first
    // byte a table size update (to 0), and it decodes on a decoder limited to 0 bytes.
    feed(
        &mut core,
        &frame(frame::SETTINGS, 0, 0, &[0, 1, 0, 0, 0, 0]),
        64,
    )
    .unwrap();
    written(&mut core);
    let i = open(&mut core, &req, key);
    let shrunk = written(&mut core).pop().unwrap().1;
    core.finish(i);
    assert_eq!(shrunk[0] & 0xe0, 0x20, "{shrunk:?}");
    let mut small = hpack::Decoder::new(4096);
    for b in &blocks {
        small.decode(b, |_, _| {}).unwrap();
    }
    let mut fields = Vec::new();
    small
        .decode(&shrunk, |n, v| fields.push((n.to_vec(), v.to_vec())))
        .unwrap();
    assert_eq!(small.table_len(), 0);
    assert_eq!(fields.len(), 5, "{fields:?}");
    // The server's decoder reads all three alike.
    let mut server = hpack::Decoder::new(4096);
    let mut seen = Vec::new();
    for b in &blocks {
        let mut fields = Vec::new();
        server
            .decode(b, |n, v| fields.push((n.to_vec(), v.to_vec())))
            .unwrap();
        seen.push(fields);
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], seen[2]);
}

#[test]
fn the_servers_stream_limit_holds_streams_back_until_one_closes() {
    let mut core = core_allowing_one_stream();
    let req = request("/", b"");
    let first = open(&mut core, &req, None);
    let mut turn = None;
    assert!(matches!(
        core.start(&req, None, None, Instant::now(), Waker::noop(), &mut turn),
        Start::Wait
    ));
    // Reset by the server: closed, its code given, and the next stream opens.
    reset(&mut core, 1, 2);
    assert_eq!(head(&mut core, first), Poll::Ready(Err(Failure::Reset(2))));
    let Start::Open(second) =
        core.start(&req, None, None, Instant::now(), Waker::noop(), &mut turn)
    else {
        panic!("the waiting stream did not open");
    };
    assert_eq!(turn, None, "its turn is used");
    assert_eq!(core.slots[second].id, 3);
    core.finish(first);
    // Refused: it may be sent again.
    reset(&mut core, 3, 7);
    assert_eq!(
        head(&mut core, second),
        Poll::Ready(Err(Failure::Refused { by_reset: true }))
    );
}

/// Under the server's limit, streams open in the order they began to wait: a stream that has
/// just ended does not open its next request ahead of them (with a limit of one, the others
/// would wait for the whole run); one that gives up leaves the line.
#[test]
fn streams_waiting_for_the_limit_open_first_come_first_served() {
    let mut core = core_allowing_one_stream();
    let req = request("/", b"");
    let a = open(&mut core, &req, None);
    let start = |core: &mut Core, turn: &mut Option<u64>| match core.start(
        &req,
        None,
        None,
        Instant::now(),
        Waker::noop(),
        turn,
    ) {
        Start::Open(i) => Some(i),
        Start::Wait => None,
        Start::Gone(f) => panic!("{f:?}"),
    };
    let (mut b, mut c, mut d) = (None, None, None);
    assert_eq!(start(&mut core, &mut b), None, "b waits");
    assert_eq!(start(&mut core, &mut c), None, "c waits behind b");
    assert_eq!(start(&mut core, &mut d), None, "d waits behind c");
    // a ends; its task's next request (no turn yet) queues behind b, c and d.
    reset(&mut core, 1, 2);
    core.finish(a);
    let mut a_next = None;
    assert_eq!(
        start(&mut core, &mut a_next),
        None,
        "a's next waits its turn"
    );
    assert_eq!(start(&mut core, &mut c), None, "c is not first");
    let b_slot = start(&mut core, &mut b).expect("b, first in line, opens");
    // c gives up (a timeout): d is first once b's stream ends.
    core.leave(c.take().unwrap());
    reset(&mut core, 3, 2);
    core.finish(b_slot);
    assert_eq!(start(&mut core, &mut a_next), None, "a's next is behind d");
    assert!(start(&mut core, &mut d).is_some(), "d opens");
    assert!(core.turns.len() == 1, "only a's next is left in line");
}

#[test]
fn a_goaway_refuses_the_streams_above_its_last_and_lets_the_others_finish() {
    let mut core = new_core();
    let req = request("/", b"");
    let (a, b) = (open(&mut core, &req, None), open(&mut core, &req, None));
    let mut payload = 1u32.to_be_bytes().to_vec();
    payload.extend(0u32.to_be_bytes());
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    feed(&mut core, &frame(frame::GOAWAY, 0, 0, &payload), 64).unwrap();
    assert_eq!(head(&mut core, a), Poll::Pending);
    assert_eq!(
        head(&mut core, b),
        Poll::Ready(Err(Failure::Refused { by_reset: false }))
    );
    assert!(!core.usable());
    assert!(matches!(
        core.start(&req, None, None, Instant::now(), Waker::noop(), &mut None),
        Start::Gone(Failure::Refused { by_reset: false })
    ));
    // The connection then closes under stream 1, after a GOAWAY with an error this time.
    let mut payload = 1u32.to_be_bytes().to_vec();
    payload.extend(2u32.to_be_bytes());
    feed(&mut core, &frame(frame::GOAWAY, 0, 0, &payload), 64).unwrap();
    core.fail_all(ConnFailure::Closed("eof".into(), None));
    assert_eq!(
        head(&mut core, a),
        Poll::Ready(Err(Failure::Connection(ConnFailure::Closed(
            "eof".into(),
            Some(2)
        ))))
    );
}

#[test]
fn a_body_waits_for_the_servers_settings_and_its_windows() {
    let mut core = new_core();
    // Before the server's SETTINGS, a body waits: they may close the stream window.
    let req = request("/", b"hello");
    open(&mut core, &req, None);
    let kinds: Vec<u8> = written(&mut core).iter().map(|(h, _)| h.kind).collect();
    assert_eq!(
        kinds,
        [frame::SETTINGS, frame::WINDOW_UPDATE, frame::HEADERS]
    );
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    let sent = written(&mut core);
    assert_eq!(
        (sent[1].0.kind, &sent[1].1[..]),
        (frame::DATA, &b"hello"[..])
    );
    let mut core = new_core();
    // The server opens no stream window at first.
    feed(
        &mut core,
        &frame(frame::SETTINGS, 0, 0, &[0, 4, 0, 0, 0, 0]),
        64,
    )
    .unwrap();
    written(&mut core);
    let req = request("/", b"hello");
    open(&mut core, &req, None);
    let kinds: Vec<u8> = written(&mut core).iter().map(|(h, _)| h.kind).collect();
    assert_eq!(kinds, [frame::HEADERS]);
    // Three bytes of window: three bytes sent; then the rest, with END_STREAM.
    feed(
        &mut core,
        &frame(frame::WINDOW_UPDATE, 0, 1, &3u32.to_be_bytes()),
        64,
    )
    .unwrap();
    let sent = written(&mut core);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        (sent[0].0.kind, sent[0].0.flags, &sent[0].1[..]),
        (frame::DATA, 0, &b"hel"[..])
    );
    feed(
        &mut core,
        &frame(frame::WINDOW_UPDATE, 0, 1, &10u32.to_be_bytes()),
        64,
    )
    .unwrap();
    let sent = written(&mut core);
    assert_eq!(
        (sent[0].0.flags, &sent[0].1[..]),
        (frame::END_STREAM, &b"lo"[..])
    );
}

#[test]
fn pings_are_answered_and_violations_end_the_connection_with_goaway() {
    let mut core = new_core();
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    written(&mut core);
    feed(&mut core, &frame(frame::PING, 0, 0, b"12345678"), 64).unwrap();
    let sent = written(&mut core);
    assert_eq!(
        (sent[0].0.kind, sent[0].0.flags, &sent[0].1[..]),
        (frame::PING, frame::ACK, &b"12345678"[..])
    );
    let r = feed(
        &mut core,
        &frame(frame::PUSH_PROMISE, 0, 1, &[0, 0, 0, 2]),
        64,
    );
    assert!(matches!(r, Err(ConnFailure::Protocol(_))), "{r:?}");
    assert_eq!(written(&mut core)[0].0.kind, frame::GOAWAY);
}

#[test]
fn an_http1_answer_is_not_http2() {
    let mut core = new_core();
    let r = feed(&mut core, b"HTTP/1.1 400 Bad Request\r\n\r\n", 64);
    assert_eq!(r, Err(ConnFailure::NotH2));
}

#[test]
fn trailers_end_a_stream_and_a_reset_stream_is_cancelled() {
    let mut core = new_core();
    let req = request("/", b"");
    let i = open(&mut core, &req, None);
    let mut server = hpack::Encoder::new();
    let mut bytes = frame(frame::SETTINGS, 0, 0, &[]);
    bytes.extend(frame(
        frame::HEADERS,
        frame::END_HEADERS,
        1,
        &block(&mut server, &[(":status", "200")]),
    ));
    bytes.extend(frame(frame::DATA, 0, 1, b"x"));
    bytes.extend(frame(
        frame::HEADERS,
        frame::END_HEADERS | frame::END_STREAM,
        1,
        &block(&mut server, &[("grpc-status", "0")]),
    ));
    feed(&mut core, &bytes, 64).unwrap();
    assert_eq!(
        body(&mut core, i),
        (vec![b"x".to_vec()], Poll::Ready(Ok(())))
    );
    let t: Vec<_> = core
        .trailers(i)
        .unwrap()
        .iter()
        .map(|(n, v)| (n.to_vec(), v.to_vec()))
        .collect();
    assert_eq!(t, [(b"grpc-status".to_vec(), b"0".to_vec())]);
    core.finish(i);
    // A stream given up before its answer (a timeout) is reset with CANCEL.
    let j = open(&mut core, &req, None);
    written(&mut core);
    core.finish(j);
    let sent = written(&mut core);
    assert_eq!(
        (sent[0].0.kind, sent[0].0.stream, &sent[0].1[..]),
        (frame::RST_STREAM, 3, &8u32.to_be_bytes()[..])
    );
}

#[test]
fn coalesced_streams_wait_for_those_in_flight_within_the_bound_and_nothing_else_waits() {
    let ms = std::time::Duration::from_millis;
    let coalesce = crate::engine::http2::Tuning {
        window: None,
        coalesce: Some(ms(5)),
        ..Default::default()
    };
    for tuning in [coalesce, Default::default()] {
        let on = tuning.coalesce.is_some();
        let mut core = Core::new(tuning, Rc::default());
        let mut server = hpack::Encoder::new();
        let t0 = Instant::now();
        // The preface and the SETTINGS acknowledgement go out at once.
        feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
        assert!(!core.hold(|| t0));
        core.written_out(t0);
        // Two streams with none in flight: written at once.
        let req = request("/", b"");
        let (a, b) = (open(&mut core, &req, None), open(&mut core, &req, None));
        assert!(!core.hold(|| t0));
        core.written_out(t0);
        // Stream 1 answered; its next request waits for stream 3, in flight, within the bound.
        let answer = block(&mut server, &[(":status", "200")]);
        let flags = frame::END_HEADERS | frame::END_STREAM;
        feed(&mut core, &frame(frame::HEADERS, flags, 1, &answer), 64).unwrap();
        assert!(!core.hold(|| t0), "nothing queued");
        core.finish(a);
        let at_t0 =
            |core: &mut Core| match core.start(&req, None, None, t0, Waker::noop(), &mut None) {
                Start::Open(i) => i,
                _ => panic!("the stream did not open"),
            };
        let c = at_t0(&mut core);
        assert_eq!(core.hold(|| t0 + ms(1)), on, "coalescing {on}");
        assert!(!core.hold(|| t0 + ms(5)), "past the bound");
        // A frame that must not wait (a PING's answer) takes the new stream's with it.
        feed(&mut core, &frame(frame::PING, 0, 0, b"12345678"), 64).unwrap();
        assert!(!core.hold(|| t0 + ms(1)));
        core.written_out(t0);
        // Streams 3 and 5 answered: the next request waits for their tasks to be done with
        // them (their next requests join it), then for nothing.
        for id in [3, 5] {
            let answer = block(&mut server, &[(":status", "200")]);
            feed(&mut core, &frame(frame::HEADERS, flags, id, &answer), 64).unwrap();
        }
        core.finish(b);
        at_t0(&mut core);
        assert_eq!(
            core.hold(|| t0 + ms(1)),
            on,
            "stream 5 answered, not yet done with"
        );
        core.finish(c);
        assert!(!core.hold(|| t0 + ms(1)), "none in flight");
    }
}

/// New streams' frames gather others for one turn of the runtime before their write, unless
/// the plan writes them at once (`--h2-writes at-once`).
#[test]
fn new_streams_gather_unless_written_at_once() {
    for gather in [true, false] {
        let tuning = crate::engine::http2::Tuning {
            gather,
            ..Default::default()
        };
        let mut core = Core::new(tuning, Rc::default());
        feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
        assert!(!core.gathers(), "the SETTINGS acknowledgement goes at once");
        core.written_out(Instant::now());
        open(&mut core, &request("/", b""), None);
        assert_eq!(core.gathers(), gather, "gather {gather}");
    }
}

#[test]
fn a_hold_wakes_the_driver_when_it_begins_and_when_it_ends_not_for_each_stream() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    struct Count(AtomicUsize);
    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let count = Arc::new(Count(AtomicUsize::new(0)));
    let tuning = crate::engine::http2::Tuning {
        window: None,
        coalesce: Some(std::time::Duration::from_millis(5)),
        ..Default::default()
    };
    let mut core = Core::new(tuning, Rc::default());
    core.driver = Some(Waker::from(count.clone()));
    let wakes = || count.0.load(Ordering::Relaxed);
    let mut server = hpack::Encoder::new();
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    core.written_out(Instant::now());
    let req = request("/", b"");
    let slots: Vec<usize> = (0..3).map(|_| open(&mut core, &req, None)).collect();
    core.written_out(Instant::now());
    // Streams 1 and 3 answered and done with, stream 5 in flight.
    let flags = frame::END_HEADERS | frame::END_STREAM;
    for id in [1, 3] {
        let answer = block(&mut server, &[(":status", "200")]);
        feed(&mut core, &frame(frame::HEADERS, flags, id, &answer), 64).unwrap();
    }
    let before = wakes();
    core.finish(slots[0]);
    open(&mut core, &req, None);
    assert_eq!(wakes(), before + 1, "the hold begins: the driver is told");
    core.finish(slots[1]);
    open(&mut core, &req, None);
    assert_eq!(wakes(), before + 1, "the hold goes on: no wake");
    assert!(core.hold(Instant::now));
    // Stream 5 answered and done with: the hold ends, the driver is told.
    let answer = block(&mut server, &[(":status", "200")]);
    feed(&mut core, &frame(frame::HEADERS, flags, 5, &answer), 64).unwrap();
    core.finish(slots[2]);
    assert_eq!(wakes(), before + 2, "the hold ends");
    assert!(!core.hold(Instant::now));
}

/// An HPACK integer with a 7-bit prefix (RFC 7541, 5.1), the prefix's other bit clear.
fn int7(mut v: usize, out: &mut Vec<u8>) {
    if v < 127 {
        return out.push(v as u8);
    }
    out.push(0x7f);
    v -= 127;
    while v >= 128 {
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A header block of `len` compressed bytes (`:status 200`, then a field `x` whose value of
/// `len - 8` bytes fills it, not indexed) in HEADERS and CONTINUATION frames of 16 KiB on
/// `stream`.
fn big_head(stream: u32, len: usize) -> Vec<u8> {
    let mut block = vec![0x88, 0x00, 0x01, b'x'];
    int7(len - 8, &mut block);
    assert_eq!(block.len(), 8, "the length takes 4 bytes");
    block.resize(len, b'v');
    let mut bytes = Vec::new();
    let pieces = block.chunks(16_384).count();
    for (n, piece) in block.chunks(16_384).enumerate() {
        let kind = if n == 0 {
            frame::HEADERS
        } else {
            frame::CONTINUATION
        };
        let flags = if n + 1 == pieces {
            frame::END_HEADERS
        } else {
            0
        };
        bytes.extend(frame(kind, flags, stream, piece));
    }
    bytes
}

#[test]
fn a_header_block_over_the_limit_fails_the_connection_as_it_comes() {
    let mut core = new_core();
    open(&mut core, &request("/", b""), None);
    // The limit is advertised: SETTINGS_MAX_HEADER_LIST_SIZE of 64 KiB.
    let frames = written(&mut core);
    assert_eq!(frames[0].0.kind, frame::SETTINGS);
    assert!(
        frames[0].1.chunks(6).any(|s| s == [0, 6, 0, 1, 0, 0]),
        "{:?}",
        frames[0].1
    );
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    written(&mut core);
    // HEADERS without END_HEADERS, then CONTINUATIONs that never end it.
    feed(&mut core, &frame(frame::HEADERS, 0, 1, &[0x88]), 64).unwrap();
    let piece = [0u8; 16_384];
    let mut sent = 1;
    let failure = loop {
        let r = feed(&mut core, &frame(frame::CONTINUATION, 0, 1, &piece), 4096);
        sent += piece.len();
        assert!(core.block_bytes.len() <= 64 * 1024);
        match r {
            Err(f) => break f,
            Ok(()) => assert!(sent < 1 << 20, "still taken after {sent} bytes"),
        }
    };
    // Failed by the frame that crossed 64 KiB.
    assert_eq!(sent, 1 + 4 * 16_384);
    let ConnFailure::Protocol(text) = failure else {
        panic!("{failure:?}")
    };
    assert!(
        text.contains("over 65536 bytes, the --max-header-list limit")
            && text.contains("ENHANCE_YOUR_CALM"),
        "{text}"
    );
    let frames = written(&mut core);
    assert_eq!(
        (frames[0].0.kind, &frames[0].1[4..]),
        (frame::GOAWAY, &frame::ENHANCE_YOUR_CALM.to_be_bytes()[..])
    );
}

#[test]
fn a_larger_limit_takes_a_larger_head_and_the_default_refuses_it() {
    let one_mib = crate::engine::http2::Tuning {
        max_header_list: 1 << 20,
        ..Default::default()
    };
    for (tuning, taken) in [(one_mib, true), (Default::default(), false)] {
        let mut core = Core::new(tuning, Rc::default());
        let i = open(&mut core, &request("/", b""), None);
        feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
        let r = feed(&mut core, &big_head(1, 100_000), 4096);
        assert_eq!(r.is_ok(), taken, "{r:?}");
        if taken {
            assert_eq!(head(&mut core, i), Poll::Ready(Ok(200)));
            let (name, value) = core.head(i).iter().next().unwrap();
            assert_eq!((name, value.len()), (&b"x"[..], 100_000 - 8));
        }
    }
}

#[test]
fn a_header_list_over_the_limit_once_decoded_fails_its_stream() {
    let mut core = new_core();
    let i = open(&mut core, &request("/", b""), None);
    feed(&mut core, &frame(frame::SETTINGS, 0, 0, &[]), 64).unwrap();
    // A 4000-byte field into the decoder's table (literal with incremental indexing).
    let mut first = vec![0x88, 0x40, 0x05];
    first.extend_from_slice(b"x-big");
    int7(4000, &mut first);
    first.extend_from_slice(&[b'a'; 4000]);
    let end = frame::END_HEADERS | frame::END_STREAM;
    feed(&mut core, &frame(frame::HEADERS, end, 1, &first), 4096).unwrap();
    assert_eq!(head(&mut core, i), Poll::Ready(Ok(200)));
    core.finish(i);
    // Then 20 bytes that name it 20 times: 80 KB decoded, over 64 KiB.
    let j = open(&mut core, &request("/", b""), None);
    written(&mut core);
    let mut refs = vec![0x88];
    refs.extend([0x80 | 62; 20]);
    feed(&mut core, &frame(frame::HEADERS, end, 3, &refs), 4096).unwrap();
    let Poll::Ready(Err(Failure::Malformed(what))) = head(&mut core, j) else {
        panic!("the stream was not failed")
    };
    assert!(what.contains("--max-header-list"), "{what}");
    let frames = written(&mut core);
    assert_eq!(
        (frames[0].0.kind, frames[0].0.stream),
        (frame::RST_STREAM, 3)
    );
    assert!(
        core.head(j).iter().count() <= 16,
        "fields kept past the limit"
    );
    // The connection goes on.
    assert!(core.usable());
}

/// Where each frame of `out` ends, by stream and kind (the preface skipped), counting from
/// `base`.
fn frame_ends(out: &[u8], base: u64) -> Vec<(u32, u8, u64)> {
    let mut at = if out.starts_with(frame::PREFACE) {
        frame::PREFACE.len()
    } else {
        0
    };
    let mut ends = Vec::new();
    while at + 9 <= out.len() {
        let h = FrameHead::parse(&out[at..]);
        at += 9 + h.len;
        ends.push((h.stream, h.kind, base + at as u64));
    }
    ends
}

#[test]
fn each_stream_s_request_and_response_are_placed_on_the_connection() {
    use crate::engine::tally::Tally;
    use crate::model::Wire;
    for split in [1, 7, 4096] {
        for exact in [true, false] {
            let mut core = new_core();
            core.connected_on(40_000, exact);
            // Under TLS: 500 TCP bytes read (the handshake's) before the streams open.
            core.tcp_read(Tally {
                port: 40_000,
                written: 0,
                read: 500,
            });
            let (get_a, post_b, get_c) = (
                request("/a", b""),
                request("/b", b"xyz"),
                request("/c", b""),
            );
            // Streams 1, 3 and 5 in one write; 3's body waits for the server's SETTINGS.
            let (s1, s3, s5) = (
                open(&mut core, &get_a, None),
                open(&mut core, &post_b, None),
                open(&mut core, &get_c, None),
            );
            let first = frame_ends(&core.out, 0);
            let out0 = core.out.len() as u64;
            core.written_out(Instant::now());
            core.flushed(Tally {
                port: 40_000,
                written: 1_000,
                read: 500,
            });
            let headers_end = |id| {
                first
                    .iter()
                    .find(|&&(s, k, _)| s == id && k == frame::HEADERS)
                    .unwrap()
                    .2
            };
            let mut server = hpack::Encoder::new();
            let settings = frame(frame::SETTINGS, 0, 0, &[]);
            feed(&mut core, &settings, split).unwrap();
            // The SETTINGS' acknowledgement, then 3's body with END_STREAM.
            let data_end = frame_ends(&core.out, out0)
                .into_iter()
                .find(|&(s, k, _)| s == 3 && k == frame::DATA)
                .unwrap()
                .2;
            core.written_out(Instant::now());
            core.flushed(Tally {
                port: 40_000,
                written: 1_100,
                read: 600,
            });
            // Answers interleaved: 1's interim 103 first, 5's whole in one HEADERS, 1's final
            // head over a CONTINUATION.
            let early = block(&mut server, &[(":status", "103")]);
            let ok = block(&mut server, &[(":status", "200")]);
            let parts = [
                frame(frame::HEADERS, frame::END_HEADERS, 1, &early),
                frame(frame::HEADERS, frame::END_HEADERS, 3, &ok),
                frame(
                    frame::HEADERS,
                    frame::END_HEADERS | frame::END_STREAM,
                    5,
                    &ok,
                ),
                frame(frame::HEADERS, 0, 1, &ok[..0]),
                frame(frame::CONTINUATION, frame::END_HEADERS, 1, &ok),
                frame(frame::DATA, frame::END_STREAM, 3, b"three"),
                frame(frame::DATA, frame::END_STREAM, 1, b"one"),
            ];
            let mut at = settings.len() as u64;
            let mut spans = Vec::new();
            for p in &parts {
                spans.push((at, at + p.len() as u64));
                at += p.len() as u64;
            }
            // Under TLS the TCP bytes read when the ends come: 700, then 800.
            core.tcp_read(Tally {
                port: 40_000,
                written: 1_100,
                read: 700,
            });
            feed(&mut core, &parts[..5].concat(), split).unwrap();
            core.tcp_read(Tally {
                port: 40_000,
                written: 1_100,
                read: 800,
            });
            feed(&mut core, &parts[5..].concat(), split).unwrap();
            let placed = |tx_end, rx_first, rx_end, tls: (u64, u64, u64)| match exact {
                true => Wire {
                    port: 40_000,
                    exact,
                    tx_end,
                    rx_first,
                    rx_end,
                },
                false => Wire {
                    port: 40_000,
                    exact,
                    tx_end: tls.0,
                    rx_first: tls.1,
                    rx_end: tls.2,
                },
            };
            let what = format!("exact {exact}, fed {split} bytes at a time");
            assert_eq!(
                core.wire(s1),
                placed(headers_end(1), spans[0].0, spans[6].1, (1_000, 500, 800)),
                "stream 1, {what}"
            );
            assert_eq!(
                core.wire(s3),
                placed(data_end, spans[1].0, spans[5].1, (1_100, 500, 800)),
                "stream 3, {what}"
            );
            assert_eq!(
                core.wire(s5),
                placed(headers_end(5), spans[2].0, spans[2].1, (1_000, 500, 700)),
                "stream 5, {what}"
            );
        }
    }
}
