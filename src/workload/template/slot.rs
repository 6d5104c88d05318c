//! A slot's text parsed into a generator (or, for `{env:…}`, into text): `{seq:0:9}`,
//! `{uniform:1:6}`, `{zipf:…}`, `{choice:…}`, `{random_text:…}`, `{line:…}`, `{env:…}`.

use super::gen::{Pareto, Zipf};
use super::{Field, Gen, Sources, TemplateError, GENERATOR_FORMS, MAX_GENERATED_BYTES};
use crate::util::units::parse_count;

/// The offset of the `}` closing the slot opened at `open`.
pub(super) fn slot_end(text: &str, open: usize) -> Result<usize, TemplateError> {
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

pub(super) enum Slot {
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
pub(super) fn parse_slot(
    inside: &str,
    field: Field,
    sources: &mut Sources,
) -> Result<Slot, String> {
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
