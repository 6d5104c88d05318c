//! `reqlife knee URL --slo 'p99<=2ms'`: the highest open-loop rate that meets every SLO. An
//! optional closed-loop probe sets the start rate (a quarter of what the target answers flat
//! out); then each step runs the open loop at the rate the search asks for
//! ([`crate::analysis::knee::Search`]), for `--step`, with `--pause` between steps. One row per
//! step and the answer are printed; the record (`-o`) keeps every step's histograms as levels
//! and the search in `knee`.

use super::control::{run_plan, target, Control};
use super::failure::Failure;
use super::{files, EXIT_FAILURE, EXIT_SIGINT, EXIT_SIGTERM};
use crate::analysis::knee::{self, KneeResult, KneeStep, Search, Verdict};
use crate::cli::command::OutputPlan;
use crate::cli::knee::{KneeCommand, KneeRequest};
use crate::cli::KneeArgs;
use crate::model::StopReason;
use crate::plan::RunPlan;
use crate::recorder::record::{Ending, RunRecord};
use crate::recorder::Measured;
use crate::watch::tui::StepRow;
use std::time::Duration;

/// `reqlife knee`.
pub fn knee(args: &KneeArgs, command_line: Vec<String>) -> i32 {
    let run_id = crate::recorder::record::new_run_id();
    let request = match KneeRequest::new(args) {
        Ok(r) => r,
        Err(e) => return Failure::from(e).report(),
    };
    let (embedded, url) = match target(request.target(), "/") {
        Ok(t) => t,
        Err(e) => return e.report(),
    };
    // Every flag checked once, into the one plan every step is derived from (gRPC --data
    // without --proto-set: the server's reflection, asked once).
    let reflected = request
        .reflection(&url)
        .map_err(Failure::from)
        .and_then(super::reflect::asked);
    let reflected = match reflected {
        Ok(r) => r,
        Err(e) => return e.report(),
    };
    let command = match request.command(&url, reflected.as_ref()) {
        Ok(c) => c,
        Err(e) => return Failure::from(e).report(),
    };
    let plans = &command.plans;
    // Every step has the same connections: a low `ulimit -n` is raised or refused now.
    if let Err(e) = super::limits::check(std::slice::from_ref(&plans.probe), embedded.is_some()) {
        return e.report();
    }
    let control = Control::new().and_then(|c| c.watchers(&command.watch));
    let mut control = match control {
        Ok(c) => c,
        Err(e) => return e.report(),
    };
    let searched = search(&command, &control, &command_line, embedded.is_some());
    control.close_view();
    if let Some(s) = embedded {
        s.shutdown();
    }
    let (result, parts) = match searched {
        Ok(s) => s,
        Err(e) => return e.report(),
    };
    let signal = control.signal();
    let stopped = match signal {
        0 => None,
        _ if control.quit() => Some(StopReason::Quit),
        _ => Some(StopReason::Interrupted(None)),
    };
    let Some(mut record) = knee_record(&command_line, parts, result, stopped) else {
        eprintln!("reqlife knee: interrupted before any step ended: nothing was measured");
        return if signal == libc::SIGTERM {
            EXIT_SIGTERM
        } else {
            EXIT_SIGINT
        };
    };
    record.run_id = Some(run_id);
    let code = write_and_report(&command.output, &mut record);
    control.linger_metrics(command.watch.metrics_linger);
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ if record.knee.as_ref().is_some_and(|k| k.answer_rps.is_none()) => EXIT_FAILURE,
        _ => code,
    }
}

/// The search: the probe (unless `--start-rate`), then one step per rate the search asks
/// for, until it concludes or a signal stops it. The result and every step run.
fn search(
    command: &KneeCommand,
    control: &Control,
    command_line: &[String],
    embedded: bool,
) -> Result<(KneeResult, Vec<Part>), Failure> {
    let say = |msg: String| {
        // The view shows the steps itself.
        if !command.output.quiet && !control.viewing() {
            eprintln!("reqlife knee: {msg}");
        }
    };
    let start = match command.start_rate {
        Some(r) => r,
        None => {
            control.show_steps(" knee search: the probe (closed loop) ", Vec::new());
            let (r, _) = run_plan(control, &command.plans.probe, command_line, embedded)?;
            let flat_out = r.summary.throughput_rps;
            say(format!(
                "probe: {flat_out:.0} req/s in a closed loop of {}; starting at a quarter",
                crate::util::units::counted(r.config.connections, "connection")
            ));
            (flat_out / 4.0).round().max(1.0)
        }
    };
    let precision = command.precision;
    let mut search = Search::new(start, precision, command.max_rate);
    let mut steps: Vec<KneeStep> = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    while let Some((rate, confirmation)) = search.next() {
        if control.signal() != 0 {
            break;
        }
        // A pause before every step (the probe's too): the server drains what the step before
        // left queued.
        if (!parts.is_empty() || command.start_rate.is_none()) && !control.pause(command.pause) {
            break;
        }
        let mut rows = step_rows(&steps);
        rows.push(StepRow::running(rate));
        control.show_steps(" knee search: steps so far ", rows);
        let plan = command.plans.at(rate)?;
        let run = run_plan(control, &plan, command_line, embedded)?;
        if control.signal() != 0 {
            // An interrupted step says nothing about its rate: kept, not judged.
            parts.push(part(rate, plan, vec![run]));
            break;
        }
        let n = steps.len() + 1;
        let how = (command_line, embedded, &say as &dyn Fn(String));
        let (part, step) = measure(command, control, (n, rate, confirmation), plan, run, how)?;
        say(step_line(n, rate, &step, search.retrying()));
        search.record(step.verdict);
        steps.push(step);
        parts.push(part);
        control.show_steps(" knee search: steps so far ", step_rows(&steps));
        if control.signal() != 0 {
            break;
        }
    }
    let mut result = KneeResult {
        slos: command.slos.iter().map(|e| e.to_string()).collect(),
        precision,
        answer_rps: search.answer(),
        confirmed: search.confirmed,
        limited_by: search.limited_by.to_string(),
        steps,
        summary: String::new(),
    };
    result.summary = knee::summary_of(&result);
    Ok((result, parts))
}

/// A step at `rate` judged from its `first` run, run again while its verdict is undecided (it
/// rests on an SLO whose 95% interval holds the limit), up to `--remeasure` more times: each
/// time judged on all its runs together, whose intervals' batches span them all. A signal
/// during a re-measurement keeps that run in the part, the verdict the runs before it gave.
fn measure(
    command: &KneeCommand,
    control: &Control,
    (n, rate, confirmation): (usize, f64, bool),
    plan: RunPlan,
    first: (RunRecord, Measured),
    (line, embedded, say): (&[String], bool, &dyn Fn(String)),
) -> Result<(Part, KneeStep), Failure> {
    let max_lag_us = command.max_lag.as_secs_f64() * 1e6;
    let mut runs = vec![first];
    loop {
        let mut part = part(rate, plan.clone(), runs.clone());
        let (mut step, blamed) =
            knee::judge(&part.1, rate, &command.slos, confirmation, max_lag_us);
        step.measurements = runs.len() as u64;
        // The step's generator is judged once, by the knee's rule: its warnings say that.
        part.1.summary.warnings = knee::step_warnings(&part.1, &blamed);
        let more = runs.len() <= command.remeasure as usize;
        if step.undecided.is_empty() || !more || control.signal() != 0 {
            return Ok((part, step));
        }
        say(format!(
            "step {n}: {rate:.0} req/s: undecided ({}): measuring it again",
            step.undecided.join("; ")
        ));
        if !control.pause(command.pause) {
            return Ok((part, step));
        }
        runs.push(run_plan(control, &plan, line, embedded)?);
        if control.signal() != 0 {
            return Ok((self::part(rate, plan, runs), step));
        }
    }
}

/// The part of the record a step's `runs` make: one run's record as it is; several runs'
/// together, their measurements merged and their intervals one after the other.
fn part(rate: f64, plan: RunPlan, runs: Vec<(RunRecord, Measured)>) -> Part {
    let measured: Vec<Measured> = runs.iter().map(|(_, m)| m.clone()).collect();
    if runs.len() == 1 {
        let record = runs.into_iter().next().expect("one run").0;
        return (rate, record, measured, plan);
    }
    let (first, last) = (&runs[0].0, &runs[runs.len() - 1].0);
    let end = Ending {
        recorded: Duration::from_secs_f64(runs.iter().map(|r| r.0.summary.duration_s).sum()),
        drained: Duration::ZERO,
        interrupted: last.interrupted,
        stop_reason: last.stop_reason.clone(),
        start_time: first.environment.start_time.clone(),
        command_line: first.config.command_line.clone(),
        embedded_target: first.config.embedded_target,
    };
    let pieces: Vec<(String, &RunPlan, RunRecord)> = runs
        .iter()
        .enumerate()
        .map(|(i, (r, _))| (format!("run {}", i + 1), &plan, r.clone()))
        .collect();
    let mut record = RunRecord::sweep(&plan, &measured, end, pieces);
    // One step, measured several times: not a sweep's levels.
    record.levels.clear();
    record.config.sweep = None;
    record.summary.generator.offered_rps = first.summary.generator.offered_rps;
    (rate, record, measured, plan)
}

/// The line said on stderr as a step ends.
fn step_line(n: usize, rate: f64, step: &KneeStep, retrying: bool) -> String {
    let again = if retrying { " (again)" } else { "" };
    let runs = match (step.measurements, step.undecided.is_empty()) {
        (1, true) => String::new(),
        (1, false) => " (undecided: judged by the measured figures)".to_string(),
        (m, true) => format!(" (decided by {m} runs together)"),
        (m, false) => format!(" (undecided after {m} runs: judged by the measured figures)"),
    };
    format!(
        "step {n}: {rate:.0} req/s{again}: {}{}{runs}",
        match step.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Client if retrying => "the generator is the limit",
            Verdict::Client => "the generator fell behind: running the step once more",
        },
        if step.reasons.is_empty() {
            String::new()
        } else {
            format!(" ({})", step.reasons.join("; "))
        }
    )
}

/// The steps as the live view's rows.
fn step_rows(steps: &[KneeStep]) -> Vec<StepRow> {
    steps
        .iter()
        .map(|s| StepRow {
            rate_rps: s.offered_rps,
            p99_us: s.p99_us,
            verdict: match s.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::Client => "generator",
            }
            .to_string(),
        })
        .collect()
}

/// Checks the thresholds, writes `-o` and `--html`, prints the report: the exit code.
fn write_and_report(output: &OutputPlan, record: &mut RunRecord) -> i32 {
    crate::analysis::precision::annotate(record);
    crate::analysis::validity::annotate(record);
    output.view.check(record);
    let (file, html) = (output.output.as_deref(), output.html.as_deref());
    let code = files::write_record(record, file, html, output.quiet);
    if output.view.json {
        files::report(
            &(serde_json::to_string_pretty(&record.knee).unwrap_or_default() + "\n"),
            output.to_stderr,
        );
    } else {
        files::report(&output.view.render(record), output.to_stderr);
    }
    code
}

/// One step: its rate, record (of its runs together), each run's measurements and plan.
type Part = (f64, RunRecord, Vec<Measured>, RunPlan);

/// The record of a search: its steps as the levels of a sweep of rates (the top level adds
/// them up exactly), and the search; `stopped`: how, if a signal or `q` stopped it.
fn knee_record(
    command_line: &[String],
    parts: Vec<Part>,
    result: KneeResult,
    stopped: Option<StopReason>,
) -> Option<RunRecord> {
    let (_, first, _, first_plan) = parts.first()?;
    let end = Ending {
        recorded: Duration::from_secs_f64(parts.iter().map(|p| p.1.summary.duration_s).sum()),
        drained: Duration::ZERO,
        interrupted: stopped.is_some(),
        stop_reason: stopped.unwrap_or(StopReason::KneeSearch),
        start_time: first.environment.start_time.clone(),
        command_line: command_line.to_vec(),
        embedded_target: first.config.embedded_target,
    };
    let first_plan = first_plan.clone();
    let measured: Vec<Measured> = parts.iter().flat_map(|p| p.2.iter().cloned()).collect();
    let pieces: Vec<(String, &RunPlan, RunRecord)> = parts
        .iter()
        .map(|(rate, r, _, p)| (format!("{rate:.0} req/s"), p, r.clone()))
        .collect();
    let mut record = RunRecord::sweep(&first_plan, &measured, end, pieces);
    // The steps are levels, chosen by the search: not a sweep the user asked for.
    record.config.sweep = None;
    record.knee = Some(result);
    Some(record)
}
