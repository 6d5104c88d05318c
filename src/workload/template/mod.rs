//! Text templates with generator slots: the syntax, its parsing into literal byte runs and
//! generators, printing back, and rendering into a reused buffer on the hot path.
//!
//! # Syntax
//!
//! Text with slots in braces; `{{` and `}}` are literal braces.
//!
//! | slot | value |
//! | --- | --- |
//! | `{seq}` | the request's sequence number: 0, 1, 2, … over the whole run |
//! | `{seq:FROM:TO}` | `FROM + seq mod (TO − FROM + 1)`: cycles through `FROM..=TO` |
//! | `{uniform:A:B}` | a uniform integer in `A..=B` (negatives allowed) |
//! | `{zipf:N:S}` | a rank in `1..=N` under Zipf's law with exponent `S` ([`gen::Zipf`]) |
//! | `{pareto:N:SHAPE}` | a key in `1..=N`, bounded Pareto ([`gen::Pareto`]) |
//! | `{choice:A\|B\|C}` | one of the options, uniformly (an option holds no `\|`, `{` or `}`) |
//! | `{random_bytes:N}` | `N` random bytes: in a body only |
//! | `{random_text:N}` | `N` characters of `[0-9A-Za-z]` |
//! | `{uuid}` | a random version-4 UUID, 36 characters |
//! | `{line:FILE}` | line `seq mod L` of the file's `L` non-blank lines (read once, at parse) |
//! | `{env:NAME}` | the environment variable, read once, at parse |
//!
//! Counts (`N`, `FROM`, `TO`) take the units of the command line: `{seq:0:1M}`,
//! `{random_text:1k}`. `{seq}` and `{line}` read the sequence number passed to
//! [`Template::render_into`]: every template of one request gets the same number, so
//! `PUT /kv/{seq}` with the body `value of {seq}` names one key twice, and two `{line:…}`
//! slots read the same line number of their files (users.txt and passwords.txt line up).
//! How numbers are split over threads and processes is in [`gen`].
//!
//! Where a template goes decides what it may produce ([`Field`]): a path takes visible ASCII
//! only (no space: percent-encode it), a header value no line break, a body anything. A
//! template that breaks its field's rules, names an unknown generator, or reads a missing
//! variable or file is refused at parse with the offset of the slot and the valid forms.
//!
//! A template with no generator left after parsing (`{env:…}` becomes text) is *static*:
//! [`Template::static_bytes`] gives its bytes, and a request made only of static templates is
//! prepared once (see `request`).
//!
//! JSON text (gRPC's and a WebSocket's `--data`) is parsed by [`Template::parse_json`], whose
//! braces are JSON's but those that open a slot.

mod json;
mod slot;

use super::gen::{self, GenState, LineFile, Pareto, Zipf};
use slot::{parse_slot, slot_end, Slot};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a template is used, which decides what it may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The request target (`/path?query`): visible ASCII only, no `{random_bytes}`.
    Path,
    /// A header value: no CR, LF or NUL, no `{random_bytes}`.
    Header,
    /// The body: any bytes.
    Body,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Path => "a path",
            Field::Header => "a header value",
            Field::Body => "a body",
        }
    }

    /// Why `b` may not appear in this field, if it may not.
    fn refuses(self, b: u8) -> Option<&'static str> {
        match self {
            Field::Path if b == b' ' => Some("a space (percent-encode it: %20)"),
            Field::Path if !(0x21..=0x7e).contains(&b) => {
                Some("a byte that is not visible ASCII (percent-encode it)")
            }
            Field::Header if matches!(b, b'\r' | b'\n' | 0) => Some("a line break or NUL"),
            _ => None,
        }
    }

    /// Checks `bytes` for this field; the error names what was found.
    fn check(self, bytes: &[u8]) -> Result<(), String> {
        match bytes.iter().find_map(|&b| self.refuses(b)) {
            Some(why) => Err(format!("{why} is not allowed in {}", self.name())),
            None => Ok(()),
        }
    }
}

/// A template that could not be parsed: the byte offset in the template's text where the
/// problem is (a slot's `{`, or a stray brace) and a message naming what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// Byte offset in the template text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

/// Every form of slot, for error messages.
pub const GENERATOR_FORMS: &str = "{seq}, {seq:FROM:TO}, {uniform:A:B}, {zipf:N:S}, \
     {pareto:N:SHAPE}, {choice:A|B|C}, {random_bytes:N}, {random_text:N}, {uuid}, {line:FILE}, \
     {env:NAME}";

/// The most bytes `{random_bytes:N}` or `{random_text:N}` may produce per slot.
pub const MAX_GENERATED_BYTES: u64 = 64_000_000;

/// What templates read at parse time: the folder relative `{line:FILE}` paths start from, the
/// environment of `{env:NAME}` (the process's, or a fixed map), and the data files already
/// read (a file named by several templates is read once and shared).
#[derive(Debug, Clone)]
pub struct Sources {
    base_dir: PathBuf,
    env: Option<HashMap<String, String>>,
    files: HashMap<PathBuf, Arc<LineFile>>,
}

impl Sources {
    /// Relative data files from `base_dir`, variables from the process environment.
    pub fn new(base_dir: impl Into<PathBuf>) -> Self {
        Sources {
            base_dir: base_dir.into(),
            env: None,
            files: HashMap::new(),
        }
    }

    /// Reads `{env:NAME}` from `vars` instead of the process environment.
    pub fn with_env<K: Into<String>, V: Into<String>>(
        mut self,
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.env = Some(
            vars.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        );
        self
    }

    /// The folder relative paths start from.
    pub fn base_dir(&self) -> &Path {
        &self.base_dir
    }

    fn var(&self, name: &str) -> Option<String> {
        match &self.env {
            Some(map) => map.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }

    fn line_file(&mut self, written: &str) -> Result<Arc<LineFile>, String> {
        let path = LineFile::resolve(&self.base_dir, written);
        if let Some(f) = self.files.get(&path) {
            return Ok(f.clone());
        }
        let f = Arc::new(LineFile::read(&path, written)?);
        self.files.insert(path, f.clone());
        Ok(f)
    }
}

/// One generator slot, parsed.
#[derive(Debug, Clone, PartialEq)]
enum Gen {
    Seq,
    SeqRange { from: u64, to: u64 },
    Uniform { low: i64, high: i64 },
    Zipf(Zipf),
    Pareto(Pareto),
    Choice(Box<[Box<[u8]>]>),
    RandomBytes(usize),
    RandomText(usize),
    Uuid,
    Line(Arc<LineFile>),
}

impl Gen {
    fn render(&self, out: &mut Vec<u8>, state: &mut GenState, seq: u64) {
        match self {
            Gen::Seq => gen::push_u64(out, seq),
            Gen::SeqRange { from, to } => {
                // The width wraps to 0 only for the full u64 range, where seq itself is the value.
                let width = (to - from).wrapping_add(1);
                let offset = if width == 0 { seq } else { seq % width };
                gen::push_u64(out, from.wrapping_add(offset));
            }
            Gen::Uniform { low, high } => gen::push_i64(out, state.uniform(*low, *high)),
            Gen::Zipf(z) => gen::push_u64(out, z.sample(state)),
            Gen::Pareto(p) => gen::push_u64(out, p.sample(state)),
            Gen::Choice(options) => {
                let i = if options.len() == 1 {
                    0
                } else {
                    state.below(options.len() as u64) as usize
                };
                out.extend_from_slice(&options[i]);
            }
            Gen::RandomBytes(n) => gen::push_random_bytes(out, *n, state),
            Gen::RandomText(n) => gen::push_random_text(out, *n, state),
            Gen::Uuid => gen::push_uuid(out, state),
            Gen::Line(f) => out.extend_from_slice(f.line_of(seq)),
        }
    }

    /// The length of every value, when it is always the same.
    fn fixed_len(&self) -> Option<usize> {
        match self {
            Gen::RandomBytes(n) | Gen::RandomText(n) => Some(*n),
            Gen::Uuid => Some(36),
            Gen::Choice(o) if o.iter().all(|x| x.len() == o[0].len()) => Some(o[0].len()),
            _ => None,
        }
    }
}

impl fmt::Display for Gen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gen::Seq => write!(f, "{{seq}}"),
            Gen::SeqRange { from, to } => write!(f, "{{seq:{from}:{to}}}"),
            Gen::Uniform { low, high } => write!(f, "{{uniform:{low}:{high}}}"),
            Gen::Zipf(z) => write!(f, "{{zipf:{}:{}}}", z.n(), z.s()),
            Gen::Pareto(p) => write!(f, "{{pareto:{}:{}}}", p.n(), p.shape()),
            Gen::Choice(options) => {
                write!(f, "{{choice:")?;
                for (i, o) in options.iter().enumerate() {
                    if i > 0 {
                        write!(f, "|")?;
                    }
                    write!(f, "{}", String::from_utf8_lossy(o))?;
                }
                write!(f, "}}")
            }
            Gen::RandomBytes(n) => write!(f, "{{random_bytes:{n}}}"),
            Gen::RandomText(n) => write!(f, "{{random_text:{n}}}"),
            Gen::Uuid => write!(f, "{{uuid}}"),
            Gen::Line(file) => write!(f, "{{line:{}}}", file.written()),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(Box<[u8]>),
    Gen(Gen),
}

/// A parsed template: literal byte runs and generator slots, rendered per request by
/// [`Template::render_into`]. Cheap to clone (data files are shared).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text` for a body (any bytes allowed), with data files from the current folder
    /// and variables from the process environment.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        Template::parse_in(text, Field::Body, &mut Sources::new("."))
    }

    /// Parses `text` for `field`, reading `{line:…}` and `{env:…}` from `sources`.
    pub fn parse_in(
        text: &str,
        field: Field,
        sources: &mut Sources,
    ) -> Result<Template, TemplateError> {
        let bytes = text.as_bytes();
        let mut parts = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            let next = bytes.get(i + 1).copied();
            match b {
                b'{' if next == Some(b'{') => {
                    lit.push(b'{');
                    i += 2;
                }
                b'}' if next == Some(b'}') => {
                    lit.push(b'}');
                    i += 2;
                }
                b'}' => {
                    return Err(TemplateError {
                        offset: i,
                        message: "a '}' closes no slot: write '}}' for a literal brace".into(),
                    })
                }
                b'{' => {
                    let end = slot_end(text, i)?;
                    match parse_slot(&text[i + 1..end], field, sources) {
                        Ok(Slot::Text(t)) => lit.extend_from_slice(t.as_bytes()),
                        Ok(Slot::Gen(g)) => {
                            if !lit.is_empty() {
                                parts.push(Part::Lit(std::mem::take(&mut lit).into()));
                            }
                            parts.push(Part::Gen(g));
                        }
                        Err(message) => {
                            return Err(TemplateError {
                                offset: i,
                                message: format!("in '{}': {message}", &text[i..=end]),
                            })
                        }
                    }
                    i = end + 1;
                }
                _ => {
                    if let Some(why) = field.refuses(b) {
                        return Err(TemplateError {
                            offset: i,
                            message: format!("{why} is not allowed in {}", field.name()),
                        });
                    }
                    lit.push(b);
                    i += 1;
                }
            }
        }
        if !lit.is_empty() {
            parts.push(Part::Lit(lit.into()));
        }
        Ok(Template { parts })
    }

    /// A template of fixed bytes (no parsing: braces are just bytes).
    pub fn literal(bytes: impl Into<Vec<u8>>) -> Template {
        let bytes: Vec<u8> = bytes.into();
        if bytes.is_empty() {
            return Template::default();
        }
        Template {
            parts: vec![Part::Lit(bytes.into())],
        }
    }

    /// Whether the template has no generator: it renders the same bytes every time.
    pub fn is_static(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// The bytes of a static template (`None` when it has generators).
    pub fn static_bytes(&self) -> Option<&[u8]> {
        match self.parts.as_slice() {
            [] => Some(&[]),
            [Part::Lit(b)] => Some(b),
            _ => None,
        }
    }

    /// Whether the template renders nothing.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The length of every rendering, when it is always the same (literals, `{uuid}`,
    /// `{random_text:N}`, `{random_bytes:N}`, choices of one length): a body of fixed length
    /// needs no scratch buffer to learn its `Content-Length`.
    pub fn fixed_len(&self) -> Option<usize> {
        self.parts.iter().try_fold(0, |sum, p| match p {
            Part::Lit(b) => Some(sum + b.len()),
            Part::Gen(g) => g.fixed_len().map(|n| sum + n),
        })
    }

    /// Appends one rendering to `out`, drawing from `state`; `seq` is the request's sequence
    /// number (what `{seq}` shows and which line `{line}` reads). Allocates nothing once
    /// `out` has grown to the largest rendering.
    pub fn render_into(&self, out: &mut Vec<u8>, state: &mut GenState, seq: u64) {
        for part in &self.parts {
            match part {
                Part::Lit(b) => out.extend_from_slice(b),
                Part::Gen(g) => g.render(out, state, seq),
            }
        }
    }
}

/// Prints the template in the syntax it was parsed from: literal braces doubled, `{env:…}`
/// as the text it was read as, numbers in plain digits (`{seq:0:1k}` prints `{seq:0:1000}`).
impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for part in &self.parts {
            match part {
                Part::Lit(b) => {
                    let text = String::from_utf8_lossy(b);
                    write!(f, "{}", text.replace('{', "{{").replace('}', "}}"))?;
                }
                Part::Gen(g) => write!(f, "{g}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
