//! Test helpers: the reqlife binary, and small raw TCP servers on 127.0.0.1:0 that misbehave
//! on purpose (garbage, a close in the middle of a response, a stall, `Connection: close`).
//! Every server thread stops with the test process; every load is bounded by `-n` or `-d`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The reqlife binary built for the tests.
pub fn reqlife() -> Command {
    Command::new(env!("CARGO_BIN_EXE_reqlife"))
}

/// Runs reqlife with `args` and `input` on its standard input (closed after it).
pub fn run_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = reqlife()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// The longest any one reqlife command of the tests may take: the longest runs are a minute,
/// a knee's steps a few more; past it the command hangs, and is killed.
pub const HANG: Duration = Duration::from_secs(300);

/// Runs reqlife with `args`, with a hard bound on its run time ([`HANG`]: killed past it,
/// and the test fails naming the command and what it printed).
pub fn run(args: &[&str]) -> Output {
    let out = output_within(reqlife().args(args), HANG);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "reqlife panicked: {stderr}");
    out
}

/// Runs `cmd` to its end as `Command::output` does, for at most `bound`: past it the child is
/// killed and the test panics with the command and its output so far.
pub fn output_within(cmd: &mut Command, bound: Duration) -> Output {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + bound;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let (stdout, stderr) = (out.join().unwrap(), err.join().unwrap());
    let Some(status) = status else {
        panic!(
            "{cmd:?} still ran after {bound:?}: killed; stderr: {}",
            String::from_utf8_lossy(&stderr)
        );
    };
    Output {
        status,
        stdout,
        stderr,
    }
}

/// `Command::output` bounded by [`HANG`] ([`output_within`]), for the commands that make load.
pub trait Bounded {
    /// Runs it to its end, for at most [`HANG`].
    fn bounded(&mut self) -> Output;
}

impl Bounded for Command {
    fn bounded(&mut self) -> Output {
        output_within(self, HANG)
    }
}

/// Runs reqlife with `args` and asserts that it succeeded (showing its stderr if not).
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A text report with the lines it wrapped to fit 80 columns joined back (a continuation is
/// indented 6 or more, deeper than any table row: `report::text::wrap`), for a phrase that
/// may have been broken across two lines.
pub fn unwrapped(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for l in text.lines() {
        let indent = l.len() - l.trim_start().len();
        match out.last_mut() {
            Some(last) if indent >= 6 && !l.trim().is_empty() && !last.trim().is_empty() => {
                last.push(' ');
                last.push_str(l.trim());
            }
            _ => out.push(l.to_string()),
        }
    }
    out.join("\n") + "\n"
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Parses the `--json` summary.
pub fn summary(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): stdout={} stderr={}", stdout(o), stderr(o)))
}

/// A reqlife command line built up by intent, then run:
///
/// ```ignore
/// let j = Run::new().n(20).c(1).arg("--compressed").url(&url).json();
/// let out = Run::new().n(20).c(1).url(&url).exits(1); // the Output, exit 1 asserted
/// ```
///
/// `new` starts with the `run` subcommand (`Run::cmd("knee")` for another); the URL goes
/// last, after every flag; `json` adds `--json`. Every way to run it asserts that reqlife did
/// not panic (see [`run`]).
#[derive(Clone, Debug)]
pub struct Run {
    args: Vec<String>,
    url: Option<String>,
}

impl Default for Run {
    fn default() -> Run {
        Run::new()
    }
}

impl Run {
    /// `reqlife run …`.
    pub fn new() -> Run {
        Run::cmd("run")
    }

    /// `reqlife SUBCOMMAND …`.
    pub fn cmd(subcommand: &str) -> Run {
        Run {
            args: vec![subcommand.to_string()],
            url: None,
        }
    }

    /// `-n N`: the number of requests.
    pub fn n(self, requests: u64) -> Run {
        self.args(["-n", &requests.to_string()])
    }

    /// `-c C`: the number of connections.
    pub fn c(self, connections: u64) -> Run {
        self.args(["-c", &connections.to_string()])
    }

    /// `-t T`: the number of threads.
    pub fn t(self, threads: u64) -> Run {
        self.args(["-t", &threads.to_string()])
    }

    /// One more argument.
    pub fn arg(mut self, arg: impl AsRef<str>) -> Run {
        self.args.push(arg.as_ref().to_string());
        self
    }

    /// More arguments, in order.
    pub fn args<I, S>(mut self, args: I) -> Run
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_string()));
        self
    }

    /// The target, placed after every flag.
    pub fn url(mut self, url: impl AsRef<str>) -> Run {
        self.url = Some(url.as_ref().to_string());
        self
    }

    /// The whole command line, as reqlife gets it.
    pub fn argv(&self) -> Vec<String> {
        self.args.iter().chain(&self.url).cloned().collect()
    }

    /// Runs it, whatever its exit status.
    pub fn output(&self) -> Output {
        let argv = self.argv();
        run(&argv.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Runs it and asserts that it succeeded (showing its stderr if not).
    pub fn ok(&self) -> Output {
        self.exits(0)
    }

    /// Runs it and asserts its exit status (showing the command line and stderr if not).
    pub fn exits(&self, code: i32) -> Output {
        let out = self.output();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{:?}: {}",
            self.argv(),
            stderr(&out)
        );
        out
    }

    /// Runs it with `--json`, asserts that it succeeded, and parses the summary.
    pub fn json(&self) -> serde_json::Value {
        summary(&self.clone().arg("--json").ok())
    }

    /// Runs it with `--json`, asserts its exit status, and gives the Output with the parsed
    /// summary (for the stderr checks that go with a failed run).
    pub fn json_exits(&self, code: i32) -> (Output, serde_json::Value) {
        let out = self.clone().arg("--json").exits(code);
        let j = summary(&out);
        (out, j)
    }
}

/// Asserts the counts at dotted paths of a summary (`("requests.ok", 300)`); a failure names
/// the path, both figures and the whole summary.
#[track_caller]
pub fn assert_counts(v: &serde_json::Value, expected: &[(&str, u64)]) {
    for &(path, want) in expected {
        let got = path.split('.').fold(v, |v, k| &v[k]).as_u64();
        assert!(
            got == Some(want),
            "{path}: {} where {want} was expected, in\n{v:#}",
            got.map_or("no count".to_string(), |g| g.to_string())
        );
    }
}

/// Polls `cond` until it holds, every 10 ms; panics naming `what` after `timeout`. For a test
/// that waits for something to happen (a server listening, a file written): waiting on the
/// thing itself, not a guess at how long it takes.
#[track_caller]
pub fn wait_until(what: &str, timeout: Duration, cond: impl FnMut() -> bool) {
    assert!(within(timeout, cond), "{what}: not within {timeout:?}");
}

/// Whether `cond` comes to hold within `timeout`, polled every 10 ms: [`wait_until`] for a
/// test that says more than "not within" when it does not (or does something first).
pub fn within(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for `child` to exit, for at most `timeout` (panics naming `what` after that; a
/// child in a [`Stopped`] guard is then stopped as the test unwinds), and gives its status.
#[track_caller]
pub fn exit_within(
    child: &mut std::process::Child,
    what: &str,
    timeout: Duration,
) -> std::process::ExitStatus {
    let mut status = None;
    wait_until(what, timeout, || {
        status = child.try_wait().expect("the child can be waited for");
        status.is_some()
    });
    status.expect("it exited")
}

/// Waits for `child` (spawned with its stderr piped), [`HANG`] at most: its exit code (-1
/// for a signal) and its stderr.
#[track_caller]
pub fn ended(mut child: std::process::Child) -> (i32, String) {
    let status = exit_within(&mut child, "the child", HANG);
    let mut err = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut err);
    }
    (status.code().unwrap_or(-1), err)
}

/// A free loopback port (bound once, then let go) for a server that takes its port on the
/// command line rather than binding port 0 itself.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A free loopback port below the kernel's ephemeral range (32768 and up by default), for a
/// server that others connect to while it is not up yet: a port of that range can be given,
/// meanwhile, to one of their own sockets as its local port (connected to itself), and the
/// server could not bind it.
pub fn free_fixed_port() -> u16 {
    // Each call of this process from a place of its own (the tests run at once), each process
    // from one of its own.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let from = std::process::id()
        .wrapping_mul(97)
        .wrapping_add(call * 1009);
    (0..1000)
        .map(|i| 20_000 + (from.wrapping_add(i * 7) % 12_000) as u16)
        .find(|&p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free port in 20000-31999")
}

/// How many TCP sockets of this network namespace are in SYN_SENT towards `to`
/// (`/proc/net/tcp`): a connect under way that has no answer yet, as to [a full accept
/// queue](https://man7.org/linux/man-pages/man2/listen.2.html) that drops SYNs. A test that
/// must signal a child while it connects waits on this instead of guessing how long it takes.
pub fn syn_sent_to(to: SocketAddr) -> usize {
    let SocketAddr::V4(v4) = to else {
        panic!("syn_sent_to reads /proc/net/tcp: IPv4 only, not {to}")
    };
    // The kernel prints the address as the in-memory u32 in hex (little-endian here), then
    // the port in hex; 02 is TCP_SYN_SENT.
    let remote = format!(
        "{:08X}:{:04X}",
        u32::from_ne_bytes(v4.ip().octets()),
        v4.port()
    );
    std::fs::read_to_string("/proc/net/tcp")
        .expect("/proc/net/tcp is readable")
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(2) == Some(&remote.as_str()) && f.get(3) == Some(&"02")
        })
        .count()
}

/// The JSON file at `path` (a record, a report, a summary), parsed; a failure names the file.
#[track_caller]
pub fn read_json(path: impl AsRef<std::path::Path>) -> serde_json::Value {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} cannot be read: {e}", path.display()));
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON ({e}): {text}", path.display()))
}

/// The embedded target on 127.0.0.1:0, in this test process.
pub fn embedded(tls: reqlife::server::ServerTls) -> reqlife::server::RunningServer {
    reqlife::server::spawn(reqlife::server::ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        tls,
    ))
    .expect("the embedded target starts")
}

/// The number at a dotted `path` of a JSON value (`latency.total.p50_us`).
pub fn num(v: &serde_json::Value, path: &str) -> f64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}

/// The phases of a run's summary `j` add up to its total: the means of `parts` (paths under
/// `latency`: `schedule_lag`, `phases.write`, …), each over every request (a phase only some
/// requests had, a connect or a wait for a stream, weighs by its count), against the total's
/// mean, within `rel` of it plus `abs_us`.
pub fn assert_phases_add_up(j: &serde_json::Value, parts: &[&str], rel: f64, abs_us: f64) {
    let requests = num(j, "latency.total.count");
    let per_request = |k: &str| {
        let stats = &j["latency"][k.split('.').next().unwrap()];
        let stats = k.split('.').skip(1).fold(stats, |v, k| &v[k]);
        match stats["mean_us"].as_f64() {
            Some(mean) => mean * stats["count"].as_f64().unwrap_or(0.0) / requests,
            None => 0.0,
        }
    };
    let sum: f64 = parts.iter().map(|k| per_request(k)).sum();
    let total = num(j, "latency.total.mean_us");
    assert!(
        (sum - total).abs() < rel * total + abs_us,
        "{} means {sum} us against the total's {total} us",
        parts.join(" + ")
    );
}

/// The count at a dotted `path` of a JSON value.
pub fn count(v: &serde_json::Value, path: &str) -> u64 {
    path.split('.')
        .fold(v, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("{path} is not a count in {v}"))
}

/// A raw server: each accepted connection is handled by `handler` on its own thread.
pub fn raw_server<F>(handler: F) -> SocketAddr
where
    F: Fn(TcpStream) + Send + Sync + 'static + Clone,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let h = handler.clone();
            std::thread::spawn(move || h(socket));
        }
    });
    addr
}

/// Reads one request head (up to the blank line); false when the peer closed.
pub fn read_request(s: &mut TcpStream) -> bool {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// A server that answers every request on a connection with `response`, then closes the
/// connection if `close_after` is true.
pub fn canned_server(response: &'static [u8], close_after: bool) -> SocketAddr {
    raw_server(move |mut s| {
        while read_request(&mut s) {
            if s.write_all(response).is_err() || close_after {
                return;
            }
        }
    })
}

/// A server that reads the request and never answers (holds the connection for `hold`).
pub fn stalling_server(hold: Duration) -> SocketAddr {
    raw_server(move |mut s| {
        read_request(&mut s);
        std::thread::sleep(hold);
    })
}

/// A loopback port on which nothing listens.
pub fn refused_addr() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A TLS server's configuration: a self-signed certificate for 127.0.0.1, ALPN `alpn`.
pub fn tls_config(alpn: &[&[u8]]) -> std::sync::Arc<rustls::ServerConfig> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    let ck = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// A TLS server (a self-signed certificate for 127.0.0.1, rustls) whose ALPN offers only
/// `alpn` (none when empty) and that answers each HTTP/1.1 request with `200 OK`: a server
/// with TLS but no HTTP/2.
pub fn tls_server(alpn: &[&[u8]]) -> SocketAddr {
    let config = tls_config(alpn);
    raw_server(move |s| {
        let Ok(conn) = rustls::ServerConnection::new(config.clone()) else {
            return;
        };
        let mut tls = rustls::StreamOwned::new(conn, s);
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while let Ok(1) = tls.read(&mut byte) {
            head.push(byte[0]);
            if head.ends_with(b"\r\n\r\n") {
                head.clear();
                let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                if tls.write_all(ok).and_then(|_| tls.flush()).is_err() {
                    return;
                }
            }
        }
    })
}

/// A tool a test needs is missing: a failure in CI (where `.ci/test` installs it), else a line
/// saying the test does not run. `install` is the command that installs it.
pub fn missing(what: &str, install: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} is required in CI: {install}"
    );
    eprintln!("{what} is not installed ({install}): not run");
}

/// Whether `python3` imports `modules` (`"grpc, grpc_tools"`); when it does not, [`missing`]
/// with `what` and `install`.
pub fn python_has(modules: &str, what: &str, install: &str) -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        missing(what, install);
    }
    ok
}

/// Where `program` is installed (`/usr/sbin`, `/usr/bin`, `/sbin`, `/bin`); `None`, after
/// [`missing`], when it is not.
pub fn find_tool(program: &str, install: &str) -> Option<std::path::PathBuf> {
    let found = ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| std::path::Path::new(d).join(program))
        .find(|p| p.exists());
    if found.is_none() {
        missing(program, install);
    }
    found
}

/// Sends `sig` (`libc::SIGINT`, `libc::SIGTERM`) to `child`, as Ctrl-C or a service
/// manager would.
pub fn send_signal(child: &std::process::Child, sig: i32) {
    // SAFETY: a signal to our own child, by its pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A child process stopped when dropped: SIGTERM first (nginx's master then stops its
/// workers; a SIGKILL would orphan them), SIGKILL after 5 s.
pub struct Stopped(pub std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        // A child already reaped is not signalled: its pid may be another process's by now.
        if let Ok(Some(_)) = self.0.try_wait() {
            return;
        }
        send_signal(&self.0, libc::SIGTERM);
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

/// A server started as `cmd` (stdout piped here) that prints `listening PORT` first: the
/// child, stopped when dropped, and its port (`what` names it in the panic otherwise).
pub fn listening(cmd: &mut std::process::Command, what: &str) -> (Stopped, u16) {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} starts: {e}"));
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let port = line
        .strip_prefix("listening ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("{what} said {line:?}"));
    (Stopped(child), port)
}

/// What a child writes on `from` (its stdout), collected by a thread as it comes, to read
/// while the child runs: derefs to the bytes so far (`out.lock()`), and [`Collected::all`]
/// gives everything once the writer has closed its end.
pub fn collected(mut from: impl Read + Send + 'static) -> Collected {
    let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = out.clone();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    Collected { out, reader }
}

/// A child's output read by [`collected`]: the bytes so far, and the thread that reads them.
pub struct Collected {
    out: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    reader: std::thread::JoinHandle<()>,
}

impl Collected {
    /// The bytes so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Whether the writer has closed its end (every byte is in).
    pub fn ended(&self) -> bool {
        self.reader.is_finished()
    }

    /// Everything written, once the writer has closed its end (the child exited); panics
    /// after `timeout` (something else holds the pipe open).
    #[track_caller]
    pub fn all(&self, timeout: Duration) -> Vec<u8> {
        wait_until("the child's output to its end", timeout, || self.ended());
        self.out.lock().unwrap().clone()
    }
}

impl std::ops::Deref for Collected {
    type Target = std::sync::Arc<std::sync::Mutex<Vec<u8>>>;

    fn deref(&self) -> &Self::Target {
        &self.out
    }
}

/// A keep-alive server that answers each request head with `Hello World!` (one write per
/// head), from fixed buffers: it allocates nothing per request (`tests/alloc.rs` counts the
/// process's allocations) and makes one read and one write per request (`tests/syscalls.rs`).
pub fn quiet_server() -> std::net::SocketAddr {
    thread_per_connection(|mut s| {
        let mut buf = [0u8; 4096];
        let mut tail = [0u8; 4];
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            // Count request heads ending in this read (requests are small, one per read
            // or split; track the last 4 bytes across reads).
            let mut heads = 0;
            for &b in &buf[..n] {
                tail = [tail[1], tail[2], tail[3], b];
                if &tail == b"\r\n\r\n" {
                    heads += 1;
                }
            }
            for _ in 0..heads {
                if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\nHello World!")
                    .is_err()
                {
                    return;
                }
            }
        }
    })
}

/// A loopback server that serves each connection on a thread of its own with `serve` (the
/// socket with TCP_NODELAY set).
pub fn thread_per_connection(serve: fn(std::net::TcpStream)) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let _ = socket.set_nodelay(true);
            std::thread::spawn(move || serve(socket));
        }
    });
    addr
}

/// A recorder's sample of a complete response with `stamps`, for a test that feeds a
/// `Recorder` directly: status 200, 100 bytes read, 40 written, no traffic figures, the
/// connection kept, the one fixed request (the library's unit tests have the same as
/// `Sample::ok`). A test changes what it needs with struct update syntax
/// (`Sample { bytes_read: 120, ..ok_sample(stamps) }`).
pub fn ok_sample(stamps: reqlife::model::Timestamps) -> reqlife::model::Sample {
    reqlife::model::Sample {
        stamps,
        status: Some(200),
        error: None,
        bytes_read: 100,
        bytes_written: 40,
        traffic: reqlife::model::Traffic::default(),
        server_closed: false,
        request: 0,
        connection: 0,
        trace: None,
        wire: Default::default(),
    }
}

/// Runs `cmd` (a `reqlife … --json` run), which must exit 0: its JSON and how many times it
/// blocked (voluntary context switches, from `wait4`'s resource usage: its wake-ups).
pub fn json_and_blocks(mut cmd: Command) -> (serde_json::Value, f64) {
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    // Reaped below with wait4 (which gives its resource usage), not with `wait`.
    #[allow(clippy::zombie_processes)]
    let child = cmd.spawn().unwrap();
    let pid = child.id() as libc::pid_t;
    let mut out = String::new();
    child.stdout.unwrap().read_to_string(&mut out).unwrap();
    let (mut status, mut usage) = (0, unsafe { std::mem::zeroed::<libc::rusage>() });
    // SAFETY: a child of this process, reaped once, with valid out-pointers.
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    assert_eq!(status, 0, "{out}");
    (serde_json::from_str(&out).unwrap(), usage.ru_nvcsw as f64)
}

/// The `error:` lines of a run's stderr: exactly one, returned.
#[track_caller]
pub fn one_error_line(out: &Output) -> String {
    let err = stderr(out);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

/// Asserts that `record` validates against the RunRecord schema (`schema/runrecord.schema.json`),
/// naming every error.
pub fn assert_valid_record(record: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/runrecord.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(record)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "the record is not valid: {errors:?}");
}

/// Runs `args` (a run) writing its record, which is checked against the schema: the exit code,
/// the record and the report (unwrapped).
pub fn run_recorded(args: &[&str]) -> (i32, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.json");
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", path.to_str().unwrap()]);
    let out = run(&all);
    let record = read_json(&path);
    assert_valid_record(&record);
    let code = out.status.code().unwrap_or(-1);
    (code, record, unwrapped(&stdout(&out)))
}
