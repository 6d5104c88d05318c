//! `--server-upstream PORT`: nginx as a reverse proxy in front of a backend of known delay
//! (tests/data/probe_server.c, a 10 ms busy wait per request): per request, nginx's own
//! phases, its call upstream and the backend's own phases (it runs here), the call's and the
//! backend's read → write p50 within 5% of the backend's delay; an
//! upstream that is down and one that closes mid-request: no call given to any request;
//! bad values refused in one line.

use super::*;

/// The known-truth server started as `probe_server 0 HANDLE_US 0` (one request at a time, a
/// busy wait of `handle_us`): its guard and port.
fn backend(dir: &Path, handle_us: u64) -> (Stopped, u16) {
    let bin = build(dir, "cc", &["-O2"], "probe_server.c").expect("cc runs");
    let (guard, port, _) = start_with(&bin, &["0", &handle_us.to_string(), "0"]);
    (guard, port)
}

/// nginx proxying every path to 127.0.0.1:`up` (one worker), over one kept-alive connection
/// (`keepalive`) or a connection per request.
fn proxy(
    up: u16,
    keepalive: bool,
) -> Option<(
    std::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    Stopped,
    u16,
)> {
    let pass = if keepalive {
        "proxy_pass http://kept; proxy_http_version 1.1; proxy_set_header Connection \"\";"
    } else {
        &format!("proxy_pass http://127.0.0.1:{up};")
    };
    probed_nginx_serving(
        "",
        &format!("location / {{ {pass} proxy_connect_timeout 2s; }}"),
        &format!("upstream kept {{ server 127.0.0.1:{up}; keepalive 2; }}"),
    )
}

fn us(p: &serde_json::Value, phase: &str, stat: &str) -> f64 {
    p["phases"][phase][stat]
        .as_f64()
        .unwrap_or_else(|| panic!("{phase} {stat}: {}", p["phases"]))
}

/// nginx in front of a backend of 10 ms (kept-alive or not): 200 requests, each with its
/// call and the backend's own phases; kept-alive, the figures within 5% of the backend's.
fn proxied(keepalive: bool) {
    let side = tempfile::tempdir().unwrap();
    if !can_probe() {
        return;
    }
    let (_backend, up) = backend(side.path(), 10_000);
    let Some((_turn, dir, _nginx, port)) = proxy(up, keepalive) else {
        return;
    };
    let out = dir.path().join("run.json");
    let report = Run::new()
        .n(200)
        .c(1)
        .t(1)
        .args(["--server-upstream", &up.to_string(), "-o"])
        .arg(out.to_str().unwrap())
        .url(url(port))
        .ok();
    let v = read_json(&out);
    let p = probes_of(&v);
    let j = &p["joining"];
    let joined = j["joined"].as_u64().unwrap();
    assert!(joined >= 190, "{j}");
    // Every joined request's response carried the reply of its own call, and the backend
    // (here) saw each call: its own phases joined.
    assert_eq!(j["upstream"]["calls"].as_u64(), Some(joined), "{j}");
    assert_eq!(j["upstream"]["misplaced"].as_u64(), Some(0), "{j}");
    for phase in ["upstream", "upstream_socket", "upstream_handle"] {
        let n = p["phases"][phase]["count"].as_u64().unwrap_or(0);
        // Kept alive, the connection's first call may precede the probes' learning it; a new
        // connection per call is learnt from its state change each time. Either way the kernel
        // skips a BPF program that fires while another runs on its CPU (an arrival in a
        // softirq over a send's program): on a busy machine the odd event is missed (198 of
        // 200 beside a release build, kept alive or not). Never more than joined, and never
        // one misplaced (above).
        let learnt = 1 + joined / 50;
        assert!(
            n + learnt >= joined && n <= joined,
            "{phase}: {n} of {joined}"
        );
    }
    let (call, own, handle) = (
        us(p, "upstream", "p50_us"),
        us(p, "upstream_handle", "p50_us"),
        us(p, "handle", "p50_us"),
    );
    eprintln!(
        "keepalive {keepalive}: upstream p50 {call} µs, the backend's read → write p50 {own} \
         µs, nginx's read → write p50 {handle} µs"
    );
    // Each inside the other: the backend's read → write, the call, nginx's read → write.
    assert!(
        10_000.0 <= own && own <= call && call < handle,
        "{own} {call} {handle}"
    );
    // The tail names the call as its cause.
    let tail = p["tail"].as_array().unwrap();
    let median = tail.iter().find(|t| t["which"] == "p50").unwrap();
    let share = median["shares"]["server: upstream"].as_f64().unwrap();
    assert!(share > 0.8, "{median}");
    let text = unwrapped(&stdout(&report));
    for row in [
        "server: its call upstream: the server's write there → the reply's arrival",
        "server: the upstream's read → its write",
        "server: upstream",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    assert!(!text.contains("show no call upstream"), "{text}");
    if keepalive {
        // The call and the backend's own: its 10 ms, within 5%.
        assert!(call < 10_500.0, "upstream p50 {call} µs");
        assert!(own < 10_500.0, "upstream_handle p50 {own} µs");
    }
}

#[test]
fn a_proxys_own_time_and_its_call_upstream_come_apart() {
    proxied(true);
}

#[test]
fn a_connection_upstream_per_request_is_followed_too() {
    proxied(false);
}

/// An upstream that accepts, reads the request and closes without a reply, until `stop`.
fn closer(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (std::thread::JoinHandle<()>, u16) {
    use std::io::Read;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let t = std::thread::spawn(move || {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match l.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).unwrap();
                    let _ = s.read(&mut [0; 4096]);
                }
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    (t, port)
}

#[test]
fn an_upstream_down_or_closing_mid_request_is_no_ones_call() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (closing, closes) = closer(stop.clone());
    let down = free_port();
    for (up, name) in [(down, "down"), (closes, "closes")] {
        let Some((_turn, dir, _nginx, port)) = proxy(up, false) else {
            break;
        };
        let out = dir.path().join(format!("{name}.json"));
        let report = Run::new()
            .n(50)
            .c(1)
            .t(1)
            .args(["--server-upstream", &up.to_string(), "-o"])
            .arg(out.to_str().unwrap())
            .url(url(port))
            .exits(4);
        let v = read_json(&out);
        // nginx answers each with its own 502 (no request succeeded: exit 4, said).
        assert_eq!(count(&v, "summary.status.502"), 50, "{name}");
        let p = probes_of(&v);
        let j = &p["joining"];
        assert!(j["joined"].as_u64().unwrap() >= 45, "{name}: {j}");
        assert_eq!(j["upstream"]["calls"].as_u64(), Some(0), "{name}: {j}");
        assert_eq!(
            p["phases"]["upstream"]["count"].as_u64().unwrap_or(0),
            0,
            "{name}"
        );
        let text = unwrapped(&stdout(&report));
        assert!(
            text.contains("joined requests show no call upstream (--server-upstream)"),
            "{name}: {text}"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    closing.join().unwrap();
}

#[test]
fn a_bad_upstream_port_is_refused_in_one_line() {
    // Checked with the flags, before anything is probed: no server, no root needed.
    let port = free_port();
    let u = url(port);
    refused(&["--server-upstream", "0", &u], "0 is not a port");
    refused(
        &["--server-upstream", &port.to_string(), &u],
        "is the server's own port",
    );
    refused(
        &[
            "--server-upstream",
            "5432",
            "--server-probes-from",
            "http://127.0.0.1:9465",
            &u,
        ],
        "the probes follow the client's connections here only",
    );
}
