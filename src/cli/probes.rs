//! The flags of the server's side measured by probes (`--server-probes`, `--server-pid`,
//! `--server-fn`, `--server-sample`, `--print-probe-script`), read into a
//! [`crate::probe::ProbeRequest`]; what they need of the machine and of the
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

    /// The server's side from `reqlife probe` on the server's host (its --listen address,
    /// http://HOST:PORT): the clocks' offset measured, the phases pulled at the end.
    #[arg(
        help_heading = "Server side",
        long = "server-probes-from",
        value_name = "URL"
    )]
    pub server_probes_from: Option<String>,

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
            || self.server_probes_from.is_some()
    }

    /// What the probes are asked, for a run of `interval`.
    pub fn request(&self, interval: Duration) -> ProbeRequest {
        ProbeRequest {
            pids: self.server_pid.clone(),
            functions: self.server_fn.clone(),
            sample: self.server_sample,
            interval,
            agent: false,
        }
    }
}

/// `reqlife probe`: the server's side measured on the server's host, for a `run` elsewhere
/// (`--server-probes-from`).
#[derive(Debug, Clone, Args)]
pub struct ProbeAgentArgs {
    /// Serve the probes' figures on this address (HOST:PORT) for `run --server-probes-from`.
    #[arg(long = "listen", default_value = "127.0.0.1:9465")]
    pub listen: std::net::SocketAddr,

    /// The port the server's requests arrive on (its process found by it, unless --server-pid).
    #[arg(long = "port")]
    pub port: u16,

    /// The server's process(es), comma-separated [default: those listening on --port].
    #[arg(long = "server-pid", value_name = "PID", value_delimiter = ',')]
    pub server_pid: Vec<u32>,

    /// The server's functions in the order a request passes them (as `run --server-fn`).
    #[arg(long = "server-fn", value_name = "LIST")]
    pub server_fn: Option<String>,

    /// Probe one request in N.
    #[arg(long = "server-sample", value_name = "N", default_value_t = 1)]
    pub server_sample: u64,
}

impl ProbeAgentArgs {
    /// What the probes are asked.
    pub fn request(&self) -> ProbeRequest {
        ProbeRequest {
            pids: self.server_pid.clone(),
            functions: self.server_fn.clone(),
            sample: self.server_sample,
            interval: Duration::from_secs(1),
            agent: true,
        }
    }
}
