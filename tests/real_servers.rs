//! reqlife against real servers from Debian's packages, started here on free loopback ports:
//! nginx (HTTP/1.1, and HTTPS with HTTP/2) and nghttpd (h2c). `.ci/run` installs them, and in
//! CI (`CI` set) a missing server fails its test; on a developer's machine without them, the
//! test says so and does not run.

mod common;

use common::*;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Where `program` is installed; in CI its absence is a failure.
fn find(program: &str, package: &str) -> Option<std::path::PathBuf> {
    let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.exists());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is required in CI: apt-get install {package}"
        );
        eprintln!("{program} is not installed (apt-get install {package}): not run");
    }
    found
}

/// A child process killed when dropped.
struct Server(Child);

impl Drop for Server {
    /// SIGTERM first: nginx's master then stops its workers (a SIGKILL would orphan them).
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_listening(port: u16) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// nginx with one worker in a temporary folder; `tls`: HTTPS + HTTP/2 with a fresh self-signed
/// certificate (made with reqlife's own embedded-target code path: rcgen).
fn nginx(program: &std::path::Path, dir: &std::path::Path, tls: bool) -> (Server, u16) {
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
                server {{ {listen} default_type text/plain;
                          location / {{ add_header Server-Timing 'app;dur=0.5' always; return 200 'Hello World!'; }} }} }}"
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new(program)
        .args(["-c", &format!("{d}/nginx.conf")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nginx starts");
    let server = Server(child);
    wait_listening(port);
    (server, port)
}

#[test]
fn nginx_over_http1() {
    let Some(program) = find("nginx", "nginx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), false);
    let out = run_ok(&[
        "run",
        "-n",
        "2000",
        "-c",
        "4",
        "-t",
        "2",
        "--json",
        &format!("http://127.0.0.1:{port}/"),
    ]);
    let j = summary(&out);
    assert_eq!(count(&j, "requests.ok"), 2000);
    assert_eq!(count(&j, "connections.opened"), 4);
    assert_eq!(count(&j, "server_timing.app.count"), 2000);
    // 0.5 ms as sent, within HdrHistogram's 0.1%.
    let p50 = num(&j, "server_timing.app.p50_us");
    assert!((p50 - 500.0).abs() <= 0.5, "{p50}");
}

#[test]
fn nginx_over_tls_with_http2() {
    let Some(program) = find("nginx", "nginx") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_nginx, port) = nginx(&program, dir.path(), true);
    let url = format!("https://127.0.0.1:{port}/");
    let out = run_ok(&[
        "run",
        "--http2",
        "--streams",
        "8",
        "-n",
        "2000",
        "-c",
        "2",
        "-t",
        "1",
        "--insecure",
        "--json",
        &url,
    ]);
    let j = summary(&out);
    assert_eq!(count(&j, "requests.ok"), 2000);
    assert_eq!(count(&j, "requests.errors"), 0);
    // nginx ends an HTTP/2 connection with a graceful GOAWAY after 1000 requests
    // (keepalive_requests): the streams it refused are sent again on a new connection.
    let opened = count(&j, "connections.opened");
    assert!((2..=4).contains(&opened), "{opened} connections");
    assert_eq!(count(&j, "latency.phases.tls.count"), opened);
    assert_eq!(count(&j, "latency.phases.h2_handshake.count"), opened);
    // nginx's http2_max_concurrent_streams default.
    assert_eq!(count(&j, "h2_max_concurrent_streams"), 128);
    assert_eq!(count(&j, "bytes.read"), 2000 * 12);
    assert_eq!(count(&j, "server_timing.app.count"), 2000);
}

#[test]
fn nghttpd_over_h2c() {
    let Some(program) = find("nghttpd", "nghttp2-server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "Hello World!").unwrap();
    let port = free_port();
    let child = Command::new(program)
        .args([
            "--no-tls",
            "-a",
            "127.0.0.1",
            "-d",
            dir.path().to_str().unwrap(),
            &port.to_string(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nghttpd starts");
    let _server = Server(child);
    wait_listening(port);
    let url = format!("http://127.0.0.1:{port}/index.html");
    let out = run_ok(&[
        "run",
        "--http2",
        "--streams",
        "4",
        "-n",
        "1000",
        "-c",
        "2",
        "-t",
        "1",
        "--json",
        &url,
    ]);
    let j = summary(&out);
    assert_eq!(count(&j, "requests.ok"), 1000);
    assert_eq!(count(&j, "status.200"), 1000);
    assert_eq!(count(&j, "bytes.read"), 1000 * 12);
}
