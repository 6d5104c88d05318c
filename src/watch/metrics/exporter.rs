//! The exporter's server: its own thread, fed the run's plan and final intervals over a
//! channel that never blocks, answering `GET /metrics` with the exposition.

use super::Metrics;
use crate::model::Segment;
use crate::plan::RunPlan;
use crate::recorder::IntervalSnapshot;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

enum Feed {
    Begin(Box<RunPlan>),
    Interval(Box<IntervalSnapshot>),
    Probed(Box<IntervalSnapshot>),
    /// The joiner's interval, and its phases' names by probed index.
    Joined(Box<IntervalSnapshot>, Arc<[String]>),
    End,
}

/// The exporter: its server thread and the channel that feeds it. Dropping it stops the
/// server.
pub struct Exporter {
    tx: Sender<Feed>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

/// How often the server thread looks for a scrape and for new intervals.
const POLL: Duration = Duration::from_millis(20);

impl Exporter {
    /// Listens on `addr` and serves the run's figures from now on.
    pub fn start(addr: SocketAddr, segment: Option<Segment>) -> std::io::Result<Exporter> {
        let listener = TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let handle = std::thread::Builder::new()
            .name("reqlife-metrics".into())
            .spawn({
                let stop = stop.clone();
                move || serve(listener, rx, Metrics::new(segment), &stop)
            })?;
        Ok(Exporter {
            tx,
            addr,
            stop,
            handle: Some(handle),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A level of the run starts.
    pub fn begin(&self, plan: &RunPlan) {
        let _ = self.tx.send(Feed::Begin(Box::new(plan.clone())));
    }

    /// The load has ended (the series stay, `reqlife_running` goes to 0).
    pub fn end(&self) {
        let _ = self.tx.send(Feed::End);
    }

    /// What the collector calls with each final interval: a send on an unbounded channel,
    /// which never blocks.
    pub fn sink(&self) -> crate::recorder::collector::IntervalSink {
        let tx = self.tx.clone();
        Box::new(move |snap| {
            let _ = tx.send(Feed::Interval(Box::new(snap.clone())));
        })
    }
}

impl Exporter {
    /// What the server's probes call with each tick (`--server-probes-from`: the agent's
    /// phases, per read and write).
    pub fn probe_sink(&self) -> crate::recorder::collector::IntervalSink {
        let tx = self.tx.clone();
        Box::new(move |snap| {
            let _ = tx.send(Feed::Probed(Box::new(snap.clone())));
        })
    }

    /// What the joiner of `spec` calls with each interval (`--server-probes` here): its
    /// phases, and its traced requests, the exemplars of those phases' buckets (the phases'
    /// names by probed index tell which is which).
    pub fn joined_sink(
        &self,
        spec: &crate::recorder::join::JoinSpec,
    ) -> crate::recorder::collector::IntervalSink {
        let tx = self.tx.clone();
        let names: Arc<[String]> =
            crate::recorder::join::phase_names(&spec.functions, spec.upstream).into();
        Box::new(move |snap| {
            let _ = tx.send(Feed::Joined(Box::new(snap.clone()), names.clone()));
        })
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The server thread: takes what comes in, answers scrapes, until `stop`.
fn serve(listener: TcpListener, rx: Receiver<Feed>, mut m: Metrics, stop: &AtomicBool) {
    let take = |m: &mut Metrics| {
        while let Ok(feed) = rx.try_recv() {
            match feed {
                Feed::Begin(plan) => m.begin(&plan),
                Feed::Interval(snap) => m.add(&snap),
                Feed::Probed(snap) => m.add_probed(&snap),
                Feed::Joined(snap, names) => m.add_joined(&snap, &names),
                Feed::End => m.end(),
            }
        }
    };
    while !stop.load(Ordering::SeqCst) {
        take(&mut m);
        match listener.accept() {
            Ok((socket, _)) => {
                take(&mut m);
                let _ = answer(socket, &m);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

/// Answers one HTTP/1.x request: `GET /metrics` (any query), or 404; then closes.
fn answer(mut socket: TcpStream, m: &Metrics) -> std::io::Result<()> {
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    socket.set_write_timeout(Some(Duration::from_secs(5)))?;
    let head = crate::util::http_head::read(&mut socket)?;
    let mut words = head.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, kind, body) = match (method, path) {
        ("GET" | "HEAD", "/metrics") => (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            m.render(),
        ),
        ("GET" | "HEAD", _) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "reqlife: the metrics are at /metrics\n".to_string(),
        ),
        _ => (
            "405 Method Not Allowed",
            "text/plain; charset=utf-8",
            "reqlife: GET /metrics\n".to_string(),
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        response.push_str(&body);
    }
    socket.write_all(response.as_bytes())?;
    socket.flush()
}
