//! Tests of the embedded target over real sockets on 127.0.0.1: every route through a tiny
//! HTTP/1.1 client written here, TLS with the self-signed certificate as the only root, h2c,
//! bounded shutdown, and the errors for bad addresses and certificate files. Every network
//! wait is bounded by [`LIMIT`].

use super::*;
use rustls::pki_types::ServerName;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest any single exchange may take before a test fails.
const LIMIT: Duration = Duration::from_secs(3);

fn config(tls: ServerTls) -> ServerConfig {
    ServerConfig::new("127.0.0.1:0".parse().unwrap(), tls)
}

fn plain() -> RunningServer {
    spawn(config(ServerTls::None)).unwrap()
}

/// One parsed response.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `dur` of one Server-Timing metric, in milliseconds.
    fn timing_ms(&self, metric: &str) -> f64 {
        let header = self
            .header("server-timing")
            .expect("a Server-Timing header");
        let prefix = format!("{metric};dur=");
        header
            .split(", ")
            .find_map(|m| m.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no {metric} in {header}"))
            .parse()
            .unwrap_or_else(|e| panic!("{metric} in {header}: {e}"))
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.body).unwrap()
    }
}

/// A minimal HTTP/1.1 client on one keep-alive connection: Content-Length or chunked bodies.
struct Client<S> {
    io: S,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    fn new(io: S) -> Self {
        Client {
            io,
            buf: Vec::new(),
        }
    }

    async fn get(&mut self, path: &str) -> Reply {
        self.request("GET", path, b"").await
    }

    async fn request(&mut self, method: &str, path: &str, body: &[u8]) -> Reply {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let exchange = async {
            self.io.write_all(head.as_bytes()).await.unwrap();
            self.io.write_all(body).await.unwrap();
            self.read_reply().await
        };
        tokio::time::timeout(LIMIT, exchange)
            .await
            .unwrap_or_else(|_| panic!("{method} {path}: no answer within {LIMIT:?}"))
    }

    /// Reads more bytes into the buffer; false at the end of the stream.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = self.io.read(&mut chunk).await.unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// The next line without its CRLF.
    async fn line(&mut self) -> String {
        loop {
            if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = String::from_utf8(self.buf[..i].to_vec()).unwrap();
                self.buf.drain(..i + 2);
                return line;
            }
            assert!(self.fill().await, "the connection closed mid-response");
        }
    }

    async fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buf.len() < n {
            assert!(self.fill().await, "the connection closed mid-body");
        }
        self.buf.drain(..n).collect()
    }

    async fn read_reply(&mut self) -> Reply {
        let status_line = self.line().await;
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let mut headers = Vec::new();
        loop {
            let line = self.line().await;
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("a header line");
            headers.push((name.to_string(), value.trim().to_string()));
        }
        let mut reply = Reply {
            status,
            headers,
            body: Vec::new(),
        };
        if reply.header("transfer-encoding") == Some("chunked") {
            loop {
                let size = usize::from_str_radix(self.line().await.trim(), 16).unwrap();
                if size == 0 {
                    while !self.line().await.is_empty() {}
                    break;
                }
                let chunk = self.take(size).await;
                reply.body.extend_from_slice(&chunk);
                assert!(self.line().await.is_empty(), "chunk not followed by CRLF");
            }
        } else if let Some(len) = reply.header("content-length") {
            reply.body = self.take(len.parse().unwrap()).await;
        }
        reply
    }
}

async fn connect(server: &RunningServer) -> Client<TcpStream> {
    Client::new(TcpStream::connect(server.addr()).await.unwrap())
}

#[tokio::test]
async fn routes_answer_with_their_status_body_and_server_timing() {
    let server = plain();
    let mut client = connect(&server).await;
    // (method, path, request body, status, body or part of it); all on one keep-alive connection
    let rows: [(&str, &str, &[u8], u16, &str); 16] = [
        ("GET", "/", b"", 200, "Hello World!"),
        ("POST", "/", b"ignored", 200, "Hello World!"),
        ("GET", "/delay/0.5", b"", 200, "Hello World!"),
        ("POST", "/echo", b"ping pong", 200, "ping pong"),
        ("PUT", "/echo", b"", 200, ""),
        ("GET", "/status/418", b"", 418, "418\n"),
        ("GET", "/status/503", b"", 503, "503\n"),
        ("GET", "/status/204", b"", 204, ""),
        ("GET", "/status/304", b"", 304, ""),
        (
            "GET",
            "/status/99",
            b"",
            400,
            "/status/{code} with code from 200 to 599",
        ),
        ("GET", "/status/600", b"", 400, "/status/{code}"),
        ("GET", "/bytes/0", b"", 200, ""),
        ("GET", "/bytes/5", b"", 200, "abcde"),
        ("GET", "/bytes/x", b"", 400, "/bytes/{n}"),
        ("GET", "/delay/abc", b"", 400, "/delay/{ms}"),
        (
            "GET",
            "/nope",
            b"",
            404,
            "/delay/{ms}, /echo, /status/{code}, /bytes/{n}",
        ),
    ];
    for (method, path, body, status, want) in rows {
        let r = client.request(method, path, body).await;
        assert_eq!(r.status, status, "{method} {path}: {}", r.text());
        if status < 400 {
            assert_eq!(r.text(), want, "{method} {path}");
        } else {
            assert!(r.text().contains(want), "{method} {path}: {}", r.text());
        }
        let total = r.timing_ms("total");
        for metric in ["parse", "queue", "handler", "serialize"] {
            let dur = r.timing_ms(metric);
            assert!(
                (0.0..=total).contains(&dur),
                "{method} {path}: {metric} {dur} > {total}"
            );
        }
    }
    server.shutdown();
}

#[tokio::test]
async fn delay_waits_at_least_its_time_and_reports_it_as_handler() {
    let server = plain();
    let mut client = connect(&server).await;
    let started = Instant::now();
    let r = client.get("/delay/50").await;
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(r.status, 200);
    assert!(
        r.timing_ms("handler") >= 50.0,
        "{:?}",
        r.header("server-timing")
    );
    assert!(r.timing_ms("total") >= r.timing_ms("handler"));
}

#[tokio::test]
async fn bytes_streams_exactly_n_bytes_of_the_pattern() {
    let server = plain();
    let mut client = connect(&server).await;
    let r = client.get("/bytes/100000").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body.len(), 100_000);
    assert_eq!(&r.body[..4], b"abcd");
    assert_eq!(
        r.body[65_536], b'a',
        "each 64 KiB chunk starts the pattern again"
    );
    // The connection is still usable after a multi-chunk body.
    assert_eq!(client.get("/").await.text(), "Hello World!");
}

#[tokio::test]
async fn echo_refuses_a_body_over_16_mib() {
    let server = plain();
    let mut client = connect(&server).await;
    let head = format!(
        "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        routes::MAX_ECHO_BYTES + 1
    );
    client.io.write_all(head.as_bytes()).await.unwrap();
    let r = tokio::time::timeout(LIMIT, client.read_reply())
        .await
        .unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(r.text().contains("16 MiB"), "{}", r.text());
}

/// A TLS client trusting only `server`'s self-signed certificate, offering `alpn`.
async fn tls_connect(
    server: &RunningServer,
    name: &str,
    alpn: &[&[u8]],
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let pem = server.cert_pem().expect("a self-signed certificate");
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(tls));
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    tokio::time::timeout(LIMIT, connector.connect(name, tcp))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn self_signed_tls_serves_and_negotiates_alpn() {
    let server = spawn(config(ServerTls::SelfSigned)).unwrap();
    assert!(server.is_tls());
    assert_eq!(
        server.url("/echo"),
        format!("https://127.0.0.1:{}/echo", server.addr().port())
    );
    // The IP SAN: verified against 127.0.0.1 itself.
    let tls = tls_connect(&server, "127.0.0.1", &[b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let mut client = Client::new(tls);
    let r = client.get("/").await;
    assert_eq!((r.status, r.text()), (200, "Hello World!"));
    assert!(r.timing_ms("total") >= 0.0);
    assert_eq!(client.get("/bytes/70000").await.body.len(), 70_000);

    // The DNS name, and h2 preferred when offered.
    let tls = tls_connect(&server, "localhost", &[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    server.shutdown();
}

#[tokio::test]
async fn h2c_by_prior_knowledge_on_the_same_port() {
    let server = plain();
    let tcp = TcpStream::connect(server.addr()).await.unwrap();
    let exchange = async {
        let (mut h2, conn) = h2::client::handshake(tcp).await.unwrap();
        tokio::spawn(conn);
        let req = http::Request::get(server.url("/status/201"))
            .body(())
            .unwrap();
        let (response, _) = h2.send_request(req, true).unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), 201);
        assert!(response.headers().contains_key("server-timing"));
        let mut body = response.into_body();
        let mut got = Vec::new();
        while let Some(chunk) = body.data().await {
            got.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(got, b"201\n");
    };
    tokio::time::timeout(LIMIT, exchange).await.unwrap();
}

#[tokio::test]
#[ignore = "timing: run alone by .ci/test's timing step"]
async fn timing_shutdown_is_prompt_with_an_idle_keep_alive_connection() {
    let server = plain();
    let mut client = connect(&server).await;
    assert_eq!(client.get("/").await.status, 200);
    let started = Instant::now();
    server.shutdown();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    // The idle connection was closed, not left open.
    let closed = tokio::time::timeout(LIMIT, client.fill()).await.unwrap();
    assert!(!closed, "the idle connection is still open");
}

#[tokio::test]
#[ignore = "timing: run alone by .ci/test's timing step"]
async fn timing_shutdown_lets_requests_finish_but_is_bounded() {
    let server = plain();
    let mut short = connect(&server).await;
    let mut endless = connect(&server).await;
    let head = |path: &str| format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n");
    short
        .io
        .write_all(head("/delay/300").as_bytes())
        .await
        .unwrap();
    endless
        .io
        .write_all(head("/delay/600000").as_bytes())
        .await
        .unwrap();
    // Kept: time for both requests to be in the server, which shows no count of them to wait
    // on (it runs on its own runtime, in real time: a paused clock here would not reach it).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let stopping = tokio::task::spawn_blocking(move || drop(server)); // Drop = shutdown().
                                                                      // The short request is answered in full although shutdown has begun...
    let r = tokio::time::timeout(LIMIT, short.read_reply())
        .await
        .unwrap();
    assert_eq!((r.status, r.text()), (200, "Hello World!"));
    // ...and the endless one does not hold the shutdown beyond the grace period.
    tokio::time::timeout(LIMIT, stopping)
        .await
        .unwrap()
        .unwrap();
    let took = started.elapsed();
    assert!(
        took < SHUTDOWN_GRACE + Duration::from_millis(500),
        "took {took:?}"
    );
}

#[test]
fn port_zero_gives_a_real_port_and_urls() {
    let server = plain();
    let port = server.addr().port();
    assert_ne!(port, 0);
    assert!(!server.is_tls());
    assert_eq!(server.cert_pem(), None);
    assert_eq!(
        server.url("/delay/5"),
        format!("http://127.0.0.1:{port}/delay/5")
    );
}

#[test]
fn a_busy_port_is_a_clear_bind_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let err = spawn(ServerConfig::new(addr, ServerTls::None))
        .err()
        .expect("the port is taken");
    assert!(matches!(err, ServerError::Bind { .. }));
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("cannot bind {addr}: address already in use")),
        "{msg}"
    );
    assert!(!msg.contains("os error"), "{msg}");
}

#[test]
fn bad_certificate_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cert = write("cert.pem", &ck.cert.pem());
    let key = write("key.pem", &ck.key_pair.serialize_pem());
    let other_key = write("other-key.pem", &other.key_pair.serialize_pem());
    let missing = dir.path().join("missing.pem");
    let files = |cert: &Path, key: &Path| {
        spawn(config(ServerTls::Files {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
        }))
    };
    let show = |p: &Path| p.display().to_string();

    // (certificate, key, the start of the message)
    let rows = [
        (
            &missing,
            &key,
            format!(
                "cannot read certificate file '{}': no such file or directory",
                show(&missing)
            ),
        ),
        (
            &cert,
            &missing,
            format!(
                "cannot read key file '{}': no such file or directory",
                show(&missing)
            ),
        ),
        (
            &key,
            &key,
            format!("no certificate found in '{}'", show(&key)),
        ),
        (
            &cert,
            &cert,
            format!(
                "no private key found in '{}' (expected PEM PKCS#8, PKCS#1 or SEC1)",
                show(&cert)
            ),
        ),
        (
            &cert,
            &other_key,
            format!("the certificate in '{}' and the key in", show(&cert)),
        ),
    ];
    for (c, k, want) in rows {
        let msg = files(c, k).err().expect("an error").to_string();
        assert!(msg.starts_with(&want), "{msg}\nwanted: {want}");
    }

    // The matching pair serves.
    let server = files(&cert, &key).unwrap();
    assert!(server.is_tls());
    assert_eq!(server.cert_pem(), None);
}

#[test]
fn io_errors_read_as_short_phrases() {
    let e = std::io::Error::from_raw_os_error(libc::EACCES);
    assert_eq!(io_reason(&e), "permission denied");
    let addr: SocketAddr = "127.0.0.1:80".parse().unwrap();
    assert_eq!(
        ServerError::Bind { addr, error: e }.to_string(),
        "cannot bind 127.0.0.1:80: permission denied (ports below 1024 need privileges)"
    );
}

#[tokio::test]
async fn kv_stores_reads_and_deletes_with_the_store_s_own_timing() {
    let server = spawn(ServerConfig {
        kv_preload: 10,
        kv_value_bytes: 32,
        ..config(ServerTls::None)
    })
    .unwrap();
    let mut client = connect(&server).await;
    // (method, path, body, status, body, the store's metric): in order, on one connection
    // (HEAD is covered by tests/workload.rs: this client reads a HEAD's Content-Length body.)
    type Row = (
        &'static str,
        &'static str,
        &'static [u8],
        u16,
        &'static str,
        Option<&'static str>,
    );
    let rows: [Row; 9] = [
        ("GET", "/kv/10", b"", 200, "", Some("lookup")), // preloaded: 32 bytes
        ("GET", "/kv/11", b"", 404, "", Some("lookup")), // past the preload
        ("PUT", "/kv/a", b"one", 201, "", Some("insert")), // created
        ("PUT", "/kv/a", b"two", 204, "", Some("insert")), // replaced
        ("GET", "/kv/a", b"", 200, "two", Some("lookup")),
        ("DELETE", "/kv/a", b"", 204, "", Some("delete")),
        ("DELETE", "/kv/a", b"", 404, "", Some("delete")), // already gone
        ("POST", "/kv/a", b"x", 405, "GET, HEAD, PUT, DELETE", None),
        ("GET", "/kv/", b"", 400, "/kv/{key}", None), // no key
    ];
    for (method, path, body, status, text, metric) in rows {
        let r = client.request(method, path, body).await;
        assert_eq!(r.status, status, "{method} {path}: {}", r.text());
        assert!(r.text().contains(text), "{method} {path}: {}", r.text());
        if let Some(m) = metric {
            assert!(r.timing_ms(m) >= 0.0, "{method} {path}");
        }
    }
    assert_eq!(client.get("/kv/1").await.body.len(), 32);
}

#[test]
fn a_bad_address_or_certificate_is_bad_input_a_failed_runtime_a_failure() {
    use crate::util::exit::ExitCode;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let bind = spawn(ServerConfig::new(addr, ServerTls::None))
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(bind, ServerError::Bind { .. }), "{bind}");
    assert_eq!(bind.exit_code(), 2);
    let missing = ServerError::NoCertificate("/x/cert.pem".into());
    assert_eq!(missing.exit_code(), 2);
    let runtime = ServerError::Runtime(std::io::Error::other("no threads"));
    assert_eq!(runtime.exit_code(), 1);
}

/// Every route of [`routes::ROUTES`] routes (its parameters filled in, its optional part left
/// out and given), and every route there is has its place in the list: a route added to the
/// router but not to the list (or to the list but not to the router) fails here, and so would
/// the list `serve` prints, its `--help` and its 404.
#[test]
fn the_route_list_is_the_router() {
    use routes::{route_of, Route, ROUTES};
    let mut seen = std::collections::BTreeSet::new();
    for pattern in ROUTES {
        let (required, optional) = match pattern.split_once('[') {
            Some((r, o)) => (
                r.to_string(),
                Some(format!("{r}{}", o.trim_end_matches(']'))),
            ),
            None => (pattern.to_string(), None),
        };
        for form in std::iter::once(required).chain(optional) {
            let path = form.replace("{code}", "200").replace("{key}", "k");
            let path = fill_parameters(&path);
            let name = match route_of(&path) {
                Route::Hello => "hello",
                Route::Delay(_) => "delay",
                Route::Echo => "echo",
                Route::Status(_) => "status",
                Route::Bytes(_) => "bytes",
                Route::Text(_) => "text",
                Route::Kv(_) => "kv",
                Route::Serial(_) => "serial",
                Route::Drift(_) => "drift",
                Route::Random(_) => "random",
                Route::Stall(_) => "stall",
                Route::Events(s) if s.sse => "sse",
                Route::Events(_) => "chunks",
                Route::WebSocket(ws) => ws.name(),
                Route::BadRequest(why) => panic!("{pattern}: {path} is a bad request: {why}"),
                Route::NotFound => panic!("{pattern}: {path} is not found"),
            };
            seen.insert(name);
        }
    }
    // One name per route the match above knows (it has no wildcard: a new route is a
    // compile error there until it is named, and then a failure here until it is listed).
    assert_eq!(seen.len(), 16, "{seen:?}");
    assert_eq!(ROUTES.len(), seen.len(), "a route listed twice: {ROUTES:?}");
}

/// A route pattern with every `{name}` parameter made `1`.
fn fill_parameters(pattern: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in pattern.chars() {
        match c {
            '{' => inside = true,
            '}' => {
                inside = false;
                out.push('1');
            }
            _ if !inside => out.push(c),
            _ => {}
        }
    }
    out
}
