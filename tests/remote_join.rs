//! `run --server-probes-from` joined per request, two processes over loopback: this test's
//! process serves HTTP and is the probe agent, its probes made up by the server itself (each
//! read and write stamped with CLOCK_MONOTONIC and its bytes' offsets, as the kernel's probes
//! give them: no root); `reqlife run` is the other process. Its kept requests carry their own
//! server phases, the clocks' offset per request is stated (one host: near 0), what the agent
//! sends grows with the requests kept, not the run's length, and a ring too small for the
//! load is said, its requests joined to nothing. The real probes behind an agent are
//! tests/probes.rs's.

#[path = "common/mod.rs"]
mod common;

use common::*;
use reqlife::probe::agent::{serve, Agent, AgentProbes, Limits, RingFeed};
use reqlife::probe::ProbeError;
use reqlife::recorder::join::KernelEvent::{self, *};
use reqlife::recorder::probes::{bucket_key, ProbeAcc};
use reqlife::util::clock::mono_now_ns;
use std::collections::HashMap;
use std::io::{Read as _, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where the made-up probes' events go: the agent's ring, once attached.
type Slot = Arc<Mutex<Option<RingFeed>>>;

fn push(slot: &Slot, events: &[KernelEvent]) {
    if let Some(feed) = slot.lock().unwrap().as_ref() {
        feed(events);
    }
}

/// The probes: the server's own stamps; at the end a histogram per second of the window (as
/// the agent's per-tick fold sends).
struct Stamped {
    slot: Slot,
    began: Option<Instant>,
}

impl AgentProbes for Stamped {
    fn begin_ns(&mut self, _: u64, _: Duration) {
        self.began = Some(Instant::now());
    }

    fn finish(self) -> ProbeAcc {
        let phases = [("handle".to_string(), "read → write".to_string())];
        let mut acc = ProbeAcc::new(vec![std::process::id()], "stamped".into(), 1, &phases, &[]);
        let secs = self.began.map_or(0, |b| b.elapsed().as_secs());
        for i in 0..=secs {
            acc.add_tick(Some(i), &[(0, bucket_key(20_000 + i), 100)]);
        }
        acc
    }

    fn feed(&mut self, ring: RingFeed) {
        *self.slot.lock().unwrap() = Some(ring);
    }
}

/// What the server measured of each request, by (client port, the end of its bytes): its
/// read → its response's write, ns (what `handle` must be).
type Truth = Arc<Mutex<HashMap<(u16, u64), u64>>>;

/// A server that answers `ok` to each request head after 100 to 900 µs, stamping its reads
/// and writes; its probes' clock ticks every 100 ms.
fn stamped_server(slot: &Slot, truth: &Truth) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let keys = Arc::new(AtomicU64::new(1));
    let (s, t, truth) = (slot.clone(), slot.clone(), truth.clone());
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let (slot, truth) = (s.clone(), truth.clone());
            let key = keys.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || connection(socket, &slot, &truth, key));
        }
    });
    std::thread::spawn(move || loop {
        push(&t, &[Tick { ns: mono_now_ns() }]);
        std::thread::sleep(Duration::from_millis(100));
    });
    addr
}

fn connection(mut s: TcpStream, slot: &Slot, truth: &Truth, key: u64) {
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let _ = s.set_nodelay(true);
    let port = s.peer_addr().unwrap().port();
    let pid = std::process::id();
    let ns = mono_now_ns();
    push(slot, &[Opened { port, ns }]);
    let (mut rx, mut tx, mut done) = (0u64, 0u64, 0u64);
    let (mut buf, mut head) = ([0u8; 4096], Vec::new());
    while let Ok(n @ 1..) = s.read(&mut buf) {
        let (start, off, ns) = (rx, rx + n as u64, mono_now_ns());
        let read_ns = mono_now_ns();
        let read = KernelEvent::Read {
            port,
            start,
            off,
            ns: read_ns,
            pid,
            key,
        };
        let prev = start;
        push(
            slot,
            &[
                Arrived {
                    port,
                    prev,
                    off,
                    ns,
                },
                read,
            ],
        );
        rx = off;
        head.extend_from_slice(&buf[..n]);
        while let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.drain(..at + 4);
            done += at as u64 + 4;
            std::thread::sleep(Duration::from_micros(100 + done % 5 * 200));
            let (start, end) = (tx, tx + OK.len() as u64);
            let ns = mono_now_ns();
            if s.write_all(OK).is_err() {
                return;
            }
            truth.lock().unwrap().insert((port, done), ns - read_ns);
            let wrote = Wrote {
                port,
                start,
                end,
                ns,
                pid,
            };
            let (prev, off, ns) = (start, end, mono_now_ns());
            push(
                slot,
                &[
                    wrote,
                    Delivered {
                        port,
                        prev,
                        off,
                        ns,
                    },
                ],
            );
            tx = end;
        }
    }
}

/// The agent on 127.0.0.1 with a ring of `ring` events, serving until dropped.
struct Running {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), ProbeError>>>,
}

impl Running {
    fn start(slot: &Slot, ring: usize) -> Running {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = slot.clone();
        let agent = Agent {
            attach: Box::new(move || {
                Ok(Stamped {
                    slot: s.clone(),
                    began: None,
                })
            }),
            token: None,
            limits: Limits::default(),
            ring,
            say: Box::new(|_| {}),
        };
        let halt = stop.clone();
        let thread = std::thread::spawn(move || serve(listener, agent, &halt));
        Running {
            addr,
            stop,
            thread: Some(thread),
        }
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

/// `reqlife run` (its own process) for `secs` at 1000 requests a second against the server,
/// probed through the agent: its record and its text.
/// With `log`: every request logged there (so asked for).
fn run(
    agent: &Running,
    server: SocketAddr,
    secs: u64,
    log: Option<&std::path::Path>,
) -> (serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = reqlife()
        .args([
            "run",
            "-d",
            &format!("{secs}s"),
            "-c",
            "4",
            "--rate",
            "1000",
        ])
        .args(["--server-probes-from", &format!("http://{}", agent.addr)])
        .args(log.map(|l| format!("--log-requests={}", l.display())))
        .arg("-o")
        .arg(&out)
        .arg(format!("http://{server}/"))
        .env_remove(reqlife::probe::remote::TOKEN_ENV)
        .bounded();
    assert!(o.status.success(), "{}", stderr(&o));
    (read_json(&out), unwrapped(&stdout(&o)))
}

fn agent_and_server(ring: usize) -> (Running, SocketAddr, Truth) {
    let slot: Slot = Arc::new(Mutex::new(None));
    let agent = Running::start(&slot, ring);
    wait_until("attached", Duration::from_secs(5), || {
        slot.lock().unwrap().is_some()
    });
    let truth = Truth::default();
    let server = stamped_server(&slot, &truth);
    (agent, server, truth)
}

/// The logged requests with server phases, each checked against what the server measured of
/// it (its `handle`, to the ns: its own events, never another's): how many.
fn logged_handles_are_their_own(log: &std::path::Path, truth: &Truth) -> u64 {
    let text = std::fs::read_to_string(log).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (port, tx_end, handle) = (col("port"), col("tx_end"), col("server_handle_ns"));
    let truth = truth.lock().unwrap();
    let mut checked = 0;
    for row in lines {
        let f: Vec<&str> = row.split(',').collect();
        let Ok(ns) = f[handle].parse::<u64>() else {
            continue;
        };
        let key = (f[port].parse().unwrap(), f[tx_end].parse().unwrap());
        assert_eq!(Some(&ns), truth.get(&key), "{key:?}: {row}");
        checked += 1;
    }
    checked
}

/// The record's per-request figures of the remote join.
fn per_request(v: &serde_json::Value) -> &serde_json::Value {
    &v["summary"]["server_probes"]["remote"]["per_request"]
}

/// Each kept request with server phases has the kernel's four, its `handle` (the server's
/// read → its write, both the server's own stamps, whatever the clocks) inside it: how many.
/// (Which request's they are is checked to the ns through the log, below.)
fn kept_phases_inside(v: &serde_json::Value) -> usize {
    let mut with = 0;
    for slow in v["slow_requests"]["slowest"].as_array().unwrap() {
        let total = slow["phases_ns"]["total"].as_u64().unwrap();
        let Some(server) = slow["server_ns"].as_object() else {
            continue;
        };
        let ns = |p: &str| server.get(p).and_then(|v| v.as_u64());
        for p in ["send", "socket", "handle", "return"] {
            assert!(ns(p).is_some(), "{p}: {slow}");
        }
        let handle = ns("handle").unwrap();
        assert!(
            handle <= total,
            "a handle of {handle} ns in a {total} ns request: {slow}"
        );
        with += 1;
    }
    with
}

#[test]
fn kept_requests_get_their_server_phases_and_the_clocks_offset_per_request() {
    let (agent, server, _) = agent_and_server(reqlife::probe::ring::RING_DEFAULT);
    let secs: Vec<u64> = std::env::var("REQLIFE_TEST_REMOTE_SECS")
        .unwrap_or_else(|_| "3,15".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let mut figures = Vec::new();
    for &s in &secs {
        let (v, text) = run(&agent, server, s, None);
        assert_valid_record(&v);
        let per = per_request(&v);
        let requests = count(&v, "summary.requests.total");
        let joined = count(&v, "summary.server_probes.joining.joined");
        let asked = per["asked"].as_u64().unwrap();
        // The slowest kept whole carry their own server phases.
        assert!(kept_phases_inside(&v) >= 5, "{}", v["slow_requests"]);
        let joining = &v["summary"]["server_probes"]["joining"];
        assert_eq!(joined, asked, "{per} {joining}");
        assert_eq!(per["left_ring"].as_u64(), Some(0), "{per}");
        assert!(asked * 10 < requests, "{asked} of {requests} asked for");
        // One host, one clock: the offset per request is near 0.
        let median = per["offset_median_us"].as_f64().unwrap();
        assert!(median.abs() < 1000.0, "{per}");
        let said = text
            .lines()
            .find(|l| l.contains("by the four stamps of"))
            .unwrap_or_else(|| panic!("{text}"));
        println!("{}", said.trim());
        let (events, finish) = (
            per["events_bytes"].as_u64().unwrap(),
            per["finish_bytes"].as_u64().unwrap(),
        );
        println!(
            "{s} s: {requests} requests, {asked} asked for (kept), {joined} joined; offset per \
             request median {median:+.1} µs (p10 {}, p90 {}), the exchange {:+.1} µs; events \
             {events} bytes in {} pulls; /finish {finish} bytes",
            per["offset_p10_us"],
            per["offset_p90_us"],
            v["summary"]["server_probes"]["remote"]["offset_us"]
                .as_f64()
                .unwrap(),
            per["pulls"]
        );
        figures.push((requests, events, finish));
    }
    // The requests grew with the run's length (five or six times); the agent's events bytes
    // with the requests kept, which grow as the logarithm of the requests (a request is kept
    // when it beats those kept before it): less than half as fast.
    let ((r0, e0, f0), (r1, e1, f1)) = (figures[0], figures[figures.len() - 1]);
    assert!(r1 > r0 * 3, "{figures:?}");
    assert!(
        e1 * r0 * 2 < e0 * r1,
        "events bytes {e0} then {e1}: {figures:?}"
    );
    assert!(
        f1 > f0,
        "the per-tick histograms grow with the run: {figures:?}"
    );
}

#[test]
fn a_ring_too_small_for_the_load_is_said_and_its_requests_get_nothing() {
    // 3000 events: some 0.4 s of the load; every request logged, so asked for, 0.2 to 1.2 s
    // after it ended: some still in the ring, most gone.
    let (agent, server, truth) = agent_and_server(3000);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.csv");
    let (v, text) = run(&agent, server, 3, Some(&log));
    let per = per_request(&v);
    let gone = per["left_ring"].as_u64().unwrap();
    let asked = per["asked"].as_u64().unwrap();
    let requests = count(&v, "summary.requests.total");
    assert_eq!(asked, requests, "{per}");
    assert!(gone > 0 && gone < asked, "{per}");
    let unjoined = &v["summary"]["server_probes"]["joining"]["unjoined"];
    assert_eq!(unjoined["left_ring"].as_u64(), Some(gone), "{unjoined}");
    let joined = count(&v, "summary.server_probes.joining.joined");
    assert_eq!(joined + gone, asked, "{per}");
    // Those joined have their own server phases, to the ns; those gone none.
    let checked = logged_handles_are_their_own(&log, &truth);
    assert_eq!(checked, joined, "{per}");
    let with = kept_phases_inside(&v);
    let line = text
        .lines()
        .find(|l| l.contains("had left the agent's ring"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("a bigger --ring EVENTS"), "{line}");
    println!(
        "ring of 3000 events: {gone} of {asked} asked-for requests had left it; {joined} joined, \
         each handle its own to the ns ({checked} logged rows checked); kept with server phases: \
         {with}; said: {}",
        line.trim()
    );
}
