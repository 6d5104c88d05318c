//! Target lists in vegeta's "http" format (`--targets FILE`, or `--targets -` for standard
//! input), for users who already have them. Each target is a line `METHOD URL`, then optional `Name: value` header lines, then an
//! optional `@path/to/body` line whose file is sent as the body; targets are separated by a
//! blank line; lines starting with `#` are comments:
//!
//! ```text
//! GET http://127.0.0.1:8080/kv/a
//! X-Account-ID: 8675309
//!
//! # a body from a file
//! PUT http://127.0.0.1:8080/kv/b
//! Content-Type: application/json
//! @bodies/b.json
//! ```
//!
//! As in vegeta, body paths are relative to the current folder, and the targets are sent in
//! turn ([`Mix::round_robin`](super::mix::Mix::round_robin)). Nothing is templated: the text
//! is sent as written. Every target must have the same scheme, host and port
//! ([`common_origin`]): reqlife keeps connections to one server. Errors are `FILE:LINE:
//! message`, naming what was expected.

use super::request::{is_token, RequestSpec};
use super::template::Template;
use crate::model::{io_reason, Scheme};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A target list that cannot be used: where (the line, from 1, when known) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TargetsError {
    /// The target list.
    pub file: PathBuf,
    /// The line, from 1; `None` when the error is not one line's.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TargetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file.display(), self.message),
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// Where a target connects: scheme, host (as written, IPv6 without brackets) and port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The host as written (IPv6 without brackets).
    pub host: String,
    /// The port (the scheme's default if none is written).
    pub port: u16,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        if self.host.contains(':') {
            write!(f, "{scheme}://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{scheme}://{}:{}", self.host, self.port)
        }
    }
}

/// One target of the list.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The line of its `METHOD URL`.
    pub line: usize,
    /// The URL as written.
    pub url: String,
    /// Where it connects.
    pub origin: Origin,
    /// The request (static templates; `id` is the entry's index, `name` is `METHOD /path`).
    pub spec: RequestSpec,
}

/// Reads the target list at `path`, or from standard input when it is `-` (vegeta's default;
/// refused when standard input is a terminal, which would wait for a list never typed); body
/// files relative to the current folder, as vegeta.
pub fn load(path: &Path) -> Result<Vec<Entry>, TargetsError> {
    if path == Path::new("-") {
        return load_stdin();
    }
    let text = std::fs::read_to_string(path).map_err(|e| TargetsError {
        file: path.to_path_buf(),
        line: None,
        message: format!("cannot read the targets file: {}", io_reason(&e)),
    })?;
    parse(&text, path, Path::new("."))
}

/// `--targets -`: the list on standard input, named "standard input" in messages.
fn load_stdin() -> Result<Vec<Entry>, TargetsError> {
    use std::io::{IsTerminal, Read};
    let name = Path::new("standard input");
    let error = |message: String| TargetsError {
        file: name.to_path_buf(),
        line: None,
        message,
    };
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(error(
            "--targets - reads the list from a pipe, not a terminal (e.g. echo 'GET http://127.0.0.1:8080/' | reqlife run --targets -)".into(),
        ));
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| error(format!("cannot read the target list: {}", io_reason(&e))))?;
    parse(&text, name, Path::new("."))
}

/// Parses the target list `text` (named `file` in messages), reading body files relative to
/// `body_dir`. At least one target is required.
pub fn parse(text: &str, file: &Path, body_dir: &Path) -> Result<Vec<Entry>, TargetsError> {
    let error = |line: Option<usize>, message: String| TargetsError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let mut bodies: HashMap<PathBuf, Vec<u8>> = HashMap::new();
    let mut entries = Vec::new();
    while let Some((n, line)) = lines.next() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (method, url) = line
            .split_once(char::is_whitespace)
            .map(|(m, u)| (m, u.trim()))
            .filter(|(m, u)| is_token(m) && !u.is_empty())
            .ok_or_else(|| {
                error(
                    Some(n),
                    format!("expected 'METHOD URL' (e.g. GET http://127.0.0.1:8080/path), found '{line}'"),
                )
            })?;
        let (origin, path) = parse_url(url).map_err(|e| error(Some(n), e.to_string()))?;
        let mut headers = Vec::new();
        let mut body = Vec::new();
        for (h, hline) in lines.by_ref() {
            if hline.is_empty() {
                break;
            }
            if hline.starts_with('#') {
                continue;
            }
            if let Some(written) = hline.strip_prefix('@') {
                body = body_file(&mut bodies, body_dir.join(written.trim()), h, &error)?;
                break;
            }
            headers.push(header(hline, h, &error)?);
        }
        let id = entries.len();
        entries.push(Entry {
            line: n,
            url: url.to_string(),
            origin,
            spec: RequestSpec {
                id,
                name: format!("{method} {path}"),
                method: method.to_string(),
                path: Template::literal(path),
                headers,
                body: Template::literal(body),
            },
        });
    }
    if entries.is_empty() {
        return Err(error(
            None,
            "no target: expected lines 'METHOD URL' (e.g. GET http://127.0.0.1:8080/path)".into(),
        ));
    }
    Ok(entries)
}

/// The bytes of the body file `p` (named on line `h`), read once however many targets name
/// it.
fn body_file(
    bodies: &mut HashMap<PathBuf, Vec<u8>>,
    p: PathBuf,
    h: usize,
    error: &impl Fn(Option<usize>, String) -> TargetsError,
) -> Result<Vec<u8>, TargetsError> {
    Ok(match bodies.get(&p) {
        Some(b) => b.clone(),
        None => {
            let b = std::fs::read(&p).map_err(|e| {
                error(
                    Some(h),
                    format!("cannot read body file '{}': {}", p.display(), io_reason(&e)),
                )
            })?;
            bodies.insert(p, b.clone());
            b
        }
    })
}

/// The header line `hline` (line `h`): `Name: value`.
fn header(
    hline: &str,
    h: usize,
    error: &impl Fn(Option<usize>, String) -> TargetsError,
) -> Result<(String, Template), TargetsError> {
    let bad = |why: &str| {
        let hint = if hline
            .split_once(char::is_whitespace)
            .is_some_and(|(m, u)| is_token(m) && u.contains("://"))
        {
            " (targets are separated by a blank line)"
        } else {
            ""
        };
        error(
            Some(h),
            format!(
                "invalid header '{hline}': {why}; expected 'Name: value', '@bodyfile' or a blank line{hint}"
            ),
        )
    };
    let (name, value) = hline.split_once(':').ok_or_else(|| bad("no ':'"))?;
    let name = name.trim();
    if !is_token(name) {
        return Err(bad(
            "the name is empty or has characters not allowed in a header name",
        ));
    }
    Ok((name.to_string(), Template::literal(value.trim())))
}

/// Splits an absolute `http://` or `https://` URL into its origin and `/path?query` (the
/// command line's URL rules: [`crate::model::split_url`]).
fn parse_url(url: &str) -> Result<(Origin, String), crate::model::ModelError> {
    let (scheme, host, port, path) = crate::model::split_url(url)?;
    Ok((Origin { scheme, host, port }, path))
}

/// The one origin of all `entries`, or an error at the first target with another.
pub fn common_origin(entries: &[Entry], file: &Path) -> Result<Origin, TargetsError> {
    let first = entries.first().ok_or_else(|| TargetsError {
        file: file.to_path_buf(),
        line: None,
        message: "no target".into(),
    })?;
    match entries.iter().find(|e| e.origin != first.origin) {
        None => Ok(first.origin.clone()),
        Some(other) => Err(TargetsError {
            file: file.to_path_buf(),
            line: Some(other.line),
            message: format!(
                "{} is another server than {} (line {}): reqlife loads one server per run; split the list by server",
                other.origin, first.origin, first.line
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gen::GenState;
    use proptest::prelude::*;

    fn parse_str(text: &str) -> Result<Vec<Entry>, TargetsError> {
        parse(text, Path::new("t.txt"), Path::new("/nonexistent"))
    }

    fn render(e: &Entry) -> String {
        let target = crate::model::Target {
            url: e.url.clone(),
            scheme: e.origin.scheme,
            host: e.origin.host.clone(),
            port: e.origin.port,
            path_and_query: String::new(),
            addr: "127.0.0.1:9".parse().unwrap(),
            resolved_in: None,
        };
        let mut out = Vec::new();
        e.spec
            .prepare(&target, true)
            .render_into(&mut out, &mut GenState::new(0, 0, 1));
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn vegeta_targets_parse() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.json"), "{\"k\":1}").unwrap();
        let text = "# a comment\n\
                    GET http://127.0.0.1:8080/kv/a?x=1\n\
                    X-Account-ID: 8675309\n\
                    \n\
                    \n\
                    DELETE http://127.0.0.1:8080/kv/a\n\
                    # a comment among headers\n\
                    Authorization: Token  DEAD:BEEF \n\
                    \n\
                    PUT http://127.0.0.1:8080/kv/b\n\
                    Content-Type: application/json\n\
                    @b.json\n\
                    HEAD http://127.0.0.1:8080\n";
        let t = parse(text, Path::new("t.txt"), dir.path()).unwrap();
        // (line, name, rendered request's distinctive part)
        let rows: &[(usize, &str, &str)] = &[
            (2, "GET /kv/a?x=1", "X-Account-ID: 8675309\r\n\r\n"),
            (6, "DELETE /kv/a", "Authorization: Token  DEAD:BEEF\r\n\r\n"),
            (
                10,
                "PUT /kv/b",
                "Content-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"k\":1}",
            ),
            (13, "HEAD /", "HEAD / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
        ];
        assert_eq!(t.len(), rows.len());
        for (e, &(line, name, part)) in t.iter().zip(rows) {
            assert_eq!((e.line, e.spec.name.as_str()), (line, name));
            let r = render(e);
            assert!(r.contains(part), "{name}: {r:?}");
        }
        assert!(t.iter().enumerate().all(|(i, e)| e.spec.id == i));
        let o = common_origin(&t, Path::new("t.txt")).unwrap();
        assert_eq!(o.to_string(), "http://127.0.0.1:8080");
    }

    #[test]
    fn errors_name_the_line_and_what_was_expected() {
        // (file text, line, words of the message)
        let rows: &[(&str, Option<usize>, &str)] = &[
            ("", None, "no target"),                                 // empty
            ("# only\n\n", None, "no target"),                       // comments only
            ("GET\n", Some(1), "expected 'METHOD URL'"),             // no URL
            ("\nhttp://a/\n", Some(2), "expected 'METHOD URL'"),     // no method
            ("G(T http://a/\n", Some(1), "expected 'METHOD URL'"),   // bad method
            ("GET ftp://a/\n", Some(1), "unsupported scheme 'ftp'"), // scheme
            ("GET /relative\n", Some(1), "no scheme"),               // not absolute
            ("GET http://a:0/\n", Some(1), "port 0"),                // port 0
            ("GET http://a/\nNoColon\n", Some(2), "no ':'"),         // header without ':'
            (
                "GET http://a/\nBad Name: v\n",
                Some(2),
                "not allowed in a header name",
            ),
            (
                "GET http://a/\nGET http://a/b\n",
                Some(2),
                "separated by a blank line",
            ),
            (
                "GET http://a/\n@missing.json\n",
                Some(2),
                "cannot read body file '/nonexistent/missing.json'",
            ),
        ];
        for &(text, line, words) in rows {
            let e = parse_str(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(words), "{text:?}: '{e}' lacks '{words}'");
            assert!(e.to_string().starts_with("t.txt:"), "{e}");
        }
        let t = parse_str("GET http://a:1/\n\nGET http://a:2/\n").unwrap();
        let e = common_origin(&t, Path::new("t.txt")).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.message
                .contains("http://a:2 is another server than http://a:1 (line 1)"),
            "{e}"
        );
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "([A-Z]{0,4} ?(https?://)?[a-z:0-9/@\\[\\]]{0,12}\n|[A-Za-z-]{0,6}: ?[a-z ]{0,5}\n|#.*\n|@[a-z.]{0,5}\n|\n){0,8}") {
            let _ = parse_str(&text);
        }
    }
}
