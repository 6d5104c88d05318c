//! The server's side of a request's life, measured without the server's help
//! (`run --server-probes`, `--server-pid`, `--server-fn`): eBPF probes on a server of this
//! machine, driven through bpftrace, beside the load.
//!
//! Why bpftrace: it is the tool the studies used and users know, it needs nothing at build
//! time (reqlife builds and runs where it is absent, and says how to get it when asked for
//! probes), it compiles the probes for the running kernel itself, and the script it runs can
//! be printed (`--print-probe-script`) and run by hand. A Rust eBPF library (aya, libbpf-rs)
//! would need a BPF toolchain in the build and a program of ours per kernel feature. The
//! default plan alone (the kernel's tracepoints, a client here, every request) runs as
//! reqlife's own programs (`own`: BPF instructions written here, offsets from the kernel's
//! BTF, no toolchain), where the kernel has what they need: at saturation bpftrace's path cost
//! nginx three times what they do.
//!
//! The pipeline: [`prepare`] checks what the probes need (Linux, root, bpftrace, tracefs,
//! BTF), finds the server ([`target`]), resolves the functions named ([`spec`], [`symbols`])
//! and writes the script ([`script`], through the typed builder [`bpf`]); [`Prepared::start`]
//! measures what a probe hit costs here (`calibrate`) and attaches it ([`session`]); the
//! session hands the kernel's events ([`output`]) to the run's joiner
//! ([`crate::recorder::join`]), which ties each to a request by its bytes, and stops
//! bpftrace (its probes detached) when the run ends. The probe agent of another host has no
//! requests to join: it folds the events by order, per read and write, and keeps the last of
//! them in a bounded ring ([`ring`]) for the run to pull those of the requests it keeps or
//! logs, which the run joins ([`remote`]).

pub mod agent;
pub mod bpf;
mod calibrate;
mod maps;
pub mod output;
mod own;
pub mod remote;
pub mod ring;
pub mod script;
pub mod session;
pub mod spec;
pub mod symbols;
pub mod target;

use crate::recorder::probes::{ProbeAcc, ProbeCost};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Why the probes cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProbeError {
    /// Bad input: a flag's value, a pid, a port, a function (exit 2).
    #[error("{0}")]
    Input(String),
    /// This machine lacks what probes need (root, bpftrace, tracefs), with how to get it.
    #[error("{0}")]
    Missing(String),
    /// bpftrace failed.
    #[error("{0}")]
    Failed(String),
}

/// What the user asked of the probes.
#[derive(Debug, Clone, Default)]
pub struct ProbeRequest {
    /// The server's processes (none: the ones listening on the target's port).
    pub pids: Vec<u32>,
    /// `--server-fn`'s list, unread.
    pub functions: Option<String>,
    /// One request in this many is timed.
    pub sample: u64,
    /// The run's interval (its ticks are a tenth of it, from 10 to 100 ms).
    pub interval: Duration,
    /// The probe agent (`reqlife probe`): the client is on another host, so every
    /// connection to the port is followed.
    pub agent: bool,
    /// `--server-probes-cost`: half of the client's connections followed, the others
    /// untraced, and the latency of the two halves compared.
    pub split: bool,
    /// `--server-upstream`: the port of the service the server calls while it serves a
    /// request (its calls timed per request).
    pub upstream: Option<u16>,
}

/// Everything checked, and the script written: ready to attach.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The server's processes, port and executable.
    pub server: target::Server,
    /// The bpftrace script and what its indices mean.
    pub script: script::Script,
    bpftrace: PathBuf,
    sample: u64,
    split: bool,
    upstream: Option<u16>,
    tick: Duration,
    /// bpftrace runs with `--unsafe`: a function is attached by its offset in the file.
    unsafe_attach: bool,
    /// The calibration's own script (see [`calibrate`]).
    calibration: Option<script::Script>,
    /// The default plan, for reqlife's own programs ([`own`]) where this kernel has what
    /// they need: the server's port, and whether a send's start is stamped.
    own: Option<(u16, bool)>,
}

/// `name` found in `PATH`.
fn in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The bpftrace that tells how to get it.
const NO_BPFTRACE: &str = "bpftrace, which is not in PATH: `apt-get install bpftrace` (Debian, \
                           Ubuntu), `dnf install bpftrace` (Fedora)";

/// What the machine lacks for probes, in one line with how to get it; `printing`: only what
/// writing the script needs (no root); `own`: the plan may run as reqlife's own programs
/// (bpftrace then needed only where they do not load).
fn missing(printing: bool, own: bool) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return Some(
            "--server-probes: eBPF probes need Linux; run reqlife on the server's Linux host"
                .into(),
        );
    }
    if (printing || !own) && in_path("bpftrace").is_none() {
        return Some(format!("--server-probes needs {NO_BPFTRACE}"));
    }
    if printing {
        return None;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some(
            "--server-probes needs root (eBPF probes): run reqlife as root, or with sudo".into(),
        );
    }
    let tracefs = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| Path::new(d).join("events/sock").is_dir());
    if !tracefs {
        return Some(
            "--server-probes needs tracefs for the kernel's tracepoints: \
             `mount -t tracefs nodev /sys/kernel/tracing` (as root)"
                .into(),
        );
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Some(
            "--server-probes needs the kernel's BTF (/sys/kernel/btf/vmlinux: a kernel built \
             with CONFIG_DEBUG_INFO_BTF) to read the server's sockets"
                .into(),
        );
    }
    None
}

/// Checks what the probes need, finds the server on `port` (or as `req.pids`) and writes the
/// script. `printing`: for `--print-probe-script` (root not needed).
pub fn prepare(req: &ProbeRequest, port: u16, printing: bool) -> Result<Prepared, ProbeError> {
    // The default plan: the kernel's tracepoints alone, a client here, every request.
    let default_plan = req.functions.is_none()
        && !req.agent
        && !req.split
        && req.sample == 1
        && req.upstream.is_none();
    let own_plan = default_plan && own::wanted();
    if let Some(line) = missing(printing, own_plan) {
        return Err(ProbeError::Missing(line));
    }
    if req.sample == 0 {
        return Err(ProbeError::Input(
            "--server-sample must be at least 1 (1: every request; 100: one in 100)".into(),
        ));
    }
    // Absent only where the plan runs as reqlife's own programs (a fallback then says so).
    let bpftrace = in_path("bpftrace").unwrap_or_else(|| PathBuf::from("bpftrace"));
    let mut functions = match &req.functions {
        Some(list) => spec::parse_list(list)?,
        None => Vec::new(),
    };
    let server = target::find(&req.pids, port)?;
    if server.pids.contains(&std::process::id()) {
        return Err(ProbeError::Input(
            "--server-probes: the target is served by reqlife itself (the embedded target); \
             run `reqlife serve` apart and give its URL"
                .into(),
        ));
    }
    symbols::resolve(&bpftrace, &server.exe, &mut functions)?;
    let go = !functions.is_empty() && symbols::is_go(&bpftrace, &server.exe);
    let returns = functions
        .iter()
        .any(|f| matches!(f.site, spec::Site::Function { ret: true, .. }));
    if go && returns {
        return Err(ProbeError::Input(
            "--server-fn: a Go server's returns cannot be probed (a uretprobe breaks Go's \
             moving stacks): name the functions' entries, e.g. the next function a request \
             calls"
                .into(),
        ));
    }
    let unsafe_attach = spec::needs_unsafe(&functions);
    let tick_ms = (req.interval.as_millis() as u64 / 10).clamp(10, 100);
    let own = (own_plan && functions.is_empty()).then(|| (port, send_start()));
    let plan = script::ScriptPlan {
        port,
        follow: if req.agent {
            script::Follow::All
        } else {
            script::Follow::Client(std::process::id())
        },
        functions,
        go,
        send_start: send_start(),
        sample: req.sample,
        split: req.split,
        tick_ms,
        upstream: req.upstream,
    };
    // The calibration runs in a bpftrace of its own, stopped before the run: uprobes left in
    // reqlife's executable, though never hit, cost the run a third of its requests a second
    // (nginx, 2-core VM: 77-85k against 108-133k req/s).
    let calibration = calibrate::target().map(|exe| script::calibration(std::process::id(), &exe));
    Ok(Prepared {
        script: plan.write(),
        calibration,
        server,
        bpftrace,
        sample: req.sample,
        split: req.split,
        upstream: req.upstream,
        tick: Duration::from_millis(tick_ms),
        unsafe_attach,
        own,
    })
}

/// Whether this kernel stamps a send's start (`tcp:tcp_sendmsg_locked`, Linux 6.11 on).
/// `REQLIFE_PROBES_KERNEL=pre-6.11` writes the older kernels' script here (the suite runs
/// that branch for real with it).
fn send_start() -> bool {
    if std::env::var("REQLIFE_PROBES_KERNEL").is_ok_and(|v| v == "pre-6.11") {
        return false;
    }
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|d| Path::new(d).join("events/tcp/tcp_sendmsg_locked").is_dir())
}

/// The phases the probe agent folds by order (per read and write: the requests are on the
/// client's host), then those of the chain of `functions`.
pub fn agent_phases(functions: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = vec![
        (
            "socket".into(),
            "in its socket (arrival → read), per read".into(),
        ),
        (
            "handle".into(),
            "its read → its next write, per read".into(),
        ),
    ];
    out.extend(
        crate::recorder::join::phases(functions, false)
            .into_iter()
            .skip(crate::recorder::join::KERNEL.len()),
    );
    out
}

/// A running probe session: attached, calibrated, waiting for the run's window.
pub struct Probes {
    session: session::Session,
    /// The probes are reqlife's own programs (not bpftrace's).
    own: bool,
    server_cpu_from: Option<f64>,
    pids: Vec<u32>,
    functions: Vec<String>,
    sample: u64,
    split: bool,
    upstream: Option<u16>,
    tick: Duration,
}

impl Prepared {
    /// What a hit costs here: the calibration's probes attached, the loops timed before and
    /// after, the probes detached.
    fn calibrate(&self, script: &script::Script) -> Result<ProbeCost, String> {
        let base = calibrate::rounds();
        let empty = ProbeAcc::new(Vec::new(), String::new(), 1, &[], &script.probes);
        let session =
            session::Session::start(&self.bpftrace, &script.text, false, empty, &[], self.tick)
                .map_err(|e| e.to_string())?;
        if !session.wait_probed(Duration::from_secs(10), calibrate::poke) {
            return Err("the calibration's probe did not fire within 10 s".into());
        }
        let cost = calibrate::cost(&base, &calibrate::rounds());
        session.finish();
        Ok(cost)
    }

    /// Measures what a hit costs here, then attaches the probes: reqlife's own programs for
    /// the default plan where they load (the kernel counts their cost), else bpftrace's.
    pub fn start(&self) -> Result<Probes, ProbeError> {
        let mut acc = ProbeAcc::new(
            self.server.pids.clone(),
            self.server.name.clone(),
            self.sample,
            &agent_phases(&self.script.functions),
            &self.script.probes,
        );
        let own = self
            .own
            .map(|(port, send_start)| own::Own::load(port, send_start));
        let ours = matches!(own, Some(Ok(_)));
        let session = match own {
            Some(Ok(own)) => {
                session::Session::start_own(own, acc, &self.script.counted, self.tick)?
            }
            Some(Err(why)) if in_path("bpftrace").is_none() => {
                return Err(ProbeError::Missing(format!(
                    "--server-probes: reqlife's own programs could not load ({why}), and the \
                     script needs {NO_BPFTRACE}"
                )));
            }
            Some(Err(why)) => {
                acc.notes.push(format!(
                    "the kernel's probes ran as bpftrace's programs, which cost the server \
                     more: reqlife's own could not load ({why})"
                ));
                self.start_bpftrace(acc)?
            }
            None => self.start_bpftrace(acc)?,
        };
        session.functions(self.script.functions.len());
        Ok(Probes {
            session,
            own: ours,
            server_cpu_from: None,
            pids: self.server.pids.clone(),
            functions: self.script.functions.clone(),
            sample: self.sample,
            split: self.split,
            upstream: self.upstream,
            tick: self.tick,
        })
    }

    /// The calibration, then bpftrace on the script.
    fn start_bpftrace(&self, mut acc: ProbeAcc) -> Result<session::Session, ProbeError> {
        let cost = self.calibration.as_ref().map(|c| self.calibrate(c));
        match cost {
            Some(Ok(c)) => acc.cost = c,
            Some(Err(why)) => acc
                .notes
                .push(format!("the probes' cost was not measured: {why}")),
            None => acc.notes.push(
                "the probes' cost was not measured (the calibration needs x86-64 and /proc)".into(),
            ),
        }
        // bpftrace says BEGIN once every probe is attached.
        session::Session::start(
            &self.bpftrace,
            &self.script.text,
            self.unsafe_attach,
            acc,
            &self.script.counted,
            self.tick,
        )
    }
}

impl Probes {
    /// The kernel's events go to the run's joiner from now on (before the run's connections
    /// open: the probes learn them as they open).
    pub fn join(&self, events: crate::recorder::join::EventSink) {
        self.session.join(events);
    }

    /// Whose programs the probes are: "reqlife's own programs" or "bpftrace".
    pub fn programs(&self) -> &'static str {
        if self.own {
            "reqlife's own programs"
        } else {
            "bpftrace"
        }
    }

    /// The functions' labels (the joiner's chain).
    pub fn functions(&self) -> &[String] {
        &self.functions
    }

    /// The run's recorded window starts at `from`; `on_interval` (the metrics endpoint) is
    /// given each tick's phases (the agent's: a run here gets them from its joiner).
    pub fn begin(
        &mut self,
        from: Instant,
        interval: Duration,
        on_interval: Option<crate::recorder::collector::IntervalSink>,
    ) {
        self.begin_ns(session::mono_ns(from), interval, on_interval);
    }

    /// [`Probes::begin`] at `from_ns` (CLOCK_MONOTONIC: another host's run, its clock
    /// converted).
    pub fn begin_ns(
        &mut self,
        from_ns: u64,
        interval: Duration,
        on_interval: Option<crate::recorder::collector::IntervalSink>,
    ) {
        self.server_cpu_from = target::tree_cpu_s(&self.pids);
        self.session.begin(from_ns, interval, on_interval);
    }

    /// The run has ended: the probes detached, what they measured.
    pub fn finish(self) -> ProbeAcc {
        let cpu_to = target::tree_cpu_s(&self.pids);
        let mut acc = self.session.finish();
        if let (Some(a), Some(b)) = (self.server_cpu_from, cpu_to) {
            acc.cost.server_cpu_s = Some((b - a).max(0.0));
        }
        let never: Vec<&str> = acc
            .hits
            .iter()
            .filter(|(name, n)| *n == 0 && !name.starts_with("calibration"))
            .map(|(name, _)| name.as_str())
            .collect();
        if !never.is_empty() {
            acc.notes.push(format!(
                "these probes never fired: {} (a function the server does not call on this path, or a server that got no request)",
                never.join(", ")
            ));
        }
        acc
    }
}

/// The probes of a run: attached here, or on the server's host through its agent.
pub enum Attached {
    /// Attached by bpftrace on this host.
    Here(Probes),
    /// Attached on the server's host by `reqlife probe` there, read through its agent.
    There(remote::Remote),
}

impl Attached {
    /// What the run's joiner is given (on another host, of what its agent's probes follow).
    pub fn join_spec(
        &self,
        plan: &crate::plan::RunPlan,
    ) -> Option<crate::recorder::join::JoinSpec> {
        match self {
            Attached::Here(p) => Some(crate::recorder::join::JoinSpec {
                functions: p.functions.clone(),
                sample: p.sample,
                split: p.split,
                upstream: p.upstream.is_some(),
                interval: plan.interval,
                tick: p.tick,
            }),
            Attached::There(r) => Some(crate::recorder::join::JoinSpec {
                functions: r.spec().functions.clone(),
                sample: r.spec().sample.max(1),
                split: false,
                upstream: r.spec().upstream,
                interval: plan.interval,
                tick: Duration::from_millis(100),
            }),
        }
    }

    /// On another host: the run's way to its agent's ring and the agent's clock's offset, ns.
    pub fn puller(&self) -> Option<(Box<dyn crate::recorder::join::remote::Puller>, i64)> {
        match self {
            Attached::Here(_) => None,
            Attached::There(r) => Some((Box::new(r.puller()), r.offset_ns())),
        }
    }

    /// The kernel's events go to the run's joiner (probed here).
    pub fn join(&self, events: crate::recorder::join::EventSink) {
        if let Attached::Here(p) = self {
            p.join(events);
        }
    }

    /// The run's recorded window starts at `from`.
    pub fn begin(
        &mut self,
        from: Instant,
        interval: Duration,
        on_interval: Option<crate::recorder::collector::IntervalSink>,
    ) -> Result<(), ProbeError> {
        match self {
            Attached::Here(p) => {
                p.begin(from, interval, on_interval);
                Ok(())
            }
            Attached::There(r) => r.begin(from, interval),
        }
    }

    /// The run has ended: what the probes measured.
    pub fn finish(self) -> Result<ProbeAcc, ProbeError> {
        match self {
            Attached::Here(p) => Ok(p.finish()),
            Attached::There(r) => r.finish(),
        }
    }
}
