//! Scenario files (`--scenario FILE.toml`): named requests made of templates, and optional
//! phases run in order, each with its own request mix, load model and stop rule. This module
//! reads the TOML, checks everything, and gives typed data ([`Scenario`]); every error is one
//! line `FILE:LINE:COLUMN: message` that names what is valid (the position of a template error
//! is the slot's own, inside the string, when the string has no escape sequences before it).
//!
//! # Format
//!
//! ```toml
//! seed = 7                      # optional; --seed on the command line wins
//!
//! [[request]]
//! name = "put"                  # required, unique
//! method = "PUT"                # default GET
//! path = "/kv/{seq:0:99999}"    # required: path and query, a template (see template.rs)
//! headers = { "Content-Type" = "text/plain" }   # values are templates
//! body = "{random_text:100}"    # a template; or body_file = "value.json" (sent as is)
//! weight = 1                    # a positive integer, default 1
//!
//! [[phase]]                     # optional; without phases the command line sets the load
//! name = "fill"                 # default "phase N"
//! requests = ["put"]            # or mix = { get = 3, put = 1 }; default: every request
//! count = 100000                # a stop rule: count, duration, stages, or bursts
//! connections = 50              # default 50, as -c
//!
//! [[phase]]
//! name = "read"
//! mix = { get = 3, put = 1 }    # weights for this phase (requests = [...] uses theirs)
//! rate = "20k"                  # open loop (as -R); without it, a closed loop
//! duration = "30s"
//! ```
//!
//! A phase takes the load keys of the command line, with its units: `connections`, `rate`
//! (`20000`, `"20k"`, `"250/s"`), `arrival` (`"constant"` or `"poisson"`), `stages`
//! (`"10s:0->20000, 60s:20000"` or `"10s:1->200c, 30s:200c"`), `burst`, `burst_interval`,
//! `bursts`, and a stop rule `count` (`100000`, `"100k"`) or `duration` (`"30s"`, or a number
//! of seconds). Relative paths (`body_file`, `{line:FILE}`) start from the scenario's folder.

mod phase;

use super::mix::Mix;
use super::request::{is_token, RequestSpec};
use super::template::{Field, Sources, Template, TemplateError};
use crate::model::{io_reason, LoadModel, StopRule};
use phase::phase;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// A scenario file that cannot be used: where (line and column from 1, when known) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    /// The scenario file.
    pub file: PathBuf,
    /// `(line, column)`, both from 1; columns count characters.
    pub position: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, col)) => {
                write!(f, "{}:{line}:{col}: {}", self.file.display(), self.message)
            }
            None => write!(f, "{}: {}", self.file.display(), self.message),
        }
    }
}

/// A checked scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file's seed (the command line's `--seed` wins over it).
    pub seed: Option<u64>,
    /// The requests in file order; `requests[i].spec.id == i`.
    pub requests: Vec<ScenarioRequest>,
    /// The phases in the order they run; empty when the command line sets the load.
    pub phases: Vec<ScenarioPhase>,
}

/// A request and its default weight.
#[derive(Debug, Clone)]
pub struct ScenarioRequest {
    /// The request.
    pub spec: RequestSpec,
    /// Its weight in a mix that does not give its own (≥ 1).
    pub weight: u64,
}

/// One phase: which requests, how much load, until when.
#[derive(Debug, Clone)]
pub struct ScenarioPhase {
    /// The phase's name (`phase N` when the file gives none).
    pub name: String,
    /// Indices into [`Scenario::requests`], by weight.
    pub mix: Mix,
    /// The phase's load.
    pub load: LoadModel,
    /// When the phase ends.
    pub stop: StopRule,
}

impl Scenario {
    /// Every request by its own weight: the mix when the scenario has no phase.
    pub fn default_mix(&self) -> Mix {
        let entries: Vec<(usize, u64)> = self
            .requests
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.weight))
            .collect();
        // Weights were checked positive and a scenario has at least one request.
        Mix::weighted(&entries).unwrap_or_else(|_| Mix::round_robin(self.requests.len()))
    }

    /// The index of the request named `name`.
    pub fn request_index(&self, name: &str) -> Option<usize> {
        self.requests.iter().position(|r| r.spec.name == name)
    }
}

/// Reads and checks the scenario at `path`: relative data and body files from its folder,
/// `{env:…}` from the process environment.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        file: path.to_path_buf(),
        position: None,
        message: format!("cannot read the scenario: {}", io_reason(&e)),
    })?;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    parse(&text, path, &mut Sources::new(dir))
}

/// Checks the scenario `text`, named `file` in messages, reading files and variables from
/// `sources`.
pub fn parse(text: &str, file: &Path, sources: &mut Sources) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { text, file };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let at = e.span().map(|s| s.start);
        ctx.error(at, e.message().trim_end().to_string())
    })?;
    if raw.request.is_empty() {
        return Err(ctx.error(
            None,
            "no [[request]]: a scenario needs at least one, e.g. [[request]] name = \"get\" path = \"/\"",
        ));
    }
    let mut requests: Vec<ScenarioRequest> = Vec::new();
    for (id, r) in raw.request.iter().enumerate() {
        let req = request(&ctx, id, r, sources)?;
        if requests.iter().any(|o| o.spec.name == req.spec.name) {
            return Err(ctx.at(
                &r.get_ref().name,
                format!(
                    "a request named '{}' is already defined: names are unique",
                    req.spec.name
                ),
            ));
        }
        requests.push(req);
    }
    let mut phases: Vec<ScenarioPhase> = Vec::new();
    for (i, p) in raw.phase.iter().enumerate() {
        let phase = phase(&ctx, i, p, &requests)?;
        if phases.iter().any(|o| o.name == phase.name) {
            return Err(ctx.error(
                Some(p.span().start),
                format!(
                    "a phase named '{}' is already defined: names are unique",
                    phase.name
                ),
            ));
        }
        phases.push(phase);
    }
    Ok(Scenario {
        seed: raw.seed,
        requests,
        phases,
    })
}

/// The text being checked, to turn byte offsets into positions.
struct Ctx<'a> {
    text: &'a str,
    file: &'a Path,
}

impl Ctx<'_> {
    fn error(&self, offset: Option<usize>, message: impl Into<String>) -> ScenarioError {
        let position = offset.map(|off| {
            let off = off.min(self.text.len());
            let before = &self.text[..off];
            let line = before.matches('\n').count() + 1;
            let line_start = before.rfind('\n').map_or(0, |i| i + 1);
            (line, before[line_start..].chars().count() + 1)
        });
        ScenarioError {
            file: self.file.to_path_buf(),
            position,
            message: message.into(),
        }
    }

    fn at<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> ScenarioError {
        self.error(Some(value.span().start), message)
    }

    /// The error of a template found in the string `value`: at the slot when the string's
    /// text in the file is the value itself (no escapes), else at the string.
    fn template_error(
        &self,
        value: &Spanned<String>,
        what: &str,
        e: TemplateError,
    ) -> ScenarioError {
        let offset = string_start(self.text, value.span(), value.get_ref())
            .map_or(value.span().start, |start| start + e.offset);
        self.error(Some(offset), format!("{what}: {}", e.message))
    }
}

/// Where the value of a TOML string starts in the file, when its text there is the value
/// exactly (no escape sequence), so that offsets in the value are offsets in the file.
fn string_start(text: &str, span: Range<usize>, value: &str) -> Option<usize> {
    let raw = text.get(span.clone())?;
    for delim in ["\"\"\"", "'''", "\"", "'"] {
        let n = delim.len();
        if raw.len() >= 2 * n && raw.starts_with(delim) && raw.ends_with(delim) {
            let inner = &raw[n..raw.len() - n];
            // A multi-line string drops a line break right after its opening delimiter.
            let trimmed = if n == 3 {
                inner
                    .strip_prefix("\r\n")
                    .or_else(|| inner.strip_prefix('\n'))
                    .unwrap_or(inner)
            } else {
                inner
            };
            return (trimmed == value).then(|| span.start + n + (inner.len() - trimmed.len()));
        }
    }
    None
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    seed: Option<u64>,
    #[serde(default)]
    request: Vec<Spanned<RawRequest>>,
    #[serde(default)]
    phase: Vec<Spanned<RawPhase>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: Spanned<String>,
    method: Option<Spanned<String>>,
    path: Spanned<String>,
    headers: Option<Pairs<String>>,
    body: Option<Spanned<String>>,
    body_file: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhase {
    name: Option<Spanned<String>>,
    requests: Option<Spanned<Vec<Spanned<String>>>>,
    mix: Option<Spanned<Pairs<i64>>>,
    count: Option<Spanned<Amount>>,
    duration: Option<Spanned<Amount>>,
    connections: Option<Spanned<Amount>>,
    rate: Option<Spanned<Amount>>,
    arrival: Option<Spanned<String>>,
    stages: Option<Spanned<String>>,
    burst: Option<Spanned<Amount>>,
    burst_interval: Option<Spanned<Amount>>,
    bursts: Option<Spanned<Amount>>,
}

/// The entries of an inline table, in file order, with their spans.
struct Pairs<V>(Vec<(Spanned<String>, Spanned<V>)>);

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Pairs<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct PairsVisitor<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for PairsVisitor<V> {
            type Value = Pairs<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a table, e.g. { \"Content-Type\" = \"text/plain\" } or { get = 3, put = 1 }",
                )
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<V>, A::Error> {
                let mut pairs = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    pairs.push(entry);
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(PairsVisitor(PhantomData))
    }
}

/// A number, or a string with the command line's units (`"10k"`, `"30s"`, `"250/s"`).
enum Amount {
    Int(i64),
    Float(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct AmountVisitor;
        impl Visitor<'_> for AmountVisitor {
            type Value = Amount;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a number, or a string with a unit such as \"10k\", \"30s\" or \"250/s\"",
                )
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Amount, E> {
                Ok(Amount::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Amount, E> {
                i64::try_from(v)
                    .map(Amount::Int)
                    .map_err(|_| E::custom("the number is too large"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Amount, E> {
                Ok(Amount::Float(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
                Ok(Amount::Text(v.to_string()))
            }
        }
        d.deserialize_any(AmountVisitor)
    }
}

fn request(
    ctx: &Ctx,
    id: usize,
    r: &Spanned<RawRequest>,
    sources: &mut Sources,
) -> Result<ScenarioRequest, ScenarioError> {
    let raw = r.get_ref();
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(ctx.at(&raw.name, "a request's name cannot be empty"));
    }
    let what = |key: &str| format!("request '{name}', {key}");
    let method = match &raw.method {
        None => "GET".to_string(),
        Some(m) if is_token(m.get_ref().trim()) => m.get_ref().trim().to_string(),
        Some(m) => {
            return Err(ctx.at(
                m,
                format!(
                "{}: invalid method '{}': expected a token such as GET, POST, PUT, DELETE, HEAD",
                what("method"),
                m.get_ref()
            ),
            ))
        }
    };
    if !raw.path.get_ref().starts_with('/') {
        return Err(ctx.at(
            &raw.path,
            format!(
                "{}: '{}' does not start with '/': give the path and query (the host comes from the command line's URL), e.g. \"/kv/{{seq}}\"",
                what("path"),
                raw.path.get_ref()
            ),
        ));
    }
    let path = Template::parse_in(raw.path.get_ref(), Field::Path, sources)
        .map_err(|e| ctx.template_error(&raw.path, &what("path"), e))?;
    let headers = request_headers(ctx, raw, &what, sources)?;
    let body = request_body(ctx, raw, &what, sources)?;
    let weight = match &raw.weight {
        None => 1,
        Some(w) if *w.get_ref() >= 1 => *w.get_ref() as u64,
        Some(w) => {
            return Err(ctx.at(
                w,
                format!(
                    "{}: {} is not a positive integer: weights are 1 or more (leave a request out of a phase's requests instead)",
                    what("weight"),
                    w.get_ref()
                ),
            ))
        }
    };
    Ok(ScenarioRequest {
        spec: RequestSpec {
            id,
            name,
            method,
            path,
            headers,
            body,
        },
        weight,
    })
}

/// A request's headers (names checked, values parsed as templates); `what` names a key of
/// the request in messages.
fn request_headers(
    ctx: &Ctx,
    raw: &RawRequest,
    what: &impl Fn(&str) -> String,
    sources: &mut Sources,
) -> Result<Vec<(String, Template)>, ScenarioError> {
    let mut headers = Vec::new();
    for (n, v) in raw.headers.iter().flat_map(|h| h.0.iter()) {
        let hname = n.get_ref().trim();
        if !is_token(hname) {
            return Err(ctx.at(
                n,
                format!(
                    "{}: '{hname}' is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)",
                    what("headers")
                ),
            ));
        }
        if hname.eq_ignore_ascii_case("content-length")
            || hname.eq_ignore_ascii_case("transfer-encoding")
        {
            return Err(ctx.at(
                n,
                format!(
                    "{}: {hname} is set by reqlife from the rendered body: leave it out",
                    what("headers")
                ),
            ));
        }
        let value = Template::parse_in(v.get_ref(), Field::Header, sources)
            .map_err(|e| ctx.template_error(v, &what(&format!("header {hname}")), e))?;
        headers.push((hname.to_string(), value));
    }
    Ok(headers)
}

/// A request's body: a template from `body`, the bytes of `body_file` as they are, or none.
fn request_body(
    ctx: &Ctx,
    raw: &RawRequest,
    what: &impl Fn(&str) -> String,
    sources: &mut Sources,
) -> Result<Template, ScenarioError> {
    let body = match (&raw.body, &raw.body_file) {
        (Some(_), Some(f)) => {
            return Err(ctx.at(
                f,
                format!(
                    "{}: body and body_file conflict: give one",
                    what("body_file")
                ),
            ))
        }
        (Some(b), None) => Template::parse_in(b.get_ref(), Field::Body, sources)
            .map_err(|e| ctx.template_error(b, &what("body"), e))?,
        (None, Some(f)) => {
            let path = super::gen::LineFile::resolve(sources.base_dir(), f.get_ref());
            let bytes = std::fs::read(&path).map_err(|e| {
                ctx.at(
                    f,
                    format!(
                        "{}: cannot read '{}': {}",
                        what("body_file"),
                        path.display(),
                        io_reason(&e)
                    ),
                )
            })?;
            Template::literal(bytes)
        }
        (None, None) => Template::default(),
    };
    Ok(body)
}

#[cfg(test)]
mod tests;
