//! The longer texts of `--help`: how verdicts are reached, what exit codes mean; and
//! `--version`, which says where reqlife runs.

/// `reqlife -V`: the version, and the one system reqlife runs on.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (Linux only)");

/// `reqlife --version`: [`VERSION`], then what Linux gives that other systems do not (the
/// `compile_error!` of `src/lib.rs` names the same).
pub(crate) const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (Linux only)\n",
    "It needs Linux: timerfd and PR_SET_TIMERSLACK (the open-loop pacer), SO_TIMESTAMPNS (the\n",
    "kernel's arrival stamps), eBPF and /proc (the server-side probes). On macOS or Windows, run\n",
    "it in a Linux VM or container."
);

/// The end of `reqlife run --help`: what its exit codes mean.
pub(crate) const RUN_EXIT_CODES: &str = "Exit codes:
  0    done
  1    no request succeeded (errors only), or the record could not be written
  2    bad input: a flag, the URL, a file, a host that does not resolve
  3    stopped early: every connection failed the same way before any request succeeded
       (refused, untrusted certificate, TLS mismatch, no h2 in ALPN, no HTTP/2 on an h2c
       port), or ulimit -n is too low
       to start; the error line names the fix
  4    responses came back, but every one was an HTTP error (no 2xx or 3xx)
  5    most of the run failed: over half of the requests, or the server stopped
       answering for over half of the window (killed mid-run); the error line says which
  6    --strict, and the load was not valid (the report's top line names the checks)
  99   a --threshold failed (outranks 5 and 6)
  130, 143  interrupted by SIGINT, SIGTERM (the report and the record are still written)";

/// The end of `reqlife serve --help`: the embedded target's routes, from the router's own list,
/// their parameters in capitals as clap writes values (clap would take `{n}` for a line break).
pub(crate) fn serve_routes() -> String {
    let routes: Vec<String> = crate::server::routes::ROUTES
        .iter()
        .map(|r| {
            let mut inside = false;
            r.chars()
                .map(|c| {
                    inside = (inside || c == '{') && c != '}';
                    if inside {
                        c.to_ascii_uppercase()
                    } else {
                        c
                    }
                })
                .collect()
        })
        .collect();
    format!(
        "Routes (any method; a bad parameter is a 400 naming the form):\n  {}",
        routes.join("\n  ")
    )
}

/// `reqlife knee --help`: how a step is judged.
pub(crate) const KNEE_ABOUT: &str = "The highest open-loop rate that meets every SLO: an exponential search from a quarter of \
what a short closed-loop probe achieves, then bisection to --precision, one step per rate (--step long), the \
answer confirmed by a repeated step.

How a step is judged. It passes when every --slo holds and the achieved rate is at least 99% of the offered one, \
less the share still in flight at the step's end (mean latency / step, by Little's law). A failing step is blamed \
on the generator, not the server, only when a worker thread was saturated or when the generator's lateness \
explains every failure: each failed latency SLO would hold with the schedule lag at its quantile taken off (that \
lag over --max-lag), a rate shortfall is within the lag's share of the step. The lag after the step's start-up \
(its first fifth, at most 2 s) is read at the highest quantile the step has samples for, 10 beyond it: p99 needs \
1,000 samples, p90 100, p50 20, and under 20 it does not judge. A lagging generator cannot make a step look \
better (latencies count from the intended send times), so a step that passes passes; a step blamed on the \
generator runs once more before the search stops on a client limit.

A step whose verdict rests on an SLO whose 95% interval holds its limit (as the record gives it: the wider of \
order statistics and batch means over the step's intervals) is undecided: it runs again at its rate, up to \
--remeasure more times, and is judged on its runs together (their intervals' batches span them all) until that \
decides it; still undecided then, it is judged by the measured figures, and its row says so.";

/// `reqlife compare --help`: how a verdict is reached.
pub(crate) const COMPARE_ABOUT: &str = "Is B faster than A, or is it noise? Throughput and p50/p90/p99/p99.9 of the total, of each \
phase and server metric: A, B, the change B/A - 1, its 95% interval, its p adjusted for the many rows, the minimum \
detectable effect (MDE: the smallest change the row could show, 5% two-sided, 80% power) and a verdict (--detail: \
why a row has none).

How a verdict is reached. Across runs (both records made with `run --repeat N`, or `--run URL_A URL_B --rounds N` \
here), each run is one observation: a change is called only when the exact rank test across runs (a permutation \
test of the rank-sum, ties included) gives p < 0.05 once adjusted for the many rows, and the 95% bootstrap \
interval of the ratio of the medians lies wholly beyond the noise band (--noise). Anything else is \"no change\", \
with the reason. An exact test of 3 runs against 3 cannot give p below 0.1 whatever the data: such rows say \"too \
few runs\" (4+ per side can show a change) instead of a verdict. Single runs are compared by resampling blocks of \
their intervals, widened by each run's own drift between its quarters (at least its median's: the machine's): a \
change is called when its p of lying \
beyond the noise band, adjusted for the many rows, is below 0.05; but one run cannot see the run-to-run variance \
of a shared machine, so the output says so and gives the MDE. The p-values of all rows are adjusted together by \
Benjamini-Hochberg, so that a run compared with a rerun of itself sees no more than one row in 20 called changed; \
quantiles are interpolated between tied values (mid-quantiles), so that values rounded to 100 ns do not jump. \
`--run URL_A URL_B --rounds N` runs A and B in turn (AB, BA, AB, ...: a drift of the machine or the target in time \
falls on both sides alike) and compares them across rounds; the flags of each run follow `--` (e.g. `-- -d 2s -c 8`).";
