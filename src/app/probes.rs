//! `run --server-probes`: the checks of a run that probes its server (one level, a TCP target
//! on this machine), the script printed for `--print-probe-script`, and the probes' errors as
//! failures with their exit codes.

use super::Failure;
use crate::cli::RunArgs;
use crate::plan::RunPlan;
use crate::probe::{self, ProbeError};

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

/// The probes `args` ask for, checked against the run's `plans` and the machine, their script
/// written; `None` when none are asked for.
pub(super) fn prepare(
    args: &RunArgs,
    plans: &[RunPlan],
    embedded: bool,
    repeat: usize,
) -> Result<Option<probe::Prepared>, Failure> {
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
    Ok(Some(prepared))
}
