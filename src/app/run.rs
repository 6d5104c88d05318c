//! `reqlife run`: plans (one, or one per level of a sweep) → workers → measurements →
//! RunRecord → report. One control runtime watches the signals for the whole run, so Ctrl-C
//! stops the current level (and the sweep) and what was measured is still reported.

use super::control::{Control, Executed, Reporting};
use super::failure::Failure;
use super::together::Together;
use super::{files, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM};
use crate::cli::command::{OutputPlan, RunCommand, RunRequest};
use crate::cli::probes::ProbePlan;
use crate::cli::RunArgs;
use crate::engine::SessionConfig;
use crate::model::StopReason;
use crate::plan::RunPlan;
use crate::recorder::record::{Ending, RunRecord};
use crate::report;

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

/// A run checked and ready to start: its command (the plans, one per level or per
/// repetition, and where its results go), their sessions' settings, the embedded target if it
/// has one, and its probes made ready.
struct Prepared {
    command: RunCommand,
    configs: Vec<SessionConfig>,
    embedded: Option<crate::server::RunningServer>,
    /// `--server-probes`: checked, the script written (or the agent reached).
    probes: Option<super::probes::Planned>,
}

impl Prepared {
    /// The label of level (or run) `i`: `run 2` of a repeated run, else the level's.
    fn label(&self, i: usize) -> String {
        if self.command.repeat > 1 {
            format!("run {}", i + 1)
        } else {
            level_label(&self.command.plans[i])
        }
    }
}

/// `reqlife run`: checks everything, runs the levels, then writes and reports the record.
pub fn run(args: &RunArgs, command_line: Vec<String>) -> i32 {
    // The run's identity, from its start: `reqlife merge` refuses a record given twice.
    let run_id = crate::recorder::record::new_run_id();
    let (mut prepared, mut control) = match prepare(args).and_then(|p| {
        let c = Control::new()?.watchers(&p.command.watch)?;
        Ok((p, c))
    }) {
        Ok(pc) => pc,
        Err(e) => return e.report(),
    };
    let quiet = prepared.command.output.quiet;
    if let Some(p) = &prepared.probes {
        let print_script = matches!(
            prepared.command.probes,
            Some(ProbePlan::Here {
                print_script: true,
                ..
            })
        );
        if let (true, Some(script)) = (print_script, p.script()) {
            print!("{script}");
            return EXIT_OK;
        }
        match p.attach(quiet) {
            Ok(attached) => control.attach_probes(attached),
            Err(e) => return e.report(),
        }
    }
    let together = match wait_start(&prepared.command, &control, quiet) {
        Ok(t) => t,
        Err(code) => return code,
    };
    if !quiet {
        print_header(&prepared);
    }
    let levels = execute_levels(&mut prepared, &control);
    control.close_view(); // The terminal back before the report.
    let levels = match levels {
        Ok(l) => l,
        Err(e) => return e.report(),
    };
    let signal = control.signal();
    let mut record = build_record(&prepared, &levels, signal != 0, command_line);
    record.run_id = Some(run_id);
    crate::analysis::precision::annotate(&mut record);
    crate::analysis::validity::annotate(&mut record);
    if let Some(server) = prepared.embedded.take() {
        server.shutdown();
    }
    let output = &prepared.command.output;
    let code = match together {
        Some(t) => t.end(record, output, |o, r| finish(o, r, &levels, signal)),
        None => {
            output.view.check(&mut record);
            finish(output, &record, &levels, signal)
        }
    };
    control.linger_metrics(prepared.command.watch.metrics_linger);
    match signal {
        libc::SIGINT => EXIT_SIGINT,
        libc::SIGTERM => EXIT_SIGTERM,
        _ => code,
    }
}

/// Waits for the start: `--start-at`'s, or the one `--coordinator` gives once every segment
/// is ready (segment 1 listens, the others reach it): this segment's side of the plan's
/// coordination, or the exit code of a run that cannot start.
fn wait_start(
    command: &RunCommand,
    control: &Control,
    quiet: bool,
) -> Result<Option<Together>, i32> {
    let stop = || control.signal() != 0;
    let mut together = match command.together.as_ref().map(|p| Together::open(p, &stop)) {
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return Err(e.report()),
        None => None,
    };
    let (start, flag) = match together.as_mut().map(|t| t.start(&stop, quiet)) {
        Some(Ok(at)) => (Some(at), "--coordinator"),
        Some(Err(e)) => return Err(e.report()),
        None => (command.start_at, "--start-at"),
    };
    if let Some(start) = start {
        if !control.wait_start(start, quiet, flag) {
            eprintln!("reqlife: interrupted before the start: nothing was measured");
            return Err(match control.signal() {
                libc::SIGTERM => EXIT_SIGTERM,
                _ => EXIT_SIGINT,
            });
        }
    }
    Ok(together)
}

/// Every check before the run: the flags into the command (the embedded target started when
/// there is no URL), the sessions' settings, the probes and the open-file limit.
fn prepare(args: &RunArgs) -> Result<Prepared, Failure> {
    let request = RunRequest::new(args)?;
    let (embedded, url) = match request.target() {
        Some(choice) => {
            let (server, url) = super::control::target(choice, "/")?;
            (server, Some(url))
        }
        None => (None, None),
    };
    // gRPC --data without --proto-set: the server's reflection, asked once.
    let reflected = super::reflect::asked(request.reflection(url.as_deref())?)?;
    let mut command = request.command(url.as_deref(), reflected.as_ref())?;
    command.plans = trusting(command.plans, embedded.as_ref());
    let configs = command
        .plans
        .iter()
        .map(SessionConfig::new)
        .collect::<Result<Vec<_>, _>>()?;
    let probes = match &command.probes {
        Some(p) => Some(super::probes::prepare(p)?),
        None => None,
    };
    // A low `ulimit -n` is raised, or refused now, not met by every connect failing.
    super::limits::check(&command.plans, embedded.is_some())?;
    Ok(Prepared {
        command,
        configs,
        embedded,
        probes,
    })
}

/// The header as the run starts (the report repeats it at the end): on stderr, with the
/// progress bar, so that stdout keeps only the report (or the file given as `-`).
fn print_header(prepared: &Prepared) {
    let command = &prepared.command;
    let plans = &command.plans;
    let Some(mut c) = RunRecord::planned_config(plans, prepared.embedded.is_some()) else {
        return;
    };
    c.repeat = command.repeat as u64;
    if command.repeat > 1 || command.phased {
        c.sweep = None;
    }
    c.workload = command.workload.clone();
    let labels: Vec<String> = if command.phased {
        (0..plans.len()).map(|i| prepared.label(i)).collect()
    } else {
        Vec::new()
    };
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    eprint!("{}", report::text::start_header(&c, &labels));
}

/// Runs the levels in turn, until the last, a signal, a lost threshold or the fail-fast rule;
/// what each measured. The interval log (`--hdr-log`, one level only) is written as it goes.
fn execute_levels(prepared: &mut Prepared, control: &Control) -> Result<Vec<Executed>, Failure> {
    let n = prepared.command.plans.len();
    let output = &prepared.command.output;
    let mut log = match (&output.hdr_log, n) {
        // The recorder's reason, as before: a log that cannot be created fails the run.
        (Some(path), 1) => Some(crate::recorder::hdrlog::create(path).map_err(Failure::from)?),
        _ => None,
    };
    let configs = std::mem::take(&mut prepared.configs);
    let mut levels = Vec::new();
    for (i, config) in configs.into_iter().enumerate() {
        if i > 0 && !control.pause(prepared.command.pause) {
            break;
        }
        // (Not over the view, which shows the level itself.)
        let output = &prepared.command.output;
        if n > 1 && !output.quiet && !control.viewing() {
            let (what, label) = match prepared.command.repeat {
                1 => ("level", format!(": {}", prepared.label(i))),
                _ => ("run", String::new()),
            };
            eprintln!("reqlife: {what} {}/{n}{label}", i + 1);
        }
        let json = output.view.json || output.to_stderr;
        let plan = &prepared.command.plans[i];
        let reporting = Reporting {
            quiet: output.quiet,
            every: output.every,
            json,
            abort: &output.abort,
            log: log.take(),
        };
        let o = control.execute(plan, config, reporting)?;
        // A lost threshold or the fail-fast rule ends a sweep too.
        let lost = matches!(o.stop_reason, StopReason::ThresholdLost(_)) || o.fail_fast.is_some();
        levels.push(o);
        if control.signal() != 0 || lost {
            break;
        }
    }
    Ok(levels)
}

/// The record of the levels that ran: one run's, or a sweep's (or repetitions') with each
/// level's record.
fn build_record(
    prepared: &Prepared,
    levels: &[Executed],
    interrupted: bool,
    command_line: Vec<String>,
) -> RunRecord {
    let command = &prepared.command;
    let plans = &command.plans;
    let ending = |o: &Executed| Ending {
        recorded: o.recorded,
        drained: o.drained,
        stop_reason: o.stop_reason.clone(),
        interrupted,
        start_time: o.start_time.clone(),
        command_line: command_line.clone(),
        embedded_target: prepared.embedded.is_some(),
    };
    let mut record = if plans.len() == 1 {
        let o = &levels[0];
        RunRecord::build(&plans[0], &o.measured, ending(o))
    } else {
        let parts: Vec<(String, &RunPlan, RunRecord)> = levels
            .iter()
            .zip(plans)
            .enumerate()
            .map(|(i, (o, p))| {
                (
                    prepared.label(i),
                    p,
                    RunRecord::build(p, &o.measured, ending(o)),
                )
            })
            .collect();
        let mut all = ending(&levels[0]);
        all.recorded = levels.iter().map(|o| o.recorded).sum();
        if let Some(last) = levels.last() {
            all.stop_reason = last.stop_reason.clone();
        }
        let combine = if command.repeat > 1 {
            RunRecord::repeated
        } else {
            RunRecord::sweep
        };
        let measured: Vec<_> = levels.iter().map(|o| o.measured.clone()).collect();
        combine(&plans[0], &measured, all, parts)
    };
    // --repeat: the runs asked for (an interrupted series keeps those that ran).
    record.config.repeat = command.repeat as u64;
    if command.phased {
        // A scenario's phases are levels of their own kind, not a sweep.
        record.config.sweep = None;
    }
    record.config.workload = command.workload.clone();
    record
}

/// Whether the run's header, printed on stderr as the run started ([`print_header`]), is
/// already where the report goes, where a second header would only repeat the first: the
/// report goes to stderr too, or stdout and stderr are one terminal, or one pipe or file
/// (`2>&1`).
fn header_on_terminal(output: &OutputPlan) -> bool {
    use std::io::IsTerminal;
    let terminals = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
    !output.quiet && (output.to_stderr || terminals || same_open_file(1, 2))
}

/// Whether descriptors `a` and `b` are the same open file, pipe or socket (one device and
/// inode).
fn same_open_file(a: i32, b: i32) -> bool {
    let stat = |fd: i32| {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a whole `stat` into the buffer when it returns 0.
        (unsafe { libc::fstat(fd, st.as_mut_ptr()) } == 0)
            .then(|| unsafe { st.assume_init() })
            .map(|st| (st.st_dev, st.st_ino))
    };
    matches!((stat(a), stat(b)), (Some(x), Some(y)) if x == y)
}

/// Writes the record's files, prints the report, and gives the exit code of a run that was
/// not interrupted: a failed output, the fail-fast rule, a run where nothing succeeded, or
/// the thresholds' verdict.
fn finish(output: &OutputPlan, record: &RunRecord, levels: &[Executed], signal: i32) -> i32 {
    let mut code = EXIT_OK;
    if let Some(e) = levels.iter().find_map(|o| o.log_error.as_ref()) {
        // The recorder's reason, as before: the interval log is an output of the run.
        code = Failure::from(e.clone()).report();
    }
    let (file, html) = (output.output.as_deref(), output.html.as_deref());
    let written = files::write_record(record, file, html, output.quiet);
    if written != EXIT_OK {
        code = written;
    }
    files::report(
        &output.view.render_after(record, header_on_terminal(output)),
        output.to_stderr,
    );
    if signal != 0 {
        return code;
    }
    // A lost threshold is the verdict the user asked for: it outranks "most of the run
    // failed" (exit 5), not a run where nothing succeeded.
    let verdict = super::thresholds_code(record);
    let failed =
        failure(record).filter(|f| !(matches!(f, Failure::MostlyFailed(_)) && verdict != EXIT_OK));
    if let Some(line) = levels.iter().find_map(|o| o.fail_fast.as_ref()) {
        Failure::FailFast(line.clone()).report()
    } else if let Some(failed) = failed {
        failed.report()
    } else if code != EXIT_OK {
        code
    } else if verdict != EXIT_OK {
        // The thresholds' verdict gives the exit code, as it gives the banner and the JSON.
        verdict
    } else {
        strict_code(output.strict, record)
    }
}

/// `--strict`: [`EXIT_NOT_VALID`] when the load was not valid (the validity's line on stderr,
/// naming the checks that failed), else 0.
pub(super) fn strict_code(strict: bool, record: &RunRecord) -> i32 {
    match &record.validity {
        Some(v) if strict && !v.valid => {
            eprintln!("reqlife: --strict: {}", v.line);
            crate::util::exit::EXIT_NOT_VALID
        }
        _ => EXIT_OK,
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
        _ => crate::util::units::counted(plan.connections() as u64, "connection"),
    }
}

/// Why a finished run failed as a whole, of its kind: no request succeeded (exit 1), every
/// response was an HTTP error (exit 4), or most of the run failed (exit 5).
fn failure(record: &RunRecord) -> Option<Failure> {
    let s = &record.summary;
    let url = &record.config.url;
    if s.requests.ok > 0 {
        return match crate::recorder::record::http_errors_warning(record) {
            Some(why) => Some(Failure::HttpErrors(format!(
                "no request succeeded against {url}: {why}"
            ))),
            None => mostly_failed(record),
        };
    }
    if s.requests.errors == 0 {
        return Some(Failure::Failed(format!(
            "no response from {url} within the run ({:.2}s): the server may be stalled; try a longer -d or check the server",
            s.duration_s
        )));
    }
    let (kind, n) = s.errors.iter().max_by_key(|(_, n)| **n)?;
    let first = record
        .first_errors
        .get(kind)
        .map(String::as_str)
        .unwrap_or("");
    Some(Failure::Failed(format!(
        "no request succeeded against {url}: {} (first: {first})",
        crate::util::units::counted(*n, &format!("{kind} error"))
    )))
}

/// Most of the run failed, though some requests were answered: more than half of the requests
/// that ended failed without a response, or the server stopped answering for more than half
/// of the window (its last response that early, requests failing after it). The line says
/// which, and what failed.
fn mostly_failed(record: &RunRecord) -> Option<Failure> {
    let s = &record.summary;
    let url = &record.config.url;
    let ended = s.requests.ok + s.requests.errors;
    let (kind, _) = s.errors.iter().max_by_key(|(_, n)| **n)?;
    let first = record.first_errors.get(kind).map_or("", String::as_str);
    let silent = s
        .last_answer
        .as_ref()
        .filter(|l| l.silent_share(s.duration_s) > 0.5);
    let why = if let Some(last) = silent {
        format!(
            "the server stopped answering {:.2}s into the {:.2}s window ({:.0}% of it without a \
             response) and {} requests failed after that",
            last.at_s,
            s.duration_s,
            100.0 * last.silent_share(s.duration_s),
            last.failed_after
        )
    } else if 2 * s.requests.errors > ended {
        format!(
            "{} of the {ended} requests failed ({:.0}%)",
            s.requests.errors,
            100.0 * s.requests.errors as f64 / ended as f64
        )
    } else {
        return None;
    };
    Some(Failure::MostlyFailed(format!(
        "most of the run against {url} failed: {why}, mostly {kind} (first: {first})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{plan::build, Cli, Command};
    use crate::model::ErrorKind;
    use crate::util::exit::{ExitCode, EXIT_MOSTLY_FAILED, EXIT_OK};
    use clap::Parser;
    use std::time::{Duration, Instant};

    /// The record of a 10 s run of `ok` responses and `failed` refusals, the last response
    /// `last_ok_s` into it and every refusal after it.
    fn record(ok: u64, failed: u64, last_ok_s: f64) -> RunRecord {
        let argv = ["reqlife", "run", "-d", "10s", "-c", "4"];
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let plan = build(&args, "http://127.0.0.1:9/").unwrap();
        let mut m = crate::recorder::Recorder::new(Instant::now(), Duration::from_secs(1)).finish();
        m.counts.counters.requests = ok + failed;
        m.counts.counters.ok = ok;
        m.counts.counters.errors[ErrorKind::Connect.index()] = failed;
        m.counts.counters.last_ok_ns = (last_ok_s * 1e9) as u64;
        m.counts.counters.failed_since_ok = failed;
        m.counts.status[200] = ok;
        m.counts.first_errors[ErrorKind::Connect.index()] = Some("Connection refused".into());
        let ending = crate::recorder::record::Ending {
            recorded: Duration::from_secs(10),
            drained: Duration::ZERO,
            stop_reason: StopReason::Duration,
            interrupted: false,
            start_time: String::new(),
            command_line: vec![],
            embedded_target: false,
        };
        RunRecord::build(&plan, &m, ending)
    }

    fn code(r: &RunRecord) -> i32 {
        failure(r).map_or(EXIT_OK, |f| f.exit_code())
    }

    #[test]
    fn most_of_a_run_failed_exits_5_saying_which_most() {
        // (responses, refusals, last response s into the 10 s window, exit code)
        let rows = [
            (40_587, 200, 1.5, EXIT_MOSTLY_FAILED), // the server died 1.5 s in
            (40_587, 200, 4.9, EXIT_MOSTLY_FAILED), // 51% of the window without a response
            (40_587, 200, 5.0, EXIT_OK),            // half: said, not failed
            (1_000, 1_001, 9.99, EXIT_MOSTLY_FAILED), // most requests refused
            (1_000, 1_000, 9.99, EXIT_OK),          // half
            (40_587, 0, 1.5, EXIT_OK),              // answered to the end (nothing failed after)
        ];
        for (ok, failed, last, want) in rows {
            assert_eq!(
                code(&record(ok, failed, last)),
                want,
                "{ok} {failed} {last}"
            );
        }
        let line = failure(&record(40_587, 200, 1.5)).unwrap().to_string();
        assert_eq!(
            line,
            "most of the run against http://127.0.0.1:9/ failed: the server stopped answering \
             1.50s into the 10.00s window (85% of it without a response) and 200 requests \
             failed after that, mostly connect (first: Connection refused)"
        );
        let line = failure(&record(1_000, 1_001, 9.99)).unwrap().to_string();
        assert!(
            line.contains("1001 of the 2001 requests failed (50%)"),
            "{line}"
        );
    }
}
