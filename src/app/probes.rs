//! `run --server-probes`: the checks of a run that probes its server (one level, a TCP target
//! on this machine), the script printed for `--print-probe-script`, and the probes' errors as
//! failures with their exit codes.

use super::Failure;
use crate::cli::RunArgs;
use crate::plan::RunPlan;
use crate::probe::{self, Attached, ProbeError};

impl From<ProbeError> for Failure {
    fn from(e: ProbeError) -> Failure {
        match e {
            ProbeError::Input(m) => Failure::Usage(m),
            // What the machine lacks: the run cannot succeed, and the line names the fix.
            ProbeError::Missing(m) => Failure::FailFast(m),
            ProbeError::Failed(m) => Failure::Failed(m),
        }
    }
}

/// The probes of a run, checked: here (the script written), or on the server's host (its
/// agent reached, the clocks' offset measured).
pub(super) enum Planned {
    Here(Box<probe::Prepared>),
    There(probe::remote::Remote),
}

impl Planned {
    /// The script the probes here would run.
    pub fn script(&self) -> Option<&str> {
        match self {
            Planned::Here(p) => Some(&p.script.text),
            Planned::There(_) => None,
        }
    }

    /// Attaches the probes (here: bpftrace started and calibrated), saying so unless `quiet`.
    pub fn attach(&self, quiet: bool) -> Result<Attached, Failure> {
        match self {
            Planned::Here(p) => {
                let session = p.start()?;
                if !quiet {
                    let pids: Vec<String> = p.server.pids.iter().map(u32::to_string).collect();
                    eprintln!(
                        "reqlife: {} probes on {} (pid {}) attached",
                        p.script.probes.len(),
                        p.server.name,
                        pids.join(", ")
                    );
                }
                Ok(Attached::Here(session))
            }
            Planned::There(r) => {
                if !quiet {
                    let c = r.clock();
                    eprintln!(
                        "reqlife: the probe agent at {} (its clock {:+.1} µs from ours, within {:.1} µs)",
                        c.agent,
                        c.offset_us,
                        c.rtt_us / 2.0
                    );
                }
                Ok(Attached::There(r.clone()))
            }
        }
    }
}

/// The probes `args` ask for, checked against the run's `plans` and the machine, their script
/// written; `None` when none are asked for.
pub(super) fn prepare(
    args: &RunArgs,
    plans: &[RunPlan],
    embedded: bool,
    repeat: usize,
) -> Result<Option<Planned>, Failure> {
    let p = &args.probes;
    if !p.asked() {
        return Ok(None);
    }
    let usage = |line: &str| Err(Failure::Usage(format!("--server-probes: {line}")));
    if embedded {
        return usage(
            "the embedded target runs inside reqlife: start it apart (`reqlife serve --addr \
             127.0.0.1:8080`) and give its URL",
        );
    }
    let [plan] = plans else {
        return usage(
            "a sweep or a target list probes one level at a time: give one -c or -R, and one URL",
        );
    };
    if repeat > 1 {
        return usage("--repeat runs several times: probe one run at a time");
    }
    if args.http3 {
        return usage(
            "the probes follow the server's TCP sockets: HTTP/3 (QUIC, over UDP) is not probed",
        );
    }
    if let Some(url) = &p.server_probes_from {
        if !p.server_pid.is_empty() || p.server_fn.is_some() || p.server_sample != 1 {
            return usage(
                "with --server-probes-from, give --server-pid, --server-fn and --server-sample \
                 to `reqlife probe` on the server's host",
            );
        }
        if p.print_probe_script {
            return usage(
                "the script of --server-probes-from is the agent's: drop --print-probe-script",
            );
        }
        return Ok(Some(Planned::There(probe::remote::Remote::connect(url)?)));
    }
    if !plan.target.addr.ip().is_loopback() && p.server_pid.is_empty() {
        return usage(&format!(
            "the probes see a server on this machine; {} is not a loopback address (give \
             --server-pid if the server runs here under another address)",
            plan.target.addr.ip()
        ));
    }
    let prepared = probe::prepare(
        &p.request(plan.interval),
        plan.target.port,
        p.print_probe_script,
    )?;
    Ok(Some(Planned::Here(Box::new(prepared))))
}

/// The agent's stop: set by SIGINT or SIGTERM.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// `reqlife probe`: the probes on this host, served to a `run --server-probes-from` elsewhere,
/// until SIGINT or SIGTERM.
pub(super) fn agent(args: &crate::cli::probes::ProbeAgentArgs) -> Result<i32, Failure> {
    let req = args.request();
    let prepared = probe::prepare(&req, args.port, false)?;
    let listener = std::net::TcpListener::bind(args.listen).map_err(|e| {
        Failure::Usage(format!(
            "--listen {}: cannot listen there ({e})",
            args.listen
        ))
    })?;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let pids: Vec<String> = prepared.server.pids.iter().map(u32::to_string).collect();
    eprintln!(
        "reqlife probe: {} (pid {}) on port {}; serving http://{}/ for `run --server-probes-from` (Ctrl-C to stop)",
        prepared.server.name,
        pids.join(", "),
        args.port,
        listener.local_addr().unwrap_or(args.listen)
    );
    probe::remote::serve(listener, &|| prepared.start(), &STOP, &|line| {
        eprintln!("reqlife probe: {line}")
    })?;
    Ok(crate::util::exit::EXIT_OK)
}
