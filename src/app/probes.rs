//! `run --server-probes`: the probes of the run's plan made ready (checked against the machine,
//! or the agent reached), the script printed for `--print-probe-script`, and the probes'
//! errors as failures with their exit codes.

use super::Failure;
use crate::cli::probes::ProbePlan;
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
    There(Box<probe::remote::Remote>),
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
                        "reqlife: {} probes on {} (pid {}) attached ({})",
                        p.script.probes.len(),
                        p.server.name,
                        pids.join(", "),
                        session.programs()
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
                Ok(Attached::There((**r).clone()))
            }
        }
    }
}

/// The probes of the run's plan ([`ProbePlan`], checked against its flags) made ready: here,
/// checked against the machine and the server and their script written; there, the agent
/// reached.
pub(super) fn prepare(plan: &ProbePlan) -> Result<Planned, Failure> {
    Ok(match plan {
        ProbePlan::There { url, token_file } => {
            let token = probe::remote::token_from(
                token_file.as_deref(),
                "--server-probes-token-file",
                std::env::var_os(probe::remote::TOKEN_ENV),
            )?;
            Planned::There(Box::new(probe::remote::Remote::connect(url, token)?))
        }
        ProbePlan::Here {
            request,
            port,
            print_script,
        } => Planned::Here(Box::new(probe::prepare(request, *port, *print_script)?)),
    })
}

/// The agent's stop: set by SIGINT or SIGTERM.
static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// `reqlife probe`: the probes on this host, served to a `run --server-probes-from` elsewhere,
/// until SIGINT or SIGTERM. Without a token (`--token-file`, or REQLIFE_PROBE_TOKEN) it
/// listens on a loopback address only.
pub(super) fn agent(args: &crate::cli::probes::ProbeAgentArgs) -> Result<i32, Failure> {
    use probe::remote::TOKEN_ENV;
    let token = probe::remote::token_from(
        args.token_file.as_deref(),
        "--token-file",
        std::env::var_os(TOKEN_ENV),
    )?;
    if token.is_none() && !args.listen.ip().is_loopback() {
        return Err(Failure::Usage(format!(
            "--listen {}: not a loopback address, and no token: give the agent one (--token-file \
             FILE, or {TOKEN_ENV}) for `run --server-probes-token-file`, or listen on 127.0.0.1",
            args.listen
        )));
    }
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
        "reqlife probe: {} (pid {}) on port {}; serving http://{}/ for `run --server-probes-from`, {} (Ctrl-C to stop)",
        prepared.server.name,
        pids.join(", "),
        args.port,
        listener.local_addr().unwrap_or(args.listen),
        if token.is_some() { "to those with its token" } else { "without a token (this host only)" }
    );
    let agent = probe::agent::Agent {
        attach: Box::new(move || prepared.start()),
        token,
        limits: probe::agent::Limits::default(),
        ring: args.ring as usize,
        say: Box::new(|line| eprintln!("reqlife probe: {line}")),
    };
    probe::agent::serve(listener, agent, &STOP)?;
    Ok(crate::util::exit::EXIT_OK)
}
