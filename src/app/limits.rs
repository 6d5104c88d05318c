//! The open-file limit (`ulimit -n`, RLIMIT_NOFILE) against what a run's connections need:
//! raised to the hard limit when that is enough, else the run is refused before it starts
//! (a low limit would otherwise fail every connect past it with "Too many open files").

use crate::plan::RunPlan;

/// File descriptors the process holds besides its connections: standard streams, each
/// runtime's epoll and wake-up descriptors, the signal pipe, the collector's spill file, the
/// output files, and room to spare.
pub const MARGIN: u64 = 64;
/// Descriptors per worker thread (its runtime's epoll, eventfd and timer).
pub const PER_THREAD: u64 = 4;

/// Open files `plans` need at most: each plan's connections (twice with the embedded target
/// in this process, which holds the other end), plus the margin.
pub fn needed(plans: &[RunPlan], embedded: bool) -> u64 {
    plans
        .iter()
        .map(|p| {
            let conns = p.local_connections() as u64 * if embedded { 2 } else { 1 };
            conns + MARGIN + PER_THREAD * p.threads as u64
        })
        .max()
        .unwrap_or(MARGIN)
}

/// Checks the open-file limit for `plans` before they start (raising it if need be, saying so
/// in one line), or the failure that refuses them (the fail-fast kind: exit 3, its line names
/// the fix).
pub(crate) fn check(plans: &[RunPlan], embedded: bool) -> Result<(), super::failure::Failure> {
    let connections = plans
        .iter()
        .map(|p| p.local_connections())
        .max()
        .unwrap_or(0);
    if let Some(note) = ensure_open_files(needed(plans, embedded), connections as u64)? {
        eprintln!("{note}");
    }
    Ok(())
}

/// Makes sure `needed` files may be open: `Ok(None)` when the soft limit is enough,
/// `Ok(Some(note))` when it was raised to the hard limit (the note says so), an error when
/// the hard limit is too low too (the fail-fast kind, exit 3: its line names the limit, the
/// need and the command).
pub(crate) fn ensure_open_files(
    needed: u64,
    connections: u64,
) -> Result<Option<String>, super::failure::Failure> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(None);
    }
    // rlim_t is u64 on Linux.
    let (soft, hard): (u64, u64) = (lim.rlim_cur, lim.rlim_max);
    let infinite = hard == libc::RLIM_INFINITY;
    if soft == libc::RLIM_INFINITY || soft >= needed {
        return Ok(None);
    }
    if infinite || hard >= needed {
        let raised = if infinite { needed } else { hard };
        let new = libc::rlimit {
            rlim_cur: raised,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            return Ok(Some(format!(
                "reqlife: raised the open-file limit (ulimit -n) from {soft} to {raised}: \
                 {connections} connections need about {needed}"
            )));
        }
    }
    Err(super::failure::Failure::FailFast(format!(
        "{connections} connections need about {needed} open files, but the limit (ulimit -n) is {soft} \
         (hard limit {hard}): raise it with `ulimit -n {needed}` (the hard limit too: as root, or in \
         /etc/security/limits.conf) or use fewer connections (-c)"
    )))
}
