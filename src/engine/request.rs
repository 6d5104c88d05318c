//! The requests of a run. HTTP/1.1 has its byte fast path: the fixed request's bytes prepared
//! once ([`RequestTemplate`]), with the head rules of templated requests ([`RequestSpec`]).
//! Every other protocol (HTTP/2, gRPC over it, HTTP/3) sends a protocol-neutral [`Request`]
//! (method, URI with its authority, headers, body): the run's fixed one, or one built per send
//! from a templated request's rendered [`Parts`] ([`Request::with_parts`]), never by parsing
//! HTTP/1.1 bytes.

use crate::model::Scheme;
use crate::plan::RunPlan;
use crate::workload::gen::GenState;
use crate::workload::request::{Parts, PreparedRequest, RequestSpec, ACCEPT_ENCODING};
use bytes::Bytes;

/// A request independent of its wire format: what an HTTP/2 or HTTP/3 stream (and a gRPC
/// call) sends.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: http::Method,
    /// The absolute URI: its scheme and authority become `:scheme` and `:authority`.
    pub uri: http::Uri,
    /// The regular headers (no pseudo-headers).
    pub headers: http::HeaderMap,
    /// The body; empty for none.
    pub body: Bytes,
}

/// Headers that are the connection's business, not a request's, in HTTP/2 (`host` is
/// `:authority`, `content-length` the body's own).
fn connection_specific(lower: &str) -> bool {
    matches!(
        lower,
        "connection" | "keep-alive" | "transfer-encoding" | "upgrade" | "host" | "content-length"
    )
}

impl Request {
    /// The request of a templated `prepared` request rendered as `parts`, on this (the run's
    /// fixed) request's scheme and authority: its method and path, this request's headers
    /// (`user-agent`, `accept-encoding` as asked) with the user's replacing those of the same
    /// name and connection-specific ones dropped, and the rendered body.
    pub fn with_parts(&self, prepared: &PreparedRequest, parts: &Parts) -> Result<Request, String> {
        let method = http::Method::from_bytes(prepared.method().as_bytes())
            .map_err(|e| format!("invalid method '{}': {e}", prepared.method()))?;
        let mut uri = self.uri.clone().into_parts();
        uri.path_and_query = Some(
            http::uri::PathAndQuery::try_from(parts.path.as_slice()).map_err(|e| {
                format!(
                    "invalid path '{}': {e}",
                    String::from_utf8_lossy(&parts.path)
                )
            })?,
        );
        let uri = http::Uri::from_parts(uri).map_err(|e| format!("invalid URL: {e}"))?;
        let mut headers = self.headers.clone();
        let mut replaced = Vec::new();
        for (name, value) in prepared.header_names().zip(&parts.values) {
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| format!("invalid header name '{name}': {e}"))?;
            if connection_specific(name.as_str()) {
                continue;
            }
            let value = http::HeaderValue::from_bytes(value)
                .map_err(|e| format!("invalid value of header '{name}': {e}"))?;
            // The user's header replaces reqlife's default of that name, once.
            if !replaced.contains(&name) {
                headers.remove(&name);
                replaced.push(name.clone());
            }
            headers.append(name, value);
        }
        Ok(Request {
            method,
            uri,
            headers,
            body: Bytes::copy_from_slice(&parts.body),
        })
    }

    /// The head of the request, for h2 and h3 (the body goes in DATA frames).
    pub fn head(&self) -> http::Request<()> {
        let mut req = http::Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

/// A request ready to be written as is.
#[derive(Debug, Clone)]
pub struct RequestTemplate {
    bytes: Vec<u8>,
    /// The method is HEAD: responses carry no body whatever their headers say.
    pub head: bool,
}

impl RequestTemplate {
    /// Prepares the HTTP/1.1 request of `plan`: the request line, `Host` (unless given),
    /// `User-Agent` (unless given), the user's headers, `Content-Length` when there is a body
    /// (or the method usually has one), then the body. The rules are those of templated
    /// requests ([`RequestSpec::prepare`]): one place, so the two cannot drift.
    pub fn http1(plan: &RunPlan) -> Self {
        let spec = RequestSpec::fixed(
            &plan.method,
            &plan.target.path_and_query,
            &plan.headers,
            &plan.body,
        );
        let prepared = spec.prepare_with(&plan.target, plan.keepalive, plan.compressed);
        let mut bytes = Vec::with_capacity(256 + plan.body.len());
        // A fixed request has no generator: the state is not drawn from.
        prepared.render_into(&mut bytes, &mut GenState::new(0, 0, 1));
        RequestTemplate {
            bytes,
            head: prepared.is_head(),
        }
    }

    /// The HTTP/2 request of `plan`: the absolute URI (its authority becomes `:authority`),
    /// the user's headers (lower-cased, hop-by-hop ones dropped), `user-agent` unless given.
    pub fn http2(plan: &RunPlan) -> Result<Request, super::SetupError> {
        let t = &plan.target;
        let scheme = match t.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        let host = if t.host.contains(':') {
            format!("[{}]", t.host)
        } else {
            t.host.clone()
        };
        let uri: http::Uri = format!("{scheme}://{host}:{}{}", t.port, t.path_and_query)
            .parse()
            .map_err(|e| super::SetupError(format!("invalid URL for HTTP/2: {e}")))?;
        let mut headers = http::HeaderMap::new();
        for (name, value) in &plan.headers {
            let lower = name.to_ascii_lowercase();
            // Connection-specific headers are not allowed in HTTP/2; Host is :authority.
            if connection_specific(&lower) {
                continue;
            }
            let name = http::HeaderName::from_bytes(lower.as_bytes())
                .map_err(|e| super::SetupError(format!("invalid header name '{name}': {e}")))?;
            let value = http::HeaderValue::from_str(value)
                .map_err(|e| super::SetupError(format!("invalid header value '{value}': {e}")))?;
            headers.append(name, value);
        }
        if plan.compressed && !headers.contains_key(http::header::ACCEPT_ENCODING) {
            headers.insert(
                http::header::ACCEPT_ENCODING,
                http::HeaderValue::from_static(ACCEPT_ENCODING),
            );
        }
        if !headers.contains_key(http::header::USER_AGENT) {
            headers.insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static(concat!("reqlife/", env!("CARGO_PKG_VERSION"))),
            );
        }
        let method = http::Method::from_bytes(plan.method.as_bytes())
            .map_err(|e| super::SetupError(format!("invalid method '{}': {e}", plan.method)))?;
        Ok(Request {
            method,
            uri,
            headers,
            body: Bytes::from(plan.body.clone()),
        })
    }

    /// The bytes to write.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn template(flags: &[&str], url: &str) -> String {
        let mut argv = vec!["reqlife", "run"];
        argv.extend_from_slice(flags);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        let plan = crate::cli::plan::build(&args, url).unwrap();
        String::from_utf8(RequestTemplate::http1(&plan).bytes().to_vec()).unwrap()
    }

    #[test]
    fn get_has_host_and_no_length() {
        let ua = format!("User-Agent: reqlife/{}\r\n", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            template(&[], "http://127.0.0.1:8080/a?b=1"),
            format!("GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{ua}\r\n")
        );
        // the default port is left out of Host
        assert!(template(&[], "http://127.0.0.1/").contains("Host: 127.0.0.1\r\n"));
    }

    #[test]
    fn post_with_body_and_headers() {
        let s = template(
            &[
                "-m",
                "POST",
                "-H",
                "Content-Type: text/plain",
                "--body",
                "hi",
            ],
            "http://127.0.0.1:8080/echo",
        );
        assert!(s.starts_with("POST /echo HTTP/1.1\r\n"));
        assert!(s.contains("Content-Type: text/plain\r\n"));
        assert!(s.ends_with("Content-Length: 2\r\n\r\nhi"), "{s}");
    }

    #[test]
    fn user_headers_override_host_and_agent() {
        let s = template(
            &["-H", "Host: example.test", "-H", "User-Agent: me"],
            "http://127.0.0.1:8080/",
        );
        assert_eq!(s.matches("Host:").count(), 1);
        assert!(s.contains("Host: example.test\r\n"));
        assert!(!s.contains("reqlife/"));
    }

    #[test]
    fn no_keepalive_asks_the_server_to_close() {
        assert!(template(&["--no-keepalive"], "http://127.0.0.1:8080/")
            .contains("Connection: close\r\n"));
        assert!(!template(&[], "http://127.0.0.1:8080/").contains("Connection:"));
    }

    #[test]
    fn compressed_asks_for_every_coding_unless_the_user_chose() {
        let asked = template(&["--compressed"], "http://127.0.0.1:8080/");
        assert!(
            asked.contains("Accept-Encoding: gzip, deflate, br\r\n"),
            "{asked}"
        );
        let own = template(
            &["--compressed", "-H", "Accept-Encoding: br"],
            "http://127.0.0.1:8080/",
        );
        assert_eq!(own.matches("Accept-Encoding").count(), 1, "{own}");
        assert!(own.contains("Accept-Encoding: br\r\n"));
        assert!(!template(&[], "http://127.0.0.1:8080/").contains("Accept-Encoding"));
    }

    #[test]
    fn a_request_http2_cannot_carry_is_a_setup_error_and_bad_input() {
        use crate::util::exit::ExitCode;
        let Command::Run(args) = Cli::try_parse_from(["reqlife", "run", "--http2"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let mut plan = crate::cli::plan::build(&args, "http://127.0.0.1:8080/x").unwrap();
        plan.headers.push(("X-Bad".into(), "a\u{7f}b".into()));
        let e = RequestTemplate::http2(&plan).unwrap_err();
        assert!(e.0.starts_with("invalid header value 'a\u{7f}b'"), "{e}");
        assert_eq!(e.exit_code(), crate::util::exit::EXIT_USAGE);
    }

    #[test]
    fn templated_http2_requests_are_built_from_their_parts() {
        use crate::workload::template::{Field, Sources, Template};
        let Command::Run(args) = Cli::try_parse_from(["reqlife", "run", "--http2", "--compressed"])
            .unwrap()
            .command
        else {
            unreachable!()
        };
        let plan = crate::cli::plan::build(&args, "http://127.0.0.1:8080/x").unwrap();
        let fixed = RequestTemplate::http2(&plan).unwrap();
        let mut src = Sources::new(".");
        let mut t = |s: &str, f| Template::parse_in(s, f, &mut src).unwrap();
        let spec = RequestSpec {
            id: 0,
            name: "put".into(),
            method: "PUT".into(),
            path: t("/kv/{seq}", Field::Path),
            headers: vec![
                ("User-Agent".into(), t("me", Field::Header)),
                ("X-N".into(), t("{seq}", Field::Header)),
                ("Connection".into(), t("close", Field::Header)),
                ("Host".into(), t("h.test", Field::Header)),
            ],
            body: t("v{seq}", Field::Body),
        };
        let prepared = spec.prepare(&plan.target, true);
        let mut parts = Parts::default();
        prepared.render_parts(&mut parts, &mut GenState::new(0, 0, 1), 42);
        let r = fixed.with_parts(&prepared, &parts).unwrap();
        assert_eq!(r.method, http::Method::PUT);
        assert_eq!(r.uri.to_string(), "http://127.0.0.1:8080/kv/42");
        assert_eq!(r.body.as_ref(), b"v42");
        let h = |name: &str| {
            r.headers
                .get_all(name)
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        // the user's User-Agent replaces reqlife's; --compressed's Accept-Encoding stays;
        // Connection and Host are not HTTP/2 headers (Host is :authority)
        assert_eq!(h("user-agent"), ["me"]);
        assert_eq!(h("x-n"), ["42"]);
        assert_eq!(h("accept-encoding"), [ACCEPT_ENCODING]);
        assert!(h("connection").is_empty() && h("host").is_empty());
    }

    #[test]
    fn ipv6_host_is_bracketed() {
        assert!(template(&[], "http://[::1]:9/").contains("Host: [::1]:9\r\n"));
    }
}
