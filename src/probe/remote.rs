//! The probes on another host: `reqlife probe` runs on the server's host, attaches the probes
//! and serves what they measure ([`serve`]); `run --server-probes-from URL` on the
//! generator's host ([`Remote`]) measures the two clocks' offset, gives the agent the run's
//! window in the agent's clock, and pulls the phases at the end, as a Prometheus scrape pulls.
//!
//! The protocol, HTTP/1.1 GETs, one per connection:
//!
//! ```text
//! GET /clock                      the agent's CLOCK_MONOTONIC, ns
//! GET /begin?from=NS&interval=NS  the run's window starts at NS (the agent's clock)
//! GET /finish                     the run has ended: its phases (JSON, recorder::probes::WireAcc);
//!                                 the agent attaches afresh for the next run
//! ```
//!
//! The offset is measured as NTP does: of several exchanges, the one with the shortest round
//! trip, the agent's clock against the middle of it; it is within half that round trip.

use super::session::{mono_now_ns, mono_ns};
use super::{ProbeError, Probes};
use crate::recorder::probes::{ProbeAcc, RemoteClock, WireAcc};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Exchanges of the clock measure.
const CLOCK_EXCHANGES: usize = 8;
/// How long a request to the agent may take (`/finish` stops bpftrace: up to 5 s).
const TIMEOUT: Duration = Duration::from_secs(15);

/// One GET to the agent: its body, or why not.
fn get(agent: SocketAddr, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect_timeout(&agent, TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {agent}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!("{} {}", status, body.trim()));
    }
    Ok(body.to_string())
}

/// The probes' agent on the server's host, as the generator sees it.
#[derive(Debug, Clone)]
pub struct Remote {
    agent: SocketAddr,
    clock: RemoteClock,
}

impl Remote {
    /// The agent at `url` (`http://HOST:PORT`), its clock measured.
    pub fn connect(url: &str) -> Result<Remote, ProbeError> {
        let bad = |why: &str| {
            ProbeError::Input(format!(
                "--server-probes-from {url}: {why}; give the address `reqlife probe --listen` \
                 serves on the server's host, e.g. http://10.0.0.5:9465"
            ))
        };
        let hostport = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("not an http:// URL"))?
            .trim_end_matches('/');
        let agent = hostport
            .to_socket_addrs()
            .map_err(|e| bad(&format!("cannot resolve it ({e})")))?
            .next()
            .ok_or_else(|| bad("no address"))?;
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..CLOCK_EXCHANGES {
            let t0 = mono_now_ns();
            let body = get(agent, "/clock").map_err(|e| {
                ProbeError::Failed(format!(
                    "--server-probes-from {url}: no probe agent answers there ({e}); start \
                     `reqlife probe --listen ADDR --port PORT` on the server's host"
                ))
            })?;
            let t2 = mono_now_ns();
            let theirs: u64 = body
                .trim()
                .parse()
                .map_err(|_| bad("not a reqlife probe agent"))?;
            let rtt = t2 - t0;
            let offset = theirs as i64 - (t0 / 2 + t2 / 2) as i64;
            if best.is_none_or(|(r, _)| rtt < r) {
                best = Some((rtt, offset));
            }
        }
        let (rtt, offset) = best.expect("CLOCK_EXCHANGES > 0");
        Ok(Remote {
            agent,
            clock: RemoteClock {
                agent: agent.to_string(),
                offset_us: offset as f64 / 1e3,
                rtt_us: rtt as f64 / 1e3,
            },
        })
    }

    /// The clocks as measured.
    pub fn clock(&self) -> &RemoteClock {
        &self.clock
    }

    /// The run's window starts at `from` (here), in intervals of `interval`.
    pub fn begin(&self, from: Instant, interval: Duration) -> Result<(), ProbeError> {
        let theirs = mono_ns(from) as i64 + (self.clock.offset_us * 1e3).round() as i64;
        let path = format!(
            "/begin?from={}&interval={}",
            theirs.max(0),
            interval.as_nanos()
        );
        get(self.agent, &path)
            .map(|_| ())
            .map_err(|e| ProbeError::Failed(format!("the probe agent at {}: {e}", self.agent)))
    }

    /// The run has ended: what the agent's probes measured in its window.
    pub fn finish(self) -> Result<ProbeAcc, ProbeError> {
        let failed =
            |e: String| ProbeError::Failed(format!("the probe agent at {}: {e}", self.agent));
        let body = get(self.agent, "/finish").map_err(failed)?;
        let wire: WireAcc = serde_json::from_str(&body).map_err(|e| failed(e.to_string()))?;
        wire.into_acc(Some(self.clock))
            .ok_or_else(|| failed("a histogram it sent does not decode".into()))
    }
}

/// Serves the probes' agent on `listener` until `stop`: `attach` attaches fresh probes (at
/// the start, and after each run); `say` prints what happens.
pub fn serve(
    listener: TcpListener,
    attach: &dyn Fn() -> Result<Probes, ProbeError>,
    stop: &AtomicBool,
    say: &dyn Fn(&str),
) -> Result<(), ProbeError> {
    use std::os::fd::AsRawFd;
    let mut current = Some(attach()?);
    say("attached: a run may begin");
    while !stop.load(Ordering::SeqCst) {
        // Woken at once by a connection (a clock exchange must not wait for a poll's sleep),
        // and every 100 ms to look at `stop`.
        let mut fd = libc::pollfd {
            fd: listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut fd, 1, 100) } <= 0 {
            continue;
        }
        if let Ok((stream, _)) = listener.accept() {
            let _ = answer(stream, &mut current, attach, say);
        }
    }
    Ok(())
}

/// Answers one request of the protocol above.
fn answer(
    mut stream: TcpStream,
    current: &mut Option<Probes>,
    attach: &dyn Fn() -> Result<Probes, ProbeError>,
    say: &dyn Fn(&str),
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let head = crate::util::http_head::read(&mut stream)?;
    let target = head.split_whitespace().nth(1).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let param = |k: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
            .and_then(|v| v.parse::<u64>().ok())
    };
    let (status, body) = match (path, current.as_mut()) {
        ("/clock", _) => ("200 OK", mono_now_ns().to_string()),
        ("/begin", Some(p)) => match (param("from"), param("interval")) {
            (Some(from), Some(interval)) => {
                p.begin_ns(from, Duration::from_nanos(interval.max(1)), None);
                say("a run began");
                ("200 OK", "ok".into())
            }
            _ => ("400 Bad Request", "from=NS&interval=NS".into()),
        },
        ("/finish", Some(_)) => {
            let acc = current.take().expect("matched Some").finish();
            let body = serde_json::to_string(&WireAcc::of(&acc)).unwrap_or_default();
            ("200 OK", body)
        }
        ("/begin" | "/finish", None) => (
            "409 Conflict",
            "the probes are not attached (see the agent's output)".into(),
        ),
        _ => ("404 Not Found", "GET /clock, /begin, /finish".into()),
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let sent = stream.write_all(response.as_bytes());
    drop(stream);
    // After a run's end is answered, not before: attaching takes seconds (bpftrace compiles
    // and attaches, the cost is measured), which the run's end would wait for.
    if path == "/finish" && current.is_none() && status.starts_with("200") {
        say("a run ended; attaching afresh for the next");
        *current = attach().map_err(|e| say(&e.to_string())).ok();
        if current.is_some() {
            say("attached again");
        }
    }
    sent
}
