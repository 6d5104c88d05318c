//! Tests of the WebSocket routes: the server's reader of masked client frames, the routes'
//! parameters, a connection served over an in-memory pipe (echo, ping, close, a delay, pushes,
//! a frame that breaks the protocol), and the upgrade through the real server on 127.0.0.1.
//! Every wait is bounded by [`LIMIT`].

use super::*;
use crate::engine::websocket::frame::MessageReader;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

/// The longest any single exchange may take before a test fails.
const LIMIT: Duration = Duration::from_secs(3);

/// One masked client frame: `fin`, `opcode`, `payload` masked with `mask`.
fn masked(fin: bool, opcode: u8, payload: &[u8], mask: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::new();
    frame::encode(&mut out, opcode, payload, mask);
    if !fin {
        out[0] &= 0x7F;
    }
    out
}

/// Feeds `bytes` to `reader` one byte at a time (the hardest split): the steps completed.
fn steps(reader: &mut MessageReader, bytes: &[u8]) -> Vec<Result<Step, WsError>> {
    let mut out = Vec::new();
    for b in bytes.chunks(1) {
        let (used, step) = reader.feed(b);
        assert_eq!(used, 1);
        match step {
            Ok(Step::More) => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_server_s_reader_unmasks_fragments_pings_and_a_close() {
    let mut r = MessageReader::server(1 << 20);
    let mut wire = masked(false, frame::BINARY, &[1, 2, 3], [9, 8, 7, 6]);
    wire.extend(masked(true, frame::PING, b"hi", [1, 1, 1, 1]));
    wire.extend(masked(true, frame::CONTINUATION, &[4, 5], [0xFF; 4]));
    let got = steps(&mut r, &wire);
    assert_eq!(got[0], Ok(Step::Ping));
    assert!(matches!(
        got[1],
        Ok(Step::Message {
            text: false,
            payload: 5,
            framing: 12
        })
    ));
    assert_eq!(r.message(), &[1, 2, 3, 4, 5]);
    // A long text message (a 16-bit length), then a close with its code.
    let long = "é".repeat(200);
    let mut wire = masked(true, frame::TEXT, long.as_bytes(), [0x12, 0x34, 0x56, 0x78]);
    wire.extend(masked(true, frame::CLOSE, &1001u16.to_be_bytes(), [3; 4]));
    let got = steps(&mut r, &wire);
    assert!(matches!(
        got[0],
        Ok(Step::Message {
            text: true,
            payload: 400,
            ..
        })
    ));
    assert_eq!(r.message(), long.as_bytes());
    assert_eq!(got[1], Ok(Step::Close(Some(1001))));
}

#[test]
fn the_server_s_reader_refuses_an_unmasked_frame_and_the_client_s_a_masked_one() {
    let mut plain = Vec::new();
    encode(&mut plain, frame::TEXT, b"hi");
    let (_, step) = MessageReader::server(100).feed(&plain);
    assert_eq!(
        step,
        Err(WsError::Invalid("an unmasked frame from the client"))
    );
    let (_, step) = MessageReader::new(100).feed(&masked(true, frame::TEXT, b"hi", [1; 4]));
    assert_eq!(
        step,
        Err(WsError::Invalid("a masked frame from the server"))
    );
    // The server's frames are what a client's reader reads, at every length form.
    for len in [0, 125, 126, 65535, 65536] {
        let payload = vec![b'a'; len];
        encode(&mut plain, frame::TEXT, &payload);
        let mut r = MessageReader::new(1 << 20);
        let (used, step) = r.feed(&plain);
        assert_eq!(used, plain.len());
        assert!(
            matches!(step, Ok(Step::Message { text: true, payload, .. }) if payload == len as u64),
            "{len}: {step:?}"
        );
    }
}

#[test]
fn the_routes_parameters_are_checked() {
    assert!(matches!(route_of("/ws"), Route::WebSocket(WsRoute::Echo)));
    let Route::WebSocket(WsRoute::Delay(d)) = route_of("/ws/delay/2.5") else {
        panic!("/ws/delay/2.5")
    };
    assert_eq!(d, Duration::from_micros(2500));
    assert!(matches!(
        route_of("/ws/push/10"),
        Route::WebSocket(WsRoute::Push(g)) if g == Duration::from_millis(10)
    ));
    for (path, want) in [
        ("/ws/delay/x", "expected /ws/delay/{ms}"),
        ("/ws/delay/-1", "from 0 to 600000"),
        (
            "/ws/push/0",
            "expected /ws/push/{gap_ms} with gap_ms a number from 0.1",
        ),
    ] {
        let Route::BadRequest(why) = route_of(path) else {
            panic!("{path} is not a bad request")
        };
        assert!(why.contains(want), "{path}: {why}");
    }
    assert!(matches!(route_of("/ws/other"), Route::NotFound));
}

/// A client's side of a connection served by [`serve`] on an in-memory pipe.
struct Peer {
    io: DuplexStream,
    reader: MessageReader,
    buf: Vec<u8>,
}

impl Peer {
    fn start(route: WsRoute) -> Peer {
        let (client, server) = tokio::io::duplex(1 << 20);
        tokio::spawn(serve(server, route));
        Peer {
            io: client,
            reader: MessageReader::new(1 << 20),
            buf: Vec::new(),
        }
    }

    async fn send(&mut self, opcode: u8, payload: &[u8]) {
        let frame = masked(true, opcode, payload, [0xA5, 0x5A, 0x01, 0x80]);
        self.io.write_all(&frame).await.unwrap();
    }

    /// The next step the server's bytes complete (a message, a pong, a close), or `None` at
    /// the end of the stream.
    async fn next(&mut self) -> Option<Step> {
        loop {
            if !self.buf.is_empty() {
                let (used, step) = self.reader.feed(&self.buf);
                self.buf.drain(..used);
                match step.unwrap() {
                    Step::More => {}
                    step => return Some(step),
                }
            }
            let mut chunk = [0u8; 4096];
            let n = tokio::time::timeout(LIMIT, self.io.read(&mut chunk))
                .await
                .expect("the server answers in time")
                .unwrap();
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

#[tokio::test]
async fn echo_answers_messages_pings_and_a_close() {
    let mut p = Peer::start(WsRoute::Echo);
    p.send(frame::TEXT, b"hello").await;
    assert!(matches!(
        p.next().await,
        Some(Step::Message {
            text: true,
            payload: 5,
            ..
        })
    ));
    assert_eq!(p.reader.message(), b"hello");
    p.send(frame::BINARY, &[0, 255]).await;
    assert!(matches!(
        p.next().await,
        Some(Step::Message {
            text: false,
            payload: 2,
            ..
        })
    ));
    p.send(frame::PING, b"are you there").await;
    assert_eq!(p.next().await, Some(Step::Pong));
    p.send(frame::CLOSE, &1000u16.to_be_bytes()).await;
    assert_eq!(p.next().await, Some(Step::Close(Some(1000))));
    assert_eq!(
        p.next().await,
        None,
        "the server ends the stream after its close"
    );
}

#[tokio::test]
async fn a_frame_that_breaks_the_protocol_is_answered_with_a_close_naming_it() {
    // (bytes, close code, a part of the reason)
    let bad_utf8 = masked(true, frame::TEXT, &[0xC3, 0x28], [7; 4]);
    let mut unmasked = Vec::new();
    encode(&mut unmasked, frame::TEXT, b"x");
    let too_long = masked(true, frame::BINARY, &[], [0; 4]);
    let mut too_long = too_long[..1].to_vec();
    too_long.extend([0x80 | 127]);
    too_long.extend(u64::MAX.to_be_bytes());
    too_long.extend([0; 4]);
    for (bytes, code, why) in [
        (bad_utf8, 1007, "not UTF-8"),
        (unmasked, 1002, "an unmasked frame from the client"),
        (too_long, 1009, "more than --max-body"),
    ] {
        let mut p = Peer::start(WsRoute::Echo);
        p.io.write_all(&bytes).await.unwrap();
        assert_eq!(p.next().await, Some(Step::Close(Some(code))), "{why}");
        let reason = String::from_utf8_lossy(&p.reader.control()[2..]).into_owned();
        assert!(reason.contains(why), "{code}: {reason}");
        assert_eq!(p.next().await, None);
    }
}

#[tokio::test]
async fn delay_echoes_each_message_on_time() {
    let d = Duration::from_millis(15);
    let mut p = Peer::start(WsRoute::Delay(d));
    for _ in 0..3 {
        let sent = Instant::now();
        p.send(frame::TEXT, b"x").await;
        assert!(matches!(p.next().await, Some(Step::Message { .. })));
        // At least the delay: the server waits from the message's arrival, after it was sent.
        let took = sent.elapsed();
        assert!(took >= d, "{took:?}");
    }
}

#[tokio::test]
async fn push_sends_the_first_message_every_gap_until_the_client_closes() {
    let gap = Duration::from_millis(10);
    let mut p = Peer::start(WsRoute::Push(gap));
    let sent = Instant::now();
    p.send(frame::TEXT, b"tick").await;
    let (mut pushes, mut pong) = (0u32, false);
    while pushes < 5 {
        match p.next().await {
            Some(Step::Message { payload: 4, .. }) => pushes += 1,
            Some(Step::Pong) => {
                pong = true;
                continue;
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.reader.message(), b"tick");
        // On a fixed schedule: push k is due k gaps after the first message came.
        let at = sent.elapsed();
        assert!(
            at >= gap * pushes - Duration::from_millis(1),
            "push {pushes} at {at:?}"
        );
        if pushes == 2 {
            // Later messages are read and dropped; a ping is answered between pushes.
            p.send(frame::TEXT, b"ignored").await;
            p.send(frame::PING, b"p").await;
        }
    }
    p.send(frame::CLOSE, &[]).await;
    // Pushes already on their way may come before the close.
    loop {
        match p.next().await {
            Some(Step::Message { .. }) => assert_eq!(p.reader.message(), b"tick"),
            Some(Step::Pong) => pong = true,
            Some(Step::Close(None)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(pong, "the ping was answered");
    assert_eq!(p.next().await, None);
}

/// An upgrade request for `path` with `extra` header lines, on a fresh connection to `addr`:
/// the head of the answer, and the connection.
async fn upgrade_request(
    addr: std::net::SocketAddr,
    path: &str,
    extra: &str,
) -> (String, tokio::net::TcpStream) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut b = [0u8; 1];
        let n = tokio::time::timeout(LIMIT, s.read(&mut b))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 1, "closed after {:?}", String::from_utf8_lossy(&head));
        head.push(b[0]);
    }
    (String::from_utf8(head).unwrap(), s)
}

#[tokio::test]
async fn the_target_upgrades_with_the_key_s_accept_and_refuses_what_is_not_an_upgrade() {
    let server = super::super::spawn(super::super::ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        super::super::ServerTls::None,
    ))
    .unwrap();
    let key = "dGhlIHNhbXBsZSBub25jZQ==";
    let upgrade = format!(
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n"
    );
    let (head, mut s) = upgrade_request(server.addr(), "/ws", &upgrade).await;
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert!(
        head.contains("sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"),
        "{head}"
    );
    s.write_all(&masked(true, frame::TEXT, b"over tcp", [1, 2, 3, 4]))
        .await
        .unwrap();
    let mut reply = [0u8; 10];
    tokio::time::timeout(LIMIT, s.read_exact(&mut reply))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&reply, b"\x81\x08over tcp");
    // (path, headers, status line start)
    let no_version = upgrade.replace("Sec-WebSocket-Version: 13\r\n", "");
    let no_key = upgrade.replace(&format!("Sec-WebSocket-Key: {key}\r\n"), "");
    let rows = [
        ("/ws", "", "HTTP/1.1 426"),
        ("/ws/delay/x", upgrade.as_str(), "HTTP/1.1 400"),
        ("/ws", no_version.as_str(), "HTTP/1.1 426"),
        ("/ws", no_key.as_str(), "HTTP/1.1 400"),
        ("/echo", upgrade.as_str(), "HTTP/1.1 200"),
    ];
    for (path, extra, status) in rows {
        let (head, _) = upgrade_request(server.addr(), path, extra).await;
        assert!(head.starts_with(status), "{path} {extra:?}: {head}");
    }
}
