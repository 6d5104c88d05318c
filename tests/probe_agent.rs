//! The probes' agent (`reqlife probe`'s server) with fake probes, so without root or
//! bpftrace: its token, its bounds on a client (a silent one, a slow one, an oversized head),
//! one run at a time, and `run --server-probes-from` refused by it in one line. The real
//! probes behind it are tests/probes.rs's.

#[path = "common/mod.rs"]
mod common;

use common::*;
use reqlife::probe::agent::{serve, Agent, AgentProbes, Limits};
use reqlife::probe::remote::{Remote, Token};
use reqlife::probe::ProbeError;
use reqlife::recorder::probes::ProbeAcc;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "a-shared-secret-0123456789";

/// What the fake probes were made to do, counted.
#[derive(Default)]
struct Seen {
    attached: AtomicUsize,
    begun: AtomicUsize,
    finished: AtomicUsize,
    said: Mutex<Vec<String>>,
}

/// Probes that only count.
struct Fake(Arc<Seen>);

impl AgentProbes for Fake {
    fn begin_ns(&mut self, _: u64, _: Duration) {
        self.0.begun.fetch_add(1, Ordering::SeqCst);
    }

    fn finish(self) -> ProbeAcc {
        self.0.finished.fetch_add(1, Ordering::SeqCst);
        let phases = [("socket".to_string(), "in the socket".to_string())];
        ProbeAcc::new(vec![42], "fake".into(), 1, &phases, &[])
    }
}

/// An agent of fake probes on 127.0.0.1, serving on its own thread until dropped.
struct Running {
    addr: SocketAddr,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), ProbeError>>>,
}

impl Running {
    fn start(token: Option<&str>, limits: Limits) -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (s1, s2) = (seen.clone(), seen.clone());
        let agent = Agent {
            attach: Box::new(move || {
                s1.attached.fetch_add(1, Ordering::SeqCst);
                Ok(Fake(s1.clone()))
            }),
            token: token.map(|t| Token::parse(t, "test").unwrap()),
            limits,
            ring: 1000,
            say: Box::new(move |line| s2.said.lock().unwrap().push(line.to_string())),
        };
        let halt = stop.clone();
        let thread = std::thread::spawn(move || serve(listener, agent, &halt));
        wait_until("attached", Duration::from_secs(5), || {
            seen.attached.load(Ordering::SeqCst) == 1
        });
        Running {
            addr,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn count(&self, what: fn(&Seen) -> &AtomicUsize) -> usize {
        what(&self.seen).load(Ordering::SeqCst)
    }

    fn said(&self) -> Vec<String> {
        self.seen.said.lock().unwrap().clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn token() -> Option<Token> {
    Some(Token::parse(TOKEN, "test").unwrap())
}

/// One request, raw: the status and body of the answer (None: closed without one).
fn raw(addr: SocketAddr, head: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

fn get(addr: SocketAddr, path: &str, auth: &str) -> Option<(u16, String)> {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n"),
    )
}

#[test]
fn without_the_token_nothing_is_attached_begun_or_handed_out() {
    let agent = Running::start(Some(TOKEN), Limits::default());
    let wrong = "Authorization: Bearer a-shared-secret-0123456788\r\n";
    for auth in ["", wrong, "Authorization: Basic eDp5\r\n"] {
        for path in [
            "/clock",
            "/ready",
            "/begin?from=1&interval=1000",
            "/finish?run=1",
        ] {
            let (status, body) = get(agent.addr, path, auth).expect("an answer");
            assert_eq!(status, 401, "{path} {auth:?}: {body}");
            assert!(body.contains("--server-probes-token-file"), "{body}");
        }
    }
    assert_eq!(agent.count(|s| &s.begun), 0);
    assert_eq!(agent.count(|s| &s.finished), 0);
    assert_eq!(agent.count(|s| &s.attached), 1);
    // One line each, naming the peer and what it asked.
    let said = agent.said();
    let refused: Vec<&String> = said.iter().filter(|l| l.starts_with("refused ")).collect();
    assert_eq!(refused.len(), 12, "{said:?}");
    assert!(
        refused[0].contains("GET /clock with no token"),
        "{}",
        refused[0]
    );
    assert!(
        refused[4].contains("GET /clock with a wrong token"),
        "{}",
        refused[4]
    );
    // The generator's side: one line, bad input.
    let e = Remote::connect(&agent.url(), None).unwrap_err();
    assert!(matches!(e, ProbeError::Input(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("refuses a request without its token"),
        "{e}"
    );
    let other = Some(Token::parse("another-secret-0123456789", "t").unwrap());
    let e = Remote::connect(&agent.url(), other).unwrap_err();
    assert!(e.to_string().contains("refuses the token sent"), "{e}");
    assert_eq!(agent.count(|s| &s.begun), 0);
    // With it, a whole run: begun, finished, handed out, attached afresh.
    let mut remote = Remote::connect(&agent.url(), token()).unwrap();
    remote
        .begin(Instant::now(), Duration::from_secs(1))
        .unwrap();
    let acc = remote.finish().unwrap();
    assert_eq!((acc.pids, acc.process), (vec![42], "fake".to_string()));
    assert_eq!(agent.count(|s| &s.begun), 1);
    assert_eq!(agent.count(|s| &s.finished), 1);
    wait_until("attached again", Duration::from_secs(5), || {
        agent.count(|s| &s.attached) == 2
    });
}

#[test]
fn a_silent_client_does_not_delay_the_clock_exchanges() {
    let agent = Running::start(Some(TOKEN), Limits::default());
    // Connections that say nothing, and one that says a byte at a time, all held open.
    let silent: Vec<TcpStream> = (0..4)
        .map(|_| TcpStream::connect(agent.addr).unwrap())
        .collect();
    let mut slow = TcpStream::connect(agent.addr).unwrap();
    slow.write_all(b"GET /clo").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    let remote = Remote::connect(&agent.url(), token()).unwrap();
    // The eight exchanges and the readiness check, each on a connection of its own, while
    // the others wait: the agent's head timeout is 5 s, so one of them held up would show.
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert!(remote.clock().rtt_us < 1e6, "{:?}", remote.clock());
    drop(silent);
}

#[test]
fn oversized_heads_and_slow_clients_are_cut_off() {
    let limits = Limits {
        head_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let agent = Running::start(Some(TOKEN), limits);
    // A head over 8 KiB: refused at once (431), nothing done.
    let big = format!(
        "GET /clock HTTP/1.1\r\nHost: x\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(16 * 1024)
    );
    let mut s = TcpStream::connect(agent.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(big.as_bytes());
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    // A client that sends its head a byte every 100 ms is cut off at the head timeout.
    let mut s = TcpStream::connect(agent.addr).unwrap();
    let t0 = Instant::now();
    let head = format!("GET /clock HTTP/1.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let mut cut = None;
    for b in head.bytes() {
        if s.write_all(&[b]).is_err() {
            cut = Some(t0.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let cut = cut.expect("the slow client was served");
    assert!(
        cut >= Duration::from_millis(500) && cut < Duration::from_secs(3),
        "{cut:?}"
    );
    // A silent one too: its connection ends without an answer.
    let mut s = TcpStream::connect(agent.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&buf[..n]));
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert_eq!(agent.count(|s| &s.begun), 0);
}

#[test]
fn one_run_at_a_time_the_second_refused_naming_the_first() {
    let agent = Running::start(None, Limits::default());
    let mut first = Remote::connect(&agent.url(), None).unwrap();
    let mut second = Remote::connect(&agent.url(), None).unwrap();
    first.begin(Instant::now(), Duration::from_secs(1)).unwrap();
    let e = second
        .begin(Instant::now(), Duration::from_secs(1))
        .unwrap_err();
    let line = e.to_string();
    assert!(matches!(e, ProbeError::Failed(_)), "{e:?}");
    assert!(!line.contains('\n'), "{line}");
    assert!(
        line.contains("another run is open here (run 1 from 127.0.0.1:"),
        "{line}"
    );
    assert!(line.contains("s ago): one run at a time"), "{line}");
    // A generator that comes now is refused before its run starts; its finish touches
    // nothing (it began no run there).
    let e = Remote::connect(&agent.url(), None).unwrap_err();
    assert!(
        e.to_string().contains("another run is open here (run 1"),
        "{e}"
    );
    assert!(second.finish().is_err());
    let (status, body) = get(agent.addr, "/finish?run=7", "").unwrap();
    assert_eq!(status, 409, "{body}");
    assert!(
        body.starts_with("run 7 is not the one open here (run 1 from"),
        "{body}"
    );
    assert_eq!(agent.count(|s| &s.begun), 1);
    assert_eq!(agent.count(|s| &s.finished), 0);
    // Once the first has ended and the agent attached afresh, the next may begin.
    first.finish().unwrap();
    wait_until("attached again", Duration::from_secs(5), || {
        agent.count(|s| &s.attached) == 2
    });
    let mut third = Remote::connect(&agent.url(), None).unwrap();
    third.begin(Instant::now(), Duration::from_secs(1)).unwrap();
    assert!(agent
        .said()
        .iter()
        .any(|l| l.starts_with("a run began (run 2 from")));
}

#[test]
fn run_fails_in_one_line_when_the_agent_has_a_run_open() {
    let agent = Running::start(Some(TOKEN), Limits::default());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, format!("{TOKEN}\n")).unwrap();
    let target = embedded(reqlife::server::ServerTls::None);
    // Each ends in a second or two: refused before the load, or 20 requests.
    let run_against = |extra: &[&str]| {
        let (url, target_url) = (agent.url(), target.url("/"));
        let mut args = vec!["run", "-n", "20", "-c", "1", "--server-probes-from", &url];
        args.extend(extra);
        args.push(&target_url);
        reqlife()
            .args(&args)
            .env_remove(reqlife::probe::remote::TOKEN_ENV)
            .bounded()
    };
    let mut first = Remote::connect(&agent.url(), token()).unwrap();
    first.begin(Instant::now(), Duration::from_secs(1)).unwrap();
    let out = run_against(&["--server-probes-token-file", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = one_error_line(&out);
    assert!(
        line.contains("another run is open here (run 1 from 127.0.0.1:"),
        "{line}"
    );
    // Without the token: bad input, in one line.
    let out = run_against(&[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(one_error_line(&out).contains("refuses a request without its token"));
    first.finish().unwrap();
}

#[test]
fn a_run_whose_start_the_agent_refuses_stops_and_fails_in_one_line() {
    let agent = Running::start(None, Limits::default());
    // The run reaches the agent through a proxy that lets another run begin there just
    // before the run's own /begin: the agent was ready when the run started.
    let first = Arc::new(Mutex::new(Remote::connect(&agent.url(), None).unwrap()));
    let (to, other) = (agent.addr, first.clone());
    let proxy = raw_server(move |mut s| {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if s.read(&mut byte).unwrap_or(0) == 0 {
                return;
            }
            head.push(byte[0]);
        }
        if head.starts_with(b"GET /begin") {
            let mut other = other.lock().unwrap();
            other.begin(Instant::now(), Duration::from_secs(1)).unwrap();
        }
        let mut agent = TcpStream::connect(to).unwrap();
        agent.write_all(&head).unwrap();
        let mut answer = Vec::new();
        let _ = agent.read_to_end(&mut answer);
        let _ = s.write_all(&answer);
    });
    let target = embedded(reqlife::server::ServerTls::None);
    let out = reqlife()
        .args(["run", "-n", "20", "-c", "1", "--server-probes-from"])
        .args([format!("http://{proxy}"), target.url("/")])
        .env_remove(reqlife::probe::remote::TOKEN_ENV)
        .bounded();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let line = one_error_line(&out);
    assert!(
        line.contains("another run is open here (run 1 from"),
        "{line}"
    );
    // The other run's probes were left alone.
    assert_eq!(agent.count(|s| &s.begun), 1);
    assert_eq!(agent.count(|s| &s.finished), 0);
    let first = first.lock().unwrap().clone();
    first.finish().unwrap();
}

#[test]
fn bad_tokens_and_an_open_agent_without_one_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short");
    std::fs::write(&short, "abc\n").unwrap();
    let short = short.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["probe", "--listen", "0.0.0.0:9465", "--port", "8080"],
            "--listen 0.0.0.0:9465: not a loopback address, and no token",
        ),
        (
            &["probe", "--port", "8080", "--token-file", short],
            "not a token: it is shorter than 16 characters",
        ),
        (
            &["probe", "--port", "8080", "--token-file", "/no/such/file"],
            "--token-file /no/such/file: cannot read it",
        ),
        (
            &["run", "-n", "1", "--server-probes-token-file", short, "http://127.0.0.1:9/"],
            "--server-probes-token-file is the token of an agent: give it with --server-probes-from",
        ),
        (
            &[
                "run",
                "-n",
                "1",
                "--server-probes-from",
                "http://127.0.0.1:9",
                "--server-probes-token-file",
                short,
                "http://127.0.0.1:9/",
            ],
            "--server-probes-token-file",
        ),
    ];
    for (args, says) in cases {
        let out = reqlife()
            .args(args)
            .env_remove(reqlife::probe::remote::TOKEN_ENV)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        let line = one_error_line(&out);
        assert!(line.contains(says), "{args:?}: {line}");
    }
    // The environment's token, checked as a file's.
    let out = reqlife()
        .args(["probe", "--listen", "0.0.0.0:9465", "--port", "8080"])
        .env(reqlife::probe::remote::TOKEN_ENV, "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(one_error_line(&out).contains("REQLIFE_PROBE_TOKEN: not a token: it is empty"));
}

#[test]
fn events_are_handed_to_the_open_run_only_with_the_token_and_a_bounded_body() {
    let agent = Running::start(Some(TOKEN), Limits::default());
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let post = |path: &str, auth: &str, body: &str| {
        raw(
            agent.addr,
            &format!(
                "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            ),
        )
        .expect("an answer")
    };
    let ask = "40000 0 80 0 150 123\n";
    // Without the token, or before a run: nothing handed out.
    assert_eq!(post("/events?run=1", "", ask).0, 401);
    let (status, body) = post("/events?run=1", &auth, ask);
    assert_eq!((status, body.as_str()), (409, "run 1 is not open here"));
    // A GET of it, a POST elsewhere: not the protocol.
    assert_eq!(get(agent.addr, "/events?run=1", &auth).unwrap().0, 405);
    assert_eq!(post("/begin?from=1&interval=1", &auth, "").0, 405);
    let (status, id) = get(agent.addr, "/begin?from=1&interval=1000", &auth).unwrap();
    assert_eq!(status, 200);
    let path = format!("/events?run={id}");
    // The run's asks: answered from the ring (empty: the fake probes feed none).
    let (status, body) = post(&path, &auth, ask);
    assert_eq!(status, 200, "{body}");
    let pulled: reqlife::recorder::join::remote::Pulled = serde_json::from_str(&body).unwrap();
    assert!(pulled.events.is_empty() && pulled.gone.is_empty(), "{body}");
    // Another run's id, a line not an ask, a body over the cap: refused in one line each.
    let (status, body) = post("/events?run=99", &auth, ask);
    assert_eq!(status, 409, "{body}");
    assert!(
        body.starts_with("run 99 is not the one open here (run "),
        "{body}"
    );
    let (status, body) = post(&path, &auth, "40000 0 80\n");
    assert_eq!(status, 400);
    assert!(
        body.starts_with("line 1: not `PORT TX_FROM TX_TO RX_FROM RX_TO DONE_NS`"),
        "{body}"
    );
    let big = ask.repeat(reqlife::probe::agent::EVENTS_MAX / ask.len() + 1);
    let (status, body) = post(&path, &auth, &big);
    assert_eq!(status, 413, "{body}");
    assert!(body.contains("ask for fewer requests at once"), "{body}");
    // The run goes on: its end is still handed out.
    let (status, _) = get(agent.addr, &format!("/finish?run={id}"), &auth).unwrap();
    assert_eq!(status, 200);
}
