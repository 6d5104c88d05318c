//! Synthetic RunRecords for the reports' unit tests, made through the real pipeline (plan,
//! [`Recorder`], [`Measured::merge`], [`RunRecord::build`]) from samples with chosen
//! timestamps: no network, no clock, the same figures every time (only the environment, read
//! from the machine, varies).

use crate::cli::{plan, Cli, Command};
use crate::model::{ErrorKind, Sample, Timestamps};
use crate::recorder::record::{Ending, RunRecord};
use crate::recorder::{Measured, Recorder};
use clap::Parser;
use std::time::{Duration, Instant};

/// What a synthetic run contains.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Requests, spread evenly over `seconds`.
    pub requests: u64,
    pub seconds: u64,
    /// Every n-th request fails with a timeout (0: none).
    pub error_every: u64,
    /// Every n-th response is a 503 (0: none).
    pub status_503_every: u64,
    /// Responses carry `Server-Timing`.
    pub server_timing: bool,
    /// Responses of 5 events each (`--stream`): the first at the first byte, then gaps of
    /// 1 ms + (i mod 7)·100 µs, 10 ms for one response in fifty (i mod 50 = 25).
    pub events: bool,
}

impl Default for Shape {
    fn default() -> Self {
        Shape {
            requests: 3000,
            seconds: 3,
            error_every: 50,
            status_503_every: 30,
            server_timing: true,
            events: false,
        }
    }
}

fn args(flags: &[&str]) -> Box<crate::cli::RunArgs> {
    let mut argv = vec!["reqlife", "run"];
    argv.extend_from_slice(flags);
    match Cli::try_parse_from(argv).expect("valid test flags").command {
        Command::Run(a) => a,
        _ => unreachable!("a run command"),
    }
}

/// The measurements of one synthetic run: request i is intended at i·seconds/requests, its
/// wait grows with a sawtooth of its index (100 µs + (i·7919 mod 1000) µs) and jumps to 20 ms
/// for one request in a hundred.
pub fn measured(shape: Shape, interval: Duration) -> Measured {
    let base = Instant::now();
    let mut r = Recorder::new(base, interval);
    let step_ns = shape.seconds * 1_000_000_000 / shape.requests.max(1);
    for i in 0..shape.requests {
        let t0 = base + Duration::from_nanos(i * step_ns);
        let mut st = Timestamps::new(t0, t0 + Duration::from_micros(2));
        let failed = shape.error_every > 0 && i % shape.error_every == shape.error_every - 1;
        let mut at = st.dispatched;
        if i < 4 {
            st.connect_start = Some(at);
            at += Duration::from_micros(60);
            st.connect_end = Some(at);
        }
        let wait_us = if i % 100 == 99 {
            20_000
        } else {
            100 + (i * 7919) % 1000
        };
        if !failed {
            at += Duration::from_micros(5);
            st.written = Some(at);
            at += Duration::from_micros(wait_us);
            st.first_byte = Some(at);
            at += Duration::from_micros(10);
            st.done = Some(at);
        }
        let gap_ns = if i % 50 == 25 {
            10_000_000
        } else {
            1_000_000 + (i % 7) * 100_000
        };
        let gaps: &[u64] = if shape.events && !failed {
            st.first_event = st.first_byte;
            st.events = Some(5);
            st.done = st.done.map(|d| d + Duration::from_nanos(4 * gap_ns));
            &[gap_ns; 4]
        } else {
            &[]
        };
        let status = (!failed).then_some(
            if shape.status_503_every > 0 && i % shape.status_503_every == 0 {
                503
            } else {
                200
            },
        );
        let s = Sample {
            status,
            bytes_read: 120,
            ..Sample::ok(st)
        };
        let s = if failed {
            s.failed(ErrorKind::Timeout)
        } else {
            s
        };
        if failed {
            r.note_error(ErrorKind::Timeout, "no answer within 10s <script>");
        }
        let timing = if shape.server_timing {
            let handler_ms = wait_us as f64 * 0.8 / 1000.0;
            // One parse in four under the server's clock resolution: `dur=0`.
            let parse_ms = if i % 4 == 0 { 0.0 } else { 0.010 };
            format!(
                "parse;dur={parse_ms}, handler;dur={handler_ms:.4}, total;dur={:.4}",
                handler_ms + 0.01
            )
        } else {
            String::new()
        };
        r.record_response(&s, timing.as_bytes(), gaps);
    }
    Measured::merge(vec![r.finish()])
}

fn ending(seconds: u64) -> Ending {
    Ending {
        recorded: Duration::from_secs(seconds),
        drained: Duration::ZERO,
        stop_reason: crate::model::StopReason::Duration,
        interrupted: false,
        start_time: "2025-01-01T00:00:00Z".into(),
        command_line: vec!["reqlife".into(), "run".into(), "<&>".into()],
        embedded_target: false,
    }
}

/// A record of `shape` with the run flags `flags` (the URL is a closed port: nothing is sent).
pub fn record(flags: &[&str], shape: Shape) -> RunRecord {
    let a = args(flags);
    let p = plan::build(&a, "http://127.0.0.1:9/").expect("a valid plan");
    RunRecord::build(&p, &measured(shape, p.interval), ending(shape.seconds))
}

/// A plain run: 3000 requests over 3 s, intervals of 1 s, errors, a 503 and Server-Timing.
pub fn plain() -> RunRecord {
    record(&["-d", "3s", "--interval", "1s"], Shape::default())
}
/// A streamed run (`--stream sse`): a plain run whose responses are streams of 5 events.
pub fn streamed() -> RunRecord {
    let shape = Shape {
        events: true,
        ..Shape::default()
    };
    record(&["-d", "3s", "--interval", "1s", "--stream", "sse"], shape)
}

/// A sweep of two levels (`-c 1,2`), each a plain run.
pub fn sweep() -> RunRecord {
    let a = args(&["-c", "1,2", "-d", "3s", "--interval", "1s"]);
    let plans = plan::build_levels(&a, "http://127.0.0.1:9/").expect("valid plans");
    let measured: Vec<Measured> = plans
        .iter()
        .map(|p| measured(Shape::default(), p.interval))
        .collect();
    let parts = plans
        .iter()
        .zip(&measured)
        .map(|(p, m)| {
            let label = format!("{} connections", p.connections());
            (label, p, RunRecord::build(p, m, ending(3)))
        })
        .collect();
    let mut all = ending(6);
    all.recorded = Duration::from_secs(6);
    RunRecord::sweep(&plans[0], &measured, all, parts)
}

/// A burst run (`--burst 10`): 5 bursts recorded beside the requests.
pub fn bursts() -> RunRecord {
    let a = args(&["--burst", "10", "--bursts", "5", "--interval", "1s"]);
    let p = plan::build(&a, "http://127.0.0.1:9/").expect("a valid plan");
    let mut m = measured(
        Shape {
            requests: 50,
            seconds: 1,
            ..Shape::default()
        },
        p.interval,
    );
    let mut r = Recorder::new(Instant::now(), p.interval);
    for b in 0..5u64 {
        r.record_burst(
            Duration::from_micros(300 + 50 * b),
            Duration::from_micros(900 + 100 * b),
        );
    }
    m.bursts = r.finish().bursts;
    RunRecord::build(&p, &m, ending(1))
}
