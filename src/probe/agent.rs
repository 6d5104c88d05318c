//! The probes' agent of `reqlife probe` on the server's host: the protocol of
//! [`super::remote`] served by hyper (HTTP/1.1, one request per connection), each connection
//! a task of its own, so that a slow or silent client delays no other's clock exchanges.
//!
//! What a client can make the agent hold is bounded: a request's head is read within
//! [`Limits::head_timeout`] and into [`HEAD_MAX`] bytes at most (431 beyond), a connection
//! lasts [`Limits::deadline`] at most, and [`Limits::max_connections`] are served at once
//! (more are closed at once). With a token ([`Token`]) every request must carry it, or is
//! refused (401) with nothing attached, begun or handed out. One run at a time: a `/begin`
//! while a run is open is refused (409) naming it.
//!
//! The kernel's events of every connection to the port go into a bounded ring
//! ([`EventRing`], [`Agent::ring`] events) from the probes' attach on; `POST /events` answers
//! a run's asks from it, its body read into [`EVENTS_MAX`] bytes at most (413 beyond).

use super::remote::Token;
use super::ring::EventRing;
use super::session::mono_now_ns;
use super::{ProbeError, Probes};
use crate::recorder::join::remote::AgentSpec;
use crate::recorder::join::KernelEvent;
use crate::recorder::probes::{ProbeAcc, WireAcc};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

mod events;

/// The largest request head read (hyper's smallest buffer): the protocol's are under 1 KiB
/// with a token of 1024 characters.
pub const HEAD_MAX: usize = 8192;

/// The largest body of a `POST /events` read: some 50,000 requests asked at once.
pub const EVENTS_MAX: usize = 4 << 20;

/// Where the probes hand the kernel's events for the agent's ring.
pub type RingFeed = Arc<dyn Fn(&[KernelEvent]) + Send + Sync>;

/// What the agent drives: probes attached and waiting for a run, given its window, then
/// finished. [`Probes`] on a real host; a fake one in tests.
pub trait AgentProbes: Send + 'static {
    /// The run's window starts at `from_ns` (this host's CLOCK_MONOTONIC), in intervals of
    /// `interval`.
    fn begin_ns(&mut self, from_ns: u64, interval: Duration);
    /// The run has ended: the probes detached, what they measured.
    fn finish(self) -> ProbeAcc;
    /// The kernel's events go to `ring` from now on, as they come (none by default).
    fn feed(&mut self, ring: RingFeed) {
        let _ = ring;
    }
    /// What the probes follow, for the run's joiner.
    fn spec(&self) -> AgentSpec {
        AgentSpec {
            sample: 1,
            ..AgentSpec::default()
        }
    }
}

impl AgentProbes for Probes {
    fn begin_ns(&mut self, from_ns: u64, interval: Duration) {
        Probes::begin_ns(self, from_ns, interval, None);
    }

    fn finish(self) -> ProbeAcc {
        Probes::finish(self)
    }

    fn feed(&mut self, ring: RingFeed) {
        self.session.tee(ring);
    }

    fn spec(&self) -> AgentSpec {
        AgentSpec {
            functions: self.functions.clone(),
            upstream: self.upstream.is_some(),
            sample: self.sample,
        }
    }
}

/// How much a client can make the agent hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// A request's head must arrive within this from the connection's start.
    pub head_timeout: Duration,
    /// A connection's whole exchange (a `/finish` stops bpftrace: seconds).
    pub deadline: Duration,
    /// Connections served at once; one more is closed as soon as accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            head_timeout: Duration::from_secs(5),
            deadline: Duration::from_secs(30),
            max_connections: 64,
        }
    }
}

/// What the agent serves with.
pub struct Agent<P> {
    /// Attaches fresh probes: at the start, and after each run (seconds: bpftrace compiles
    /// and attaches).
    pub attach: Box<dyn Fn() -> Result<P, ProbeError> + Send + Sync>,
    /// The token every request must carry; `None`: any request is served.
    pub token: Option<Token>,
    /// The bounds on a client.
    pub limits: Limits,
    /// The ring's capacity, events (`--ring`).
    pub ring: usize,
    /// Says what happens, one line each.
    pub say: Box<dyn Fn(&str) + Send + Sync>,
}

/// The run open on the agent.
#[derive(Debug, Clone, Copy)]
struct OpenRun {
    id: u64,
    peer: SocketAddr,
    began: Instant,
}

impl OpenRun {
    /// The run, as a refusal names it.
    fn described(&self) -> String {
        format!(
            "run {} from {}, begun {:.1}s ago",
            self.id,
            self.peer,
            self.began.elapsed().as_secs_f64()
        )
    }
}

/// Where the agent's probes are.
enum Slot<P> {
    /// Being attached (after a run).
    Attaching,
    /// Attached: a run may begin.
    Ready(P),
    /// A run's window is open.
    Open(P, OpenRun),
    /// The run has ended; its probes are being stopped.
    Finishing(OpenRun),
    /// Attaching afresh failed: why.
    Unattached(String),
    /// The agent is stopping.
    Stopped,
}

/// A run's end, for the agent's own thread: its probes to stop, where what they measured
/// goes (the `/finish` that asked), and the end of that connection, to wait for before
/// attaching afresh.
struct Ending<P> {
    probes: P,
    measured: tokio::sync::oneshot::Sender<String>,
    answered: mpsc::Receiver<()>,
}

/// The agent's state, shared by the connections.
struct Shared<P> {
    agent: Agent<P>,
    slot: Mutex<Slot<P>>,
    next_run: AtomicU64,
    /// To the agent's own thread, which attached the probes and stops them.
    endings: mpsc::Sender<Ending<P>>,
    /// The kernel's events, the last [`Agent::ring`] of them.
    ring: Arc<Mutex<EventRing>>,
}

/// An answer: its status and body.
type Answer = (StatusCode, String);

impl<P: AgentProbes> Shared<P> {
    fn slot(&self) -> std::sync::MutexGuard<'_, Slot<P>> {
        self.slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn say(&self, line: &str) {
        (self.agent.say)(line)
    }

    /// Why no run may begin now, unless one may (`None`).
    fn not_ready(slot: &Slot<P>) -> Option<Answer> {
        let busy = |why: String| Some((StatusCode::CONFLICT, why));
        match slot {
            Slot::Ready(_) => None,
            Slot::Open(_, run) => busy(format!(
                "another run is open here ({}): one run at a time; try again once it has \
                 ended (restart the agent if its generator is gone)",
                run.described()
            )),
            Slot::Finishing(run) => Some((
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "run {} is ending here, then the probes attach afresh (seconds): try again",
                    run.id
                ),
            )),
            Slot::Attaching => Some((
                StatusCode::SERVICE_UNAVAILABLE,
                "the probes are attaching afresh after a run (seconds): try again".into(),
            )),
            Slot::Unattached(why) => busy(format!("the probes are not attached ({why})")),
            Slot::Stopped => busy("the agent is stopping".into()),
        }
    }

    /// `/ready`: whether a run may begin; then what the probes follow (JSON).
    fn ready(&self) -> Answer {
        let slot = self.slot();
        if let Some(refused) = Self::not_ready(&slot) {
            return refused;
        }
        let Slot::Ready(p) = &*slot else {
            unreachable!("not_ready is None only when Ready");
        };
        let spec = serde_json::to_string(&p.spec()).unwrap_or_default();
        (StatusCode::OK, format!("ready\n{spec}"))
    }

    /// `/begin?from=NS&interval=NS` from `peer`.
    fn begin(&self, query: &str, peer: SocketAddr) -> Answer {
        let (Some(from), Some(interval)) = (param(query, "from"), param(query, "interval")) else {
            return (StatusCode::BAD_REQUEST, "from=NS&interval=NS".into());
        };
        let mut slot = self.slot();
        if let Some(refused) = Self::not_ready(&slot) {
            return refused;
        }
        let Slot::Ready(mut probes) = std::mem::replace(&mut *slot, Slot::Stopped) else {
            unreachable!("not_ready is None only when Ready");
        };
        probes.begin_ns(from, Duration::from_nanos(interval.max(1)));
        self.ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .begin_run();
        let run = OpenRun {
            id: self.next_run.fetch_add(1, Ordering::SeqCst),
            peer,
            began: Instant::now(),
        };
        *slot = Slot::Open(probes, run);
        drop(slot);
        self.say(&format!("a run began (run {} from {peer})", run.id));
        (StatusCode::OK, run.id.to_string())
    }

    /// `/finish?run=ID`: the probes taken for stopping when run ID is the one open.
    fn take_for_finish(&self, query: &str) -> Result<P, Answer> {
        let conflict = |why: String| Err((StatusCode::CONFLICT, why));
        let Some(id) = param(query, "run") else {
            return Err((StatusCode::BAD_REQUEST, "run=ID (of /begin)".into()));
        };
        let mut slot = self.slot();
        match &*slot {
            Slot::Open(_, run) if run.id == id => {}
            Slot::Open(_, run) => {
                return conflict(format!(
                    "run {id} is not the one open here ({})",
                    run.described()
                ))
            }
            Slot::Ready(_) => return conflict("no run is open here".into()),
            other => return Err(Self::not_ready(other).expect("not Ready")),
        }
        let Slot::Open(probes, run) = std::mem::replace(&mut *slot, Slot::Stopped) else {
            unreachable!("matched Open above");
        };
        *slot = Slot::Finishing(run);
        Ok(probes)
    }

    /// A run's end, on the agent's own thread: its probes stopped, what they measured handed
    /// to the `/finish` that asked; once that answer is out, the probes attached afresh,
    /// unless the agent is stopping.
    fn end(&self, ending: Ending<P>, stop: &AtomicBool) {
        let acc = ending.probes.finish();
        let body = serde_json::to_string(&WireAcc::of(&acc)).unwrap_or_default();
        let _ = ending.measured.send(body);
        // Until the connection has ended and dropped its sender.
        let _ = ending.answered.recv_timeout(self.agent.limits.deadline);
        if !stop.load(Ordering::SeqCst) {
            self.reattach();
        }
    }

    /// Attaches afresh for the next run, unless the agent is stopping.
    fn reattach(&self) {
        {
            let mut slot = self.slot();
            if matches!(*slot, Slot::Stopped) {
                return;
            }
            *slot = Slot::Attaching;
        }
        self.say("a run ended; attaching afresh for the next");
        let attached = (self.agent.attach)();
        let mut slot = self.slot();
        if matches!(*slot, Slot::Stopped) {
            drop(slot);
            drop(attached); // Detached: the agent is stopping.
            return;
        }
        match attached {
            Ok(mut p) => {
                self.feed(&mut p);
                *slot = Slot::Ready(p);
                drop(slot);
                self.say("attached again");
            }
            Err(e) => {
                *slot = Slot::Unattached(e.to_string());
                drop(slot);
                self.say(&e.to_string());
            }
        }
    }
}

/// The number `key=N` of a query.
fn param(query: &str, key: &str) -> Option<u64> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse::<u64>().ok())
}

/// The bearer token of a request's `Authorization`, if any.
fn bearer(req: &Request<Incoming>) -> Option<&[u8]> {
    let value = req.headers().get(http::header::AUTHORIZATION)?.as_bytes();
    let (scheme, token) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then_some(token.trim_ascii())
}

/// The response of an answer.
fn respond((status, body): Answer) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
    }
    r
}

/// Answers one request of `peer`; `answered` is held by the connection until it ends (a
/// `/finish` attaches afresh only once its answer is out).
async fn answer<P: AgentProbes>(
    req: Request<Incoming>,
    peer: SocketAddr,
    shared: Arc<Shared<P>>,
    answered: Arc<Mutex<Option<mpsc::Sender<()>>>>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let path = req.uri().path().to_string();
    if let Some(token) = &shared.agent.token {
        let given = bearer(&req);
        if !given.is_some_and(|g| token.matches(g)) {
            let how = if given.is_some() {
                "a wrong token"
            } else {
                "no token"
            };
            // The path as asked, cut short: the line stays one of a few words.
            let asked: String = path.chars().take(64).collect();
            shared.say(&format!(
                "refused {peer}: {} {asked} with {how}",
                req.method()
            ));
            return Ok(respond((
                StatusCode::UNAUTHORIZED,
                "this agent wants its token: `run --server-probes-token-file FILE` (or \
                 REQLIFE_PROBE_TOKEN) with the one of its --token-file"
                    .into(),
            )));
        }
    }
    let query = req.uri().query().unwrap_or("").to_string();
    let routes = "GET /clock, /ready, /begin, /finish; POST /events";
    if (req.method() == http::Method::POST) != (path == "/events")
        || !matches!(*req.method(), http::Method::GET | http::Method::POST)
    {
        return Ok(respond((StatusCode::METHOD_NOT_ALLOWED, routes.into())));
    }
    if path == "/events" {
        return Ok(respond(events::post(req, &query, &shared).await));
    }
    let query = query.as_str();
    let ans = match path.as_str() {
        "/clock" => (StatusCode::OK, mono_now_ns().to_string()),
        "/ready" => shared.ready(),
        "/begin" => shared.begin(query, peer),
        "/finish" => match shared.take_for_finish(query) {
            Ok(probes) => finish(&shared, probes, &answered).await,
            Err(refused) => refused,
        },
        _ => (StatusCode::NOT_FOUND, routes.into()),
    };
    Ok(respond(ans))
}

/// Has the agent's own thread stop `probes` and hand what they measured; it attaches afresh
/// once the answer is out (the connection ended): attaching takes seconds, which the run's
/// end must not wait for.
async fn finish<P: AgentProbes>(
    shared: &Arc<Shared<P>>,
    probes: P,
    answered: &Mutex<Option<mpsc::Sender<()>>>,
) -> Answer {
    let (sent, out) = mpsc::channel::<()>();
    *answered.lock().unwrap_or_else(|e| e.into_inner()) = Some(sent);
    let (measured, rx) = tokio::sync::oneshot::channel();
    let ending = Ending {
        probes,
        measured,
        answered: out,
    };
    if shared.endings.send(ending).is_err() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "the agent is stopping".into(),
        );
    }
    match rx.await {
        Ok(body) => (StatusCode::OK, body),
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "the agent is stopping".into(),
        ),
    }
}

/// Serves the connection `socket` from `peer` in a task of its own, holding `permit`.
fn spawn_connection<P: AgentProbes>(
    socket: tokio::net::TcpStream,
    peer: SocketAddr,
    shared: &Arc<Shared<P>>,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let _ = socket.set_nodelay(true);
    let limits = shared.agent.limits;
    let shared = shared.clone();
    let answered = Arc::new(Mutex::new(None));
    let service =
        hyper::service::service_fn(move |req| answer(req, peer, shared.clone(), answered.clone()));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(HEAD_MAX)
        .max_headers(32)
        .keep_alive(false);
    let conn = builder.serve_connection(TokioIo::new(socket), service);
    tokio::spawn(async move {
        let _ = tokio::time::timeout(limits.deadline, conn).await;
        drop(permit);
    });
}

/// Serves `agent` on `listener` until `stop`: its probes attached first (an error then is
/// the agent's), afresh after each run. The connections are served on a thread of their
/// own; the probes are attached and stopped on this one, which lives as long as the agent:
/// bpftrace is started with `PR_SET_PDEATHSIG`, which ends it with the thread that started
/// it (a pool's thread would end it when idle).
pub fn serve<P: AgentProbes>(
    listener: TcpListener,
    agent: Agent<P>,
    stop: &AtomicBool,
) -> Result<(), ProbeError> {
    let mut first = (agent.attach)()?;
    let (endings, ends) = mpsc::channel();
    let shared = Arc::new(Shared {
        slot: Mutex::new(Slot::Attaching),
        next_run: AtomicU64::new(1),
        ring: Arc::new(Mutex::new(EventRing::new(agent.ring))),
        agent,
        endings,
    });
    shared.feed(&mut first);
    *shared.slot() = Slot::Ready(first);
    shared.say("attached: a run may begin");
    std::thread::scope(|scope| {
        let server = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ProbeError::Failed(format!("the agent cannot start: {e}")))?;
            runtime.block_on(accept(listener, &shared, stop))
        });
        while !stop.load(Ordering::SeqCst) && !server.is_finished() {
            if let Ok(ending) = ends.recv_timeout(Duration::from_millis(100)) {
                shared.end(ending, stop);
            }
        }
        let served = server
            .join()
            .unwrap_or_else(|_| Err(ProbeError::Failed("the agent's server panicked".into())));
        // The probes detached (bpftrace stopped) before the agent ends.
        let held = std::mem::replace(&mut *shared.slot(), Slot::Stopped);
        drop(held);
        served
    })
}

/// Accepts connections until `stop` (looked at every 100 ms).
async fn accept<P: AgentProbes>(
    listener: TcpListener,
    shared: &Arc<Shared<P>>,
    stop: &AtomicBool,
) -> Result<(), ProbeError> {
    let failed = |e: std::io::Error| ProbeError::Failed(format!("the agent cannot listen: {e}"));
    listener.set_nonblocking(true).map_err(failed)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(failed)?;
    let slots = Arc::new(tokio::sync::Semaphore::new(
        shared.agent.limits.max_connections,
    ));
    let mut look = tokio::time::interval(Duration::from_millis(100));
    while !stop.load(Ordering::SeqCst) {
        tokio::select! {
            _ = look.tick() => {}
            accepted = listener.accept() => {
                let Ok((socket, peer)) = accepted else {
                    // EMFILE and friends: back off, serve on.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                // At the cap the connection is closed at once: none waits behind a silent one.
                if let Ok(permit) = slots.clone().try_acquire_owned() {
                    spawn_connection(socket, peer, shared, permit);
                }
            }
        }
    }
    Ok(())
}
