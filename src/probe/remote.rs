//! The probes on another host: `reqlife probe` runs on the server's host, attaches the probes
//! and serves what they measure ([`super::agent::serve`]); `run --server-probes-from URL` on
//! the generator's host ([`Remote`]) measures the two clocks' offset, gives the agent the run's
//! window in the agent's clock, and pulls the phases at the end, as a Prometheus scrape pulls.
//!
//! The protocol, HTTP/1.1 GETs, one per connection, each with `Authorization: Bearer TOKEN`
//! when the agent has a token ([`Token`]; any other request is refused with a 401):
//!
//! ```text
//! GET /clock                      the agent's CLOCK_MONOTONIC, ns
//! GET /ready                      200 when a run may begin; 409 naming the run open, 503
//!                                 while the probes attach
//! GET /begin?from=NS&interval=NS  the run's window starts at NS (the agent's clock): its id;
//!                                 409 naming the run open (one run at a time)
//! GET /finish?run=ID              run ID has ended: its phases (JSON, recorder::probes::WireAcc);
//!                                 the agent attaches afresh for the next run
//! POST /events?run=ID             while run ID is open: the kernel's events of the requests
//!                                 the body asks for, one a line, `PORT TX_FROM TX_TO RX_FROM
//!                                 RX_TO DONE_NS` (where its bytes lay on its connection, when
//!                                 it ended in the agent's clock), from the agent's ring (JSON,
//!                                 recorder::join::remote::Pulled: those asks whose events had
//!                                 left the ring named); 4 MiB of body at most
//! ```
//!
//! `/ready` answers `ready`, then a line of what the probes follow (JSON,
//! recorder::join::remote::AgentSpec). During the run, `run` asks for the requests it keeps
//! or logs once a second ([`Puller`]), so the agent's bounded ring still holds them.
//!
//! The offset is measured as NTP does: of several exchanges, the one with the shortest round
//! trip, the agent's clock against the middle of it; it is within half that round trip.

use super::session::{mono_now_ns, mono_ns};
use super::ProbeError;
use crate::recorder::join::remote::{AgentSpec, Ask, Pulled, Puller};
use crate::recorder::probes::{ProbeAcc, RemoteClock, WireAcc};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exchanges of the clock measure.
const CLOCK_EXCHANGES: usize = 8;
/// How long a request to the agent may take (`/finish` stops bpftrace: up to 5 s).
const TIMEOUT: Duration = Duration::from_secs(15);
/// The environment variable either side reads its token from when no file is given.
pub const TOKEN_ENV: &str = "REQLIFE_PROBE_TOKEN";
/// The shortest token taken: a guessable one is no lock.
const TOKEN_MIN: usize = 16;
/// The longest token taken (it travels in a request head the agent caps).
const TOKEN_MAX: usize = 1024;

/// The secret the agent and `run` share: sent as `Authorization: Bearer TOKEN`, compared in
/// constant time. Its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// `text` (from `source`, for the line that says what is wrong) as a token: trimmed of
    /// the white space around it (a file's last newline), 16 to 1024 visible ASCII characters.
    pub fn parse(text: &str, source: &str) -> Result<Token, ProbeError> {
        let t = text.trim();
        let how = "write a secret of 16 to 1024 visible ASCII characters (no spaces) there, \
                   e.g. `head -c 32 /dev/urandom | base64`";
        let why = if t.is_empty() {
            "it is empty"
        } else if !t.bytes().all(|b| b.is_ascii_graphic()) {
            "it has a space or a character that is not visible ASCII"
        } else if t.len() < TOKEN_MIN {
            "it is shorter than 16 characters"
        } else if t.len() > TOKEN_MAX {
            "it is longer than 1024 characters"
        } else {
            return Ok(Token(t.to_string()));
        };
        Err(ProbeError::Input(format!(
            "{source}: not a token: {why}; {how}"
        )))
    }

    /// The token in the file at `path`, given by `flag`.
    pub fn read(path: &Path, flag: &str) -> Result<Token, ProbeError> {
        let source = format!("{flag} {}", path.display());
        let bytes = std::fs::read(path).map_err(|e| {
            ProbeError::Input(format!(
                "{source}: cannot read it ({e}); give a file that holds the token"
            ))
        })?;
        let text = String::from_utf8(bytes).map_err(|_| {
            ProbeError::Input(format!(
                "{source}: not a token: it is not text; write a secret of 16 to 1024 visible \
                 ASCII characters there"
            ))
        })?;
        Token::parse(&text, &source)
    }

    /// Whether `given` is this token: their SHA-256 digests compared in constant time (the
    /// time taken says nothing of how much of the token a guess got right, nor its length).
    pub fn matches(&self, given: &[u8]) -> bool {
        use ring::digest::{digest, SHA256};
        let (a, b) = (digest(&SHA256, self.0.as_bytes()), digest(&SHA256, given));
        let diff = a
            .as_ref()
            .iter()
            .zip(b.as_ref())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y));
        std::hint::black_box(diff) == 0
    }

    /// The request header that carries it.
    fn header(&self) -> String {
        format!("Authorization: Bearer {}\r\n", self.0)
    }
}

/// The token of a side: the file `flag` names, else the environment's [`TOKEN_ENV`] (`env`,
/// set but empty is an error), else none.
pub fn token_from(
    file: Option<&Path>,
    flag: &str,
    env: Option<std::ffi::OsString>,
) -> Result<Option<Token>, ProbeError> {
    if let Some(path) = file {
        return Token::read(path, flag).map(Some);
    }
    let Some(value) = env else { return Ok(None) };
    let text = value.into_string().map_err(|_| {
        ProbeError::Input(format!(
            "{TOKEN_ENV}: not a token: it is not text; give 16 to 1024 visible ASCII characters"
        ))
    })?;
    Token::parse(&text, TOKEN_ENV).map(Some)
}

/// Why a GET to the agent got no answer of 200.
#[derive(Debug)]
enum GetError {
    /// No HTTP answer: the connection, or what came back.
    Unreachable(String),
    /// An answer of another status, with its body.
    Status(u16, String),
}

impl std::fmt::Display for GetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GetError::Unreachable(e) => f.write_str(e),
            GetError::Status(s, body) => write!(f, "{s} {body}"),
        }
    }
}

/// One GET to the agent, with `token`: its body, or why not.
fn get(agent: SocketAddr, path: &str, token: Option<&Token>) -> Result<String, GetError> {
    exchange(agent, path, None, token)
}

/// One request to the agent, with `token`: a GET, or a POST of `body`: the answer's body,
/// or why not.
fn exchange(
    agent: SocketAddr,
    path: &str,
    body: Option<&str>,
    token: Option<&Token>,
) -> Result<String, GetError> {
    let io = |e: std::io::Error| GetError::Unreachable(e.to_string());
    let mut s = TcpStream::connect_timeout(&agent, TIMEOUT).map_err(io)?;
    s.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    s.set_nodelay(true).map_err(io)?;
    let auth = token.map(Token::header).unwrap_or_default();
    let (method, sent) = match body {
        Some(b) => ("POST", format!("Content-Length: {}\r\n\r\n{b}", b.len())),
        None => ("GET", "\r\n".to_string()),
    };
    let req =
        format!("{method} {path} HTTP/1.1\r\nHost: {agent}\r\n{auth}Connection: close\r\n{sent}");
    s.write_all(req.as_bytes()).map_err(io)?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(io)?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| GetError::Unreachable("no HTTP answer".into()))?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    match status.parse::<u16>() {
        Ok(200) => Ok(body.to_string()),
        Ok(s) => Err(GetError::Status(s, body.trim().to_string())),
        Err(_) => Err(GetError::Unreachable("no HTTP answer".into())),
    }
}

/// The probes' agent on the server's host, as the generator sees it.
#[derive(Debug, Clone)]
pub struct Remote {
    agent: SocketAddr,
    clock: RemoteClock,
    token: Option<Token>,
    /// The run begun there (its id), once begun; 0 before (shared with its [`Puller`]).
    run: Arc<AtomicU64>,
    /// What its probes follow.
    spec: AgentSpec,
}

/// The run's pulls of its requests' events from the agent ([`Remote::puller`]).
#[derive(Debug)]
pub struct EventPuller {
    agent: SocketAddr,
    token: Option<Token>,
    run: Arc<AtomicU64>,
    bytes: u64,
}

impl Puller for EventPuller {
    fn pull(&mut self, asks: &[Ask]) -> Result<Pulled, String> {
        let run = self.run.load(Ordering::SeqCst);
        if run == 0 {
            return Err("the run has not begun there".into());
        }
        let body: String = asks.iter().map(Ask::line).collect();
        let path = format!("/events?run={run}");
        let text = exchange(self.agent, &path, Some(&body), self.token.as_ref())
            .map_err(|e| e.to_string())?;
        self.bytes += text.len() as u64;
        serde_json::from_str(&text).map_err(|e| e.to_string())
    }

    fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Remote {
    /// The agent at `url` (`http://HOST:PORT`), reached with `token`: its clock measured, and
    /// ready for a run (none open there).
    pub fn connect(url: &str, token: Option<Token>) -> Result<Remote, ProbeError> {
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
        let refused = |e: GetError| match e {
            GetError::Status(401, _) => ProbeError::Input(format!(
                "--server-probes-from {url}: the agent refuses {}: give the token of its \
                 --token-file with --server-probes-token-file FILE or {TOKEN_ENV}",
                if token.is_some() {
                    "the token sent (not its own)"
                } else {
                    "a request without its token"
                }
            )),
            GetError::Status(..) => bad(&format!("not a reqlife probe agent ({e})")),
            GetError::Unreachable(e) => ProbeError::Failed(format!(
                "--server-probes-from {url}: no probe agent answers there ({e}); start \
                 `reqlife probe --listen ADDR --port PORT` on the server's host"
            )),
        };
        let mut best: Option<(u64, i64)> = None;
        for _ in 0..CLOCK_EXCHANGES {
            let t0 = mono_now_ns();
            let body = get(agent, "/clock", token.as_ref()).map_err(refused)?;
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
        let ready = get(agent, "/ready", token.as_ref()).map_err(|e| match e {
            GetError::Status(409 | 503, why) => {
                ProbeError::Failed(format!("the probe agent at {agent}: {why}"))
            }
            e => refused(e),
        })?;
        let spec = ready
            .lines()
            .nth(1)
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or(AgentSpec {
                sample: 1,
                ..AgentSpec::default()
            });
        let (rtt, offset) = best.expect("CLOCK_EXCHANGES > 0");
        Ok(Remote {
            agent,
            clock: RemoteClock {
                agent: agent.to_string(),
                offset_us: offset as f64 / 1e3,
                rtt_us: rtt as f64 / 1e3,
                per_request: None,
            },
            token,
            run: Arc::new(AtomicU64::new(0)),
            spec,
        })
    }

    /// What the agent's probes follow.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }

    /// The run's way to the agent's ring (it pulls once the run has begun there).
    pub fn puller(&self) -> EventPuller {
        EventPuller {
            agent: self.agent,
            token: self.token.clone(),
            run: self.run.clone(),
            bytes: 0,
        }
    }

    /// The agent's clock minus ours, ns.
    pub fn offset_ns(&self) -> i64 {
        (self.clock.offset_us * 1e3).round() as i64
    }

    /// The clocks as measured.
    pub fn clock(&self) -> &RemoteClock {
        &self.clock
    }

    /// The run's window starts at `from` (here), in intervals of `interval`; refused while
    /// another run is open there (the line names it).
    pub fn begin(&mut self, from: Instant, interval: Duration) -> Result<(), ProbeError> {
        let theirs = mono_ns(from) as i64 + (self.clock.offset_us * 1e3).round() as i64;
        let path = format!(
            "/begin?from={}&interval={}",
            theirs.max(0),
            interval.as_nanos()
        );
        let failed =
            |e: String| ProbeError::Failed(format!("the probe agent at {}: {e}", self.agent));
        let body = get(self.agent, &path, self.token.as_ref()).map_err(|e| match e {
            GetError::Status(409, why) => failed(why),
            e => failed(e.to_string()),
        })?;
        let id = body
            .trim()
            .parse()
            .map_err(|_| failed(format!("no run id in {body:?}")))?;
        self.run.store(id, Ordering::SeqCst);
        Ok(())
    }

    /// The run has ended: what the agent's probes measured in its window.
    pub fn finish(self) -> Result<ProbeAcc, ProbeError> {
        let failed =
            |e: String| ProbeError::Failed(format!("the probe agent at {}: {e}", self.agent));
        let run = self.run.load(Ordering::SeqCst);
        if run == 0 {
            return Err(failed("no run began there".into()));
        }
        let path = format!("/finish?run={run}");
        let body =
            get(self.agent, &path, self.token.as_ref()).map_err(|e| failed(e.to_string()))?;
        let wire: WireAcc = serde_json::from_str(&body).map_err(|e| failed(e.to_string()))?;
        let clock = RemoteClock {
            per_request: Some(crate::recorder::join::remote::PerRequest {
                finish_bytes: body.len() as u64,
                ..Default::default()
            }),
            ..self.clock
        };
        wire.into_acc(Some(clock))
            .ok_or_else(|| failed("a histogram it sent does not decode".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_16_to_1024_visible_characters_trimmed() {
        let t = Token::parse("  0123456789abcdef\n", "F").unwrap();
        assert!(t.matches(b"0123456789abcdef"));
        assert!(!t.matches(b"0123456789abcdeg"));
        assert!(!t.matches(b"0123456789abcdef0"));
        assert!(!t.matches(b""));
        for (text, why) in [
            ("", "it is empty"),
            (" \n", "it is empty"),
            ("0123456789 abcdef", "a space"),
            ("0123456789abcdé", "not visible ASCII"),
            ("short", "shorter than 16"),
            (&"x".repeat(1025), "longer than 1024"),
        ] {
            let e = Token::parse(text, "--token-file t").unwrap_err();
            let ProbeError::Input(line) = e else {
                panic!("{e:?}")
            };
            assert!(line.starts_with("--token-file t: not a token: "), "{line}");
            assert!(line.contains(why), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
        assert_eq!(format!("{t:?}"), "Token(…)");
    }

    #[test]
    fn a_side_takes_its_file_else_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-the-file-0123\n").unwrap();
        let env = || Some(std::ffi::OsString::from("from-the-environment"));
        let t = token_from(Some(&file), "--token-file", env())
            .unwrap()
            .unwrap();
        assert!(t.matches(b"from-the-file-0123"));
        let t = token_from(None, "--token-file", env()).unwrap().unwrap();
        assert!(t.matches(b"from-the-environment"));
        assert_eq!(token_from(None, "--token-file", None).unwrap(), None);
        let e = token_from(None, "--token-file", Some("".into())).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("REQLIFE_PROBE_TOKEN: not a token: it is empty"));
        let gone = dir.path().join("none");
        let e = token_from(Some(&gone), "--token-file", env()).unwrap_err();
        assert!(e.to_string().contains("cannot read it"), "{e}");
        std::fs::write(&file, [0xff, 0xfe]).unwrap();
        let e = token_from(Some(&file), "--token-file", None).unwrap_err();
        assert!(e.to_string().contains("it is not text"), "{e}");
    }
}
