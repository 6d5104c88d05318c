//! `reqlife calibrate`: starts the embedded target in-process (or uses `--external URL`), then
//! measures, one step after another: the cost of a timestamp and of a recorded sample; the
//! highest throughput of a closed loop and its client CPU per request; the highest open-loop
//! rate that keeps its schedule (a search up by quarters from half the closed-loop figure);
//! and the latency the network and the client add at low load. Prints the figures and a
//! verdict (`--json`: as JSON).

use super::control::{run_plan, target, Control};
use super::failure::Failure;
use super::{out, EXIT_OK, EXIT_SIGINT};
use crate::analysis::calibrate::{self, Calibration, Limit, Step};
use crate::cli::calibrate::{CalibrateCommand, CalibrateRequest};
use crate::cli::CalibrateArgs;
use crate::util::units::human_ns;
use crate::watch::tui::StepRow;
use std::fmt::Write as _;

/// Open-loop steps tried at most.
const MAX_OPEN_STEPS: usize = 12;

/// Closed-loop steps tried at most; the one with the highest throughput is kept.
const CLOSED_TRIES: usize = 3;

/// `reqlife calibrate`.
pub fn calibrate(args: &CalibrateArgs, command_line: Vec<String>) -> i32 {
    let request = match CalibrateRequest::new(args) {
        Ok(r) => r,
        Err(e) => return Failure::from(e).report(),
    };
    let (embedded, url) = match target(request.target(), "/") {
        Ok(t) => t,
        Err(e) => return e.report(),
    };
    // The one plan every step is derived from.
    let command = match request.command(&url) {
        Ok(c) => c,
        Err(e) => return Failure::from(e).report(),
    };
    let control = Control::new().and_then(|c| c.watchers(&command.watch));
    let mut control = match control {
        Ok(c) => c,
        Err(e) => return e.report(),
    };
    let result = measure(&command, &control, &url, &command_line, embedded.is_some());
    control.close_view();
    if let Some(s) = embedded {
        s.shutdown();
    }
    match result {
        Ok(c) if command.json => {
            out(&(serde_json::to_string_pretty(&c).unwrap_or_default() + "\n"))
        }
        Ok(c) => out(&render(&c)),
        // Bad flags exit 2; a step the fail-fast rule stopped, 3 (its line names the fix).
        Err(e) => return e.report(),
    }
    control.linger_metrics(command.watch.metrics_linger);
    if control.signal() != 0 {
        return EXIT_SIGINT;
    }
    EXIT_OK
}

/// A calibration step as the live view lists it.
fn step_row(s: &Step) -> StepRow {
    StepRow {
        rate_rps: s.offered_rps.unwrap_or(s.achieved_rps),
        p99_us: s.total_p99_us,
        verdict: match (s.offered_rps, s.limit) {
            (None, _) => "closed loop".into(),
            (Some(_), Limit::None) => "kept up".into(),
            (Some(_), _) => "fell behind".into(),
        },
    }
}

fn measure(
    command: &CalibrateCommand,
    control: &Control,
    url: &str,
    command_line: &[String],
    embedded: bool,
) -> Result<Calibration, Failure> {
    let say = |msg: String| {
        // The view lists the steps itself.
        if !command.quiet && !control.viewing() {
            eprintln!("reqlife calibrate: {msg}");
        }
    };
    let rows = std::cell::RefCell::new(Vec::new());
    let step = |connections: u64, rate: Option<f64>| -> Result<Step, Failure> {
        let mut shown = rows.borrow().clone();
        shown.push(StepRow::running(rate.unwrap_or(0.0)));
        control.show_steps(" calibration: steps so far ", shown);
        let plan = command.plans.at(connections, rate)?;
        let (r, _) = run_plan(control, &plan, command_line, embedded)?;
        // None succeeded and some failed: the target is wrong. None answered at all (a stall,
        // or a server slower than a step): the closed loop is measured again, below.
        if let (0, Some(error)) = (r.summary.requests.ok, r.first_errors.values().next()) {
            return Err(Failure::Failed(format!(
                "no request succeeded against {url}: {error}"
            )));
        }
        let s = calibrate::Step::of(&r);
        rows.borrow_mut().push(step_row(&s));
        control.show_steps(" calibration: steps so far ", rows.borrow().clone());
        Ok(s)
    };
    let timestamp_ns = calibrate::timestamp_ns(1_000_000);
    let record_ns = calibrate::record_ns(200_000);
    say(format!(
        "a timestamp costs {}, recording a sample {}",
        human_ns(timestamp_ns),
        human_ns(record_ns)
    ));

    let c = command.connections;
    let mut closed = step(c, None)?;
    let mut tries = 1;
    while closed.stalled(command.plans.step()) && tries < CLOSED_TRIES && control.signal() == 0 {
        say(match closed.total_max_us {
            Some(max) => format!(
                "closed loop: {} in the step, the slowest {}: a stall? measuring it again",
                crate::util::units::counted(closed.requests, "request"),
                human_ns(max * 1e3)
            ),
            None => "closed loop: no request answered in the step: measuring it again".into(),
        });
        let again = step(c, None)?;
        if again.achieved_rps > closed.achieved_rps {
            closed = again;
        }
        tries += 1;
    }
    if closed.stalled(command.plans.step()) && control.signal() == 0 {
        return Err(Failure::Failed(format!(
            "the closed loop against {url} answered {} in the best of {tries} steps of {}{}: too \
             few to measure this client by; lengthen --step or raise -c",
            crate::util::units::counted(closed.requests, "request"),
            human_ns(command.plans.step().as_nanos() as f64),
            closed.total_max_us.map_or(String::new(), |max| format!(
                ", the slowest {}",
                human_ns(max * 1e3)
            ))
        )));
    }
    say(format!(
        "closed loop: {:.0} req/s, {} client CPU per request",
        closed.achieved_rps,
        human_ns(closed.client_cpu_us_per_request * 1e3)
    ));

    let (open_steps, open_max) = open_loop(c, &closed, control, &step, &say)?;

    // Low load: a tenth of what the open loop sustained, at most 1000 req/s, on 4 connections.
    let low_rate = (open_max.unwrap_or(closed.achieved_rps) * 0.1).clamp(10.0, 1000.0);
    let low_load = if control.signal() == 0 {
        Some(step(4, Some(low_rate.round()))?)
    } else {
        None
    };
    let threads = command
        .threads
        .unwrap_or_else(|| crate::util::limits::default_threads() as u64);
    let mut cal = Calibration {
        protocol: if command.http2 { "HTTP/2" } else { "HTTP/1.1" }.into(),
        embedded_target: embedded,
        threads: threads.min(command.connections),
        connections: command.connections,
        timestamp_ns,
        record_ns,
        closed,
        open_max_rps: open_max,
        open_steps,
        low_load,
        verdict: String::new(),
    };
    cal.verdict = cal.verdict_of();
    Ok(cal)
}

/// The open loop's steps on `c` connections, from half the closed loop's rate up (or down)
/// until it falls behind after keeping up, and the highest rate it kept up with.
fn open_loop(
    c: u64,
    closed: &Step,
    control: &Control,
    step: &impl Fn(u64, Option<f64>) -> Result<Step, Failure>,
    say: &impl Fn(String),
) -> Result<(Vec<Step>, Option<f64>), Failure> {
    let mut open_steps = Vec::new();
    let mut open_max = None;
    let mut rate = (closed.achieved_rps * 0.5).max(100.0).round();
    while open_steps.len() < MAX_OPEN_STEPS && control.signal() == 0 {
        let s = step(c, Some(rate))?;
        let kept = s.limit == Limit::None;
        say(format!(
            "open loop at {rate:.0} req/s: achieved {:.0}, lag p99 {}: {}",
            s.achieved_rps,
            human_ns(s.lag_p99_us.unwrap_or(0.0) * 1e3),
            if kept { "kept up" } else { "fell behind" }
        ));
        open_steps.push(s);
        if kept {
            open_max = Some(rate);
        } else if open_max.is_some() {
            break;
        }
        rate = calibrate::next_rate(rate, kept).round();
    }
    Ok((open_steps, open_max))
}

/// The text report of a calibration.
fn render(c: &Calibration) -> String {
    let mut out = String::new();
    let us = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let human = |v: Option<f64>| v.map_or("-".to_string(), |v| human_ns(v * 1e3));
    let _ = writeln!(out, "Calibration of this client machine ({})", c.protocol);
    let _ = writeln!(
        out,
        "  cost of a timestamp        {:>10}\n  cost of a recorded sample  {:>10}",
        human_ns(c.timestamp_ns),
        human_ns(c.record_ns)
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  limit",
        "load", "offered", "achieved", "cpu us/req", "busiest", "lag p99 us", "p50 us"
    );
    let rows = std::iter::once(&c.closed)
        .chain(c.open_steps.iter())
        .chain(c.low_load.iter());
    for s in rows {
        let _ = writeln!(
            out,
            "  {:<8} {:>10} {:>10.0} {:>10.2} {:>9.0}% {:>10} {:>10}  {}",
            s.load,
            s.offered_rps.map_or("-".into(), |o| format!("{o:.0}")),
            s.achieved_rps,
            s.client_cpu_us_per_request,
            s.busiest_thread * 100.0,
            us(s.lag_p99_us),
            us(s.total_p50_us),
            match s.limit {
                Limit::None => "-",
                Limit::Client => "client",
                Limit::Server => "server",
            }
        );
    }
    if let Some(low) = &c.low_load {
        let _ = writeln!(
            out,
            "\n  at low load: total p50 {}, p99 {}; network+client (write+wait - server) p50 {}, p99 {}",
            human(low.total_p50_us),
            human(low.total_p99_us),
            human(low.added_p50_us),
            human(low.added_p99_us)
        );
    }
    let _ = writeln!(out, "\n  Verdict: {}.", c.verdict);
    out
}
