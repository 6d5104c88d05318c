//! `reqlife knee URL --slo 'p99<=2ms'`: the highest open-loop rate that meets every SLO. An
//! optional closed-loop probe sets the start rate (a quarter of what the target answers flat
//! out); then each step runs the open loop at the rate the search asks for
//! ([`crate::analysis::knee::Search`]), for `--step`, with `--pause` between steps. One row per
//! step and the answer are printed; the record (`-o`) keeps every step's histograms as levels
//! and the search in `knee`.

use super::control::{run_step, run_step_measured, target, Control};
use super::{files, usage_error, EXIT_FAILURE, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM};
use crate::analysis::knee::{self, KneeResult, Search, Verdict};
use crate::cli::{plan, KneeArgs};
use crate::model::StopReason;
use crate::recorder::record::{Ending, RunRecord};
use crate::report;
use std::time::Duration;

/// `reqlife knee`.
pub fn knee(args: &KneeArgs, command_line: Vec<String>) -> i32 {
    let run_id = crate::recorder::record::new_run_id();
    let run = &args.run;
    let given: Vec<&str> = [
        (!run.rate.is_empty(), "-R/--rate"),
        (run.duration.is_some(), "-d/--duration (use --step)"),
        (run.requests.is_some(), "-n/--requests"),
        (run.stages.is_some(), "--stages"),
        (run.burst.is_some(), "--burst"),
        (run.repeat > 1, "--repeat"),
        (run.connections.len() > 1, "a sweep of -c"),
        (run.scenario.is_some(), "--scenario"),
        (run.targets.is_some(), "--targets"),
        // Hidden from `knee --help` too (cli::KneeArgs), as are the ones above.
        (run.bursts.is_some(), "--bursts"),
        (
            run.burst_interval != Duration::from_millis(10),
            "--burst-interval",
        ),
        (run.start_at.is_some(), "--start-at"),
        (
            run.abort_on_fail,
            "--abort-on-fail (the SLOs decide each step)",
        ),
        (run.hdr_log.is_some(), "--hdr-log"),
        (run.every.is_some(), "--every"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, f)| *f)
    .collect();
    if !given.is_empty() {
        return usage_error(format!(
            "{} conflict{} with knee: it chooses the rate and the length of each step itself, and takes only the flags `reqlife knee --help` lists",
            given.join(", "),
            if given.len() == 1 { "s" } else { "" }
        ));
    }
    let to_stderr = match files::stdout_taken(&[
        ("-o", run.output.as_deref()),
        ("--html", run.html.as_deref()),
    ]) {
        Ok(t) => t,
        Err(e) => return usage_error(e),
    };
    if args.slos.is_empty() {
        return usage_error("knee needs at least one --slo (e.g. --slo 'p99<=2ms')");
    }
    if !(args.precision > 0.0 && args.precision < 50.0) {
        return usage_error("--precision must be a percentage above 0 and below 50 (e.g. 5)");
    }
    if args.step < Duration::from_millis(200) {
        return usage_error("--step must be at least 200ms (e.g. 20s)");
    }
    let (embedded, url) = match target(run.url.as_deref(), "/", &run.kv, false) {
        Ok(t) => t,
        Err(e) => return e.report(),
    };
    // Every flag checked once before the first step: a bad one is found now.
    let mut probe_args = run.clone();
    probe_args.duration = Some(args.step.min(Duration::from_secs(3)));
    match plan::build(&probe_args, &url) {
        Err(e) => return usage_error(e),
        // Every step has the same connections: a low `ulimit -n` is raised or refused now.
        Ok(p) => {
            if let Err(code) = super::limits::check(&[p], embedded.is_some()) {
                return code;
            }
        }
    }
    if let Some(path) = &run.html {
        if let Err(e) = report::html::check_writable(path) {
            return usage_error(e);
        }
    }
    let control = match Control::new() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return EXIT_FAILURE;
        }
    };
    let say = |msg: String| {
        if !run.quiet {
            eprintln!("reqlife knee: {msg}");
        }
    };
    let start = match args.start_rate {
        Some(r) => r,
        None => match run_step(
            &control,
            &probe_args,
            &url,
            &command_line,
            embedded.is_some(),
        ) {
            Ok(r) => {
                let flat_out = r.summary.throughput_rps;
                say(format!(
                    "probe: {flat_out:.0} req/s in a closed loop of {} connections; starting at a quarter",
                    r.config.connections
                ));
                (flat_out / 4.0).round().max(1.0)
            }
            // Every connection of the probe failed the same way: the fix, exit 3.
            Err(e) => return e.report(),
        },
    };
    let precision = args.precision / 100.0;
    let mut search = Search::new(start, precision, args.max_rate);
    let mut steps = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    let plans_args = |rate: f64| {
        let mut a = run.clone();
        a.rate = vec![rate];
        a.duration = Some(args.step);
        // Intervals of a tenth of the step (100 ms to 1 s): the generator's health is judged
        // on those after the start-up.
        if a.interval.is_none() && a.every.is_none() {
            a.interval =
                Some((args.step / 10).clamp(Duration::from_millis(100), Duration::from_secs(1)));
        }
        a
    };
    while let Some((rate, confirmation)) = search.next() {
        if control.signal() != 0 {
            break;
        }
        // A pause before every step (the probe's too): the server drains what the step before
        // left queued.
        if (!parts.is_empty() || args.start_rate.is_none()) && !control.pause(run.pause) {
            break;
        }
        let (record, measured, plan) = match run_step_measured(
            &control,
            &plans_args(rate),
            &url,
            &command_line,
            embedded.is_some(),
        ) {
            Ok(r) => r,
            Err(e) => return e.report(),
        };
        if control.signal() != 0 {
            // An interrupted step says nothing about its rate: kept, not judged.
            parts.push((rate, record, measured, plan));
            break;
        }
        let max_lag_us = args.max_lag.as_secs_f64() * 1e6;
        let step = knee::judge(&record, rate, &args.slos, confirmation, max_lag_us);
        let again = if search.retrying() { " (again)" } else { "" };
        say(format!(
            "step {}: {rate:.0} req/s{again}: {}{}",
            steps.len() + 1,
            match step.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Client if search.retrying() => "the generator is the limit",
                Verdict::Client => "the generator fell behind: running the step once more",
            },
            if step.reasons.is_empty() {
                String::new()
            } else {
                format!(" ({})", step.reasons.join("; "))
            }
        ));
        search.record(step.verdict);
        steps.push(step);
        parts.push((rate, record, measured, plan));
    }
    if let Some(s) = embedded {
        s.shutdown();
    }
    let mut result = KneeResult {
        slos: args.slos.iter().map(|e| e.to_string()).collect(),
        precision,
        answer_rps: search.answer(),
        confirmed: search.confirmed,
        limited_by: search.limited_by.to_string(),
        steps,
        summary: String::new(),
    };
    result.summary = knee::summary_of(&result);
    let signal = control.signal();
    let record = knee_record(&command_line, parts, result, signal != 0);
    let Some(mut record) = record else {
        eprintln!("reqlife knee: interrupted before any step ended: nothing was measured");
        return if signal == libc::SIGTERM {
            EXIT_SIGTERM
        } else {
            EXIT_SIGINT
        };
    };
    run.view.check(&mut record);
    let mut code = EXIT_OK;
    record.run_id = Some(run_id);
    if let Some(path) = &run.output {
        let json = report::record_json(&record) + "\n";
        if let Err(e) = files::write_text(path, &json, "the record", run.quiet) {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    if let Some(path) = &run.html {
        let page = report::html::render(&record)
            .and_then(|p| files::write_text(path, &p, "the HTML report", run.quiet));
        if let Err(e) = page {
            eprintln!("error: {e}");
            code = EXIT_FAILURE;
        }
    }
    if run.view.json {
        files::report(
            &(serde_json::to_string_pretty(&record.knee).unwrap_or_default() + "\n"),
            to_stderr,
        );
    } else {
        files::report(&run.view.render(&record), to_stderr);
    }
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ if record.knee.as_ref().is_some_and(|k| k.answer_rps.is_none()) => EXIT_FAILURE,
        _ => code,
    }
}

/// One step: its rate, record, measurements and plan.
type Part = (
    f64,
    RunRecord,
    crate::recorder::Measured,
    crate::plan::RunPlan,
);

/// The record of a search: its steps as the levels of a sweep of rates (the top level adds
/// them up exactly), and the search.
fn knee_record(
    command_line: &[String],
    parts: Vec<Part>,
    result: KneeResult,
    interrupted: bool,
) -> Option<RunRecord> {
    let (_, first, _, first_plan) = parts.first()?;
    let end = Ending {
        recorded: Duration::from_secs_f64(parts.iter().map(|p| p.1.summary.duration_s).sum()),
        drained: Duration::ZERO,
        stop_reason: if interrupted {
            StopReason::Interrupted(None)
        } else {
            StopReason::KneeSearch
        },
        interrupted,
        start_time: first.environment.start_time.clone(),
        command_line: command_line.to_vec(),
        embedded_target: first.config.embedded_target,
    };
    let first_plan = first_plan.clone();
    let measured: Vec<crate::recorder::Measured> = parts.iter().map(|p| p.2.clone()).collect();
    let pieces: Vec<(String, &crate::plan::RunPlan, RunRecord)> = parts
        .iter()
        .map(|(rate, r, _, p)| (format!("{rate:.0} req/s"), p, r.clone()))
        .collect();
    let mut record = RunRecord::sweep(&first_plan, &measured, end, pieces);
    // The steps are levels, chosen by the search: not a sweep the user asked for.
    record.config.sweep = None;
    record.knee = Some(result);
    Some(record)
}
