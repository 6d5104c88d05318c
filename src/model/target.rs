//! Where a run goes: a URL checked and split into its parts ([`split_url`], the one place URLs
//! are checked), the resolved [`Target`] of a run, and its TLS settings ([`TlsPlan`]).

use super::ModelError;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain `http`: TCP without TLS.
    Http,
    /// `https`: TLS over TCP (or QUIC for HTTP/3).
    Https,
}

const URL_FORMS: &str = "expected http://host[:port][/path] or https://host[:port][/path]";

/// Splits an absolute `http://` or `https://` URL into its scheme, host (IPv6 without
/// brackets), port (the scheme's default if none) and `/path?query`, without resolving the
/// host. The one place URLs are checked (`--targets` lists use it too).
pub fn split_url(url: &str) -> Result<(Scheme, String, u16, String), ModelError> {
    use ModelError::Url;
    // `localhost:8080/` (no scheme, a path) does not parse as a URI, where `127.0.0.1:8080`
    // parses as an authority: both get the same line, with the URL they probably meant.
    let mistyped = ["http:", "https:"].iter().any(|s| {
        url.get(..s.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(s))
    });
    // A path alone (`/relative`, in a target list) names no host to guess from.
    let path_only = url.starts_with('/') && !url.starts_with("//");
    if !url.contains("://") && !mistyped && !path_only {
        let meant = format!("http://{}", url.strip_prefix("//").unwrap_or(url));
        if matches!(meant.parse::<http::Uri>(), Ok(u) if u.host().is_some_and(|h| !h.is_empty())) {
            return Err(Url(format!(
                "invalid URL '{url}': no scheme; did you mean {meant}?"
            )));
        }
    }
    let uri: http::Uri = url
        .parse()
        .map_err(|e| Url(format!("invalid URL '{url}': {e}; {URL_FORMS}")))?;
    let scheme = match uri.scheme_str() {
        Some("http") => Scheme::Http,
        Some("https") => Scheme::Https,
        Some(other) => {
            return Err(Url(format!(
                "unsupported scheme '{other}' in URL '{url}': reqlife speaks http:// and https://"
            )))
        }
        None => return Err(Url(format!("invalid URL '{url}': no scheme; {URL_FORMS}"))),
    };
    let authority = match uri.authority() {
        Some(a) if !a.host().is_empty() => a,
        _ => return Err(Url(format!("invalid URL '{url}': no host; {URL_FORMS}"))),
    };
    if authority.as_str().contains('@') {
        return Err(Url(format!(
            "invalid URL '{url}': user information (user@host) is not supported; use -H 'Authorization: ...'"
        )));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = authority.port_u16().unwrap_or(match scheme {
        Scheme::Http => 80,
        Scheme::Https => 443,
    });
    if port == 0 {
        return Err(Url(format!(
            "invalid URL '{url}': port 0 cannot be connected to"
        )));
    }
    let path_and_query = uri
        .path_and_query()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty())
        .unwrap_or("/")
        .to_string();
    let path_and_query = if path_and_query.starts_with('/') {
        path_and_query
    } else {
        format!("/{path_and_query}")
    };
    Ok((scheme, host, port, path_and_query))
}

/// The target of a run: where to connect and what to put in the request line and Host header.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as the user gave it (or as made for the embedded target).
    pub url: String,
    /// `http` or `https`, from the URL.
    pub scheme: Scheme,
    /// Host name as written in the URL (used for SNI and the Host header).
    pub host: String,
    /// The port to connect to: the URL's, else 80 for `http` and 443 for `https`.
    pub port: u16,
    /// `/path?query`.
    pub path_and_query: String,
    /// The resolved address connected to.
    pub addr: SocketAddr,
    /// How long the system's resolver took to find `addr`, when the host was a name it looked
    /// up (once, before the run: no request waits for it).
    pub resolved_in: Option<std::time::Duration>,
}

/// TLS settings of a run.
#[derive(Debug, Clone, Default)]
pub struct TlsPlan {
    /// Skip certificate verification (`--insecure`).
    pub insecure: bool,
    /// The `--cacert` file, as given (for the record).
    pub cacert: Option<PathBuf>,
    /// Its certificates (DER), read and checked when the plan was built.
    pub ca_certs: Vec<Vec<u8>>,
}
