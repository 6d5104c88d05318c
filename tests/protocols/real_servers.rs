//! reqlife against real servers from Debian's packages, started here on free loopback ports:
//! nginx (HTTP/1.1, and HTTPS with HTTP/2, gzip on) and nghttpd (h2c); and against a peer,
//! h2load, on the same server. `.ci/run` installs them, and in
//! CI (`CI` set) a missing server fails its test; on a developer's machine without them, the
//! test says so and does not run.

use crate::common::*;
use std::process::{Command, Stdio};
use std::time::Duration;

fn wait_listening(port: u16) {
    wait_until(
        &format!("a server listening on {port}"),
        Duration::from_secs(10),
        || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(),
    );
}

/// nginx with one worker in a temporary folder; `tls`: HTTPS + HTTP/2 with a fresh self-signed
/// certificate (made with reqlife's own embedded-target code path: rcgen).
fn nginx(program: &std::path::Path, dir: &std::path::Path, tls: bool) -> (Stopped, u16) {
    let port = free_port();
    let d = dir.display();
    let listen = if tls {
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap();
        std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
        std::fs::write(dir.join("key.pem"), cert.key_pair.serialize_pem()).unwrap();
        format!(
            "listen 127.0.0.1:{port} ssl http2; ssl_certificate {d}/cert.pem; ssl_certificate_key {d}/key.pem;"
        )
    } else {
        format!("listen 127.0.0.1:{port};")
    };
    let conf = format!(
        "worker_processes 1; daemon off; pid {d}/nginx.pid; error_log {d}/error.log;
         events {{ worker_connections 1024; }}
         http {{ access_log off; client_body_temp_path {d}/cb; proxy_temp_path {d}/p;
                fastcgi_temp_path {d}/f; uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
                gzip on; gzip_types text/plain; gzip_min_length 1;
                server {{ {listen} default_type text/plain;
                          location /static/ {{ root {d}; }}
                          location / {{ add_header Server-Timing 'app;dur=0.5' always; return 200 'Hello World!'; }} }} }}"
    );
    // A static text file that nginx gzips on the fly (chunked) for --compressed.
    std::fs::create_dir_all(dir.join("static")).unwrap();
    std::fs::write(dir.join("static/text.txt"), text(TEXT_BYTES)).unwrap();
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(program)
        .args(["-c", &format!("{d}/nginx.conf")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let server = Stopped(child);
    wait_listening(port);
    (server, port)
}

/// Bytes of the static text file.
const TEXT_BYTES: usize = 20_000;

/// `n` bytes of compressible text.
fn text(n: usize) -> Vec<u8> {
    b"where the time of a request goes, under load; "
        .iter()
        .copied()
        .cycle()
        .take(n)
        .collect()
}

#[test]
fn nginx_gzip_is_decoded_over_http1_and_http2() {
    let Some(program) = find_tool("nginx", "apt-get install nginx") else {
        return;
    };
    for tls in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let (_nginx, port) = nginx(&program, dir.path(), tls);
        let url = if tls {
            format!("https://127.0.0.1:{port}/static/text.txt")
        } else {
            format!("http://127.0.0.1:{port}/static/text.txt")
        };
        let tls_args: &[&str] = if tls { &["--http2", "--insecure"] } else { &[] };
        let j = Run::new()
            .n(300)
            .c(2)
            .t(1)
            .arg("--compressed")
            .args(tls_args)
            .url(&url)
            .json();
        assert_counts(
            &j,
            &[
                ("requests.ok", 300),
                ("latency.phases.decode.count", 300),
                ("bytes.body_decoded", 300 * TEXT_BYTES as u64),
            ],
        );
        assert!(
            count(&j, "bytes.body") * 10 < 300 * TEXT_BYTES as u64,
            "tls={tls}"
        );
    }
}

/// The numbers of h2load's `traffic:` line: total, headers, data bytes.
fn h2load_traffic(text: &str) -> (u64, u64, u64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("traffic:"))
        .unwrap_or_else(|| panic!("no traffic line in {text}"));
    // traffic: 1.67MB (1752800) total, 293.46KB (300500) headers (space savings 91.15%), …
    let nums: Vec<u64> = line
        .split('(')
        .skip(1)
        .filter_map(|p| p.split(')').next()?.parse().ok())
        .collect();
    (nums[0], nums[1], nums[2])
}

#[test]
fn the_traffic_figures_agree_with_h2load() {
    let (Some(program), Some(h2load)) = (
        find_tool("nginx", "apt-get install nginx"),
        find_tool("h2load", "apt-get install nghttp2-client"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), true);
    let url = format!("https://127.0.0.1:{port}/");
    let peer = Command::new(h2load)
        .args(["-n", "900", "-c", "1", "-m", "1", &url])
        .output()
        .expect("h2load runs");
    let (total, headers, data) = h2load_traffic(&String::from_utf8_lossy(&peer.stdout));
    let j = summary(&run_ok(&[
        "run",
        "--http2",
        "-n",
        "900",
        "-c",
        "1",
        "-t",
        "1",
        "--insecure",
        "--json",
        &url,
    ]));
    // The same server, the same responses: the same bodies exactly, and header and total
    // bytes within a few percent (the requests' own headers differ a little, and so do the
    // server's flow-control frames).
    assert_eq!(count(&j, "bytes.body"), data);
    let near = |ours: u64, theirs: u64, what: &str| {
        let ratio = ours as f64 / theirs as f64;
        assert!(
            (0.95..=1.05).contains(&ratio),
            "{what}: reqlife {ours}, h2load {theirs}"
        );
    };
    near(count(&j, "bytes.headers"), headers, "header bytes");
    near(count(&j, "bytes.read"), total, "total bytes");
}

#[test]
fn nginx_over_http1() {
    let Some(program) = find_tool("nginx", "apt-get install nginx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), false);
    let j = Run::new()
        .n(2000)
        .c(4)
        .t(2)
        .url(format!("http://127.0.0.1:{port}/"))
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 2000),
            ("connections.opened", 4),
            ("server_timing.app.count", 2000),
        ],
    );
    // 0.5 ms as sent, within HdrHistogram's 0.1%.
    let p50 = num(&j, "server_timing.app.p50_us");
    assert!((p50 - 500.0).abs() <= 0.5, "{p50}");
}

#[test]
fn nginx_pipelined_through_its_keepalive_limit_and_gzip() {
    let Some(program) = find_tool("nginx", "apt-get install nginx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), false);
    // nginx closes a connection after 1000 requests (keepalive_requests), in the middle of
    // the 63rd batch of 16: its last 8 requests go again on a new connection.
    let j = Run::new()
        .n(2400)
        .c(1)
        .t(1)
        .args(["--pipeline", "16", "--timeout", "2s"])
        .url(format!("http://127.0.0.1:{port}/"))
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 2400),
            ("connections.opened", 3),
            ("connections.server_closes", 2),
            ("server_timing.app.count", 2400),
        ],
    );
    // gzip on the fly: chunked bodies, decoded, four in flight at a time.
    let j = Run::new()
        .n(40)
        .c(1)
        .t(1)
        .args(["--pipeline", "4", "--compressed", "--timeout", "2s"])
        .url(format!("http://127.0.0.1:{port}/static/text.txt"))
        .json();
    assert_counts(&j, &[("requests.ok", 40), ("connections.opened", 1)]);
    assert_eq!(
        count(&j, "bytes.body_decoded"),
        40 * TEXT_BYTES as u64,
        "{j}"
    );
}

#[test]
fn nginx_over_tls_with_http2() {
    let Some(program) = find_tool("nginx", "apt-get install nginx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), true);
    let url = format!("https://127.0.0.1:{port}/");
    let j = Run::new()
        .args(["--http2", "--streams", "8"])
        .n(2000)
        .c(2)
        .t(1)
        .arg("--insecure")
        .url(&url)
        .json();
    assert_counts(&j, &[("requests.ok", 2000), ("requests.errors", 0)]);
    // nginx ends an HTTP/2 connection with a graceful GOAWAY after 1000 requests
    // (keepalive_requests): the streams it refused are sent again on a new connection.
    let opened = count(&j, "connections.opened");
    assert!((2..=4).contains(&opened), "{opened} connections");
    // Every connection after the first two replaced one nginx ended: one server close each,
    // however many streams its GOAWAY refused (issue 37: 0 here, and 2302 closes of 78
    // connections with --streams 50).
    assert_eq!(
        count(&j, "connections.server_closes"),
        opened - 2,
        "{opened} connections"
    );
    // nginx's http2_max_concurrent_streams default: 128.
    assert_counts(
        &j,
        &[
            ("latency.phases.tls.count", opened),
            ("latency.phases.h2_handshake.count", opened),
            ("h2_max_concurrent_streams", 128),
            ("bytes.body", 2000 * 12),
        ],
    );
    assert!(
        count(&j, "bytes.read") > 2000 * 12,
        "frames, not only bodies"
    );
    assert_eq!(count(&j, "server_timing.app.count"), 2000);
}

/// nghttpd (h2c) serving a 12-byte `index.html` on a free loopback port with `extra` flags;
/// `None` (said) where it is not installed.
pub(crate) fn nghttpd(extra: &[&str]) -> Option<(Stopped, u16, tempfile::TempDir)> {
    let program = find_tool("nghttpd", "apt-get install nghttp2-server")?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "Hello World!").unwrap();
    let port = free_port();
    let child = Command::new(program)
        .args(["--no-tls", "-a", "127.0.0.1"])
        .args(extra)
        .arg("-d")
        .arg(dir.path())
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nghttpd starts");
    let server = Stopped(child);
    wait_listening(port);
    Some((server, port, dir))
}

#[test]
fn nghttpd_over_h2c() {
    let Some((_server, port, _dir)) = nghttpd(&[]) else {
        return;
    };
    let url = format!("http://127.0.0.1:{port}/index.html");
    let j = Run::new()
        .args(["--http2", "--streams", "4"])
        .n(1000)
        .c(2)
        .t(1)
        .url(&url)
        .json();
    assert_counts(
        &j,
        &[
            ("requests.ok", 1000),
            ("status.200", 1000),
            ("bytes.body", 1000 * 12),
        ],
    );
}

/// nghttpd allowing one stream at a time (`-m 1`) under four streams a connection: the wait for
/// a stream slot is a phase of its own (`stream_wait`, the server's limit; h2load's clock starts
/// after it), not hidden in the write, and the phases still add up to the total.
#[test]
fn the_wait_for_a_stream_under_the_servers_limit_is_its_own_phase() {
    let Some((_server, port, _dir)) = nghttpd(&["-m", "1"]) else {
        return;
    };
    let j = Run::new()
        .args(["--http2", "--streams", "4"])
        .n(1000)
        .c(1)
        .t(1)
        .url(format!("http://127.0.0.1:{port}/index.html"))
        .json();
    assert_counts(
        &j,
        &[("requests.ok", 1000), ("h2_max_concurrent_streams", 1)],
    );
    // Three of the four streams wait for the one the server allows, most of the time.
    let waited = num(&j, "latency.phases.stream_wait.count");
    assert!(waited >= 500.0, "{waited} requests waited for a stream");
    let mean = |k: &str| num(&j, &format!("latency.{k}.mean_us"));
    let (stream_wait, wait) = (mean("phases.stream_wait"), mean("phases.wait"));
    assert!(
        stream_wait > wait,
        "stream_wait {stream_wait} us, wait {wait} us"
    );
    // The parts of a mean request (the stream wait of those that waited, over all requests).
    let parts = [
        "phases.stream_wait",
        "phases.write",
        "phases.wait",
        "phases.read",
    ];
    assert_phases_add_up(&j, &parts, 0.02, 1.0);
}
