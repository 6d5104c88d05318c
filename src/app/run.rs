//! `reqlife run`: plans (one, or one per level of a sweep) → workers → measurements →
//! RunRecord → report. One control runtime watches the signals for the whole run, so Ctrl-C
//! stops the current level (and the sweep) and what was measured is still reported.

use super::{now_rfc3339, out, usage_error, EXIT_FAILURE, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM};
use crate::cli::{plan, RunArgs};
use crate::engine::SessionConfig;
use crate::load::{self, Progress, StopSignal};
use crate::model::{RunPlan, StopRule};
use crate::recorder::record::{Ending, RunRecord};
use crate::report::{self, live::LivePrinter};
use crate::server::{self, ServerConfig, ServerTls};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `reqlife run`.
pub fn run(args: &RunArgs, command_line: Vec<String>) -> i32 {
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
    // A page that cannot be written is known now, not after the run.
    if let Some(path) = &args.html {
        if let Err(e) = report::html::check_writable(path) {
            return usage_error(e);
        }
    }
    let plans = match plan::build_levels(args, &url) {
        Ok(p) => p,
        Err(e) => return usage_error(e),
    };
    let configs = match plans
        .iter()
        .map(SessionConfig::new)
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    let control = match Control::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let mut levels = Vec::new();
    for (i, (plan, config)) in plans.iter().zip(configs).enumerate() {
        if i > 0 && !control.pause(args.pause) {
            break;
        }
        if plans.len() > 1 && !args.quiet {
            eprintln!(
                "reqlife: level {}/{}: {}",
                i + 1,
                plans.len(),
                level_label(plan)
            );
        }
        match control.execute(plan, config, args.quiet, args.every, args.view.json) {
            Ok(o) => levels.push(o),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_FAILURE;
            }
        }
        if control.signal() != 0 {
            break;
        }
    }
    let signal = control.signal();
    let ending = |o: &Executed| Ending {
        recorded: o.recorded,
        stop_reason: o.stop_reason.clone(),
        interrupted: signal != 0,
        start_time: o.start_time.clone(),
        command_line: command_line.clone(),
        embedded_target: embedded.is_some(),
    };
    let record = if plans.len() == 1 {
        let o = &levels[0];
        RunRecord::build(&plans[0], &o.measured, ending(o))
    } else {
        let parts: Vec<(String, &RunPlan, RunRecord)> = levels
            .iter()
            .zip(&plans)
            .map(|(o, p)| {
                (
                    level_label(p),
                    p,
                    RunRecord::build(p, &o.measured, ending(o)),
                )
            })
            .collect();
        let mut all = ending(&levels[0]);
        all.recorded = levels.iter().map(|o| o.recorded).sum();
        all.stop_reason = levels
            .last()
            .map(|o| o.stop_reason.clone())
            .unwrap_or_default();
        RunRecord::sweep(
            &plans[0],
            &levels
                .iter()
                .map(|o| o.measured.clone())
                .collect::<Vec<_>>(),
            all,
            parts,
        )
    };
    if let Some(server) = embedded {
        server.shutdown();
    }
    let mut code = EXIT_OK;
    if let (Some(path), [o]) = (&args.hdr_log, &levels[..]) {
        if let Err(e) = report::hdrlog::write(path, &o.measured, plans[0].interval, o.start_wall) {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    if let Some(path) = &args.output {
        if let Err(e) = std::fs::write(path, report::record_json(&record) + "\n") {
            eprintln!(
                "error: cannot write the record to '{}': {e}",
                path.display()
            );
            code = EXIT_FAILURE;
        }
    }
    if let Some(path) = &args.html {
        if let Err(e) = report::html::write(&record, path) {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    out(&args.view.render(&record));
    if signal == 0 {
        if let Some(why) = failure(&record) {
            eprintln!("error: {why}");
            code = EXIT_FAILURE;
        }
    }
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ => code,
    }
}

/// The label of one level of a sweep: `100 connections` or `5000 req/s`.
fn level_label(plan: &RunPlan) -> String {
    match &plan.load {
        crate::model::LoadModel::Open {
            schedule: crate::model::Schedule::Constant { rate },
            ..
        } => format!("{rate} req/s"),
        _ => format!("{} connections", plan.connections()),
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
    /// Wall-clock time at which recording started.
    start_wall: std::time::SystemTime,
    recorded: Duration,
    stop_reason: String,
    start_time: String,
}

/// The control thread of a run: its runtime, and the signal watcher that interrupts it.
struct Control {
    runtime: tokio::runtime::Runtime,
    /// Stopped by the first SIGINT/SIGTERM.
    interrupt: StopSignal,
    signal: Arc<AtomicI32>,
}

impl Control {
    fn new() -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("reqlife-control")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the control runtime: {e}"))?;
        let interrupt = StopSignal::default();
        let signal = Arc::new(AtomicI32::new(0));
        runtime.block_on(watch_signals(interrupt.clone(), signal.clone()))?;
        Ok(Control {
            runtime,
            interrupt,
            signal,
        })
    }

    /// The signal that interrupted the run, or 0.
    fn signal(&self) -> i32 {
        self.signal.load(Ordering::SeqCst)
    }

    /// Waits `pause` between levels; false if interrupted.
    fn pause(&self, pause: Duration) -> bool {
        self.runtime.block_on(async {
            tokio::select! {
                _ = tokio::time::sleep(pause) => true,
                _ = self.interrupt.stopped() => false,
            }
        })
    }

    /// Runs the workers of `plan` until the stop rule, or a signal, ends the run.
    fn execute(
        &self,
        plan: &RunPlan,
        config: SessionConfig,
        quiet: bool,
        every: Option<Duration>,
        json: bool,
    ) -> Result<Executed, String> {
        let stop = StopSignal::default();
        let progress = Progress::new(plan.threads);
        let start_time = now_rfc3339();
        let start_wall = std::time::SystemTime::now() + plan.warmup;
        let (live_tx, mut live) = match every {
            Some(_) => {
                let (tx, rx) = std::sync::mpsc::channel();
                (
                    Some(tx),
                    Some(LivePrinter::new(rx, plan.interval, &plan.server_total)),
                )
            }
            None => (None, None),
        };
        let mut workers = load::start(plan, config, stop.clone(), progress.clone(), live_tx)
            .map_err(|e| format!("cannot start worker threads: {e}"))?;
        let record_from = workers.record_from;
        let deadline = match plan.stop {
            StopRule::Duration(d) => Some(record_from + d),
            StopRule::Requests(_) => None,
        };
        let bar = progress_bar(plan, quiet);
        let ended = self.runtime.block_on(async {
            let mut tick = tokio::time::interval(Duration::from_millis(200));
            loop {
                tokio::select! {
                    _ = workers.all_finished() => break Instant::now(),
                    _ = self.interrupt.stopped() => break Instant::now(),
                    _ = sleep_until(deadline) => break deadline.unwrap_or_else(Instant::now),
                    _ = tick.tick() => {
                        update_bar(&bar, &progress, plan.stop, record_from);
                        if let Some(live) = &mut live {
                            let elapsed = Instant::now().saturating_duration_since(record_from);
                            print_live(&bar, &live.lines(elapsed, false), json);
                        }
                    }
                }
            }
        });
        stop.stop();
        if let Some(bar) = &bar {
            bar.finish_and_clear();
        }
        let measured = workers.join();
        // Workers that end by themselves at the deadline may report a moment after it.
        let recorded = ended.saturating_duration_since(record_from);
        let recorded = match deadline {
            Some(d) => recorded.min(d.saturating_duration_since(record_from)),
            None => recorded,
        };
        if let Some(live) = &mut live {
            print_live(&None, &live.lines(recorded, true), json);
        }
        let signal = self.signal();
        let stop_reason = match (signal, plan.stop) {
            (libc::SIGINT, _) => "interrupted (SIGINT)".to_string(),
            (libc::SIGTERM, _) => "interrupted (SIGTERM)".to_string(),
            (_, StopRule::Duration(_)) => "duration".to_string(),
            (_, StopRule::Requests(_)) => "requests".to_string(),
        };
        Ok(Executed {
            measured,
            start_wall,
            recorded,
            stop_reason,
            start_time,
        })
    }
}

/// Prints `--every` lines: on stdout, or on stderr when stdout carries `--json`; above the
/// progress bar if there is one.
fn print_live(bar: &Option<indicatif::ProgressBar>, lines: &str, json: bool) {
    if lines.is_empty() {
        return;
    }
    let lines = lines.trim_end_matches('\n');
    match (bar, json) {
        (Some(bar), _) => bar.println(lines),
        (None, true) => eprintln!("{lines}"),
        (None, false) => out(&format!("{lines}\n")),
    }
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
