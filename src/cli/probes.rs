//! The flags of the server's side measured by probes (`--server-probes`, `--server-pid`,
//! `--server-fn`, `--server-sample`, `--print-probe-script`), read into a
//! [`ProbePlan`] with the checks of how they fit the run; what they need of the machine and of
//! the server is checked by [`crate::probe::prepare`], before the run.

use super::error::{err, PlanError};
use crate::plan::RunPlan;
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

    /// Probe one request in N (long runs: the probes' memory and work stay flat) [default:
    /// 1]. Implies --server-probes.
    #[arg(help_heading = "Server side", long = "server-sample", value_name = "N")]
    pub server_sample: Option<u64>,

    /// The server's side from `reqlife probe` on the server's host (its --listen address,
    /// http://HOST:PORT): the clocks' offset measured, the phases pulled at the end.
    #[arg(
        help_heading = "Server side",
        long = "server-probes-from",
        value_name = "URL"
    )]
    pub server_probes_from: Option<String>,

    /// The file that holds the token of the agent's --token-file, sent with each request to
    /// it [default: the environment's REQLIFE_PROBE_TOKEN]. A file or the environment, never
    /// a flag's value: the command line is anyone's to read (ps).
    #[arg(
        help_heading = "Server side",
        long = "server-probes-token-file",
        value_name = "FILE"
    )]
    pub server_probes_token_file: Option<std::path::PathBuf>,

    /// Follow half of the client's connections (picked by their port, in the kernel) and
    /// leave the others untraced at the same load: the report gives the latency difference
    /// of the two halves with its 95% interval, what the probes cost the requests they
    /// measure. Implies --server-probes.
    #[arg(help_heading = "Server side", long = "server-probes-cost")]
    pub server_probes_cost: bool,

    /// The port of a service the server calls while it serves a request (a proxy's upstream,
    /// an application's database, on this host or another): each call timed per request, its
    /// write there to its reply's arrival, as the `upstream` phase, inside the server's read
    /// to its write. Implies --server-probes.
    #[arg(
        help_heading = "Server side",
        long = "server-upstream",
        value_name = "PORT"
    )]
    pub server_upstream: Option<u16>,

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
            || self.server_sample.is_some()
            || self.server_probes_from.is_some()
            || self.server_probes_token_file.is_some()
            || self.server_probes_cost
            || self.server_upstream.is_some()
    }

    /// The probes these flags ask for, checked against the run's `plans` (one level, not
    /// against the embedded target, not repeated, not over QUIC); `None` when none are asked
    /// for. What they need of the machine and of the server is `app`'s to check.
    pub fn plan(
        &self,
        plans: &[RunPlan],
        embedded: bool,
        repeat: usize,
    ) -> Result<Option<ProbePlan>, PlanError> {
        if !self.asked() {
            return Ok(None);
        }
        let usage = |line: &str| err(format!("--server-probes: {line}"));
        if self.server_probes_token_file.is_some() && self.server_probes_from.is_none() {
            return err(
                "--server-probes-token-file is the token of an agent: give it with \
                 --server-probes-from URL",
            );
        }
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
        if plan.protocol.settings().over_quic() {
            return usage(
                "the probes follow the server's TCP sockets: HTTP/3 (QUIC, over UDP) is not probed",
            );
        }
        if let Some(url) = &self.server_probes_from {
            return self.there(url).map(Some);
        }
        if self.server_probes_cost && plan.connections() < 2 {
            return usage(HALVES);
        }
        self.check_upstream(plan.target.port)?;
        if !plan.target.addr.ip().is_loopback() && self.server_pid.is_empty() {
            return usage(&format!(
                "the probes see a server on this machine; {} is not a loopback address (give \
                 --server-pid if the server runs here under another address)",
                plan.target.addr.ip()
            ));
        }
        Ok(Some(ProbePlan::Here {
            request: ProbeRequest {
                pids: self.server_pid.clone(),
                functions: self.server_fn.clone(),
                sample: self.server_sample.unwrap_or(1),
                interval: plan.interval,
                agent: false,
                split: self.server_probes_cost,
                upstream: self.server_upstream,
            },
            port: plan.target.port,
            print_script: self.print_probe_script,
        }))
    }
}

impl ProbeArgs {
    /// `--server-probes-from URL`: the probes of the agent there, with the flags it takes.
    fn there(&self, url: &str) -> Result<ProbePlan, PlanError> {
        let usage = |line: &str| err(format!("--server-probes: {line}"));
        if !self.server_pid.is_empty()
            || self.server_fn.is_some()
            || self.server_sample.is_some()
            || self.server_probes_cost
            || self.server_upstream.is_some()
        {
            return usage(
                "with --server-probes-from, give --server-pid, --server-fn and --server-sample \
                 to `reqlife probe` on the server's host (--server-probes-cost and \
                 --server-upstream: the probes follow the client's connections here only)",
            );
        }
        if self.print_probe_script {
            return usage(
                "the script of --server-probes-from is the agent's: drop --print-probe-script",
            );
        }
        Ok(ProbePlan::There {
            url: url.to_string(),
            token_file: self.server_probes_token_file.clone(),
        })
    }

    /// `--server-upstream`: a port, not the server's own (`port`).
    fn check_upstream(&self, port: u16) -> Result<(), PlanError> {
        match self.server_upstream {
            Some(0) => {
                err("--server-upstream: 0 is not a port: give the port the server calls (1-65535)")
            }
            Some(p) if p == port => err(format!(
                "--server-upstream: {p} is the server's own port (the URL's): give the port of \
                 the service the server calls"
            )),
            _ => Ok(()),
        }
    }
}

/// `--server-probes-cost` with one connection.
const HALVES: &str = "--server-probes-cost compares the requests of the connections it follows \
                      with those of the others: give -c 2 or more (16 or more for halves of \
                      about one size)";

/// The probes of a run, checked: here, or on the server's host.
#[derive(Debug, Clone)]
pub enum ProbePlan {
    /// On this machine: what they are asked, the server's port, and whether the script is
    /// only printed (`--print-probe-script`).
    Here {
        /// What the probes are asked.
        request: ProbeRequest,
        /// The port the server's requests arrive on.
        port: u16,
        /// `--print-probe-script`.
        print_script: bool,
    },
    /// `--server-probes-from`: the agent of `reqlife probe` at this URL.
    There {
        /// The agent's URL.
        url: String,
        /// `--server-probes-token-file`: where its token is (read when the run starts).
        token_file: Option<std::path::PathBuf>,
    },
}

/// `reqlife probe`: the server's side measured on the server's host, for a `run` elsewhere
/// (`--server-probes-from`).
#[derive(Debug, Clone, Args)]
pub struct ProbeAgentArgs {
    /// Serve the probes' figures on this address (HOST:PORT) for `run --server-probes-from`;
    /// an address other than loopback needs a token (--token-file).
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

    /// The file that holds the token every request must carry (`run
    /// --server-probes-token-file` sends it) [default: the environment's REQLIFE_PROBE_TOKEN].
    /// A file or the environment, never a flag's value: the command line is anyone's to read
    /// (ps). Without a token the agent listens on a loopback address only.
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<std::path::PathBuf>,

    /// The kernel's events kept for `run` to ask for those of the requests it keeps or logs:
    /// the last EVENTS of them, 1 to 100000000 (64 bytes each). Give more when the
    /// report says kept requests' events had left the ring.
    #[arg(long = "ring", value_name = "EVENTS", default_value_t = 500_000,
          value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub ring: u64,
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
            split: false,
            upstream: None,
        }
    }
}
