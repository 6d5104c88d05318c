//! One HTTP/1.1 request made of templates: a [`RequestSpec`] (method, path, headers, body,
//! independent of the target) becomes a [`PreparedRequest`] for a target, which renders a
//! whole request into a reused buffer per send. The head rules live here once, for the
//! templated requests and for the fixed request of the command line
//! (`RequestTemplate::http1` goes through [`RequestSpec::prepare`] too):
//!
//! - the request line `METHOD PATH HTTP/1.1`;
//! - `Host` unless the user gave one: the host (IPv6 in brackets), with `:port` unless it is
//!   the scheme's default;
//! - `User-Agent: reqlife/VERSION` unless the user gave one;
//! - `Connection: close` when connections are not kept alive, unless the user gave a
//!   `Connection`;
//! - the user's headers, in order;
//! - `Content-Length` unless the user gave one, when the body is not empty or the method is
//!   POST, PUT or PATCH (which servers expect a length from); it is the length of the body
//!   rendered for this very request;
//! - a blank line and the body.
//!
//! A request whose templates are all static is rendered once, at prepare: sending it is one
//! copy, as before templates existed.

use super::gen::{self, GenState};
use super::template::Template;
use crate::model::{Scheme, Target};

/// What `Accept-Encoding` asks for with `--compressed`.
pub const ACCEPT_ENCODING: &str = "gzip, deflate, br";

/// Whether `s` is an RFC 9110 token (a method or a header name).
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What to send, independent of the target: templates for the path and query, the header
/// values and the body. Names and the method are checked by whoever builds it (scenario,
/// targets file, command line).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    /// Index of the request among those rendered with one [`GenState`]: it selects the
    /// request's own sequence counter (see [`GenState::next_seq`]).
    pub id: usize,
    /// The name reports use (`put`, `GET /a`).
    pub name: String,
    /// The HTTP method.
    pub method: String,
    /// `/path?query`, parsed for [`Field::Path`](super::template::Field::Path).
    pub path: Template,
    /// Header names and value templates, in the order to send.
    pub headers: Vec<(String, Template)>,
    /// The body's template.
    pub body: Template,
}

impl RequestSpec {
    /// A request with no generator: the command line's `-m`, URL path, `-H` and `--body`.
    pub fn fixed(method: &str, path: &str, headers: &[(String, String)], body: &[u8]) -> Self {
        RequestSpec {
            id: 0,
            name: format!("{method} {path}"),
            method: method.to_string(),
            path: Template::literal(path),
            headers: headers
                .iter()
                .map(|(n, v)| (n.clone(), Template::literal(v.as_bytes())))
                .collect(),
            body: Template::literal(body),
        }
    }

    /// Whether every template is static: the request is the same bytes every time.
    pub fn is_static(&self) -> bool {
        self.path.is_static()
            && self.body.is_static()
            && self.headers.iter().all(|(_, v)| v.is_static())
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }

    /// The request for `target`, with connections kept alive or not: the head rules of the
    /// module doc applied once, so that a send only renders the templates.
    pub fn prepare(&self, target: &Target, keepalive: bool) -> PreparedRequest {
        self.prepare_with(target, keepalive, false)
    }

    /// [`RequestSpec::prepare`], also asking for compressed responses (`--compressed`:
    /// `Accept-Encoding: gzip, deflate, br` unless the request names its own).
    pub fn prepare_with(
        &self,
        target: &Target,
        keepalive: bool,
        compressed: bool,
    ) -> PreparedRequest {
        let mut after_path = b" HTTP/1.1\r\n".to_vec();
        if !self.has_header("host") {
            let default_port = match target.scheme {
                Scheme::Http => 80,
                Scheme::Https => 443,
            };
            after_path.extend_from_slice(b"Host: ");
            if target.host.contains(':') {
                after_path.push(b'[');
                after_path.extend_from_slice(target.host.as_bytes());
                after_path.push(b']');
            } else {
                after_path.extend_from_slice(target.host.as_bytes());
            }
            if target.port != default_port {
                after_path.push(b':');
                gen::push_u64(&mut after_path, target.port as u64);
            }
            after_path.extend_from_slice(b"\r\n");
        }
        if !self.has_header("user-agent") {
            after_path.extend_from_slice(
                concat!("User-Agent: reqlife/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        if !keepalive && !self.has_header("connection") {
            // A connection per request: tell the server, so that it closes too.
            after_path.extend_from_slice(b"Connection: close\r\n");
        }
        if compressed && !self.has_header("accept-encoding") {
            after_path.extend_from_slice(b"Accept-Encoding: ");
            after_path.extend_from_slice(ACCEPT_ENCODING.as_bytes());
            after_path.extend_from_slice(b"\r\n");
        }
        let mut prepared = PreparedRequest {
            id: self.id,
            method_sp: format!("{} ", self.method).into_bytes().into(),
            path: self.path.clone(),
            after_path: after_path.into(),
            headers: self
                .headers
                .iter()
                .map(|(n, v)| (format!("{n}: ").into_bytes().into(), v.clone()))
                .collect(),
            content_length: !self.has_header("content-length"),
            body_method: matches!(self.method.as_str(), "POST" | "PUT" | "PATCH"),
            body_len: self.body.fixed_len(),
            body: self.body.clone(),
            fixed: None,
            head: self.method.eq_ignore_ascii_case("HEAD"),
        };
        if self.is_static() {
            let mut bytes = Vec::new();
            // Static templates draw nothing: any state will do.
            prepared.render_dynamic(&mut bytes, &mut GenState::new(0, 0, 1), 0);
            prepared.fixed = Some(bytes.into());
        }
        prepared
    }
}

/// A request rendered as its parts rather than HTTP/1.1 bytes: the request's id (which
/// [`PreparedRequest`] gives the method and header names), the path and query, the value of
/// each user header (in order) and the body. Reused from send to send (no allocation once
/// grown).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parts {
    /// The request's id (its [`PreparedRequest`] gives the method and header names).
    pub id: usize,
    /// The path and query.
    pub path: Vec<u8>,
    /// Each user header's value, in order.
    pub values: Vec<Vec<u8>>,
    /// The body.
    pub body: Vec<u8>,
}

/// One send's rendered request, reused by a connection: HTTP/1.1 bytes, or the parts of a
/// request for HTTP/2 and gRPC ([`Workload::parts`](super::Workload::parts) says which).
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// HTTP/1.1: the whole request.
    pub bytes: Vec<u8>,
    /// HTTP/2 and gRPC: the request's parts.
    pub parts: Parts,
}

/// A request ready to render for one target; shared by all workers (it is read-only: put it
/// in an `Arc`), each rendering with its own [`GenState`].
#[derive(Debug, Clone)]
pub struct PreparedRequest {
    id: usize,
    /// `METHOD `.
    method_sp: Box<[u8]>,
    path: Template,
    /// ` HTTP/1.1\r\n` and the headers reqlife adds (Host, User-Agent, Connection).
    after_path: Box<[u8]>,
    /// `Name: ` and the value template of each user header.
    headers: Vec<(Box<[u8]>, Template)>,
    /// reqlife writes Content-Length (the user gave none).
    content_length: bool,
    /// POST, PUT, PATCH: Content-Length even for an empty body.
    body_method: bool,
    /// The body's length when it is always the same.
    body_len: Option<usize>,
    body: Template,
    /// The whole request, when every template is static.
    fixed: Option<Box<[u8]>>,
    head: bool,
}

impl PreparedRequest {
    /// Appends the next request to `out`: its sequence number is this worker's next for this
    /// request ([`GenState::next_seq`], strided over workers). The hot-path call: it allocates
    /// nothing once `out` and the state's scratch buffer have grown to the largest request.
    pub fn render_into(&self, out: &mut Vec<u8>, state: &mut GenState) {
        match &self.fixed {
            Some(bytes) => out.extend_from_slice(bytes),
            None => {
                let seq = state.next_seq(self.id);
                self.render_dynamic(out, state, seq);
            }
        }
    }

    /// Appends the request with the sequence number `seq` chosen by the caller (e.g. a
    /// run-wide claim number, so that a fill phase stopping on a shared count covers its keys
    /// exactly whatever the workers' speeds).
    pub fn render_at(&self, out: &mut Vec<u8>, state: &mut GenState, seq: u64) {
        match &self.fixed {
            Some(bytes) => out.extend_from_slice(bytes),
            None => self.render_dynamic(out, state, seq),
        }
    }

    fn render_dynamic(&self, out: &mut Vec<u8>, state: &mut GenState, seq: u64) {
        out.extend_from_slice(&self.method_sp);
        self.path.render_into(out, state, seq);
        out.extend_from_slice(&self.after_path);
        for (name, value) in &self.headers {
            out.extend_from_slice(name);
            value.render_into(out, state, seq);
            out.extend_from_slice(b"\r\n");
        }
        if !self.content_length {
            out.extend_from_slice(b"\r\n");
            self.body.render_into(out, state, seq);
            return;
        }
        match self.body_len {
            Some(len) => {
                self.write_content_length(out, len);
                self.body.render_into(out, state, seq);
            }
            None => {
                // The length is known once the body is rendered: render it aside first. The
                // scratch buffer is taken out of the state (no allocation) and put back.
                let mut scratch = std::mem::take(&mut state.scratch);
                scratch.clear();
                self.body.render_into(&mut scratch, state, seq);
                self.write_content_length(out, scratch.len());
                out.extend_from_slice(&scratch);
                state.scratch = scratch;
            }
        }
    }

    /// Writes `Content-Length` (when the rules ask for it) and the blank line.
    fn write_content_length(&self, out: &mut Vec<u8>, len: usize) {
        if len > 0 || self.body_method {
            out.extend_from_slice(b"Content-Length: ");
            gen::push_u64(out, len as u64);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }

    /// Renders the request with the sequence number `seq` as its parts (see [`Parts`]): the
    /// protocols that do not send HTTP/1.1 bytes (HTTP/2, gRPC) build their own request from
    /// them, with this request's [`method`](Self::method) and
    /// [`header names`](Self::header_names). None of HTTP/1.1's head rules apply.
    pub fn render_parts(&self, parts: &mut Parts, state: &mut GenState, seq: u64) {
        parts.id = self.id;
        parts.path.clear();
        self.path.render_into(&mut parts.path, state, seq);
        parts.values.resize_with(self.headers.len(), Vec::new);
        for ((_, value), out) in self.headers.iter().zip(parts.values.iter_mut()) {
            out.clear();
            value.render_into(out, state, seq);
        }
        parts.body.clear();
        self.body.render_into(&mut parts.body, state, seq);
    }

    /// The method (`GET`).
    pub fn method(&self) -> &str {
        let m = &self.method_sp[..self.method_sp.len() - 1];
        std::str::from_utf8(m).expect("the method is a token")
    }

    /// The names of the user's headers, in the order of [`Parts::values`].
    pub fn header_names(&self) -> impl Iterator<Item = &str> {
        self.headers.iter().map(|(name, _)| {
            let n = &name[..name.len() - 2];
            std::str::from_utf8(n).expect("a header name is a token")
        })
    }

    /// The whole request when it is the same every time (the engine's one-buffer fast path).
    pub fn static_bytes(&self) -> Option<&[u8]> {
        self.fixed.as_deref()
    }

    /// Whether the method is HEAD: responses carry no body whatever their headers say.
    pub fn is_head(&self) -> bool {
        self.head
    }

    /// The id of the request (its sequence counter).
    pub fn id(&self) -> usize {
        self.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::template::{Field, Sources};

    fn target(host: &str, port: u16, scheme: Scheme) -> Target {
        Target {
            url: String::new(),
            scheme,
            host: host.to_string(),
            port,
            path_and_query: "/".into(),
            addr: "127.0.0.1:9".parse().unwrap(),
            resolved_in: None,
        }
    }

    fn spec(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> RequestSpec {
        let mut src = Sources::new(".");
        RequestSpec {
            id: 0,
            name: "t".into(),
            method: method.into(),
            path: Template::parse_in(path, Field::Path, &mut src).unwrap(),
            headers: headers
                .iter()
                .map(|(n, v)| {
                    let v = Template::parse_in(v, Field::Header, &mut src).unwrap();
                    (n.to_string(), v)
                })
                .collect(),
            body: Template::parse_in(body, Field::Body, &mut src).unwrap(),
        }
    }

    fn render(p: &PreparedRequest, state: &mut GenState) -> String {
        let mut out = Vec::new();
        p.render_into(&mut out, state);
        String::from_utf8(out).unwrap()
    }

    const UA: &str = concat!("User-Agent: reqlife/", env!("CARGO_PKG_VERSION"), "\r\n");

    #[test]
    fn templated_requests_follow_the_head_rules() {
        let t = target("127.0.0.1", 8080, Scheme::Http);
        let mut state = GenState::new(1, 0, 1);
        // (spec, keep-alive, the request with seq 0)
        let rows: Vec<(RequestSpec, bool, String)> = vec![
            // a GET: no Content-Length
            (
                spec("GET", "/kv/{seq}", &[], ""),
                true,
                format!("GET /kv/0 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{UA}\r\n"),
            ),
            // a PUT with a body of unknown length: Content-Length of the rendered body
            (
                spec("PUT", "/kv/{seq}", &[("Content-Type", "text/plain")], "v{seq}"),
                true,
                format!(
                    "PUT /kv/0 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{UA}Content-Type: text/plain\r\nContent-Length: 2\r\n\r\nv0"
                ),
            ),
            // a POST with an empty body still says Content-Length: 0
            (
                spec("POST", "/a", &[], ""),
                true,
                format!("POST /a HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{UA}Content-Length: 0\r\n\r\n"),
            ),
            // no keep-alive: Connection: close; the user's Host and User-Agent win
            (
                spec("GET", "/", &[("Host", "h.test"), ("user-agent", "me")], ""),
                false,
                "GET / HTTP/1.1\r\nConnection: close\r\nHost: h.test\r\nuser-agent: me\r\n\r\n".into(),
            ),
            // the user's Content-Length is kept and none is added
            (
                spec("POST", "/", &[("Content-Length", "3")], "abc"),
                true,
                format!("POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n{UA}Content-Length: 3\r\n\r\nabc"),
            ),
        ];
        for (spec, keepalive, want) in rows {
            let p = spec.prepare(&t, keepalive);
            assert_eq!(render(&p, &mut GenState::new(1, 0, 1)), want);
            // rendering again gives the next sequence number, same length rules
            let _ = render(&p, &mut state);
        }
    }

    #[test]
    fn content_length_matches_every_rendered_body() {
        let t = target("::1", 443, Scheme::Https);
        // bodies of fixed and of varying length
        for body in [
            "{random_text:100}",
            "{seq}-{choice:a|bbb|cccccc}",
            "{uniform:-99999:99999}",
        ] {
            let p =
                spec("PUT", "/kv/{zipf:1000:1.1}", &[("X-Id", "{uuid}")], body).prepare(&t, true);
            assert!(p.static_bytes().is_none());
            let mut state = GenState::new(3, 0, 1);
            let mut out = Vec::new();
            for _ in 0..300 {
                out.clear();
                p.render_into(&mut out, &mut state);
                let text = String::from_utf8(out.clone()).unwrap();
                assert!(
                    text.contains("Host: [::1]\r\n"),
                    "default port left out: {text}"
                );
                let (head, body) = text.split_once("\r\n\r\n").unwrap();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .unwrap()
                    .parse()
                    .unwrap();
                assert_eq!(len, body.len(), "{text}");
            }
        }
    }

    #[test]
    fn sequence_numbers_are_per_request_and_shared_by_its_templates() {
        let t = target("127.0.0.1", 80, Scheme::Http);
        let mut a = spec("PUT", "/kv/{seq}", &[], "{seq}").prepare(&t, true);
        let mut b = spec("GET", "/kv/{seq}", &[], "").prepare(&t, true);
        a.id = 0;
        b.id = 1;
        // worker 1 of 2: numbers 1, 3, 5… for each request separately
        let mut state = GenState::new(0, 1, 2);
        let first = |s: String| s.lines().next().unwrap().to_string();
        assert_eq!(first(render(&a, &mut state)), "PUT /kv/1 HTTP/1.1");
        assert_eq!(first(render(&b, &mut state)), "GET /kv/1 HTTP/1.1");
        let again = render(&a, &mut state);
        assert!(
            again.starts_with("PUT /kv/3 ") && again.ends_with("\r\n\r\n3"),
            "{again}"
        );
        let mut out = Vec::new();
        b.render_at(&mut out, &mut state, 77);
        assert!(out.starts_with(b"GET /kv/77 "));
    }

    #[test]
    fn parts_are_the_templates_without_the_head_rules() {
        let t = target("127.0.0.1", 8080, Scheme::Http);
        let p = spec(
            "PUT",
            "/kv/{seq}",
            &[("X-Id", "n{seq}"), ("Accept", "*/*")],
            "v{seq}",
        )
        .prepare(&t, false);
        assert_eq!(p.method(), "PUT");
        assert_eq!(p.header_names().collect::<Vec<_>>(), ["X-Id", "Accept"]);
        let mut parts = Parts::default();
        let mut state = GenState::new(0, 0, 1);
        for seq in [7, 8] {
            p.render_parts(&mut parts, &mut state, seq);
            // no Host, User-Agent, Connection or Content-Length: those are HTTP/1.1's
            let want = Parts {
                id: 0,
                path: format!("/kv/{seq}").into_bytes(),
                values: vec![format!("n{seq}").into_bytes(), b"*/*".to_vec()],
                body: format!("v{seq}").into_bytes(),
            };
            assert_eq!(parts, want);
        }
    }

    #[test]
    fn static_requests_are_rendered_once() {
        let t = target("127.0.0.1", 8080, Scheme::Http);
        let p = RequestSpec::fixed("HEAD", "/{x}", &[], b"").prepare(&t, true);
        assert!(p.is_head());
        let bytes = p.static_bytes().unwrap().to_vec();
        assert!(
            bytes.starts_with(b"HEAD /{x} HTTP/1.1\r\n"),
            "no parsing of fixed text"
        );
        let mut state = GenState::new(0, 0, 1);
        assert_eq!(render(&p, &mut state).as_bytes(), bytes);
    }
}
