use super::*;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Instant, SystemTime};

/// A coordinator of `count` segments on a free loopback port, and its address.
fn coordinator(count: u64) -> (Lead, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    (Lead::listen(listener, count), addr)
}

/// Segment `k` of `count` joining at `addr` in a thread of its own: the start it is given.
fn follower(addr: &str, k: u64, count: u64) -> std::thread::JoinHandle<Result<SystemTime, String>> {
    let addr = addr.to_string();
    std::thread::spawn(move || {
        let never = || false;
        let mut f = Follow::join(&addr, (k, count), Duration::from_secs(5), &never)?;
        f.start(&never)
    })
}

#[test]
fn one_start_is_given_once_every_segment_is_ready_and_not_before() {
    let (lead, addr) = coordinator(3);
    // Connections that say nothing, or nonsense, hold up no one.
    let mut silent = TcpStream::connect(&addr).unwrap();
    let mut rude = TcpStream::connect(&addr).unwrap();
    rude.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    rude.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("REFUSED expected HELLO reqlife/1 K N"),
        "{answer}"
    );
    let two = follower(&addr, 2, 3);
    std::thread::sleep(Duration::from_millis(200));
    assert!(!two.is_finished(), "no start while segment 3 is not ready");
    let three = follower(&addr, 3, 3);
    let asked = Instant::now();
    let start = lead
        .barrier(Duration::from_secs(5), Duration::from_millis(300), || false)
        .unwrap();
    assert!(asked.elapsed() < Duration::from_secs(2));
    let given = wire::time_of(start);
    for f in [two.join().unwrap().unwrap(), three.join().unwrap().unwrap()] {
        // One clock: the start each is given is the coordinator's, to the exchange's error.
        let apart = match f.duration_since(given) {
            Ok(d) => d,
            Err(e) => e.duration(),
        };
        assert!(apart < Duration::from_millis(1), "{apart:?}");
    }
    assert!(given > SystemTime::now(), "given ahead of time");
    let _ = silent.write_all(b"");
}

#[test]
fn the_start_is_refused_naming_the_segments_that_never_came() {
    let (lead, addr) = coordinator(3);
    let two = follower(&addr, 2, 3);
    let why = lead
        .barrier(
            Duration::from_millis(600),
            Duration::from_millis(300),
            || false,
        )
        .unwrap_err();
    assert!(
        why.starts_with("segment 3/3 never came to the coordinator within 1s"),
        "{why}"
    );
    let said = two.join().unwrap().unwrap_err();
    assert!(
        said.contains("gave no start: segment 3/3 never came"),
        "{said}"
    );
    // An interrupt ends the wait too.
    let (lead, _) = coordinator(2);
    let why = lead
        .barrier(Duration::from_secs(5), Duration::from_millis(300), || true)
        .unwrap_err();
    assert_eq!(why, "interrupted before the start");
}

#[test]
fn the_line_of_the_starts_gives_their_spread_and_the_clocks_range() {
    let g = |segment: &str, offset: f64, late: f64| GeneratorStart {
        segment: segment.into(),
        hostname: "h".into(),
        clock_offset_us: offset,
        exchange_delay_us: 50.0,
        start_late_ms: Some(late),
    };
    let line = started_line(&[
        g("1/3", 0.0, 1.5),
        g("2/3", -12.0, 3.25),
        g("3/3", 7.0, 2.0),
    ]);
    assert_eq!(
        line.as_deref(),
        Some(
            "3 segments started within 1.75ms of each other (clock offsets -12.00us to +7.00us \
             from segment 1's)"
        )
    );
    assert_eq!(started_line(&[g("1/1", 0.0, 1.0)]), None);
}
