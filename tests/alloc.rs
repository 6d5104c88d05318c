//! No allocation per request on the hot path: a run of 20,000 requests allocates no more than
//! a run of 2,000 (beyond a small slack for interval snapshots), counted by a global
//! allocator around in-process runs against a server that itself never allocates.

mod common;
use common::quiet_server;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The tests of this binary count the process's allocations: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The allocations of one run of `reqlife ARGS` (`run …`), which must exit 0: one interval
/// (`--interval 1h`, see [`assert_flat`]).
fn allocations_of(args: &[&str]) -> u64 {
    let (command, rest) = args.split_first().expect("a subcommand");
    let argv = ["reqlife", command, "--interval", "1h"]
        .into_iter()
        .chain(rest.iter().copied());
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let code = reqlife::app::main_with(argv.map(Into::into).collect());
    assert_eq!(code, 0, "{args:?}");
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

/// Runs `run` once with 100 requests (warming the paths), then with `small` and `large`: the
/// larger run may allocate fewer than 500 more times (an allocation per request would add one
/// per request more). Each run is one interval (`--interval 1h`): the series' snapshots
/// allocate by the interval, so by the run's length, which a loaded machine stretches (660 more
/// of them for the WebSocket run's 18,000 more messages beside the suite; 118 with one interval).
fn assert_flat(what: &str, (small, large): (&str, &str), run: impl Fn(&str) -> u64) {
    run("100");
    let (a, b) = (run(small), run(large));
    let extra = b.saturating_sub(a);
    eprintln!("{what}: {a} allocations for {small}, {b} for {large}");
    assert!(
        extra < 500,
        "{what}: {a} allocations for {small}, {b} for {large}: {extra} more"
    );
}

#[test]
fn allocations_do_not_grow_with_the_request_count() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let addr = quiet_server();
    let url = format!("http://{addr}/");
    assert_flat("HTTP/1.1", ("2000", "20000"), |n| {
        allocations_of(&[
            "run", "-n", n, "-c", "4", "-t", "2", "--quiet", "--json", &url,
        ])
    });
}

/// An h2c server on its own threads that answers every request (a HEADERS frame) with
/// `:status 200` and a 2-byte body, and acknowledges SETTINGS, from fixed buffers: it never
/// allocates after a connection's thread started.
fn quiet_h2c_server() -> std::net::SocketAddr {
    use std::io::{Read, Write};
    common::thread_per_connection(|mut s| {
        // The server's preface: an empty SETTINGS frame.
        if s.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).is_err() {
            return;
        }
        let mut buf = [0u8; 1 << 16];
        let mut filled = 0;
        let mut preface = 24;
        let mut out = [0u8; 4096];
        loop {
            let n = match s.read(&mut buf[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            filled += n;
            let mut at = preface.min(filled);
            preface -= at;
            let mut len = 0;
            while filled - at >= 9 {
                let f = &buf[at..];
                let size = (f[0] as usize) << 16 | (f[1] as usize) << 8 | f[2] as usize;
                if filled - at < 9 + size {
                    break;
                }
                let (kind, flags) = (f[3], f[4]);
                let stream = [f[5], f[6], f[7], f[8]];
                let reply: &[u8] = match kind {
                    4 if flags & 1 == 0 => &[0, 0, 0, 4, 1, 0, 0, 0, 0],
                    1 => {
                        // HEADERS `:status 200` (static index 8), DATA "ok" END_STREAM.
                        let r = &mut out[len..len + 21];
                        r[..9].copy_from_slice(&[
                            0, 0, 1, 1, 4, stream[0], stream[1], stream[2], stream[3],
                        ]);
                        r[9] = 0x88;
                        r[10..19].copy_from_slice(&[
                            0, 0, 2, 0, 1, stream[0], stream[1], stream[2], stream[3],
                        ]);
                        r[19..21].copy_from_slice(b"ok");
                        len += 21;
                        &[]
                    }
                    _ => &[],
                };
                out[len..len + reply.len()].copy_from_slice(reply);
                len += reply.len();
                at += 9 + size;
                if len + 32 > out.len() {
                    if s.write_all(&out[..len]).is_err() {
                        return;
                    }
                    len = 0;
                }
            }
            buf.copy_within(at..filled, 0);
            filled -= at;
            if len > 0 && s.write_all(&out[..len]).is_err() {
                return;
            }
        }
    })
}

#[test]
fn http2_allocations_do_not_grow_with_the_request_count() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let addr = quiet_h2c_server();
    let url = format!("http://{addr}/");
    assert_flat("HTTP/2", ("2000", "20000"), |n| {
        let streams = ["--http2", "--streams", "8"];
        let rest = ["-n", n, "-c", "2", "-t", "1", "--quiet", "--json", &url];
        allocations_of(&[&["run"][..], &streams, &rest].concat())
    });
}

/// The compressed reply of [`deflating_ws_server`]: one text frame, RSV1 set, of a message
/// of 432 bytes deflated once.
static WS_REPLY: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();

/// A WebSocket server on its own threads that agrees to permessage-deflate and answers every
/// client frame (read into a fixed buffer) with [`WS_REPLY`]: after the upgrade (whose accept
/// allocates, once per connection) it never allocates.
fn deflating_ws_server() -> std::net::SocketAddr {
    use reqlife::engine::websocket::{deflate, upgrade};
    use std::io::{Read, Write};
    WS_REPLY.get_or_init(|| {
        let message = "a message that compresses well, sent again and again. ".repeat(8);
        let payload = deflate::deflated(message.as_bytes());
        assert!(payload.len() < 126, "{} bytes", payload.len());
        [&[0xC1, payload.len() as u8][..], &payload].concat()
    });
    common::thread_per_connection(|mut s| {
        let mut buf = [0u8; 1 << 16];
        let mut filled = 0;
        let head = loop {
            match s.read(&mut buf[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
            if let Some(end) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
        };
        let text = String::from_utf8_lossy(&buf[..head]);
        let key = text
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
            .unwrap_or_default();
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
            upgrade::accept_of(key)
        );
        if s.write_all(answer.as_bytes()).is_err() {
            return;
        }
        let reply = WS_REPLY.get().expect("made before the server");
        buf.copy_within(head..filled, 0);
        filled -= head;
        loop {
            // A client frame: masked, its payload under 126 bytes (the message is short).
            while filled >= 6 && filled >= 6 + usize::from(buf[1] & 0x7F) {
                let len = 6 + usize::from(buf[1] & 0x7F);
                if buf[0] & 0x0F == 0x8 || s.write_all(reply).is_err() {
                    return;
                }
                buf.copy_within(len..filled, 0);
                filled -= len;
            }
            match s.read(&mut buf[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        }
    })
}

#[test]
fn inflating_a_message_allocates_nothing_once_warm() {
    use reqlife::engine::websocket::deflate::{deflated, Agreed, Inflater};
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let message = "a message that compresses well, sent again and again. é€ ".repeat(400);
    let payload = deflated(message.as_bytes());
    let mut inflater = Inflater::new(1 << 20);
    inflater.start(Agreed::default());
    assert_eq!(inflater.message(&payload, true), Ok(message.len() as u64));
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..5_000 {
        assert_eq!(inflater.message(&payload, true), Ok(message.len() as u64));
    }
    // The count is the process's: the harness's other threads may allocate meanwhile (a few);
    // one allocation per message would be 5,000.
    let count = ALLOCATIONS.load(Ordering::Relaxed) - before;
    eprintln!(
        "inflating 5,000 messages of {} bytes: {count} allocations",
        message.len()
    );
    assert!(count < 50, "{count} allocations for 5,000 messages");
}

#[test]
fn websocket_inflating_allocations_do_not_grow_with_the_message_count() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let addr = deflating_ws_server();
    let url = format!("ws://{addr}/");
    // Exit 0: every reply (RSV1 set) was inflated, so deflate was agreed. Fewer messages than
    // HTTP's runs: inflating is slow in a debug build, and the interval snapshots (about 180
    // allocations a second) make the slack.
    assert_flat("WebSocket (inflating)", ("1000", "10000"), |n| {
        let data = ["--data", "hello", "--compressed"];
        let rest = ["-n", n, "-c", "2", "-t", "1", "--quiet", "--json", &url];
        allocations_of(&[&["run"][..], &data, &rest].concat())
    });
}

/// A WebSocket echo server on its own threads: it upgrades each connection (the only
/// allocation, its accept key), then echoes every text frame unmasked from fixed buffers.
fn quiet_ws_server() -> std::net::SocketAddr {
    use std::io::{Read, Write};
    common::thread_per_connection(|mut s| {
        let mut buf = [0u8; 1 << 16];
        let mut filled = 0;
        let head = loop {
            match s.read(&mut buf[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
            if let Some(end) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
        };
        let text = std::str::from_utf8(&buf[..head]).unwrap_or("");
        let Some(key) = text
            .lines()
            .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        else {
            return;
        };
        let accept = reqlife::engine::websocket::upgrade::accept_of(key.trim());
        let answer = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
        );
        if s.write_all(answer.as_bytes()).is_err() {
            return;
        }
        buf.copy_within(head..filled, 0);
        filled -= head;
        let mut out = [0u8; 1 << 16];
        loop {
            // Whole frames of fewer than 126 payload bytes: echoed, unmasked.
            let (mut at, mut len) = (0, 0);
            while filled - at >= 6 {
                let n = (buf[at + 1] & 0x7F) as usize;
                if filled - at < 6 + n {
                    break;
                }
                let mask = [buf[at + 2], buf[at + 3], buf[at + 4], buf[at + 5]];
                out[len] = 0x81;
                out[len + 1] = n as u8;
                for i in 0..n {
                    out[len + 2 + i] = buf[at + 6 + i] ^ mask[i & 3];
                }
                len += 2 + n;
                at += 6 + n;
            }
            buf.copy_within(at..filled, 0);
            filled -= at;
            if len > 0 && s.write_all(&out[..len]).is_err() {
                return;
            }
            match s.read(&mut buf[filled..]) {
                Ok(0) | Err(_) => return,
                Ok(n) => filled += n,
            }
        }
    })
}

#[test]
fn websocket_allocations_do_not_grow_with_the_message_count() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let addr = quiet_ws_server();
    let url = format!("ws://{addr}/");
    // Rendered messages, their replies matched by id: one at a time, and 8 in flight.
    for depth in ["1", "8"] {
        let matched = [
            "--data",
            r#"{"id":{seq},"op":"quote"}"#,
            "--ws-match",
            "id",
            "--pipeline",
            depth,
        ];
        assert_flat(
            &format!("WebSocket, --pipeline {depth}"),
            ("2000", "20000"),
            |n| {
                let rest = ["-n", n, "-c", "2", "-t", "1", "--quiet", "--json", &url];
                allocations_of(&[&["run"][..], &matched, &rest].concat())
            },
        );
    }
}
