//! The protocol flags become the plan's HTTP/2 and HTTP/3 settings here (`--http2`, `--grpc`,
//! `--http3`, `--streams`, `--h2-window`, `--h2-coalesce`, `--h2-writes`, `--zero-rtt`,
//! `--max-header-list`): which of them apply together, and the one line that says so when they
//! do not.

use super::error::err;
use super::plan::PlanError;
use super::{H2WritesArg, RunArgs};
use crate::model::{Scheme, Target};
use crate::plan::{Http2Plan, Http3Plan};

/// `-H 'Expect: 100-continue'`: the wait for the server's 100 before an HTTP/1.1 body goes,
/// `--expect100-timeout` (1 s by default, curl's); `None` without that header. The timeout
/// alone is refused: it would wait for nothing.
pub(super) fn expect_continue(args: &RunArgs) -> Result<Option<std::time::Duration>, PlanError> {
    let expects = args.request.headers.iter().any(|h| {
        h.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("expect")
                && value.trim().eq_ignore_ascii_case("100-continue")
        })
    });
    match args.request.expect100_timeout {
        Some(_) if !expects => err("--expect100-timeout applies with -H 'Expect: 100-continue'"),
        Some(d) if d.is_zero() => {
            err("--expect100-timeout must be more than 0 (e.g. 1s; without the header, no wait)")
        }
        t => Ok(expects.then(|| t.unwrap_or(std::time::Duration::from_secs(1)))),
    }
}

/// `--streams N` above 1 with a new connection per request (`keepalive` off): refused, a
/// connection that carries one request shares no streams.
fn shares_streams(streams: Option<u64>, keepalive: bool) -> Result<(), PlanError> {
    match streams {
        Some(n) if n > 1 && !keepalive => err(format!(
            "--streams {n} with a new connection per request (--no-keepalive): a connection \
             that carries one request shares no streams; give --streams 1 or keep-alive"
        )),
        _ => Ok(()),
    }
}

/// `--h2-writes`: HTTP/2 only (`on`), and not with a hold of `--h2-coalesce` (`coalesce`),
/// which gathers new requests instead; whether new requests gather before their write.
fn gather(
    args: &RunArgs,
    on: bool,
    http3: bool,
    coalesce: Option<std::time::Duration>,
) -> Result<bool, PlanError> {
    match args.http.h2_writes {
        None => Ok(true),
        Some(_) if !on && http3 => err("--h2-writes applies to HTTP/2, not to --http3"),
        Some(_) if !on => err("--h2-writes applies to HTTP/2: give --http2 too"),
        Some(_) if coalesce.is_some() => err(
            "--h2-writes and --h2-coalesce conflict: the hold of --h2-coalesce gathers new requests instead; give one of them",
        ),
        Some(w) => Ok(w == H2WritesArg::Gather),
    }
}

/// `--http2` (or `--grpc`), `--streams` and `--h2-window` (`--streams` goes to HTTP/3 with
/// `--http3`); a connection per request (`keepalive` off) opens one for each stream, so it
/// shares none.
pub(super) fn http2_plan(
    args: &RunArgs,
    keepalive: bool,
    http3: bool,
) -> Result<Option<Http2Plan>, PlanError> {
    let on = args.http.http2 || super::grpc::is_grpc(args);
    let coalesce = match args.http.h2_coalesce {
        Some(_) if !on && http3 => return err("--h2-coalesce applies to HTTP/2, not to --http3"),
        Some(_) if !on => return err("--h2-coalesce applies to HTTP/2: give --http2 too"),
        Some(d) if d > MAX_COALESCE => {
            return err("--h2-coalesce must be from 0 to 1s (e.g. 1ms; 0: off)")
        }
        Some(d) => Some(d).filter(|d| !d.is_zero()),
        None => None,
    };
    let gather = gather(args, on, http3, coalesce)?;
    Ok(match (on, args.http.streams, args.http.h2_window) {
        (false, _, None) if http3 => None,
        (false, None, None) => None,
        (false, _, None) => {
            return err("--streams applies to HTTP/2 and HTTP/3: give --http2 or --http3 too")
        }
        (false, _, _) => return err("--h2-window applies to HTTP/2: give --http2 too"),
        (true, Some(0), _) => return err("--streams must be at least 1"),
        // Any stream window the protocol allows (RFC 9113, 6.5.2: up to 2^31-1); 0 would
        // stall every response body for good.
        (true, _, Some(w)) if !(1..=2_147_483_647).contains(&w) => {
            return err("--h2-window must be from 1 to 2147483647 bytes (e.g. 1KiB, 1MiB)")
        }
        (true, streams, window) => {
            shares_streams(streams, keepalive)?;
            Some(Http2Plan {
                streams: streams.unwrap_or(1) as usize,
                window: window.map(|w| w as u32),
                coalesce,
                gather,
            })
        }
    })
}

/// `--pipeline N` (1 when not given): HTTP/1.1 only, from 1 to [`MAX_PIPELINE`], on kept
/// connections; that the load is a closed loop is checked with the load
/// ([`crate::plan::RunPlan::fit_threads`]).
pub(super) fn pipeline(
    args: &RunArgs,
    keepalive: bool,
    multiplexed: bool,
    framed: bool,
) -> Result<usize, PlanError> {
    let Some(n) = args.http.pipeline else {
        return Ok(1);
    };
    if n == 0 || n > MAX_PIPELINE {
        return err(format!(
            "--pipeline must be from 1 to {MAX_PIPELINE} requests (1: no pipelining)"
        ));
    }
    if n == 1 {
        return Ok(1);
    }
    if multiplexed {
        return err(
            "--pipeline applies to HTTP/1.1: HTTP/2 and HTTP/3 put requests in flight side by side with --streams",
        );
    }
    if framed {
        return err("--pipeline applies to HTTP/1.1, not to tcp:// targets");
    }
    if !keepalive {
        return err(format!(
            "--pipeline {n} with a new connection per request (--no-keepalive): a connection \
             that carries one request pipelines none; give --pipeline 1 or keep-alive"
        ));
    }
    Ok(n as usize)
}

/// `--max-header-list`: the largest response head, from 1 KiB to 16 MiB.
pub(super) fn max_header_list(args: &RunArgs) -> Result<usize, PlanError> {
    match args.response.max_header_list {
        n if (MIN_HEADER_LIST..=MAX_HEADER_LIST).contains(&n) => Ok(n as usize),
        n => err(format!(
            "--max-header-list must be from 1KiB to 16MiB (got {n} bytes; e.g. 64KiB, 1MiB)"
        )),
    }
}

const MIN_HEADER_LIST: u64 = 1024;
const MAX_HEADER_LIST: u64 = 16 << 20;

/// The longest `--h2-coalesce`.
const MAX_COALESCE: std::time::Duration = std::time::Duration::from_secs(1);

/// The most requests `--pipeline` puts in flight on one connection.
pub const MAX_PIPELINE: u64 = 1024;

/// `--http3`: an https:// URL, not with `--http2`, `--h2-window` or `--grpc` (gRPC runs over
/// HTTP/2 here); `--streams` per connection, as for HTTP/2.
pub(super) fn http3_plan(
    args: &RunArgs,
    target: &Target,
    keepalive: bool,
) -> Result<Option<Http3Plan>, PlanError> {
    if !args.http.http3 {
        if args.http.zero_rtt {
            return err("--zero-rtt applies to HTTP/3: give --http3 too");
        }
        return Ok(None);
    }
    if super::grpc::is_grpc(args) {
        return err("--grpc runs over HTTP/2 (h2c, or h2 over TLS), not HTTP/3: drop --http3");
    }
    if args.http.http2 {
        return err("--http2 and --http3 conflict: give one of them");
    }
    if args.http.h2_window.is_some() {
        return err(
            "--h2-window applies to HTTP/2, not to --http3 (QUIC has its own flow control)",
        );
    }
    if target.scheme != Scheme::Https {
        return err(format!(
            "--http3 needs an https:// URL (QUIC always runs TLS), not '{}'",
            target.url
        ));
    }
    match args.http.streams {
        Some(0) => err("--streams must be at least 1"),
        streams => {
            shares_streams(streams, keepalive)?;
            Ok(Some(Http3Plan {
                streams: streams.unwrap_or(1) as usize,
                zero_rtt: args.http.zero_rtt,
            }))
        }
    }
}
