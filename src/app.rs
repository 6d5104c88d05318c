//! The subcommands end to end: `run` (plan → workers → record → report), `serve` and
//! `report`, and the mapping of outcomes to exit codes: 0 done, 1 the run failed (no request
//! succeeded, or the record could not be written), 2 bad input, 130/143 interrupted by
//! SIGINT/SIGTERM (after the report and the record were still written).

use crate::cli::{plan, Cli, Command, ReportArgs, RunArgs, ServeArgs};
use crate::engine::SessionConfig;
use crate::load::{self, Progress, StopSignal};
use crate::model::{RunPlan, StopRule};
use crate::recorder::record::{Ending, RunRecord, SCHEMA_VERSION};
use crate::report::{self, text::TextOptions};
use crate::server::{self, ServerConfig, ServerTls};
use clap::Parser;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Exit code: success.
pub const EXIT_OK: i32 = 0;
/// Exit code: the run itself failed.
pub const EXIT_FAILURE: i32 = 1;
/// Exit code: bad input (flags, URL, files).
pub const EXIT_USAGE: i32 = 2;
/// Exit code after SIGINT (128 + 2).
pub const EXIT_SIGINT: i32 = 130;
/// Exit code after SIGTERM (128 + 15).
pub const EXIT_SIGTERM: i32 = 143;

/// Runs the command line `args` (the program name first) and returns the exit code.
pub fn main_with(args: Vec<std::ffi::OsString>) -> i32 {
    let cli = match Cli::try_parse_from(args.clone()) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let command_line = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match cli.command {
        Command::Run(a) => run(&a, command_line),
        Command::Serve(a) => serve(&a),
        Command::Report(a) => report(&a),
    }
}

fn usage_error(msg: impl std::fmt::Display) -> i32 {
    eprintln!("error: {msg}");
    EXIT_USAGE
}

/// `reqlife run`.
fn run(args: &RunArgs, command_line: Vec<String>) -> i32 {
    // No URL: the embedded target, in-process, on a free loopback port.
    let embedded = match &args.url {
        Some(_) => None,
        None => match server::spawn(ServerConfig {
            addr: "127.0.0.1:0".parse().expect("a valid address"),
            tls: ServerTls::None,
        }) {
            Ok(s) => Some(s),
            Err(e) => {
                eprintln!("error: cannot start the embedded target: {e}");
                return EXIT_FAILURE;
            }
        },
    };
    let url = match (&args.url, &embedded) {
        (Some(u), _) => u.clone(),
        (None, Some(s)) => s.url("/"),
        (None, None) => unreachable!("the embedded target is started without a URL"),
    };
    let plan = match plan::build(args, &url) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    let config = match SessionConfig::http1(&plan) {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let outcome = match execute(&plan, config, args.quiet) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let record = RunRecord::build(
        &plan,
        &outcome.measured,
        Ending {
            recorded: outcome.recorded,
            stop_reason: outcome.stop_reason.clone(),
            interrupted: outcome.signal != 0,
            start_time: outcome.start_time,
            command_line,
            embedded_target: embedded.is_some(),
        },
    );
    if let Some(server) = embedded {
        server.shutdown();
    }
    let mut code = EXIT_OK;
    if let Some(path) = &args.output {
        if let Err(e) = std::fs::write(path, report::record_json(&record) + "\n") {
            eprintln!(
                "error: cannot write the record to '{}': {e}",
                path.display()
            );
            code = EXIT_FAILURE;
        }
    }
    let rendered = if args.json {
        report::summary_json(&record) + "\n"
    } else {
        report::text::render(
            &record,
            TextOptions {
                latency: args.latency,
            },
        )
    };
    out(&rendered);
    if outcome.signal == 0 {
        if let Some(why) = failure(&record) {
            eprintln!("error: {why}");
            code = EXIT_FAILURE;
        }
    }
    match outcome.signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ => code,
    }
}

/// Why a finished run failed as a whole: no request succeeded.
fn failure(record: &RunRecord) -> Option<String> {
    let s = &record.summary;
    if s.requests.ok > 0 {
        return None;
    }
    let url = &record.config.url;
    if s.requests.errors == 0 {
        return Some(format!(
            "no response from {url} within the run ({:.2}s): the server may be stalled; try a longer -d or check the server",
            s.duration_s
        ));
    }
    let (kind, n) = s.errors.iter().max_by_key(|(_, n)| **n)?;
    let first = record
        .first_errors
        .get(kind)
        .map(String::as_str)
        .unwrap_or("");
    Some(format!(
        "no request succeeded against {url}: {n} {kind} errors (first: {first})"
    ))
}

/// What a run gave, before it becomes a record.
struct Executed {
    measured: crate::recorder::Measured,
    recorded: Duration,
    stop_reason: String,
    /// The signal that interrupted the run, or 0.
    signal: i32,
    start_time: String,
}

/// Runs the workers of `plan` until the stop rule, or a signal, ends the run.
fn execute(plan: &RunPlan, config: SessionConfig, quiet: bool) -> Result<Executed, String> {
    let control = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("reqlife-control")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the control runtime: {e}"))?;
    let stop = StopSignal::default();
    let signal = Arc::new(AtomicI32::new(0));
    control.block_on(watch_signals(stop.clone(), signal.clone()))?;
    let progress = Progress::new(plan.threads);
    let start_time = now_rfc3339();
    let mut workers = load::start(plan, config, stop.clone(), progress.clone())
        .map_err(|e| format!("cannot start worker threads: {e}"))?;
    let record_from = workers.record_from;
    let deadline = match plan.stop {
        StopRule::Duration(d) => Some(record_from + d),
        StopRule::Requests(_) => None,
    };
    let bar = progress_bar(plan, quiet);
    let ended = control.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_millis(200));
        loop {
            tokio::select! {
                _ = workers.all_finished() => break Instant::now(),
                _ = stop.stopped() => break Instant::now(),
                _ = sleep_until(deadline) => {
                    stop.stop();
                    break deadline.unwrap_or_else(Instant::now);
                }
                _ = tick.tick() => update_bar(&bar, &progress, plan.stop, record_from),
            }
        }
    });
    stop.stop();
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let measured = workers.join();
    let signal = signal.load(Ordering::SeqCst);
    let recorded = ended.saturating_duration_since(record_from);
    let recorded = match deadline {
        Some(d) => recorded.min(d.saturating_duration_since(record_from)),
        None => recorded,
    };
    let stop_reason = match (signal, plan.stop) {
        (libc::SIGINT, _) => "interrupted (SIGINT)".to_string(),
        (libc::SIGTERM, _) => "interrupted (SIGTERM)".to_string(),
        (_, StopRule::Duration(_)) => "duration".to_string(),
        (_, StopRule::Requests(_)) => "requests".to_string(),
    };
    // Keep the control runtime (and its signal watcher) alive until here: a second signal
    // while the workers wind down exits at once.
    drop(control);
    Ok(Executed {
        measured,
        recorded,
        stop_reason,
        signal,
        start_time,
    })
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

/// Installs SIGINT/SIGTERM handlers: the first stops the run (its number is kept in
/// `signal`), a second one exits at once.
async fn watch_signals(stop: StopSignal, signal: Arc<AtomicI32>) -> Result<(), String> {
    use tokio::signal::unix::{signal as unix_signal, SignalKind};
    let mut int =
        unix_signal(SignalKind::interrupt()).map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    let mut term =
        unix_signal(SignalKind::terminate()).map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    tokio::spawn(async move {
        loop {
            let got = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            if signal
                .compare_exchange(0, got, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                eprintln!("reqlife: second signal, exiting at once");
                std::process::exit(128 + got);
            }
            stop.stop();
        }
    });
    Ok(())
}

fn progress_bar(plan: &RunPlan, quiet: bool) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, template) = match plan.stop {
        StopRule::Duration(d) => (
            d.as_secs().max(1),
            "{elapsed_precise} [{wide_bar}] {pos}/{len}s {msg}",
        ),
        StopRule::Requests(n) => (n, "{elapsed_precise} [{wide_bar}] {pos}/{len} {msg}"),
    };
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_length(len);
    Some(bar)
}

fn update_bar(
    bar: &Option<indicatif::ProgressBar>,
    progress: &Progress,
    stop: StopRule,
    record_from: Instant,
) {
    let Some(bar) = bar else { return };
    let (requests, errors) = progress.totals();
    let elapsed = Instant::now().saturating_duration_since(record_from);
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        requests as f64 / secs
    } else {
        0.0
    };
    bar.set_position(match stop {
        StopRule::Duration(_) => elapsed.as_secs(),
        StopRule::Requests(_) => requests,
    });
    bar.set_message(format!("{rate:.0} req/s, {errors} errors"));
}

/// The wall-clock time now, RFC 3339.
fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `reqlife serve`.
fn serve(args: &ServeArgs) -> i32 {
    let tls = match (&args.cert, &args.key, args.tls) {
        (Some(cert), Some(key), _) => ServerTls::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        (_, _, true) => ServerTls::SelfSigned,
        _ => ServerTls::None,
    };
    let config = ServerConfig {
        addr: args.addr,
        tls,
    };
    match server::serve_until_signal(config, |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        // Not println!: a closed stdout (`| head -1`) must not end the server.
        out(&format!(
            "reqlife serve: listening on {scheme}://{addr}/ (Ctrl-C to stop)\n  routes: /  /delay/{{ms}}  /echo  /status/{{code}}  /bytes/{{n}}  /stall/{{ms}}\n"
        ));
    }) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("error: {e}");
            EXIT_USAGE
        }
    }
}

/// `reqlife report`.
fn report(args: &ReportArgs) -> i32 {
    let record = match load_record(&args.file) {
        Ok(r) => r,
        Err(e) => return usage_error(e),
    };
    let rendered = if args.json {
        report::summary_json(&record) + "\n"
    } else {
        report::text::render(
            &record,
            TextOptions {
                latency: args.latency,
            },
        )
    };
    out(&rendered);
    EXIT_OK
}

/// Writes to stdout, ignoring a closed pipe (print! would panic on it).
fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Reads a RunRecord written by `run -o`.
pub fn load_record(path: &std::path::Path) -> Result<RunRecord, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("'{}' is not JSON: {e}", path.display()))?;
    match value.get("schema_version").and_then(|v| v.as_u64()) {
        None => {
            return Err(format!(
                "'{}' is not a reqlife RunRecord: it has no schema_version (write one with `reqlife run -o FILE`)",
                path.display()
            ))
        }
        Some(v) if v > SCHEMA_VERSION as u64 => {
            return Err(format!(
                "'{}' has schema_version {v}, newer than this reqlife reads ({SCHEMA_VERSION}): upgrade reqlife",
                path.display()
            ))
        }
        Some(_) => {}
    }
    serde_json::from_value(value)
        .map_err(|e| format!("'{}' is not a valid RunRecord: {e}", path.display()))
}
