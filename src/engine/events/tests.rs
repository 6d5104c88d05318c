use super::*;

fn ev(event: &str, data: &str, id: &str) -> Event {
    Event {
        event: event.into(),
        data: data.into(),
        id: id.into(),
        retry: None,
    }
}

#[test]
fn the_html_standards_examples() {
    // (stream, events) — the examples of the HTML standard, 9.2.6, and the rules' corners.
    let rows: Vec<(&str, Vec<Event>)> = vec![
        // "This is the first message." etc.: comments, multi-line data, id.
        (
            ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n",
            vec![
                ev("message", "first event", "1"),
                ev("message", "second event", ""),
                // the third has no blank line after it: not dispatched
            ],
        ),
        // Two events, the first with empty data; the third line's lone "data" too.
        (
            "data\n\ndata\ndata\n\ndata:",
            vec![ev("message", "", ""), ev("message", "\n", "")],
        ),
        // One space after the colon is dropped, no more.
        (
            "data:test\n\ndata: test\n\n",
            vec![ev("message", "test", ""), ev("message", "test", "")],
        ),
        // Multi-line data joined by LF; YHOO, +2, 10 (the stock ticker example).
        (
            "data: YHOO\ndata: +2\ndata: 10\n\n",
            vec![ev("message", "YHOO\n+2\n10", "")],
        ),
        // Event types, and the type resets after each event.
        (
            "event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\ndata: 113411\n\n",
            vec![
                ev("add", "73857293", ""),
                ev("remove", "2153", ""),
                ev("message", "113411", ""),
            ],
        ),
        // CR, LF and CRLF line ends, mixed.
        (
            "data: a\r\rdata: b\r\n\r\ndata: c\n\n",
            vec![ev("message", "a", ""), ev("message", "b", ""), ev("message", "c", "")],
        ),
        // No data: nothing dispatched (the event type is dropped too).
        ("event: x\n\nid: 7\n\ndata: y\n\n", vec![ev("message", "y", "7")]),
        // An id with NULL is ignored; unknown fields are ignored.
        (
            "id: 1\ndata: a\n\nid: 2\0\nfoo: bar\ndata: b\n\n",
            vec![ev("message", "a", "1"), ev("message", "b", "1")],
        ),
        // A leading BOM is skipped (once).
        ("\u{feff}data: a\n\n", vec![ev("message", "a", "")]),
        // Field names are case-sensitive; a name longer than the known ones is other.
        ("Data: a\n\ndatum: b\n\ndata2: c\n\n", vec![]),
    ];
    for (input, want) in rows {
        for split in [1, 2, 3, 7, 1000] {
            assert_eq!(
                parse_all(input.as_bytes(), split),
                want,
                "{input:?} split {split}"
            );
        }
    }
}

#[test]
fn retry_sets_the_reconnection_time_when_all_digits() {
    let events = parse_all(b"retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\n", 4);
    assert_eq!(events[0].retry, Some(1500));
    assert_eq!(events[1].retry, Some(1500), "an invalid retry is ignored");
}

proptest::proptest! {
    #[test]
    fn splitting_anywhere_gives_the_same_events(
        lines in proptest::collection::vec(
            proptest::sample::select(vec![
                "data: x", "data:y", "data", ": c", "id: 3", "id", "event: e", "retry: 9",
                "", "", "x: y", "dat", "\u{feff}data: z", "data: \u{e9}",
            ]),
            0..24,
        ),
        ends in proptest::collection::vec(proptest::sample::select(vec!["\n", "\r", "\r\n"]), 24),
        at in 0usize..400,
    ) {
        let mut s = String::new();
        for (l, e) in lines.iter().zip(&ends) {
            s.push_str(l);
            s.push_str(e);
        }
        let bytes = s.as_bytes();
        let whole = parse_all(bytes, bytes.len().max(1));
        // Split at one point, and byte by byte.
        let at = at.min(bytes.len());
        let mut p = SseParser::new();
        let mut c = Collect::default();
        p.feed(&bytes[..at], &mut c);
        p.feed(&bytes[at..], &mut c);
        proptest::prop_assert_eq!(&c.events, &whole);
        proptest::prop_assert_eq!(&parse_all(bytes, 1), &whole);
        // The counting sink agrees with the collecting one.
        let mut q = SseParser::new();
        let n: u32 = bytes.chunks(3).map(|b| q.feed(b, &mut Count)).sum();
        proptest::prop_assert_eq!(n as usize, whole.len());
    }

    #[test]
    fn any_bytes_parse_without_panic(
        data in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
        split in 1usize..40,
    ) {
        let _ = parse_all(&data, split);
    }
}

#[test]
fn the_tracker_counts_gaps_between_events() {
    let mut t = EventTracker::new(Some(EventMode::Lines), u64::MAX);
    assert!(t.begin(false));
    t.body(b"a\nb").unwrap();
    t.body(b"\nc\nd").unwrap();
    t.finish();
    let (first, n) = t.stamps().unwrap();
    assert!(first.is_some());
    assert_eq!(n, 4);
    assert_eq!(t.gaps().len(), 3);
    // Not tracked without a mode unless the content type says SSE.
    let mut t = EventTracker::new(None, u64::MAX);
    assert!(!t.begin(false));
    t.body(b"data: a\n\n").unwrap();
    assert_eq!(t.stamps(), None);
    assert!(t.begin(true));
    t.body(b"data: a\n\ndata: b\n\n").unwrap();
    assert_eq!(t.stamps().map(|s| s.1), Some(2));
    assert_eq!(t.gaps(), &[0]);
    // (content type, an event stream?)
    for (value, want) in [
        ("text/event-stream", true),
        ("Text/Event-Stream; charset=utf-8", true),
        ("text/event-streams", false),
        ("text/plain", false),
    ] {
        assert_eq!(is_event_stream(value.as_bytes()), want, "{value}");
    }
}

#[test]
fn a_tracked_body_past_max_body_is_cut() {
    // 10 bytes at most: two SSE events of 9 bytes each go past it in the second read.
    let mut t = EventTracker::new(Some(EventMode::Sse), 10);
    assert!(t.begin(false));
    assert_eq!(t.body(b"data: a\n\n"), Ok(()));
    assert_eq!(t.body(b"data: b\n\n"), Err(TOO_LONG));
    assert_eq!(
        t.stamps().map(|s| s.1),
        Some(1),
        "the bytes past it are not parsed"
    );
    // Each response has its own count; up to the limit exactly is fine.
    assert!(t.begin(false));
    assert_eq!(t.body(b"data: 1234"), Ok(()));
    let mut tracked: Option<&mut EventTracker> = Some(&mut t);
    let e = track(&mut tracked, b"\n\n").unwrap_err();
    assert_eq!((e.kind, e.detail.as_str()), (ErrorKind::Protocol, TOO_LONG));
}
