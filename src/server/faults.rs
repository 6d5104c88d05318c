//! The fault-injecting target (`reqlife serve --faults`): servers that fail on purpose, so that
//! every way a server can misbehave has a test showing reqlife counts it by kind, ends within
//! `--timeout` and keeps its memory bounded.
//!
//! HTTP/1.1 faults, one listener, chosen by the request's path:
//!
//! | path | what the server does | what reqlife counts |
//! | --- | --- | --- |
//! | `/fault/close-before` | closes without a byte | `closed` |
//! | `/fault/close-mid` | sends a head and 10 of 100 body bytes, closes | `closed` |
//! | `/fault/garbage` | answers a line that is not HTTP | `protocol` |
//! | `/fault/huge-headers` | sends 1 MiB of headers | `protocol` (head over 64 KiB) |
//! | `/fault/short-length` | says `Content-Length: 5`, sends 10 bytes | `protocol` |
//! | `/fault/long-length` | says `Content-Length: 100`, sends 10, holds the connection | `timeout` |
//! | `/fault/endless-chunked` | a chunked body that never ends (64 KiB a millisecond) | `timeout` |
//! | `/fault/drip` | one body byte per second | `timeout` |
//! | `/fault/stall` | reads the request, never answers | `timeout` |
//! | `/fault/reset` | closes with a TCP reset (SO_LINGER 0) | `read` |
//!
//! Any other path gets a plain `200 OK` (`ok`): a run mixes faults and answers.
//!
//! HTTP/2 faults (h2c, prior knowledge), one listener per fault, since some are settings of
//! the connection: `goaway` (each connection ends abruptly with GOAWAY(INTERNAL_ERROR) after
//! 5 streams: in-flight streams fail, `closed`), `rst` (every stream reset with
//! INTERNAL_ERROR: `reset`, counted by code), `settings-flood` (1000 SETTINGS frames on each
//! connection while it serves: answered, nothing fails) and `no-window` (a zero flow-control
//! window that never opens: a request body can never be sent, `timeout`).

use super::ServerError;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The HTTP/1.1 faults, by path.
pub const HTTP1_FAULTS: [&str; 10] = [
    "close-before",
    "close-mid",
    "garbage",
    "huge-headers",
    "short-length",
    "long-length",
    "endless-chunked",
    "drip",
    "stall",
    "reset",
];

/// The HTTP/2 faults, one listener each.
pub const H2_FAULTS: [&str; 4] = ["goaway", "rst", "settings-flood", "no-window"];

/// How long a stalling fault holds its connection at most (a client gives up long before).
const HOLD: Duration = Duration::from_secs(600);

/// The fault target, serving on a thread of its own until dropped.
pub struct RunningFaults {
    http1: SocketAddr,
    h2: Vec<(&'static str, SocketAddr)>,
    shutdown: Option<tokio::sync::watch::Sender<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RunningFaults {
    /// The URL of an HTTP/1.1 fault (`reset`) or any other path.
    pub fn url(&self, fault: &str) -> String {
        format!("http://{}/fault/{fault}", self.http1)
    }

    /// The h2c URL of an HTTP/2 fault (`goaway`, `rst`, `settings-flood`, `no-window`).
    pub fn h2_url(&self, fault: &str) -> Option<String> {
        self.h2
            .iter()
            .find(|(f, _)| *f == fault)
            .map(|(_, a)| format!("http://{a}/fault/h2/{fault}"))
    }

    /// The HTTP/1.1 listener's address.
    pub fn addr(&self) -> SocketAddr {
        self.http1
    }
}

impl Drop for RunningFaults {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(true);
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts the fault target: HTTP/1.1 faults on `addr`, each HTTP/2 fault on a port of its own
/// on the same address (chosen by the system).
pub fn spawn(addr: SocketAddr) -> Result<RunningFaults, ServerError> {
    let bind = |a: SocketAddr| {
        let l =
            std::net::TcpListener::bind(a).map_err(|error| ServerError::Bind { addr: a, error })?;
        l.set_nonblocking(true).map_err(ServerError::Runtime)?;
        Ok::<_, ServerError>(l)
    };
    let http1 = bind(addr)?;
    let http1_addr = http1.local_addr().map_err(ServerError::Runtime)?;
    let mut h2 = Vec::new();
    for fault in H2_FAULTS {
        let l = bind(SocketAddr::new(addr.ip(), 0))?;
        h2.push((fault, l.local_addr().map_err(ServerError::Runtime)?, l));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    let addrs = h2.iter().map(|(f, a, _)| (*f, *a)).collect();
    let thread = std::thread::Builder::new()
        .name("reqlife-faults".into())
        .spawn(move || {
            runtime.block_on(async move {
                let mut tasks = tokio::task::JoinSet::new();
                if let Ok(l) = TcpListener::from_std(http1) {
                    tasks.spawn(accept_loop(l, rx.clone(), |s| -> Serving {
                        Box::pin(http1_fault(s))
                    }));
                }
                for (fault, _, l) in h2 {
                    if let Ok(l) = TcpListener::from_std(l) {
                        tasks.spawn(accept_loop(l, rx.clone(), move |s| -> Serving {
                            if fault == "settings-flood" {
                                Box::pin(settings_flood(s))
                            } else {
                                Box::pin(h2_fault(s, fault))
                            }
                        }));
                    }
                }
                let mut rx = rx;
                let _ = rx.wait_for(|stop| *stop).await;
                tasks.abort_all();
            });
        })
        .map_err(ServerError::Runtime)?;
    Ok(RunningFaults {
        http1: http1_addr,
        h2: addrs,
        shutdown: Some(tx),
        thread: Some(thread),
    })
}

/// One connection's work.
type Serving = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

async fn accept_loop<F>(l: TcpListener, mut stop: tokio::sync::watch::Receiver<bool>, handle: F)
where
    F: Fn(TcpStream) -> Serving + Send + 'static,
{
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            accepted = l.accept() => {
                if let Ok((s, _)) = accepted {
                    let _ = s.set_nodelay(true);
                    tokio::spawn(handle(s));
                }
            }
        }
    }
}

/// Reads one request head (up to 64 KiB); its path, or `None` when the client is gone.
async fn read_path(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).into_owned();
            let line = head.lines().next()?;
            return line.split(' ').nth(1).map(str::to_string);
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
    }
}

/// Serves one HTTP/1.1 connection, request after request, misbehaving as each path says.
async fn http1_fault(mut s: TcpStream) {
    while let Some(path) = read_path(&mut s).await {
        let fault = path.strip_prefix("/fault/").unwrap_or("");
        let hold = || tokio::time::sleep(HOLD);
        match fault {
            "close-before" => return,
            "close-mid" => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    .await;
                return;
            }
            "garbage" => {
                let _ = s.write_all(b"THIS IS NOT HTTP\r\n\r\n").await;
                return;
            }
            "huge-headers" => {
                let _ = s.write_all(&huge_head()).await;
                hold().await;
                return;
            }
            "short-length" => {
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n0123456789")
                    .await
                    .is_err()
                {
                    return;
                }
            }
            "long-length" => {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
                    .await;
                hold().await;
                return;
            }
            "endless-chunked" => {
                endless_chunked(&mut s).await;
                return;
            }
            "drip" => {
                drip(&mut s).await;
                return;
            }
            "stall" => {
                hold().await;
                return;
            }
            "reset" => {
                // SO_LINGER 0: close sends RST instead of FIN.
                if let Ok(std) = s.into_std() {
                    let sock = socket2::Socket::from(std);
                    let _ = sock.set_linger(Some(Duration::ZERO));
                }
                return;
            }
            _ => {
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// `/fault/huge-headers`: a head of 1 MiB of padding headers.
fn huge_head() -> Vec<u8> {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    let line = format!("X-Padding: {}\r\n", "x".repeat(1000));
    while head.len() < 1 << 20 {
        head.extend_from_slice(line.as_bytes());
    }
    head.extend_from_slice(b"Content-Length: 0\r\n\r\n");
    head
}

/// `/fault/endless-chunked`: chunks of 64 KiB every millisecond, until the client leaves.
async fn endless_chunked(s: &mut TcpStream) {
    let _ = s
        .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        .await;
    let mut chunk = format!("{:x}\r\n", 65536).into_bytes();
    chunk.extend_from_slice(&[b'z'; 65536]);
    chunk.extend_from_slice(b"\r\n");
    let mut tick = tokio::time::interval(Duration::from_millis(1));
    loop {
        tick.tick().await;
        if s.write_all(&chunk).await.is_err() {
            return;
        }
    }
}

/// `/fault/drip`: a body of 1000 bytes, one a second.
async fn drip(s: &mut TcpStream) {
    if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
        .await
        .is_err()
    {
        return;
    }
    for _ in 0..1000 {
        if s.write_all(b"d").await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// An HTTP/2 frame header: 24-bit length, type, flags, stream id.
fn frame_head(len: usize, kind: u8, flags: u8, stream: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let s = stream.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, s[0], s[1], s[2], s[3]]
}

/// `settings-flood`, written frame by frame (the h2 crate sends one SETTINGS at a time): after
/// the client's preface, 1000 SETTINGS frames the client must each acknowledge, then every
/// request answered `200` with the body `ok` (`:status 200` is HPACK's static entry 8).
async fn settings_flood(mut s: TcpStream) {
    const SETTINGS: u8 = 0x4;
    const HEADERS: u8 = 0x1;
    const DATA: u8 = 0x0;
    const END_STREAM: u8 = 0x1;
    const END_HEADERS: u8 = 0x4;
    const ACK: u8 = 0x1;
    let mut preface = [0u8; 24];
    if s.read_exact(&mut preface).await.is_err() || &preface[..3] != b"PRI" {
        return;
    }
    let mut flood = Vec::with_capacity(9 * 1001);
    for _ in 0..1001 {
        flood.extend_from_slice(&frame_head(0, SETTINGS, 0, 0));
    }
    if s.write_all(&flood).await.is_err() {
        return;
    }
    loop {
        let mut head = [0u8; 9];
        let read = tokio::time::timeout(HOLD, s.read_exact(&mut head)).await;
        if !matches!(read, Ok(Ok(_))) {
            return;
        }
        let len = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5] & 0x7f, head[6], head[7], head[8]]);
        let mut payload = vec![0u8; len.min(1 << 20)];
        if len > payload.len() || s.read_exact(&mut payload).await.is_err() {
            return;
        }
        let reply = match kind {
            SETTINGS if flags & ACK == 0 => frame_head(0, SETTINGS, ACK, 0).to_vec(),
            HEADERS => {
                let mut r = frame_head(1, HEADERS, END_HEADERS, stream).to_vec();
                r.push(0x88);
                r.extend_from_slice(&frame_head(2, DATA, END_STREAM, stream));
                r.extend_from_slice(b"ok");
                r
            }
            _ => continue,
        };
        if s.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// Serves one h2c connection with the HTTP/2 fault of its listener.
async fn h2_fault(s: TcpStream, fault: &'static str) {
    let mut builder = h2::server::Builder::new();
    if fault == "no-window" {
        builder
            .initial_window_size(0)
            .initial_connection_window_size(65_535);
    }
    let Ok(mut conn) = builder.handshake::<_, bytes::Bytes>(s).await else {
        return;
    };
    let mut streams = 0u32;
    loop {
        let next = tokio::time::timeout(HOLD, conn.accept()).await;
        let Ok(Some(Ok((req, mut respond)))) = next else {
            return;
        };
        streams += 1;
        match fault {
            "rst" => respond.send_reset(h2::Reason::INTERNAL_ERROR),
            "goaway" if streams > 5 => {
                conn.abrupt_shutdown(h2::Reason::INTERNAL_ERROR);
                // Drive the connection until the GOAWAY is out and the client is gone.
                let _ = tokio::time::timeout(Duration::from_secs(5), conn.accept()).await;
                return;
            }
            "no-window" => {
                // The body never arrives (its window stays closed): hold the stream.
                tokio::spawn(async move {
                    let mut body = req.into_body();
                    let _ = tokio::time::timeout(HOLD, body.data()).await;
                    drop(respond);
                });
            }
            _ => {
                let response = http::Response::new(());
                if let Ok(mut send) = respond.send_response(response, false) {
                    let _ = send.send_data(bytes::Bytes::from_static(b"ok"), true);
                }
            }
        }
    }
}
