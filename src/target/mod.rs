//! What is sent: request templates. The bytes of an HTTP/1.1 request are prepared once per
//! template, when the run starts, so that sending a request on the hot path is one write of a
//! ready buffer.
//!
//! Workloads (`--scenario`, `--targets`) build on the submodules: [`template`] (text with
//! generator slots, rendered per request), [`gen`] (the generators and their per-worker
//! state), [`request`] (a whole HTTP/1.1 request of templates, with the head rules shared with
//! [`RequestTemplate::http1`]), [`mix`] (which request to send next), [`scenario`] (the TOML
//! scenario file) and [`targets`] (vegeta's target lists).

pub mod gen;
pub mod mix;
pub mod request;
pub mod scenario;
pub mod targets;
pub mod template;

use crate::model::{RunPlan, Scheme};

/// Most distinct request names whose figures are kept apart (`by_request`): a targets file of
/// thousands of URLs is reported as a whole.
pub const MAX_NAMED: usize = 100;

/// What a run sends when it is not one fixed request: prepared requests (indexed by their
/// id), the mix that picks one per send, and each request's name slot for the per-name
/// figures. Read-only and shared by every worker; each worker renders with its own
/// [`gen::GenState`].
#[derive(Debug)]
pub struct Workload {
    pub requests: Vec<request::PreparedRequest>,
    pub mix: mix::Mix,
    /// The distinct names, in first-seen order (empty when there are more than
    /// [`MAX_NAMED`]).
    pub names: Vec<String>,
    /// Request id → index into `names` (or [`Workload::UNNAMED`]).
    pub slot: Vec<u16>,
}

impl Workload {
    /// The slot of a request whose figures are not kept apart.
    pub const UNNAMED: u16 = u16::MAX;

    /// A workload of `specs` (named by their `name`, prepared for `plan`'s target and
    /// connection policy) picked by `mix`.
    pub fn new(specs: &[request::RequestSpec], mix: mix::Mix, plan: &RunPlan) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut slot = Vec::with_capacity(specs.len());
        for s in specs {
            let i = match names.iter().position(|n| *n == s.name) {
                Some(i) => i,
                None => {
                    names.push(s.name.clone());
                    names.len() - 1
                }
            };
            slot.push(i as u16);
        }
        if names.len() > MAX_NAMED {
            names.clear();
            slot.iter_mut().for_each(|s| *s = Self::UNNAMED);
        }
        Workload {
            requests: specs
                .iter()
                .map(|s| s.prepare_with(&plan.target, plan.keepalive, plan.compressed))
                .collect(),
            mix,
            names,
            slot,
        }
    }
}

/// One worker thread's renderer of a workload: its generator state, shared by the thread's
/// connections (a render never awaits, so a `RefCell` borrow is brief).
#[derive(Debug)]
pub struct Renderer {
    workload: std::sync::Arc<Workload>,
    state: gen::GenState,
}

impl Renderer {
    /// The renderer of worker `worker` of `workers` (over every thread of every segment).
    pub fn new(
        workload: std::sync::Arc<Workload>,
        seed: u64,
        worker: usize,
        workers: usize,
    ) -> Self {
        Renderer {
            workload,
            state: gen::GenState::new(seed, worker, workers),
        }
    }

    /// Picks the next request and renders it into `out` (cleared first) with the sequence
    /// number `seq` (the plan-wide ticket number: each number once over the whole run, so a
    /// fill phase covers its keys exactly). Returns the request's name slot and whether its
    /// method is HEAD.
    pub fn render(&mut self, seq: u64, out: &mut Vec<u8>) -> (u16, bool) {
        let mix = &self.workload.mix;
        // In turn by the plan-wide number: exact shares whatever the threads' speeds.
        let id = if mix.is_round_robin() {
            (seq % self.workload.requests.len().max(1) as u64) as usize
        } else {
            mix.pick(&mut self.state)
        };
        let request = &self.workload.requests[id];
        out.clear();
        request.render_at(out, &mut self.state, seq);
        (self.workload.slot[id], request.is_head())
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
    /// requests ([`request::RequestSpec::prepare`]): one place, so the two cannot drift.
    pub fn http1(plan: &RunPlan) -> Self {
        let spec = request::RequestSpec::fixed(
            &plan.method,
            &plan.target.path_and_query,
            &plan.headers,
            &plan.body,
        );
        let prepared = spec.prepare_with(&plan.target, plan.keepalive, plan.compressed);
        let mut bytes = Vec::with_capacity(256 + plan.body.len());
        // A fixed request has no generator: the state is not drawn from.
        prepared.render_into(&mut bytes, &mut gen::GenState::new(0, 0, 1));
        RequestTemplate {
            bytes,
            head: prepared.is_head(),
        }
    }

    /// The HTTP/2 request of `plan`: the absolute URI (its authority becomes `:authority`),
    /// the user's headers (lower-cased, hop-by-hop ones dropped), `user-agent` unless given.
    pub fn http2(plan: &RunPlan) -> Result<crate::engine::http2::H2Request, String> {
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
            .map_err(|e| format!("invalid URL for HTTP/2: {e}"))?;
        let mut headers = http::HeaderMap::new();
        for (name, value) in &plan.headers {
            let lower = name.to_ascii_lowercase();
            // Connection-specific headers are not allowed in HTTP/2; Host is :authority.
            if matches!(
                lower.as_str(),
                "connection" | "keep-alive" | "transfer-encoding" | "upgrade" | "host"
            ) {
                continue;
            }
            let name = http::HeaderName::from_bytes(lower.as_bytes())
                .map_err(|e| format!("invalid header name '{name}': {e}"))?;
            let value = http::HeaderValue::from_str(value)
                .map_err(|e| format!("invalid header value '{value}': {e}"))?;
            headers.append(name, value);
        }
        if plan.compressed && !headers.contains_key(http::header::ACCEPT_ENCODING) {
            headers.insert(
                http::header::ACCEPT_ENCODING,
                http::HeaderValue::from_static(crate::engine::decode::ACCEPT_ENCODING),
            );
        }
        if !headers.contains_key(http::header::USER_AGENT) {
            headers.insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static(concat!("reqlife/", env!("CARGO_PKG_VERSION"))),
            );
        }
        let method = http::Method::from_bytes(plan.method.as_bytes())
            .map_err(|e| format!("invalid method '{}': {e}", plan.method))?;
        Ok(crate::engine::http2::H2Request {
            method,
            uri,
            headers,
            body: bytes::Bytes::from(plan.body.clone()),
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
    fn ipv6_host_is_bracketed() {
        assert!(template(&[], "http://[::1]:9/").contains("Host: [::1]:9\r\n"));
    }
}
