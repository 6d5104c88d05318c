//! Raw flags become a validated [`RunPlan`] here: the one conversion of a run's flags, which
//! [`super::command`] calls once for the command `app` runs. Each protocol's and workload's
//! flags are checked by their own file (`websocket`, `grpc`, `framed`, `protocol`, `pacing`,
//! `workload`), called only from here; `app` never reads a flag. A [`PlanError`] is one line
//! naming what is wrong and what is valid; the binary exits with code 2 on it.

use super::error::err;
use super::{ArrivalArg, PolicyArg, RunArgs};
use crate::model::load_spec::{self as load, Fallback, Given, Load, LoadSpec};
use crate::model::{io_reason, Arrival, LoadModel, Segment, Target, TlsPlan};
use crate::plan::{Http1Plan, ProtocolPlan, RunPlan};
use prost_reflect::DescriptorPool;
use std::time::Duration;

pub use super::error::PlanError;

/// Default length of a run when neither `-d` nor `-n` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Bursts of a `--burst` run given neither `--bursts` nor `-d`.
pub const DEFAULT_BURSTS: u64 = 10;
pub use super::pacing::{DEFAULT_PACER_SLACK, MAX_PACER_SLACK};

/// Builds the plans of `reqlife run` for `url`: one, or one per level of a sweep
/// (`-c 100,200,500` or `-R 5000,10000`), in the order given.
pub fn build_levels(args: &RunArgs, url: &str) -> Result<Vec<RunPlan>, PlanError> {
    build_levels_with(args, url, None)
}

/// [`build_levels`] with the descriptors the server's gRPC reflection gave (asked by `app`
/// when [`super::reflect::ask`] says the flags need them).
pub fn build_levels_with(
    args: &RunArgs,
    url: &str,
    reflected: Option<&DescriptorPool>,
) -> Result<Vec<RunPlan>, PlanError> {
    match (args.load.connections.len(), args.length.rate.len()) {
        (c, r) if (c > 1 || r > 1) && args.intervals.hdr_log.is_some() => {
            err("--hdr-log records one run: drop the sweep, or run its levels one by one")
        }
        (c, r) if c > 1 && r > 1 => err(
            "a sweep varies one thing: give a list to -c/--connections or to -R/--rate, not both",
        ),
        (c, r) if c > 1 || r > 1 => {
            if args.length.stages.is_some() {
                let list = if c > 1 { "-c" } else { "-R" };
                return err(format!(
                    "--stages and a sweep ({list} a,b,...) conflict: give one of them"
                ));
            }
            // One plan, and each level derived from it with its own load.
            let base = base(args, url, reflected)?;
            let level = |set: &dyn Fn(&mut LoadSpec)| {
                let mut spec = load_spec(args);
                set(&mut spec);
                base.with_load(&spec).map_err(PlanError::from)
            };
            if c > 1 {
                args.load
                    .connections
                    .iter()
                    .map(|&c| level(&|s| s.connections = Some(Given::flag(c))))
                    .collect()
            } else {
                args.length
                    .rate
                    .iter()
                    .map(|&r| level(&|s| s.rate = Some(Given::flag(r))))
                    .collect()
            }
        }
        _ => Ok(vec![build_with(args, url, reflected)?]),
    }
}

/// Builds the plan of one level of `reqlife run` for `url` (the user's, or the embedded
/// target's); a sweep (a list of levels) is refused here: see [`build_levels`].
pub fn build(args: &RunArgs, url: &str) -> Result<RunPlan, PlanError> {
    build_with(args, url, None)
}

/// [`build`] with the descriptors the server's gRPC reflection gave.
pub fn build_with(
    args: &RunArgs,
    url: &str,
    reflected: Option<&DescriptorPool>,
) -> Result<RunPlan, PlanError> {
    if args.load.connections.len() > 1 || args.length.rate.len() > 1 {
        return err("a sweep has several plans: build them with build_levels");
    }
    base(args, url, reflected)
}

/// The plan of the flags, with the first level of a sweep: the one plan the levels of a
/// sweep are derived from. `-t` more than `-c` is refused unless `-c` is a sweep (whose
/// levels take at most one thread per connection).
fn base(
    args: &RunArgs,
    url: &str,
    reflected: Option<&DescriptorPool>,
) -> Result<RunPlan, PlanError> {
    let plan = super::grpc::apply(args, reflected, flags_plan(args, url)?)?;
    super::websocket::apply(args, plan)
}

/// The plan that gRPC server reflection is asked over (`--grpc` with `--data` and no
/// `--proto-set`, see [`super::grpc::reflection_service`]): the call's target, TLS and
/// headers, every flag checked as for the run but the message.
pub fn reflection_plan(args: &RunArgs, url: &str) -> Result<RunPlan, PlanError> {
    super::grpc::reflection_plan(args, flags_plan(args, url)?)
}

/// `-k/--insecure` and `--cacert` (its certificates read now).
fn tls_plan(args: &RunArgs) -> Result<TlsPlan, PlanError> {
    let ca_certs = match &args.tls.cacert {
        Some(path) => read_cacert(path)?,
        None => Vec::new(),
    };
    Ok(TlsPlan {
        insecure: args.tls.insecure,
        cacert: args.tls.cacert.clone(),
        ca_certs,
    })
}

/// Whether connections are kept (`--no-keepalive`, `--connection-policy`), and the connect
/// rate limit.
fn connection_policy(args: &RunArgs) -> Result<(bool, Option<f64>), PlanError> {
    let keepalive = match (
        args.connection.no_keepalive,
        args.connection.connection_policy,
    ) {
        (true, Some(PolicyArg::Reuse)) => {
            return err("--no-keepalive and --connection-policy reuse conflict: give one of them")
        }
        (true, _) | (false, Some(PolicyArg::New)) => false,
        (false, _) => true,
    };
    let max_connects_per_s = match args.connection.max_connects_per_s {
        Some(r) if r <= 0.0 => {
            return err("--max-connections-per-second must be more than 0 (e.g. 500)")
        }
        other => other,
    };
    Ok((keepalive, max_connects_per_s))
}

/// The plan of the flags of every protocol (gRPC's applied by [`base`]).
fn flags_plan(args: &RunArgs, url: &str) -> Result<RunPlan, PlanError> {
    let target = super::resolve::target(url, &args.resolve.resolve)?;
    if args.length.stages.is_some() && args.load.warmup.is_some() {
        return err("--stages and --warmup conflict: make the first stage the warm-up");
    }
    let Load { model: load, stop } = load_spec(args).build()?;
    let segment = args.load.segment.unwrap_or(Segment::WHOLE);
    let threads_asked = threads_asked(args, &load, segment)?;
    if args.connection.timeout.is_zero() {
        return err("--timeout must be more than 0 (e.g. 10s)");
    }
    let interval = interval(args)?;
    let (keepalive, max_connects_per_s) = connection_policy(args)?;
    let framed = super::framed::plan(args, url)?;
    let websocket = super::websocket::plan(args, url, keepalive)?;
    let method = method(args)?;
    let headers = args
        .request
        .headers
        .iter()
        .map(|h| parse_header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let body = body(args)?;
    let tls = tls_plan(args)?;
    output_folders(args)?;
    let pacing = super::pacing::pacing(args, &load)?;
    let protocol = match websocket {
        Some(w) => ProtocolPlan::WebSocket(w),
        None => protocol(args, &target, keepalive, framed)?,
    };
    if args.response.max_body == 0 {
        return err("--max-body must be at least 1 byte (e.g. 64M)");
    }
    let max_header_bytes = super::protocol::max_header_list(args)?;
    let seed = args.load.seed.unwrap_or_else(seed_from_clock);
    let (trace, log) = super::trace::plan_parts(&args.trace, seed)?;
    RunPlan {
        target,
        method,
        headers,
        body,
        load,
        keepalive,
        max_connects_per_s,
        seed,
        server_total: args.server_total.clone(),
        protocol,
        threads: 0,
        threads_asked,
        stop,
        warmup: args.load.warmup.unwrap_or_default(),
        drain: args.load.drain.unwrap_or(args.connection.timeout),
        timeout: args.connection.timeout,
        interval,
        pacing,
        tls,
        max_header_bytes,
        expect_continue: super::protocol::expect_continue(args)?,
        compressed: args.response.compressed,
        stream: stream_mode(args),
        max_body_bytes: args.response.max_body,
        segment,
        workload: None,
        phase: None,
        trace,
        log,
        until: args.load.until.clone(),
    }
    .fit_threads(&load::FLAGS)
    .map_err(PlanError::from)
}

/// `--until` of `run` and `compare --run`: a cap given (-d or -n; a scenario's phases have
/// their own lengths), and a load that a precision can end (not stages or bursts, whose
/// schedules set their length). A knee's step is its own cap.
pub fn until_cap(args: &RunArgs) -> Result<(), PlanError> {
    if args.load.until.is_empty() {
        return Ok(());
    }
    let length = &args.length;
    if length.stages.is_some() || length.burst.is_some() {
        let what = if length.stages.is_some() {
            "--stages"
        } else {
            "--burst"
        };
        return err(format!(
            "--until conflicts with {what}: its schedule sets the run's length; run until precise with -R or -c and -d as the cap"
        ));
    }
    if length.duration.is_none() && length.requests.is_none() && args.workload.scenario.is_none() {
        return err("--until needs a cap: give -d (e.g. -d 60s) or -n, the most the run may take if it never gets that precise");
    }
    Ok(())
}

/// `-m/--method` (GET when not given), checked: an HTTP token, and not a number (h2load's
/// `-m`).
fn method(args: &RunArgs) -> Result<String, PlanError> {
    let given = args.request.method.as_deref().unwrap_or("GET");
    let method = given.trim().to_string();
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return err(format!(
            "invalid method '{given}': expected a token such as GET, POST, PUT, DELETE, HEAD"
        ));
    }
    if method.bytes().all(|b| b.is_ascii_digit()) {
        // h2load's `-m N` is its streams per connection: a number sent as a method is that
        // habit, not a method anyone serves.
        return err(format!(
            "invalid method '{method}': -m is the request method (GET, POST, ...); h2load's -m, \
             streams per connection, is --streams {method} here"
        ));
    }
    Ok(method)
}

/// The protocol of the run: framed binary (`framed`, a tcp:// target), HTTP/3, HTTP/2, or
/// HTTP/1.1 with its pipelining.
fn protocol(
    args: &RunArgs,
    target: &Target,
    keepalive: bool,
    framed: Option<crate::plan::FramedPlan>,
) -> Result<ProtocolPlan, PlanError> {
    let http3 = super::protocol::http3_plan(args, target, keepalive)?;
    let http2 = super::protocol::http2_plan(args, keepalive, http3.is_some())?;
    let pipeline = super::protocol::pipeline(
        args,
        keepalive,
        http2.is_some() || http3.is_some(),
        framed.is_some(),
    )?;
    Ok(match (framed, http3, http2) {
        (Some(f), _, _) => ProtocolPlan::Framed(f),
        (None, Some(h3), _) => ProtocolPlan::Http3(h3),
        (None, None, Some(h2)) => ProtocolPlan::Http2(h2),
        (None, None, None) => ProtocolPlan::Http1(Http1Plan { pipeline }),
    })
}

/// `--stream`: how a streamed response's events are told apart.
fn stream_mode(args: &RunArgs) -> Option<crate::model::EventMode> {
    args.response.stream.map(|s| match s {
        super::StreamArg::Sse => crate::model::EventMode::Sse,
        super::StreamArg::Chunks => crate::model::EventMode::Chunks,
        super::StreamArg::Lines => crate::model::EventMode::Lines,
        super::StreamArg::Messages => crate::model::EventMode::Messages,
    })
}

/// A seed for a run given no `--seed`: the clock's nanoseconds.
fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// `-t` as asked (`None`: one per core; bursts run on one thread, see
/// [`RunPlan::fit_threads`]): more than `-c` is refused unless `-c` is a sweep (whose levels
/// take at most one thread per connection).
fn threads_asked(
    args: &RunArgs,
    load: &LoadModel,
    segment: Segment,
) -> Result<Option<usize>, PlanError> {
    let connections = load.connections();
    // This process holds its segment's share of the connections.
    let local = segment.share(connections as u64) as usize;
    let strict = args.load.connections.len() <= 1;
    Ok(match args.load.threads {
        _ if args.length.burst.is_some() => None,
        Some(0) => return err("-t/--threads must be at least 1"),
        Some(t) if strict && t as usize > local && local > 0 && segment.count > 1 => {
            return err(format!(
                "-t/--threads {t} is more than this segment's {} (of {connections}): each thread needs at least one connection",
                crate::util::units::counted(local as u64, "connection")
            ))
        }
        Some(t) if strict && t as usize > connections => {
            return err(format!(
                "-t/--threads {t} is more than -c/--connections {connections}: each thread needs at least one connection"
            ))
        }
        t => t.map(|t| t as usize),
    })
}

/// `--interval` (or `--every`, which sets it too): at least 10ms, 1s when not given.
fn interval(args: &RunArgs) -> Result<Duration, PlanError> {
    let interval = match (args.files.interval, args.intervals.every) {
        (Some(i), Some(e)) if i != e => {
            return err("--interval and --every differ: --every sets the interval too; give one")
        }
        (Some(i), _) | (None, Some(i)) => i,
        (None, None) => Duration::from_secs(1),
    };
    if interval < Duration::from_millis(10) {
        return err("--interval/--every must be at least 10ms (e.g. 1s)");
    }
    Ok(interval)
}

/// `--body` or `--body-file` (read now), or none.
fn body(args: &RunArgs) -> Result<Vec<u8>, PlanError> {
    Ok(match (&args.request.body, &args.request.body_file) {
        (Some(_), Some(_)) => return err("--body and --body-file conflict: give one of them"),
        (Some(b), None) => b.as_bytes().to_vec(),
        (None, Some(path)) => std::fs::read(path).map_err(|e| {
            PlanError(format!(
                "cannot read body file '{}': {}",
                path.display(),
                io_reason(&e)
            ))
        })?,
        (None, None) => Vec::new(),
    })
}

/// Found out now, not after the run: the folders of the output files must exist.
fn output_folders(args: &RunArgs) -> Result<(), PlanError> {
    for (flag, path) in [
        ("-o/--output", &args.files.output),
        ("--hdr-log", &args.intervals.hdr_log),
    ] {
        let Some(path) = path else { continue };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
        if dir.is_some_and(|d| !d.is_dir()) {
            return err(format!(
                "cannot write {flag} '{}': its folder does not exist",
                path.display()
            ));
        }
    }
    Ok(())
}

/// The load the flags ask for (the first level of a sweep), in the one load builder's terms
/// ([`LoadSpec`]): the spec commands that run several plans change to derive each one
/// ([`RunPlan::with_load`]). Every flag is passed as given or not (their defaults are the
/// load builder's), so the builder's rules see an explicit default too: `-c` with connection
/// stages, `--arrival` without a rate, `--burst-interval` without `--burst`.
pub fn load_spec(args: &RunArgs) -> LoadSpec {
    let mut spec = LoadSpec::new(
        load::FLAGS,
        Some(Fallback {
            duration: DEFAULT_DURATION,
            bursts: DEFAULT_BURSTS,
        }),
    );
    spec.connections = args.load.connections.first().copied().map(Given::flag);
    spec.rate = args.length.rate.first().copied().map(Given::flag);
    spec.stages = args.length.stages.clone().map(Given::flag);
    spec.arrival = args.load.arrival.map(|a| {
        Given::flag(match a {
            ArrivalArg::Constant => Arrival::Constant,
            ArrivalArg::Poisson => Arrival::Poisson,
        })
    });
    spec.count = args.length.requests.map(Given::flag);
    spec.duration = args.length.duration.map(Given::flag);
    spec.burst = args.length.burst.map(Given::flag);
    spec.burst_interval = args.length.burst_interval.map(Given::flag);
    spec.bursts = args.length.bursts.map(Given::flag);
    spec
}

/// Parses and resolves the URL of a run (once, before it starts: a name that does not resolve
/// is bad input, exit 2).
pub fn parse_target(url: &str) -> Result<Target, PlanError> {
    super::resolve::target(url, &[])
}

/// RFC 9110 token characters (methods and header names).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Parses `Name: value`.
fn parse_header(raw: &str) -> Result<(String, String), PlanError> {
    let bad = |why: &str| {
        PlanError(format!(
            "invalid header '{raw}': {why}; expected 'Name: value', e.g. -H 'Content-Type: application/json'"
        ))
    };
    let (name, value) = raw.split_once(':').ok_or_else(|| bad("no ':'"))?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(is_token_byte) {
        return Err(bad(
            "the name is empty or has characters not allowed in a header name",
        ));
    }
    let value = value.trim();
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(bad("the value holds a line break"));
    }
    Ok((name.to_string(), value.to_string()))
}

/// Reads a CA file: its certificates (DER); at least one PEM certificate is required.
fn read_cacert(path: &std::path::Path) -> Result<Vec<Vec<u8>>, PlanError> {
    let data = std::fs::read(path).map_err(|e| {
        PlanError(format!(
            "cannot read CA file '{}': {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    let certs = rustls_pemfile::certs(&mut data.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PlanError(format!("invalid CA file '{}': {e}", path.display())))?;
    if certs.is_empty() {
        return err(format!(
            "invalid CA file '{}': no PEM certificate found (expected -----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs.into_iter().map(|c| c.to_vec()).collect())
}

#[cfg(test)]
mod tests;
