//! The flags of framed binary runs (`tcp://HOST:PORT --payload-file FILE --framing u32be`)
//! checked into a [`FramedPlan`]: every message about them lives here.

use super::plan::PlanError;
use super::{FramingArg, RunArgs};
use crate::model::{io_reason, Scheme, Target};
use crate::plan::{FramedPlan, Framing};

/// The forms of a tcp:// target.
const TCP_FORM: &str = "expected tcp://host:port (e.g. tcp://127.0.0.1:9090)";

/// Whether `url` names a framed binary target.
pub fn is_tcp(url: &str) -> bool {
    url.starts_with("tcp://")
}

/// Parses and resolves `tcp://host:port` (the port is required, a path is refused).
pub fn tcp_target(url: &str) -> Result<Target, PlanError> {
    let bad = |why: &str| PlanError(format!("invalid URL '{url}': {why}; {TCP_FORM}"));
    let rest = url
        .strip_prefix("tcp://")
        .ok_or_else(|| bad("not tcp://"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains(['/', '?', '@']) {
        return Err(bad("a tcp:// target has no path, query or user"));
    }
    let authority: http::uri::Authority = rest.parse().map_err(|_| bad("no host:port"))?;
    let port = match authority.port_u16() {
        Some(0) => return Err(bad("port 0 cannot be connected to")),
        Some(p) => p,
        None => return Err(bad("no port")),
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let (addr, resolved_in) = super::resolve::address_of(&host, port)?;
    Ok(Target {
        url: url.to_string(),
        // Plain TCP: no TLS, no request line.
        scheme: Scheme::Http,
        host,
        port,
        path_and_query: "/".into(),
        addr,
        resolved_in,
    })
}

/// The framed plan of a run for `url`: `Some` for a tcp:// target (which needs
/// `--payload-file` and refuses the HTTP flags), `None` for HTTP (which refuses the framing
/// flags).
pub fn plan(args: &RunArgs, url: &str) -> Result<Option<FramedPlan>, PlanError> {
    let framing_flags: Vec<&str> = super::error::flags_given(&[
        (args.framed.payload_file.is_some(), "--payload-file"),
        (args.framed.framing.is_some(), "--framing"),
        (args.framed.response_bytes.is_some(), "--response-bytes"),
        (args.framed.seqid_offset.is_some(), "--seqid-offset"),
    ]);
    if !is_tcp(url) {
        if framing_flags.is_empty() {
            return Ok(None);
        }
        return Err(PlanError(format!(
            "{} appl{} to framed binary requests: give a tcp://host:port target, not '{url}'",
            framing_flags.join(", "),
            if framing_flags.len() == 1 { "ies" } else { "y" }
        )));
    }
    refuse_http_flags(args)?;
    let Some(path) = &args.framed.payload_file else {
        return Err(PlanError(format!(
            "a tcp:// target needs --payload-file FILE: the request bytes to send to {url}"
        )));
    };
    let payload = read_payload(path)?;
    let framing =
        match (
            args.framed.framing.unwrap_or(FramingArg::U32be),
            args.framed.response_bytes,
        ) {
            (FramingArg::U32be, Some(_)) => return Err(PlanError(
                "--response-bytes applies to --framing none: a u32be reply announces its length"
                    .into(),
            )),
            (FramingArg::U32be, None) => Framing::U32Be,
            (FramingArg::None, None) => {
                return Err(PlanError(
                    "--framing none needs --response-bytes N: the length of every reply".into(),
                ))
            }
            (FramingArg::None, Some(n)) => Framing::Fixed(n),
        };
    if framing == Framing::U32Be {
        check_frame(&payload, path)?;
    }
    let seqid_offset = match args.framed.seqid_offset {
        Some(at) if at.saturating_add(4) > payload.len() as u64 => {
            return Err(PlanError(format!(
                "--seqid-offset {at} does not fit: the payload file has {} bytes and the seqid takes 4 (Thrift framed binary: 12 + the method name's length)",
                payload.len()
            )))
        }
        other => other.map(|at| at as usize),
    };
    Ok(Some(FramedPlan {
        payload,
        framing,
        seqid_offset,
    }))
}

/// A tcp:// target refuses the HTTP flags: it sends the bytes of `--payload-file` as they are.
fn refuse_http_flags(args: &RunArgs) -> Result<(), PlanError> {
    let http_flags: Vec<&str> = super::error::flags_given(&[
        (args.request.method.is_some(), "-m/--method"),
        (!args.request.headers.is_empty(), "-H/--header"),
        (args.request.body.is_some(), "--body"),
        (args.request.body_file.is_some(), "--body-file"),
        (args.http.http2, "--http2"),
        (args.http.http3, "--http3"),
        (super::grpc::is_grpc(args), "--grpc"),
        (args.response.compressed, "--compressed"),
        (args.tls.insecure, "-k/--insecure"),
        (args.tls.cacert.is_some(), "--cacert"),
    ]);
    if !http_flags.is_empty() {
        return Err(PlanError(format!(
            "{} appl{} to HTTP: a tcp:// target sends the bytes of --payload-file as they are",
            http_flags.join(", "),
            if http_flags.len() == 1 { "ies" } else { "y" }
        )));
    }
    Ok(())
}

/// The bytes of `--payload-file`: read, and not empty.
fn read_payload(path: &std::path::Path) -> Result<Vec<u8>, PlanError> {
    let payload = std::fs::read(path).map_err(|e| {
        PlanError(format!(
            "cannot read payload file '{}': {}",
            path.display(),
            io_reason(&e)
        ))
    })?;
    if payload.is_empty() {
        return Err(PlanError(format!(
            "payload file '{}' is empty: a request needs at least one byte",
            path.display()
        )));
    }
    Ok(payload)
}

/// With `--framing u32be` the payload must be one whole frame: its first 4 bytes announce
/// the length of the rest (a request saved without its frame header is a common mistake).
fn check_frame(payload: &[u8], path: &std::path::Path) -> Result<(), PlanError> {
    let announced = payload
        .get(..4)
        .map(|p| u32::from_be_bytes([p[0], p[1], p[2], p[3]]) as usize);
    if announced == Some(payload.len() - 4) {
        return Ok(());
    }
    Err(PlanError(format!(
        "payload file '{}' is not one u32be frame: it has {} bytes{}; with --framing u32be it must hold a 4-byte big-endian length and then that many bytes (give --framing none --response-bytes N for unframed requests)",
        path.display(),
        payload.len(),
        match announced {
            Some(n) => format!(" and its first 4 announce {n} more"),
            None => String::new(),
        }
    )))
}

#[cfg(test)]
mod tests {
    #[test]
    fn tcp_targets() {
        // (url, host and port, or a part of the error)
        type Want<'a> = Result<(&'a str, u16), &'a str>;
        let rows: [(&str, Want); 6] = [
            ("tcp://127.0.0.1:9090", Ok(("127.0.0.1", 9090))),
            ("tcp://[::1]:9090/", Ok(("::1", 9090))),
            ("tcp://127.0.0.1", Err("no port")),
            ("tcp://127.0.0.1:0", Err("port 0")),
            ("tcp://127.0.0.1:9090/call", Err("no path")),
            ("tcp://:9090", Err("host")),
        ];
        for (url, want) in rows {
            match (super::tcp_target(url), want) {
                (Ok(t), Ok((host, port))) => assert_eq!((t.host.as_str(), t.port), (host, port)),
                (Err(e), Err(part)) => assert!(e.0.contains(part), "{url}: {e}"),
                (got, _) => panic!("{url}: {got:?}"),
            }
        }
    }
}
