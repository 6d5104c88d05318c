//! A running bpftrace: started in a process group of its own (a Ctrl-C to reqlife's group does
//! not end it before reqlife has read its last counts), with `PR_SET_PDEATHSIG` (it ends when
//! reqlife does, however reqlife ends: its probes go with it), read by a thread that folds its
//! ticks into the run's [`ProbeAcc`]; stopped by SIGINT, which makes it print its last counts
//! and detach, then SIGKILL if it has not ended 5 s later.

use super::output::{Event, Reader};
use super::target;
use super::ProbeError;
use crate::recorder::probes::ProbeAcc;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

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
    watch: Option<crate::recorder::collector::Watch>,
}

/// A running bpftrace and what it has measured.
pub struct Session {
    child: Child,
    shared: Arc<(Mutex<Shared>, Condvar)>,
    stderr: Arc<Mutex<String>>,
}

/// CLOCK_MONOTONIC now, ns (what bpftrace's `nsecs` reads, and what `Instant` is on Linux).
pub fn mono_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `at` in CLOCK_MONOTONIC ns.
pub fn mono_ns(at: Instant) -> u64 {
    let (now, ns) = (Instant::now(), mono_now_ns());
    match now.checked_duration_since(at) {
        Some(ago) => ns.saturating_sub(ago.as_nanos() as u64),
        None => ns + at.duration_since(now).as_nanos() as u64,
    }
}

impl Session {
    /// Starts bpftrace on `script`; returns once its probes are attached.
    pub fn start(bpftrace: &Path, script: &str, acc: ProbeAcc) -> Result<Session, ProbeError> {
        let mut cmd = Command::new(bpftrace);
        cmd.args(["-B", "none", "-e", script])
            .env("BPFTRACE_MAP_KEYS_MAX", "65536")
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
        let mut child = cmd.spawn().map_err(|e| {
            ProbeError::Missing(format!("cannot start {}: {e}", bpftrace.display()))
        })?;
        let shared = Arc::new((
            Mutex::new(Shared {
                ready: false,
                probed: false,
                closed: false,
                ended: false,
                acc,
                window: None,
                last_tick_ns: mono_now_ns(),
                gone_ns: None,
                watch: None,
            }),
            Condvar::new(),
        ));
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
        let reading = shared.clone();
        std::thread::Builder::new()
            .name("reqlife-probes".into())
            .spawn(move || read(BufReader::new(out), &reading))
            .map_err(|e| ProbeError::Failed(format!("cannot start the probes' reader: {e}")))?;
        let session = Session {
            child,
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
        if !closed {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
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

    /// The recording starts at `from_ns` (CLOCK_MONOTONIC), in intervals of `interval`: ticks before it are left
    /// out, and each later one lands in the interval of its middle.
    pub fn begin(
        &self,
        from_ns: u64,
        interval: Duration,
        watch: Option<crate::recorder::collector::Watch>,
    ) {
        self.with(|s| {
            s.watch = watch;
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
        // SAFETY: signals a child of ours, not yet reaped.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        self.wait_for(STOP_TIMEOUT, |s| s.ended || s.closed);
        let ended = self.with(|s| s.ended);
        if !ended {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let (lock, _) = &*self.shared;
        let mut g = lock.lock().unwrap_or_else(|e| e.into_inner());
        if !ended {
            g.acc
                .notes
                .push("bpftrace did not print its last counts: the last tick is missing".into());
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

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Reads bpftrace's output into `shared` until it ends.
fn read(out: impl BufRead, shared: &(Mutex<Shared>, Condvar)) {
    let (lock, cv) = shared;
    let mut reader = Reader::default();
    for line in out.lines() {
        let Ok(line) = line else { break };
        let Some(event) = reader.line(&line) else {
            continue;
        };
        let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            Event::Ready => s.ready = true,
            Event::Probed => s.probed = true,
            Event::Tick { ns, counts } => tick(&mut s, ns, &counts),
            Event::End { hits } => {
                for (i, n) in hits {
                    if let Some(h) = s.acc.hits.get_mut(i) {
                        h.1 = n;
                    }
                }
                s.ended = true;
            }
        }
        cv.notify_all();
    }
    let mut s = lock.lock().unwrap_or_else(|e| e.into_inner());
    s.closed = true;
    cv.notify_all();
}

/// One tick's counts into the interval of its middle, when it overlaps the window.
fn tick(s: &mut Shared, ns: u64, counts: &[(usize, u64, u64)]) {
    let prev = std::mem::replace(&mut s.last_tick_ns, ns);
    if s.gone_ns.is_none() && !s.acc.pids.iter().any(|&p| target::alive(p)) {
        s.gone_ns = Some(ns);
    }
    let index = s.window.and_then(|w| {
        let overlaps = ns > w.from_ns && w.until_ns.is_none_or(|u| prev < u);
        let middle = (prev / 2 + ns / 2).max(w.from_ns);
        overlaps.then(|| (middle - w.from_ns) / w.interval_ns)
    });
    if let (Some(snap), Some(watch)) = (s.acc.add_tick(index, counts), &s.watch) {
        watch(&snap);
    }
}
