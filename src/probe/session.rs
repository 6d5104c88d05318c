//! A running bpftrace: started in a process group of its own (a Ctrl-C to reqlife's group does
//! not end it before reqlife has read its last counts), with `PR_SET_PDEATHSIG` (it ends when
//! reqlife does, however reqlife ends: its probes go with it), read by a thread that hands the
//! kernel's events to the run's joiner ([`EventSink`]), or, for the probe agent (no client
//! here to join with), folds them by order into the run's [`ProbeAcc`] ([`ByOrder`]);
//! stopped by SIGINT, which makes it print its last counts and detach, then SIGKILL if it
//! has not ended 5 s later.

use super::maps::EventMaps;
use super::output::{self, Line};
use super::own::Own;
use super::script::Counted;
use super::target;
use super::ProbeError;
use crate::recorder::join::{EventSink, KernelEvent};
use crate::recorder::probes::ProbeAcc;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

mod by_order;
mod own;

use by_order::by_order;
pub use by_order::ByOrder;

/// How long bpftrace may take to attach its probes.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(60);
/// How long it may take to print its last counts once asked to stop.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// The recorded window, in CLOCK_MONOTONIC ns.
#[derive(Debug, Clone, Copy)]
struct Window {
    from_ns: u64,
    interval_ns: u64,
    until_ns: Option<u64>,
}

/// Events handed to the joiner at once (at most; every tick hands what it has).
const BATCH: usize = 4096;

/// Where the kernel's events go.
enum Into {
    /// Not yet anywhere: a run has not begun (dropped).
    Nowhere,
    /// To the run's joiner.
    Join(EventSink),
    /// Folded by order into the accumulator (the agent).
    ByOrder(ByOrder),
}

struct Shared {
    ready: bool,
    /// The calibration's first uprobe fired.
    probed: bool,
    /// bpftrace's output has ended (it exited).
    closed: bool,
    ended: bool,
    acc: ProbeAcc,
    window: Option<Window>,
    last_tick_ns: u64,
    /// When the server's processes were all found gone (CLOCK_MONOTONIC ns).
    gone_ns: Option<u64>,
    /// Given each tick's snapshot (the metrics endpoint).
    on_interval: Option<crate::recorder::collector::IntervalSink>,
    /// Where the events go.
    into: Into,
    /// The functions probed (the agent folds their chain).
    functions: usize,
    /// The agent's ring: given every event as well, from its attach on.
    tee: Option<super::agent::RingFeed>,
    /// The probes whose hits are their events, counted here ([`super::script::Script::counted`]).
    counted: Vec<(usize, Counted)>,
    /// reqlife's own programs: their reader is to stop.
    stop: bool,
}

/// A running bpftrace, or reqlife's own programs (`own::Own`), and what they have measured.
pub struct Session {
    /// bpftrace (none: reqlife's own programs).
    child: Option<Child>,
    /// reqlife's own programs (shared with their reader).
    own: Option<Arc<Mutex<Own>>>,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    stderr: Arc<Mutex<String>>,
}

pub use crate::util::clock::{mono_now_ns, mono_ns};

impl Session {
    /// Starts bpftrace on `script`; returns once its probes are attached. `unsafe_attach`:
    /// with `--unsafe`, which bpftrace needs to attach at an offset
    /// ([`super::spec::needs_unsafe`]).
    pub fn start(
        bpftrace: &Path,
        script: &str,
        unsafe_attach: bool,
        acc: ProbeAcc,
        counted: &[(usize, Counted)],
        tick: Duration,
    ) -> Result<Session, ProbeError> {
        let mut cmd = command(bpftrace, script, unsafe_attach);
        let mut child = cmd.spawn().map_err(|e| {
            ProbeError::Missing(format!("cannot start {}: {e}", bpftrace.display()))
        })?;
        let shared = Shared::new(acc, counted);
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let into = stderr.clone();
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.read_to_string(&mut text);
                into.lock().map(|mut s| *s = text).ok();
            });
        }
        let out = child.stdout.take().expect("piped");
        let pid = child.id();
        let reading = shared.clone();
        std::thread::Builder::new()
            .name("reqlife-probes".into())
            .spawn(move || read(BufReader::new(out), reading, pid, tick))
            .map_err(|e| ProbeError::Failed(format!("cannot start the probes' reader: {e}")))?;
        let session = Session {
            child: Some(child),
            own: None,
            shared,
            stderr,
        };
        session.wait_for(ATTACH_TIMEOUT, |s| s.ready || s.closed);
        let (ready, closed) = session.with(|s| (s.ready, s.closed));
        if !ready {
            let mut session = session;
            let why = session.stop_and_explain(closed);
            return Err(ProbeError::Failed(why));
        }
        Ok(session)
    }

    /// Reads the events of reqlife's own programs, attached, each `tick`.
    pub fn start_own(
        own: Own,
        acc: ProbeAcc,
        counted: &[(usize, Counted)],
        tick: Duration,
    ) -> Result<Session, ProbeError> {
        let mut acc = acc;
        acc.own_programs = true;
        let shared = Shared::new(acc, counted);
        let own = Arc::new(Mutex::new(own));
        let (reading, programs) = (shared.clone(), own.clone());
        std::thread::Builder::new()
            .name("reqlife-probes".into())
            .spawn(move || own::read(programs, reading, tick))
            .map_err(|e| ProbeError::Failed(format!("cannot start the probes' reader: {e}")))?;
        Ok(Session {
            child: None,
            own: Some(own),
            shared,
            stderr: Arc::new(Mutex::new(String::new())),
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Shared) -> T) -> T {
        let mut g = self.shared.0.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    fn wait_for(&self, limit: Duration, done: impl Fn(&Shared) -> bool) {
        let (lock, cv) = &*self.shared;
        let g = lock.lock().unwrap_or_else(|e| e.into_inner());
        let _ = cv.wait_timeout_while(g, limit, |s| !done(s));
    }

    /// bpftrace did not attach: it is stopped, and its first error given in one line.
    fn stop_and_explain(&mut self, closed: bool) -> String {
        if let Some(child) = &mut self.child {
            if !closed {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        std::thread::sleep(Duration::from_millis(50));
        let err = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let first = err
            .lines()
            .find(|l| l.contains("ERROR") && !l.contains("RLIMIT_MEMLOCK"))
            .or_else(|| {
                err.lines()
                    .find(|l| !l.trim().is_empty() && !l.contains("RLIMIT_MEMLOCK"))
            })
            .unwrap_or(if closed {
                "it exited"
            } else {
                "it did not attach within 60 s"
            });
        format!("bpftrace could not attach the probes: {}", first.trim())
    }

    /// Calls `poke` (which hits the calibration's first uprobe) until bpftrace says that uprobe
    /// fired, every probe attached then; false if it did not within `limit`.
    pub fn wait_probed(&self, limit: Duration, poke: impl Fn()) -> bool {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            poke();
            if self.with(|s| s.probed || s.closed) {
                return self.with(|s| s.probed);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// The agent's fold follows a chain of `n` functions.
    pub fn functions(&self, n: usize) {
        self.with(|s| s.functions = n);
    }

    /// The kernel's events go to `ring` too from now on (the agent's).
    pub fn tee(&self, ring: super::agent::RingFeed) {
        self.with(|s| s.tee = Some(ring));
    }

    /// The kernel's events go to the run's joiner from now on.
    pub fn join(&self, events: EventSink) {
        self.with(|s| s.into = Into::Join(events));
    }

    /// The recording starts at `from_ns` (CLOCK_MONOTONIC), in intervals of `interval`, its
    /// events folded by order (the agent's; a run here joins them to its requests): ticks
    /// before it are left out, and each later one lands in the interval of its middle.
    pub fn begin(
        &self,
        from_ns: u64,
        interval: Duration,
        on_interval: Option<crate::recorder::collector::IntervalSink>,
    ) {
        self.with(|s| {
            s.on_interval = on_interval;
            if !matches!(s.into, Into::Join(_)) {
                s.into = Into::ByOrder(ByOrder::new(s.functions));
            }
            s.window = Some(Window {
                from_ns,
                interval_ns: interval.as_nanos().max(1) as u64,
                until_ns: None,
            });
        });
    }

    /// Stops bpftrace once the run has ended (its last counts read), and gives what it
    /// measured in the recorded window.
    pub fn finish(mut self) -> ProbeAcc {
        let until = mono_now_ns();
        self.with(|s| {
            if let Some(w) = &mut s.window {
                w.until_ns = Some(until);
            }
        });
        self.stop();
        self.wait_for(STOP_TIMEOUT, |s| s.ended || s.closed);
        let ended = self.with(|s| s.ended);
        if let Some(child) = &mut self.child {
            if !ended {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        // Detached here, once the reader has let its share go (it has, unless it did not end
        // within the stop's time: then when it does).
        drop(self.own.take());
        let (lock, _) = &*self.shared;
        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
        if !ended {
            g.acc
                .notes
                .push("the probes did not give their last events: the last tick is missing".into());
        }
        if let (Some(gone), Some(w)) = (g.gone_ns, g.window) {
            let at = gone.saturating_sub(w.from_ns) as f64 / 1e9;
            let pids: Vec<String> = g.acc.pids.iter().map(u32::to_string).collect();
            g.acc.notes.push(format!(
                "the server (pid {}) exited {at:.2} s into the run: its phases end there",
                pids.join(", ")
            ));
        }
        g.acc.clone()
    }
}

impl Shared {
    fn new(acc: ProbeAcc, counted: &[(usize, Counted)]) -> Arc<(Mutex<Shared>, Condvar)> {
        Arc::new((
            Mutex::new(Shared {
                ready: false,
                probed: false,
                closed: false,
                ended: false,
                acc,
                window: None,
                last_tick_ns: mono_now_ns(),
                gone_ns: None,
                on_interval: None,
                into: Into::Nowhere,
                functions: 0,
                tee: None,
                counted: counted.to_vec(),
                stop: false,
            }),
            Condvar::new(),
        ))
    }
}

impl Session {
    /// Asks the probes to stop: bpftrace by SIGINT (it prints its last counts), reqlife's
    /// own programs' reader by its flag (it reads their last events).
    fn stop(&self) {
        match &self.child {
            // SAFETY: signals a child of ours, not yet reaped.
            Some(child) => unsafe {
                libc::kill(child.id() as i32, libc::SIGINT);
            },
            None => {
                self.with(|s| s.stop = true);
                self.shared.1.notify_all();
            }
        }
    }
}

/// bpftrace on `script`, in a process group of its own, ended with reqlife, its memory
/// unlocked, its output piped.
fn command(bpftrace: &Path, script: &str, unsafe_attach: bool) -> Command {
    let mut cmd = Command::new(bpftrace);
    if unsafe_attach {
        cmd.arg("--unsafe");
    }
    cmd.args(["-B", "none", "-f", "json", "-e", script])
        .env("BPFTRACE_MAP_KEYS_MAX", "65536")
        // 4 MiB a CPU: room for the events of a busy tick (bpftrace drops past it).
        .env("BPFTRACE_PERF_RB_PAGES", "1024")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            let inf = libc::rlimit {
                rlim_cur: libc::RLIM_INFINITY,
                rlim_max: libc::RLIM_INFINITY,
            };
            libc::setrlimit(libc::RLIMIT_MEMLOCK, &inf);
            Ok(())
        });
    }
    cmd
}

impl Drop for Session {
    fn drop(&mut self) {
        match &mut self.child {
            Some(child) => {
                if let Ok(None) = child.try_wait() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
            None => self.stop(),
        }
    }
}

/// Reads bpftrace's output (process `pid`) into `shared` until it ends; its event maps read
/// from the kernel once its BEGIN ran, where they can be ([`EventMaps`]), turned each `tick`.
fn read(out: impl BufRead, shared: Arc<(Mutex<Shared>, Condvar)>, pid: u32, tick: Duration) {
    let (lock, cv) = &*shared;
    let mut batch: Vec<KernelEvent> = Vec::with_capacity(BATCH);
    let mut ended = false;
    let mut maps: Option<Arc<Mutex<EventMaps>>> = None;
    for text in out.lines() {
        let Ok(text) = text else { break };
        let Some(line) = output::line(&text) else {
            continue;
        };
        ended |= line == Line::End;
        let line = from_maps(line, &mut maps, (pid, tick), &shared, &mut batch);
        // A tick's events: handed over whole. After the script's end bpftrace prints its
        // maps once more on its own: the event maps the script printed last, again.
        if let Line::Events(events) = line {
            if ended {
                continue;
            }
            batch.extend(events);
            if batch.len() >= BATCH {
                hand_over(lock, &mut batch);
            }
            continue;
        }
        // The clock: the events before it are in.
        if let Line::Event(e) = line {
            batch.push(e);
            if let KernelEvent::Tick { ns } = e {
                ticked(lock, &mut batch, ns);
            } else if batch.len() >= BATCH {
                hand_over(lock, &mut batch);
            }
            continue;
        }
        let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
        match line {
            Line::Ready => s.ready = true,
            Line::Probed => s.probed = true,
            Line::Calibration | Line::Event(_) | Line::Events(_) | Line::Turn { .. } => {}
            // After the script's end, bpftrace prints its maps once more on its own (some
            // emptied): the script's own print before it counts.
            Line::Hits(_) | Line::Others(_) if s.ended => {}
            Line::Hits(hits) => {
                for (i, n) in hits {
                    if let Some(h) = s.acc.hits.get_mut(i) {
                        h.1 = n;
                    }
                }
            }
            Line::Others(n) => {
                s.acc.others = n;
                if let Into::Join(sink) = &s.into {
                    sink.others(n);
                }
            }
            Line::Lost(n) => {
                s.acc.lost_events += n;
                batch.push(KernelEvent::Lost { n });
            }
            Line::End => s.ended = true,
        }
        cv.notify_all();
    }
    hand_over(lock, &mut batch);
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    s.closed = true;
    cv.notify_all();
}

/// The events up to a tick (its clock last) handed over; the server's processes looked at.
fn ticked(lock: &Mutex<Shared>, batch: &mut Vec<KernelEvent>, ns: u64) {
    hand_over(lock, batch);
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    if s.gone_ns.is_none() && !s.acc.pids.iter().any(|&p| target::alive(p)) {
        s.gone_ns = Some(ns);
    }
}

/// The event maps' part of a line: at BEGIN's, the maps taken over from bpftrace (`pid`) and
/// turned each `tick` by a thread of reqlife's ([`turning`]); at a tick's of bpftrace's (maps
/// it still turns), the map it left read into `batch`; at the end's, the three, the turning
/// stopped; then the tick as the clock's event.
fn from_maps(
    line: Line,
    maps: &mut Option<Arc<Mutex<EventMaps>>>,
    (pid, tick): (u32, Duration),
    shared: &Arc<(Mutex<Shared>, Condvar)>,
    batch: &mut Vec<KernelEvent>,
) -> Line {
    let lock = &shared.0;
    if line == Line::Ready && maps.is_none() {
        *maps = EventMaps::take_over(pid).map(|m| Arc::new(Mutex::new(m)));
        if let Some(m) = maps {
            lock.lock().unwrap_or_else(|e| e.into_inner()).acc.maps_read = true;
            let (m, shared) = (m.clone(), shared.clone());
            let _ = std::thread::Builder::new()
                .name("reqlife-turns".into())
                .spawn(move || turning(&m, &shared.0, tick));
        }
    }
    let take = |m: &Arc<Mutex<EventMaps>>, which: Option<usize>, batch: &mut Vec<KernelEvent>| {
        let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
        m.drain(which, batch);
        m.done |= which.is_none();
        let full = m.full;
        drop(m);
        if full > 0 {
            lock.lock().unwrap_or_else(|e| e.into_inner()).acc.maps_full = full;
        }
    };
    match (line, maps) {
        (Line::Turn { ns, left }, m) => {
            if let Some(m) = m {
                take(m, Some(left), batch);
            }
            Line::Event(KernelEvent::Tick { ns })
        }
        (line @ Line::Event(KernelEvent::Tick { .. }), Some(m)) => {
            take(m, None, batch);
            line
        }
        (line, _) => line,
    }
}

/// reqlife's turning of the event maps, each `tick` until the end took them: the map left a
/// turn before handed over, then its clock.
fn turning(maps: &Mutex<EventMaps>, lock: &Mutex<Shared>, tick: Duration) {
    let mut batch = Vec::new();
    loop {
        std::thread::sleep(tick);
        let mut m = maps.lock().unwrap_or_else(|e| e.into_inner());
        if m.done {
            return;
        }
        let left = m.turn(&mut batch);
        let full = m.full;
        drop(m);
        if full > 0 {
            lock.lock().unwrap_or_else(|e| e.into_inner()).acc.maps_full = full;
        }
        match left {
            Some(ns) => {
                batch.push(KernelEvent::Tick { ns });
                ticked(lock, &mut batch, ns);
            }
            None => hand_over(lock, &mut batch),
        }
    }
}

/// Gives the batched events where they go: to the joiner (sent outside the lock), or folded
/// by order (the agent's).
fn hand_over(lock: &Mutex<Shared>, batch: &mut Vec<KernelEvent>) {
    if batch.is_empty() {
        return;
    }
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    let shared = &mut *s;
    Counted::count(&shared.counted, batch, &mut shared.acc.hits);
    if let Some(tee) = &s.tee {
        tee(batch);
    }
    match &mut s.into {
        Into::Nowhere => batch.clear(),
        Into::Join(sink) => {
            let sink = sink.clone();
            drop(s);
            let events = std::mem::replace(batch, Vec::with_capacity(BATCH));
            if !sink.send(events) {
                // The run's joiner is done: the events after it are the run's end.
                let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
                s.into = Into::Nowhere;
            }
        }
        Into::ByOrder(_) => {
            for e in batch.drain(..) {
                by_order(&mut s, e);
            }
        }
    }
}
