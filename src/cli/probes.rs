//! The flags of the server's side measured by probes (`--server-probes`, `--server-pid`,
//! `--server-fn`, `--server-sample`, `--print-probe-script`), read into a
//! [`ProbeRequest`](crate::probe::ProbeRequest); what they need of the machine and of the
//! server is checked by [`crate::probe::prepare`], before the run.

use crate::probe::ProbeRequest;
use clap::Args;
use std::time::Duration;

/// The server's side from eBPF probes (Linux, root, bpftrace).
#[derive(Debug, Clone, Default, Args)]
pub struct ProbeArgs {
    /// Measure the server's side with eBPF probes (bpftrace, as root): per request, its time
    /// in the server's socket, the server's read to its write, and its write back to the
    /// client, for a server on this machine (found by the URL's port), beside the client's
    /// phases.
    #[arg(help_heading = "Server side", long = "server-probes")]
    pub server_probes: bool,

    /// The server's process(es), comma-separated [default: those listening on the URL's port].
    /// Implies --server-probes.
    #[arg(
        help_heading = "Server side",
        long = "server-pid",
        value_name = "PID",
        value_delimiter = ','
    )]
    pub server_pid: Vec<u32>,

    /// The server's functions in the order a request passes them, comma-separated: each
    /// transition timed on the thread that serves the request (NAME, NAME%return,
    /// /path/lib.so:NAME, usdt:PROVIDER:NAME; C++ and Rust names as the source spells them).
    /// Implies --server-probes.
    #[arg(help_heading = "Server side", long = "server-fn", value_name = "LIST")]
    pub server_fn: Option<String>,

    /// Probe one request in N (long runs: the probes' memory and work stay flat).
    #[arg(
        help_heading = "Server side",
        long = "server-sample",
        value_name = "N",
        default_value_t = 1
    )]
    pub server_sample: u64,

    /// Print the bpftrace script the probes would run, and exit.
    #[arg(help_heading = "Server side", long = "print-probe-script")]
    pub print_probe_script: bool,
}

impl ProbeArgs {
    /// Whether any probe flag was given.
    pub fn asked(&self) -> bool {
        self.server_probes
            || !self.server_pid.is_empty()
            || self.server_fn.is_some()
            || self.print_probe_script
            || self.server_sample != 1
    }

    /// What the probes are asked, for a run of `interval`.
    pub fn request(&self, interval: Duration) -> ProbeRequest {
        ProbeRequest {
            pids: self.server_pid.clone(),
            functions: self.server_fn.clone(),
            sample: self.server_sample,
            interval,
        }
    }
}
