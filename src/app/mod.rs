//! The subcommands end to end: `run` (plan → workers → record → report, in `run.rs`),
//! `serve` and `report`, and the mapping of outcomes to exit codes: 0 done, 1 the run failed (no request
//! succeeded, or the record could not be written), 2 bad input, 3 stopped early or refused to
//! start (every connection failed the same way, or the open-file limit is too low: one line
//! names the fix), 4 every response was an HTTP error (none 2xx/3xx), 5 most of the run
//! failed (over half the requests, or the server silent over half the window), 99 a
//! `--threshold` failed, 130/143 interrupted by SIGINT/SIGTERM (after the report and the record were still
//! written).

mod calibrate;
mod control;
mod failure;
mod files;
mod habits;
mod interleave;
mod interrupt;
mod intervals;
mod knee;
mod limits;
mod probes;
mod reach;
mod reflect;
mod run;
mod stats;
mod together;
mod until;

use crate::cli::{Cli, Command, ReportArgs, ReportFormat, ServeArgs, ServeCommand};
use crate::recorder::record::RunRecord;
use crate::report;
use crate::server::{self, ServerTls};
use clap::Parser;
pub use failure::Failure;
use std::io::Write;

pub use crate::util::exit::{
    EXIT_FAILURE, EXIT_FAIL_FAST, EXIT_HTTP_ERRORS, EXIT_OK, EXIT_SIGINT, EXIT_SIGTERM,
    EXIT_THRESHOLD, EXIT_USAGE,
};

/// Runs the command line `args` (the program name first) and returns the exit code.
pub fn main_with(args: Vec<std::ffi::OsString>) -> i32 {
    let args = match habits::habits(args) {
        Ok(a) => a,
        Err(e) => return e.report(),
    };
    let cli = match Cli::try_parse_from(args.clone()) {
        Ok(cli) => cli,
        Err(e) => {
            // A flag of `run` that a step of knee does not take: one line that says why.
            let knee = args.get(1).is_some_and(|a| a == "knee");
            if let Some(line) = knee
                .then(|| crate::cli::knee::refused_run_flag(&e))
                .flatten()
            {
                return Failure::Usage(line).report();
            }
            let _ = e.print();
            return e.exit_code();
        }
    };
    let command_line = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let done = match cli.command {
        Command::Run(a) => Ok(run::run(&a, command_line)),
        Command::Serve(a) => serve(&a),
        Command::Probe(a) => probes::agent(&a),
        Command::Report(a) => report(&a),
        Command::Stats(a) => Ok(stats::stats(&a)),
        Command::Calibrate(a) => Ok(calibrate::calibrate(&a, command_line)),
        Command::Merge(a) => merge(&a),
        Command::Knee(a) => Ok(knee::knee(&a, command_line)),
        Command::Compare(a) => compare(&a, command_line),
    };
    // The failure's one line, and the exit code its kind calls for.
    done.unwrap_or_else(|e| e.report())
}

/// The wall-clock time now, RFC 3339.
pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// `reqlife serve --faults`: the fault target on `addr` until SIGINT or SIGTERM.
fn serve_faults(addr: std::net::SocketAddr) -> Result<i32, Failure> {
    let faults = server::faults::spawn(addr)?;
    let mut text = format!(
        "reqlife serve --faults: HTTP/1.1 faults on http://{}/fault/NAME (Ctrl-C to stop)\n  NAME: {}\n  HTTP/2 faults (h2c, run with --http2):\n",
        faults.addr(),
        server::faults::HTTP1_FAULTS.join("  ")
    );
    for f in server::faults::H2_FAULTS {
        text.push_str(&format!("    {}\n", faults.h2_url(f).unwrap_or_default()));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Failed(format!("cannot start a runtime: {e}")))?;
    runtime.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        // The handlers first, then the addresses: whoever reads them may signal at once.
        let signals = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        );
        out(&text);
        if let (Ok(mut int), Ok(mut term)) = signals {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
    });
    drop(faults);
    Ok(EXIT_OK)
}

/// `reqlife serve`.
fn serve(args: &ServeArgs) -> Result<i32, Failure> {
    let config = match args.command()? {
        ServeCommand::Faults(addr) => return serve_faults(addr),
        ServeCommand::Serve(config) => config,
    };
    let self_signed = matches!(config.tls, ServerTls::SelfSigned);
    let http3 = config.http3;
    server::serve_until_signal(config, |addr, tls| {
        let scheme = if tls { "https" } else { "http" };
        // Not println!: a closed stdout (`| head -1`) must not end the server.
        let mut text = format!(
            "reqlife serve: listening on {scheme}://{addr}/ (Ctrl-C to stop)\n  routes: {}\n",
            server::routes::ROUTES.join("  ")
        );
        if http3 {
            // The command that works as printed: a self-signed certificate needs -k.
            let k = if self_signed { " -k" } else { "" };
            text.push_str(&format!(
                "  HTTP/3 too, on UDP port {} (reqlife run --http3{k} https://{addr}/)\n",
                addr.port()
            ));
        }
        if self_signed {
            text.push_str(
                "  the certificate is self-signed: clients must not verify it (reqlife run -k, curl -k), \
                 or serve your own with --cert/--key and trust its CA (reqlife run --cacert FILE)\n",
            );
        }
        out(&text);
    })?;
    Ok(EXIT_OK)
}

/// `reqlife report`.
fn report(args: &ReportArgs) -> Result<i32, Failure> {
    let mut record = load_record(&args.file)?;
    let to_stderr = crate::cli::output::stdout_taken(&[("--html", args.html.as_deref())])?;
    args.view.check(&mut record);
    if args.verdict.strict && record.validity.is_none() {
        // A record older than the verdict on the load: judged now, from what it kept.
        crate::analysis::validity::annotate(&mut record);
    }
    if let Some(path) = &args.html {
        let page = report::html::render(&record)?;
        // The page is all this command writes: a path it cannot write is the user's to fix.
        files::write_text(path, &page, "the HTML report", false).map_err(Failure::into_usage)?;
    }
    files::report(&printed(args, &record)?, to_stderr);
    // A lost threshold outranks a load that was not valid, as in `run`.
    Ok(match thresholds_code(&record) {
        EXIT_OK => run::strict_code(args.verdict.strict, &record),
        code => code,
    })
}

/// The exit code of the thresholds' verdict: 0, or [`EXIT_THRESHOLD`] when a `--threshold`
/// checked in `record` failed (one with no data neither passes nor fails).
pub(crate) fn thresholds_code(record: &RunRecord) -> i32 {
    record
        .summary
        .thresholds_verdict()
        .map_or(EXIT_OK, |v| v.exit_code)
}

/// What `reqlife report` prints: the text report or the `--format` asked for.
fn printed(args: &ReportArgs, record: &RunRecord) -> Result<String, Failure> {
    const PHASE_ALONE: &str =
        "--phase chooses the histogram of --format hgrm; add --format hgrm or drop --phase";
    Ok(match (args.format, &args.phase) {
        (ReportFormat::Hgrm, phase) => {
            report::hgrm::of_record(record, phase.as_deref().unwrap_or("total"))?
        }
        (_, Some(_)) => return Err(Failure::Usage(PHASE_ALONE.into())),
        (ReportFormat::Csv, None) => report::csv::render(record),
        (ReportFormat::Json, None) => report::record_json(record) + "\n",
        (ReportFormat::Text, None) => args.view.render(record),
    })
}

/// `reqlife compare`.
fn compare(args: &crate::cli::CompareArgs, command_line: Vec<String>) -> Result<i32, Failure> {
    if !args.run {
        crate::cli::output::one_stdin(&[&args.a, &args.b])?;
    }
    let to_stderr = crate::cli::output::stdout_taken(&[("--html", args.html.as_deref())])?;
    if let Some(path) = &args.html {
        report::html::check_writable(path)?;
    }
    let (a, b) = if args.run {
        match interleave::run_rounds(args, &command_line) {
            Ok(r) => r,
            Err(code) => return Ok(code),
        }
    } else {
        let a = load_record(&args.a);
        (a?, load_record(&args.b)?)
    };
    let mut c = crate::analysis::compare::compare(&a, &b, args.noise / 100.0, args.seed)?;
    if args.run {
        c.method = "interleaved".into();
    }
    if let Some(path) = &args.html {
        let (an, bn) = (args.a.display().to_string(), args.b.display().to_string());
        let page = report::html::render_compare(&c, (&an, &a), (&bn, &b))?;
        files::write_text(path, &page, "the HTML comparison", false)?;
    }
    if args.json {
        files::report(
            &(serde_json::to_string_pretty(&c).unwrap_or_default() + "\n"),
            to_stderr,
        );
    } else {
        files::report(
            &report::text::compare::render(
                &c,
                &args.a.display().to_string(),
                &args.b.display().to_string(),
                args.detail,
            ),
            to_stderr,
        );
    }
    let Some(limit) = args.fail_if_slower else {
        return Ok(EXIT_OK);
    };
    let gated = ["throughput", "total p50", "total p90", "total p99"];
    let regressions: Vec<String> = c
        .rows
        .iter()
        .filter(|r| gated.contains(&r.figure.as_str()))
        .filter(|r| r.verdict == crate::analysis::significance::Verdict::Slower)
        .filter(|r| r.change.point.abs() * 100.0 > limit)
        .map(|r| format!("{} {:+.1}%", r.figure, r.change.point * 100.0))
        .collect();
    if regressions.is_empty() {
        return Ok(EXIT_OK);
    }
    eprintln!(
        "reqlife compare: B is slower than A by more than {limit}%: {}",
        regressions.join(", ")
    );
    Ok(EXIT_THRESHOLD)
}

/// `reqlife merge`.
fn merge(args: &crate::cli::MergeArgs) -> Result<i32, Failure> {
    let inputs: Vec<&std::path::Path> = args.files.iter().map(|p| p.as_path()).collect();
    crate::cli::output::one_stdin(&inputs)?;
    let to_stderr = crate::cli::output::stdout_taken(&[("-o", args.output.as_deref())])?;
    let records = args
        .files
        .iter()
        .map(|path| load_record(path))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = args.files.iter().map(|p| files::input_name(p)).collect();
    let apart = crate::recorder::merge::overlap_warning(&records, &names);
    // The recorder's reason (records that do not merge) is bad input, as before.
    let mut merged = crate::recorder::merge::merge(records, &names).map_err(Failure::from)?;
    if let Some(w) = apart {
        eprintln!("warning: {w}");
    }
    crate::analysis::precision::annotate(&mut merged);
    crate::analysis::validity::annotate(&mut merged);
    args.view.check(&mut merged);
    if let Some(path) = &args.output {
        let json = crate::report::record_json(&merged) + "\n";
        files::write_text(path, &json, "the merged record", false)?;
    }
    files::report(&args.view.render(&merged), to_stderr);
    Ok(thresholds_code(&merged))
}

/// Writes to stdout, ignoring a closed pipe (print! would panic on it).
pub(crate) fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Reads a RunRecord written by `run -o`; `-` reads it from standard input. A record that
/// cannot be read is bad input.
pub fn load_record(path: &std::path::Path) -> Result<RunRecord, Failure> {
    let text = files::read_text(path)?;
    Ok(RunRecord::from_json(&text, &files::input_name(path))?)
}
