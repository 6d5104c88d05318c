//! `reqlife run -h`, the page a newcomer reads: the flags most runs need, one line each, under
//! the headings of `--help`, which keeps every flag with its whole text (ripgrep's `-h` and
//! `--help`). [`newcomer`] is applied to each of `run`'s flags: one named in [`SHORT`] gets that
//! line as its `-h` text (its doc comment stays its `--help` text); any other is hidden from
//! `-h` only. [`RUN_SHORT_END`] closes the page with the way to the rest.

use clap::Arg;

/// The flags of `run -h` (clap's ids: the fields' names), each with its one line: what most
/// runs need, in the order of `--help`. Each line fits beside its flag in 80 columns, clap's
/// `[default: …]` included (`tests/checks/help.rs` holds it to that at 80 and 100).
pub(crate) const SHORT: &[(&str, &str)] = &[
    // Target
    (
        "url",
        "The URL: http(s)://, tcp://, ws(s):// [default: the embedded target]",
    ),
    ("method", "HTTP method"),
    ("headers", "A request header, `Name: value` (repeatable)"),
    ("body", "Request body"),
    ("body_file", "Read the request body from a file"),
    (
        "scenario",
        "The requests of a TOML scenario (examples/kv.toml)",
    ),
    ("targets", "A target list, vegeta's format (- for stdin)"),
    // Load
    ("connections", "Connections (a list: a sweep)"),
    ("threads", "Worker threads [default: the number of cores]"),
    ("duration", "How long to send (e.g. 1m30s) [default: 10s]"),
    ("requests", "How many requests to send in all (e.g. 10k)"),
    ("rate", "Open loop: req/s (20k, 50/1s; a list: a sweep)"),
    ("warmup", "Sent at the start, not recorded"),
    // Protocol
    ("http2", "HTTP/2 (h2 by ALPN over TLS, h2c on http://)"),
    ("http3", "HTTP/3 over QUIC (https:// only)"),
    ("streams", "Streams per connection (HTTP/2, HTTP/3)"),
    ("timeout", "Per-request timeout"),
    ("no_keepalive", "A new connection for every request"),
    (
        "compressed",
        "Ask for compressed responses; time the decoding",
    ),
    ("insecure", "Do not verify the server's TLS certificate"),
    // gRPC
    ("grpc", "gRPC: unary calls to this method"),
    ("proto_set", "gRPC: the descriptor set of the method"),
    ("data", "gRPC: the request in JSON; ws://: the message"),
    // Output
    ("latency", "Print the full latency percentile spectrum"),
    ("json", "Print the summary as JSON on stdout"),
    ("output", "Write the full record, JSON (-: stdout)"),
    ("html", "Write the report as one HTML page (-: stdout)"),
    ("every", "Print a line per interval of this length"),
    ("quiet", "No progress bar and no header"),
    ("live", "A live terminal view while the run goes on"),
    // Analysis
    ("thresholds", "A bar to meet, e.g. 'p99<5ms' (repeatable)"),
    // Server side
    (
        "server_probes",
        "Probe the server's side with eBPF (bpftrace, root)",
    ),
];

/// The last line of `run -h` (`--help` ends with the exit codes instead).
pub(crate) const RUN_SHORT_END: &str =
    "Every flag, its details and the exit codes: reqlife run --help";

/// `run`'s flag `arg` as `-h` shows it: its line from [`SHORT`] (the whole text kept for
/// `--help`), or hidden from `-h` when it is not there.
pub(crate) fn newcomer(arg: Arg) -> Arg {
    match SHORT.iter().find(|(id, _)| arg.get_id() == *id) {
        Some((_, line)) => {
            let long = arg.get_long_help().or(arg.get_help()).cloned();
            let arg = arg.help(*line);
            match long {
                Some(long) => arg.long_help(long),
                None => arg,
            }
        }
        None => arg.hide_short_help(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag named for `run -h` is one of `run`'s (a renamed field would drop it from
    /// the page without a word).
    #[test]
    fn every_short_flag_is_one_of_runs() {
        let cli = crate::cli::Cli::command();
        let run = cli.find_subcommand("run").unwrap();
        for (id, _) in SHORT {
            assert!(
                run.get_arguments().any(|a| a.get_id() == *id),
                "{id} is not a flag of run"
            );
        }
    }
}
