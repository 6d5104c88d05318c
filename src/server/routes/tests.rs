use super::*;
use crate::server::events::EventSpec;
use std::pin::Pin;
use std::task::{Context, Poll};

#[test]
fn routes_and_bad_parameters() {
    assert!(matches!(route_of("/"), Route::Hello));
    assert!(matches!(route_of("/echo"), Route::Echo));
    assert!(matches!(route_of("/delay/0.5"), Route::Delay(d) if d == Duration::from_micros(500)));
    assert!(matches!(route_of("/status/503"), Route::Status(s) if s.as_u16() == 503));
    assert!(matches!(route_of("/bytes/10"), Route::Bytes(10)));
    assert!(matches!(route_of("/text/10"), Route::Text(10)));
    assert!(matches!(route_of("/serial/2"), Route::Serial(d) if d == Duration::from_millis(2)));
    assert!(matches!(route_of("/nope"), Route::NotFound));
    assert!(matches!(
        route_of("/sse/20/5"),
        Route::Events(EventSpec { sse: true, n: 20, gap, jitter })
            if gap == Duration::from_millis(5) && jitter.is_zero()
    ));
    assert!(matches!(
        route_of("/chunks/3/10/2"),
        Route::Events(EventSpec { sse: false, n: 3, jitter, .. })
            if jitter == Duration::from_millis(2)
    ));
    // (path, a part of the message)
    for (path, want) in [
        ("/delay/abc", "/delay/{ms}"),
        ("/delay/-1", "/delay/{ms}"),
        ("/status/99", "from 200 to 599"),
        ("/status/x", "from 200 to 599"),
        ("/bytes/99999999999999", "/bytes/{n}"),
        ("/text/99999999999", "/text/{n}"),
        ("/serial/0", "/serial/{ms}"), // no service time: no capacity to find
        ("/sse/20", "/sse/{n}/{gap_ms}"),
        ("/sse/x/5", "/sse/{n}/{gap_ms}"),
        ("/chunks/5/1/2", "jitter_ms at most gap_ms"),
        ("/sse/1/2/3/4", "/sse/{n}/{gap_ms}"),
    ] {
        match route_of(path) {
            Route::BadRequest(msg) => assert!(msg.contains(want), "{path}: {msg}"),
            _ => panic!("{path} should be a bad request"),
        }
    }
}

#[test]
fn server_timing_is_milliseconds_with_four_decimals() {
    let t = Timing {
        parse_ns: 4_000,             // 0.004 ms
        queue_ns: 49,                // below the resolution: 0
        handler_ns: 21_099,          // truncated, not rounded
        compress_ns: None,           // left out when nothing was compressed
        store: None,                 // left out for routes other than /kv
        serialize_ns: 3_000_000,     // whole milliseconds
        total_ns: 1_234_567_890_123, // 1234.5 s
    };
    assert_eq!(
        t.header_value().unwrap(),
        "parse;dur=0.0040, queue;dur=0.0000, handler;dur=0.0210, \
         serialize;dur=3.0000, total;dur=1234567.8901"
    );
    let worst = Timing {
        parse_ns: u64::MAX,
        queue_ns: u64::MAX,
        handler_ns: u64::MAX,
        compress_ns: Some(u64::MAX),
        store: Some(("insert", u64::MAX)),
        serialize_ns: u64::MAX,
        total_ns: u64::MAX,
    };
    assert!(
        worst.header_value().is_some(),
        "the stack buffer holds the longest value"
    );
}

#[test]
fn pattern_body_streams_exactly_n_bytes() {
    let mut b = Body::Pattern { remaining: 100_000 };
    let waker = std::task::Waker::noop();
    let mut cx = Context::from_waker(waker);
    let mut total = 0;
    while let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut b).poll_frame(&mut cx) {
        total += frame.into_data().map(|d| d.len()).unwrap_or(0);
    }
    assert_eq!(total, 100_000);
    assert!(b.is_end_stream());
}
