//! `reqlife run`: plans (one, or one per level of a sweep) → workers → measurements →
//! RunRecord → report. One control runtime watches the signals for the whole run, so Ctrl-C
//! stops the current level (and the sweep) and what was measured is still reported.

use super::control::{Control, Executed};
use super::failure::Failure;
use super::{
    files, usage_error, EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_HTTP_ERRORS, EXIT_OK, EXIT_SIGINT,
    EXIT_SIGTERM,
};
use crate::cli::{plan, workload, RunArgs};
use crate::engine::SessionConfig;
use crate::model::StopReason;
use crate::plan::RunPlan;
use crate::recorder::record::{Ending, RunRecord};
use crate::report;

/// `reqlife run`.
/// The plans of a run against the embedded target trust its self-signed certificate (it has
/// one when it serves HTTP/3: `run --http3` without a URL).
fn trusting(
    mut plans: Vec<RunPlan>,
    embedded: Option<&crate::server::RunningServer>,
) -> Vec<RunPlan> {
    let pem = embedded.and_then(|s| s.cert_pem()).unwrap_or_default();
    let certs: Vec<Vec<u8>> = rustls_pemfile::certs(&mut pem.as_bytes())
        .flatten()
        .map(|c| c.to_vec())
        .collect();
    for p in &mut plans {
        p.tls.ca_certs.extend(certs.iter().cloned());
    }
    plans
}

pub fn run(args: &RunArgs, command_line: Vec<String>) -> i32 {
    // The run's identity, from its start: `reqlife merge` refuses a record given twice.
    let run_id = crate::recorder::record::new_run_id();
    // `-`: one output on stdout at most; the report then goes to stderr.
    let to_stderr = match files::stdout_taken(&[
        ("-o", args.output.as_deref()),
        ("--html", args.html.as_deref()),
        ("--hdr-log", args.hdr_log.as_deref()),
    ]) {
        Ok(t) => t,
        Err(e) => return usage_error(e),
    };
    // No URL: the embedded target, in-process, on a free loopback port (a target list names
    // its own server).
    let (embedded, url) = if args.targets.is_some() && args.url.is_none() {
        (None, None)
    } else {
        match super::control::target(args.url.as_deref(), "/", &args.kv, args.http3) {
            Ok((server, url)) => (server, Some(url)),
            Err(e) => return e.report(),
        }
    };
    let built = plans(args, url.as_deref());
    // A page that cannot be written is known now, not after the run.
    if let Some(path) = &args.html {
        if let Err(e) = report::html::check_writable(path) {
            return usage_error(e);
        }
    }
    let mut plans = match built.map(|p| trusting(p, embedded.as_ref())) {
        Ok(p) => p,
        Err(e) => return e.report(),
    };
    let phased = plans.iter().any(|p| p.phase.is_some());
    if args.abort_on_fail && args.view.thresholds.is_empty() {
        return usage_error("--abort-on-fail stops on a failed --threshold: give at least one");
    }
    let repeat = args.repeat as usize;
    match (repeat, plans.len()) {
        (0, _) => return usage_error("--repeat must be at least 1"),
        (r, n) if r > 1 && n > 1 => return usage_error(
            "--repeat and a sweep (-c a,b,... or -R a,b,...) conflict: repeat one level at a time",
        ),
        (r, _) if r > 1 => plans = vec![plans[0].clone(); r],
        _ => {}
    }
    let label = |i: usize, plan: &RunPlan| {
        if repeat > 1 {
            format!("run {}", i + 1)
        } else {
            level_label(plan)
        }
    };
    let configs = match plans
        .iter()
        .map(SessionConfig::new)
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    // A low `ulimit -n` is raised, or refused now, not met by every connect failing.
    if let Err(code) = super::limits::check(&plans, embedded.is_some()) {
        return code;
    }
    let control = match Control::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    // --live and --metrics-addr: watchers of the collector's intervals.
    let target = url.as_deref().unwrap_or("the targets of the list");
    let title = format!("{} {target}", args.method);
    let mut control = match control.watchers(&args.watch, args.segment, args.quiet, title) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    if let Some(start) = args.start_at {
        if !control.wait_start(start, args.quiet) {
            eprintln!("reqlife: interrupted before the start: nothing was measured");
            return match control.signal() {
                libc::SIGTERM => EXIT_SIGTERM,
                _ => EXIT_SIGINT,
            };
        }
    }
    // The header as the run starts (the report repeats it at the end): on stderr, with the
    // progress bar, so that stdout keeps only the report (or the file given as `-`).
    if !args.quiet {
        if let Some(mut c) = RunRecord::planned_config(&plans, embedded.is_some()) {
            c.repeat = repeat as u64;
            if repeat > 1 || phased {
                c.sweep = None;
            }
            c.workload = workload_name(args);
            let labels: Vec<String> = if phased {
                plans.iter().enumerate().map(|(i, p)| label(i, p)).collect()
            } else {
                Vec::new()
            };
            let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
            eprint!("{}", report::text::start_header(&c, &labels));
        }
    }
    // The interval log is written as the run goes (one level only, as before).
    let mut log = match (&args.hdr_log, plans.len()) {
        (Some(path), 1) => match crate::recorder::hdrlog::create(path) {
            Ok(f) => Some(f),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_FAILURE;
            }
        },
        _ => None,
    };
    let mut levels = Vec::new();
    for (i, (plan, config)) in plans.iter().zip(configs).enumerate() {
        if i > 0 && !control.pause(args.pause) {
            break;
        }
        // (Not over the view, which shows the level itself.)
        if plans.len() > 1 && !args.quiet && !control.viewing() {
            let (what, label) = match repeat {
                1 => ("level", format!(": {}", label(i, plan))),
                _ => ("run", String::new()),
            };
            eprintln!("reqlife: {what} {}/{}{label}", i + 1, plans.len());
        }
        let abort = if args.abort_on_fail {
            &args.view.thresholds[..]
        } else {
            &[]
        };
        let lost = match control.execute_watched(
            plan,
            config,
            args.quiet,
            args.every,
            args.view.json || to_stderr,
            abort,
            log.take(),
        ) {
            Ok(o) => {
                // A lost threshold or the fail-fast rule ends a sweep too.
                let lost =
                    matches!(o.stop_reason, StopReason::ThresholdLost(_)) || o.fail_fast.is_some();
                levels.push(o);
                lost
            }
            Err(e) => {
                control.close_view();
                eprintln!("error: {e}");
                return EXIT_FAILURE;
            }
        };
        if control.signal() != 0 || lost {
            break;
        }
    }
    control.close_view(); // The terminal back before the report.
    let signal = control.signal();
    let ending = |o: &Executed| Ending {
        recorded: o.recorded,
        drained: o.drained,
        stop_reason: o.stop_reason.clone(),
        interrupted: signal != 0,
        start_time: o.start_time.clone(),
        command_line: command_line.clone(),
        embedded_target: embedded.is_some(),
    };
    let mut record = if plans.len() == 1 {
        let o = &levels[0];
        RunRecord::build(&plans[0], &o.measured, ending(o))
    } else {
        let parts: Vec<(String, &RunPlan, RunRecord)> = levels
            .iter()
            .zip(&plans)
            .enumerate()
            .map(|(i, (o, p))| (label(i, p), p, RunRecord::build(p, &o.measured, ending(o))))
            .collect();
        let mut all = ending(&levels[0]);
        all.recorded = levels.iter().map(|o| o.recorded).sum();
        if let Some(last) = levels.last() {
            all.stop_reason = last.stop_reason.clone();
        }
        let combine = if repeat > 1 {
            RunRecord::repeated
        } else {
            RunRecord::sweep
        };
        combine(
            &plans[0],
            &levels
                .iter()
                .map(|o| o.measured.clone())
                .collect::<Vec<_>>(),
            all,
            parts,
        )
    };
    record.run_id = Some(run_id);
    // --repeat: the runs asked for (an interrupted series keeps those that ran).
    record.config.repeat = repeat as u64;
    if phased {
        // A scenario's phases are levels of their own kind, not a sweep.
        record.config.sweep = None;
    }
    record.config.workload = workload_name(args);
    if let Some(server) = embedded {
        server.shutdown();
    }
    args.view.check(&mut record);
    let mut code = EXIT_OK;
    if let Some(e) = levels.iter().find_map(|o| o.log_error.as_ref()) {
        eprintln!("error: {e}");
        code = EXIT_FAILURE;
    }
    if let Some(path) = &args.output {
        let json = report::record_json(&record) + "\n";
        if let Err(e) = files::write_text(path, &json, "the record", args.quiet) {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    if let Some(path) = &args.html {
        let page = report::html::render(&record)
            .and_then(|p| files::write_text(path, &p, "the HTML report", args.quiet));
        if let Err(e) = page {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    files::report(&args.view.render(&record), to_stderr);
    if signal == 0 {
        if let Some(line) = levels.iter().find_map(|o| o.fail_fast.as_ref()) {
            eprintln!("error: {line}");
            code = EXIT_FAIL_FAST;
        } else if let Some((why, failed)) = failure(&record) {
            eprintln!("error: {why}");
            code = failed;
        } else if code == EXIT_OK {
            // The thresholds' verdict gives the exit code, as it gives the banner and the JSON.
            code = super::thresholds_code(&record);
        }
    }
    control.linger_metrics(args.watch.metrics_linger);
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ => code,
    }
}

/// What was sent when not one fixed request: `scenario FILE` or `targets FILE`.
/// The plans of the run at `url` (none: a target list's own): a workload's, or one per level;
/// a gRPC call's `--data` without `--proto-set` is encoded through the server's reflection,
/// asked here once.
fn plans(args: &RunArgs, url: Option<&str>) -> Result<Vec<RunPlan>, Failure> {
    let reflected = match url {
        Some(u) => super::reflect::resolve(args, u)?,
        None => std::borrow::Cow::Borrowed(args),
    };
    let args: &RunArgs = &reflected;
    if workload::is_workload(args) {
        // The user's URL is refused with --targets: pass it on to say so.
        let url = if args.targets.is_some() {
            args.url.as_deref()
        } else {
            url
        };
        workload::build(args, url)
    } else {
        plan::build_levels(args, url.unwrap_or("/"))
    }
    .map_err(|e| Failure::Usage(e.0))
}

fn workload_name(args: &RunArgs) -> Option<String> {
    match (&args.scenario, &args.targets) {
        (Some(p), _) => Some(format!("scenario {}", p.display())),
        (None, Some(p)) => Some(format!("targets {}", p.display())),
        (None, None) => None,
    }
}

/// The label of one level of a sweep: `100 connections` or `5000 req/s`.
fn level_label(plan: &RunPlan) -> String {
    if let Some(phase) = &plan.phase {
        return phase.clone();
    }
    match &plan.load {
        crate::model::LoadModel::Open {
            schedule: crate::model::Schedule::Constant { rate },
            ..
        } => format!("{rate} req/s"),
        _ => format!("{} connections", plan.connections()),
    }
}

/// Why a finished run failed as a whole, and its exit code: no request succeeded (1), or
/// every response was an HTTP error (4).
fn failure(record: &RunRecord) -> Option<(String, i32)> {
    let s = &record.summary;
    let url = &record.config.url;
    if s.requests.ok > 0 {
        let why = crate::recorder::record::http_errors_warning(record)?;
        return Some((
            format!("no request succeeded against {url}: {why}"),
            EXIT_HTTP_ERRORS,
        ));
    }
    if s.requests.errors == 0 {
        return Some((format!(
            "no response from {url} within the run ({:.2}s): the server may be stalled; try a longer -d or check the server",
            s.duration_s
        ), EXIT_FAILURE));
    }
    let (kind, n) = s.errors.iter().max_by_key(|(_, n)| **n)?;
    let first = record
        .first_errors
        .get(kind)
        .map(String::as_str)
        .unwrap_or("");
    Some((
        format!("no request succeeded against {url}: {n} {kind} errors (first: {first})"),
        EXIT_FAILURE,
    ))
}
