//! `--resolve HOST:PORT:ADDR` (curl's): connect to ADDR where the URL names HOST:PORT, HOST kept
//! for SNI and the Host header (`:authority` over HTTP/2 and HTTP/3): a server that needs a
//! name (no client sends SNI for an IP address) reached at an address DNS does not give.
//! Every protocol connects to the plan's one resolved address, so it applies to all of them.

use super::plan::PlanError;
use crate::model::Target;
use clap::Args;
use std::net::{IpAddr, ToSocketAddrs};

/// `--resolve HOST:PORT:ADDR`, as given.
#[derive(Debug, Clone, Default, Args)]
pub struct ResolveArgs {
    /// Connect to ADDR where the URL names HOST:PORT, as curl's --resolve: HOST stays the SNI
    /// name and the Host header (e.g. --resolve example.com:443:10.0.0.5; an IPv6 ADDR in
    /// brackets). Repeatable; an entry for another host or port is refused.
    #[arg(
        help_heading = "Protocol",
        long = "resolve",
        value_name = "HOST:PORT:ADDR"
    )]
    pub resolve: Vec<String>,
}

/// One `--resolve` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The host name the entry is for.
    pub host: String,
    /// The port the entry is for.
    pub port: u16,
    /// The address to connect to instead of looking the name up.
    pub addr: IpAddr,
}

/// Parses an entry: `HOST:PORT:ADDR`, ADDR an IPv4 address or an IPv6 one (brackets optional).
pub fn parse(raw: &str) -> Result<Entry, PlanError> {
    let bad = |why: &str| {
        PlanError(format!(
            "--resolve '{raw}': {why} (HOST:PORT:ADDR, e.g. example.com:443:127.0.0.1)"
        ))
    };
    let mut parts = raw.splitn(3, ':');
    let (Some(host), Some(port), Some(addr)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("three parts are needed"));
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| bad(&format!("'{port}' is not a port (1-65535)")))?;
    let bare = addr.trim_start_matches('[').trim_end_matches(']');
    let addr: IpAddr = bare
        .parse()
        .map_err(|_| bad(&format!("'{addr}' is not an IP address")))?;
    Ok(Entry {
        host: host.to_ascii_lowercase(),
        port,
        addr,
    })
}

/// The address `--resolve` gives for `host`:`port`, after checking every entry (one that is
/// malformed, or names another host or port than the URL's, is refused in one line).
pub fn lookup(entries: &[String], host: &str, port: u16) -> Result<Option<IpAddr>, PlanError> {
    let mut found = None;
    for raw in entries {
        let e = parse(raw)?;
        if !e.host.eq_ignore_ascii_case(host) || e.port != port {
            return Err(PlanError(format!(
                "--resolve '{raw}' is for {}:{}, but the URL names {host}:{port}",
                e.host, e.port
            )));
        }
        found = Some(e.addr);
    }
    Ok(found)
}

/// The schemes a run's URL may have: HTTP (HTTP/1.1, HTTP/2 and gRPC; HTTP/3 on `https://`)
/// framed binary requests over TCP, and WebSocket over TCP or TLS. [`target`] refuses every
/// other one with this list; `run --help` and the manual list the same
/// (`tests/checks/drift.rs`).
pub const URL_SCHEMES: [&str; 5] = ["http://", "https://", "tcp://", "ws://", "wss://"];

/// The scheme of `url` (`ftp://` of `ftp://x/`), when it starts with one as RFC 3986 writes
/// it (a letter, then letters, digits, `+`, `-` or `.`).
fn scheme_of(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| &url[..scheme.len() + 3])
}

/// What to do when the URL's host does not resolve.
const DNS_HINT: &str = "check the host name in the URL (a typo?) and the DNS (/etc/resolv.conf)";

/// Parses and resolves the URL of a run (once, before it starts: a name that does not resolve
/// is bad input, exit 2), with `--resolve` entries: the address of the URL's host and port is
/// theirs, not DNS's.
pub fn target(url: &str, resolve: &[String]) -> Result<Target, PlanError> {
    if let Some(scheme) = scheme_of(url) {
        if !URL_SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            let (last, rest) = URL_SCHEMES.split_last().expect("schemes");
            let known = format!("{} and {last}", rest.join(", "));
            return Err(PlanError(format!(
                "unsupported scheme '{}' in URL '{url}': reqlife speaks {known}",
                scheme.trim_end_matches("://")
            )));
        }
    }
    if super::framed::is_tcp(url) {
        let mut t = super::framed::tcp_target(url)?;
        if let Some(ip) = lookup(resolve, &t.host, t.port)? {
            t.addr = std::net::SocketAddr::new(ip, t.port);
        }
        return Ok(t);
    }
    let (scheme, host, port, path_and_query) = match super::websocket::as_http(url) {
        Some(http) => crate::model::split_url(&http)
            .map_err(|e| PlanError(e.to_string().replace(&http, url).replace("http", "ws")))?,
        None => crate::model::split_url(url)?,
    };
    if let Some(ip) = lookup(resolve, &host, port)? {
        return Ok(Target {
            url: url.to_string(),
            scheme,
            addr: std::net::SocketAddr::new(ip, port),
            host,
            port,
            path_and_query,
            resolved_in: None,
        });
    }
    let (addr, resolved_in) = address_of(&host, port)?;
    Ok(Target {
        url: url.to_string(),
        scheme,
        host,
        port,
        path_and_query,
        addr,
        resolved_in,
    })
}

/// The address of `host`, looked up by the system's resolver when it is a name: and then how
/// long the lookup took (stated beside the run's figures); a name that does not resolve is bad
/// input, one line.
pub(super) fn address_of(
    host: &str,
    port: u16,
) -> Result<(std::net::SocketAddr, Option<std::time::Duration>), PlanError> {
    let looked_up = host.parse::<std::net::IpAddr>().is_err();
    let asked = std::time::Instant::now();
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| PlanError(format!("cannot resolve host '{host}': {e}: {DNS_HINT}")))?
        .next()
        .ok_or_else(|| {
            PlanError(format!(
                "cannot resolve host '{host}': no address found: {DNS_HINT}"
            ))
        })?;
    Ok((addr, looked_up.then(|| asked.elapsed())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_parsed_or_refused_in_one_line() {
        let e = parse("Example.com:443:10.0.0.5").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("example.com", 443));
        assert_eq!(e.addr, "10.0.0.5".parse::<IpAddr>().unwrap());
        assert_eq!(parse("h:8443:[::1]").unwrap().addr.to_string(), "::1");
        assert_eq!(parse("h:8443:::1").unwrap().addr.to_string(), "::1");
        for (raw, why) in [
            ("h:443", "three parts"),
            (":443:1.2.3.4", "no host"),
            ("h:x:1.2.3.4", "'x' is not a port"),
            ("h:0:1.2.3.4", "'0' is not a port"),
            ("h:443:nope", "'nope' is not an IP address"),
        ] {
            let e = parse(raw).unwrap_err().0;
            assert!(e.contains(why) && !e.contains('\n'), "{raw}: {e}");
        }
        let e = lookup(&["a:1:1.2.3.4".into()], "b", 1).unwrap_err().0;
        assert!(e.contains("is for a:1, but the URL names b:1"), "{e}");
        assert_eq!(lookup(&[], "b", 1).unwrap(), None);
    }
}
