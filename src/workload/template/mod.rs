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

use super::gen::{self, GenState, LineFile, Pareto, Zipf};
use crate::util::units::parse_count;
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

/// The offset of the `}` closing the slot opened at `open`.
fn slot_end(text: &str, open: usize) -> Result<usize, TemplateError> {
    for (j, b) in text.bytes().enumerate().skip(open + 1) {
        match b {
            b'}' => return Ok(j),
            b'{' => {
                return Err(TemplateError {
                    offset: j,
                    message:
                        "a '{' inside a slot: slots do not nest; write '{{' for a literal brace"
                            .into(),
                })
            }
            _ => {}
        }
    }
    Err(TemplateError {
        offset: open,
        message: format!(
            "a '{{' opens a slot that is never closed: write '{{{{' for a literal brace, or a \
             slot: {GENERATOR_FORMS}"
        ),
    })
}

enum Slot {
    /// Resolved at parse time (`{env:…}`).
    Text(String),
    Gen(Gen),
}

/// Parses a count: plain digits exactly (up to 2⁶⁴ − 1), or with the command line's units
/// (`1k`, `1.5M`).
fn count(arg: &str, what: &str) -> Result<u64, String> {
    arg.trim()
        .parse::<u64>()
        .or_else(|_| parse_count(arg))
        .map_err(|_| format!("{what} '{arg}' is not a whole number ≥ 0"))
}

fn positive_f64(arg: &str, what: &str) -> Result<f64, String> {
    match arg.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("{what} '{arg}' is not a number > 0")),
    }
}

/// Splits `a:b` into its two parts, or says what form is expected.
fn two<'a>(arg: Option<&'a str>, form: &str) -> Result<(&'a str, &'a str), String> {
    arg.and_then(|a| a.split_once(':'))
        .filter(|(_, b)| !b.contains(':'))
        .ok_or_else(|| format!("expected {form}"))
}

/// Parses the inside of a slot (between the braces) for `field`.
fn parse_slot(inside: &str, field: Field, sources: &mut Sources) -> Result<Slot, String> {
    let (name, arg) = match inside.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (inside, None),
    };
    let gen = match name {
        "seq" => seq_slot(arg)?,
        "uniform" => uniform_slot(arg)?,
        "zipf" | "pareto" => skewed_slot(name, arg)?,
        "choice" => choice_slot(arg, field)?,
        "random_bytes" | "random_text" => random_slot(name, arg, field)?,
        "uuid" => match arg {
            None => Gen::Uuid,
            Some(_) => return Err("{uuid} takes no argument".into()),
        },
        "line" => line_slot(arg, field, sources)?,
        "env" => return env_slot(arg, field, sources),
        "" => {
            return Err(format!(
                "an empty slot: write '{{{{}}}}' for literal braces, or a slot: {GENERATOR_FORMS}"
            ))
        }
        other => {
            return Err(format!(
                "unknown generator '{other}': expected one of {GENERATOR_FORMS}"
            ))
        }
    };
    Ok(Slot::Gen(gen))
}

/// `{seq}` or `{seq:FROM:TO}`.
fn seq_slot(arg: Option<&str>) -> Result<Gen, String> {
    Ok(match arg {
        None => Gen::Seq,
        Some(_) => {
            let form = "{seq} or {seq:FROM:TO} with whole numbers FROM ≤ TO, e.g. {seq:0:99999}";
            let (a, b) = two(arg, form)?;
            let (from, to) = (count(a, "FROM")?, count(b, "TO")?);
            if from > to {
                return Err(format!("FROM {from} is above TO {to}; expected {form}"));
            }
            Gen::SeqRange { from, to }
        }
    })
}

/// `{uniform:A:B}`.
fn uniform_slot(arg: Option<&str>) -> Result<Gen, String> {
    let form = "{uniform:A:B} with integers A ≤ B, e.g. {uniform:1:100}";
    let (a, b) = two(arg, form)?;
    let int = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| format!("'{s}' is not an integer; expected {form}"))
    };
    let (low, high) = (int(a)?, int(b)?);
    if low > high {
        return Err(format!("A {low} is above B {high}; expected {form}"));
    }
    Ok(Gen::Uniform { low, high })
}

/// `{zipf:N:S}` or `{pareto:N:SHAPE}` (`name`).
fn skewed_slot(name: &str, arg: Option<&str>) -> Result<Gen, String> {
    let form = if name == "zipf" {
        "{zipf:N:S} with N ≥ 1 ranks and an exponent S > 0, e.g. {zipf:1000000:1.1}"
    } else {
        "{pareto:N:SHAPE} with N ≥ 1 keys and a SHAPE > 0, e.g. {pareto:1000000:1.16}"
    };
    let (a, b) = two(arg, form)?;
    let n = count(a, "N")?;
    if n == 0 || n > 1 << 53 {
        return Err(format!("N must be from 1 to 2^53; expected {form}"));
    }
    let x = positive_f64(b, if name == "zipf" { "S" } else { "SHAPE" })
        .map_err(|e| format!("{e}; expected {form}"))?;
    Ok(match name {
        "zipf" => Gen::Zipf(Zipf::new(n, x).ok_or_else(|| format!("expected {form}"))?),
        _ => Gen::Pareto(Pareto::new(n, x).ok_or_else(|| format!("expected {form}"))?),
    })
}

/// `{choice:A|B|C}`, each option one `field` can hold.
fn choice_slot(arg: Option<&str>, field: Field) -> Result<Gen, String> {
    let form = "{choice:A|B|C}, e.g. {choice:red|green|blue}";
    let arg = arg
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("expected {form}"))?;
    let mut options = Vec::new();
    for o in arg.split('|') {
        field
            .check(o.as_bytes())
            .map_err(|e| format!("option '{o}': {e}"))?;
        options.push(o.as_bytes().into());
    }
    Ok(Gen::Choice(options.into()))
}

/// `{random_bytes:N}` (bodies only) or `{random_text:N}` (`name`).
fn random_slot(name: &str, arg: Option<&str>, field: Field) -> Result<Gen, String> {
    let form = format!("{{{name}:N}} with 1 ≤ N ≤ 64M, e.g. {{{name}:100}}");
    let arg = arg.ok_or_else(|| format!("expected {form}"))?;
    let n = count(arg, "N").map_err(|e| format!("{e}; expected {form}"))?;
    if n == 0 || n > MAX_GENERATED_BYTES {
        return Err(format!("N must be from 1 to 64M; expected {form}"));
    }
    if name == "random_text" {
        Ok(Gen::RandomText(n as usize))
    } else if field == Field::Body {
        Ok(Gen::RandomBytes(n as usize))
    } else {
        Err(format!(
            "random_bytes gives raw bytes, which {} cannot hold; use {{random_text:{n}}}",
            field.name()
        ))
    }
}

/// `{line:FILE}`, every line one `field` can hold.
fn line_slot(arg: Option<&str>, field: Field, sources: &mut Sources) -> Result<Gen, String> {
    let form = "{line:FILE}, a file of lines, e.g. {line:keys.txt}";
    let path = arg
        .filter(|a| !a.trim().is_empty())
        .ok_or_else(|| format!("expected {form}"))?;
    let file = sources.line_file(path)?;
    for i in 0..file.len() {
        field.check(file.line(i)).map_err(|e| {
            format!(
                "line {} of data file '{path}' (blank lines not counted): {e}",
                i + 1
            )
        })?;
    }
    Ok(Gen::Line(file))
}

/// `{env:NAME}`: the variable's value, as text (read once, here).
fn env_slot(arg: Option<&str>, field: Field, sources: &Sources) -> Result<Slot, String> {
    let form = "{env:NAME}, e.g. {env:TOKEN}";
    let var = arg
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("expected {form}"))?;
    let value = sources
        .var(var)
        .ok_or_else(|| format!("the environment variable {var} is not set"))?;
    field
        .check(value.as_bytes())
        .map_err(|e| format!("the value of {var}: {e}"))?;
    Ok(Slot::Text(value))
}

#[cfg(test)]
mod tests;
