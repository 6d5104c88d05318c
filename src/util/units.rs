//! Parsing of human units on the command line: durations (`10s`, `2m`, `1.5ms`, `250us`,
//! `1h`, a bare number is seconds, as in wrk), counts (`100`, `10k`, `1.5M`, `2G`) and sizes
//! (`64KiB`, `1MiB`, `100k`).
//! Every error names what was given and what is valid.

use std::time::Duration;

/// A unit-parsing error: the message names the input and the valid forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

const DURATION_FORMS: &str =
    "a number with a unit: ns, us, ms, s, m or h, or several (e.g. 10s, 1.5ms, 2m, 1m30s)";
const COUNT_FORMS: &str = "a whole number, optionally with k, M or G (e.g. 1000, 10k, 1.5M)";

/// Splits `12.5ms` into (`12.5`, `ms`).
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

fn parse_number(num: &str) -> Option<f64> {
    if num.is_empty() || num.starts_with('.') && num.len() == 1 {
        return None;
    }
    num.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parses a duration such as `10s`, `1.5ms`, `2m`, `250us`, `1h`, `30` (seconds), or a
/// compound one such as `1m30s`, `1h2m` or `2s500ms` (the parts add up).
pub fn parse_duration(input: &str) -> Result<Duration, UnitError> {
    let s = input.trim();
    let bad = || {
        UnitError(format!(
            "invalid duration '{input}': expected {DURATION_FORMS}"
        ))
    };
    let mut rest = s;
    let mut ns = 0.0;
    let mut parts = 0;
    while !rest.is_empty() {
        let (num, after) = split_number(rest);
        let value = parse_number(num).ok_or_else(bad)?;
        // The unit: the letters up to the next number.
        let end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let (unit, next) = after.split_at(end);
        let scale_ns = match unit.trim() {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" | "sec" => 1e9,
            // A bare number is seconds (wrk), alone only: `1m30` is not a duration.
            "" if parts == 0 && next.is_empty() => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        ns += value * scale_ns;
        parts += 1;
        rest = next;
    }
    if parts == 0 {
        return Err(bad());
    }
    if ns > 1e18 {
        return Err(UnitError(format!(
            "duration '{input}' is too long: at most about 31 years"
        )));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Parses a count such as `100`, `10k`, `1.5M` or `2G` (powers of 1000).
pub fn parse_count(input: &str) -> Result<u64, UnitError> {
    let s = input.trim();
    let bad = || UnitError(format!("invalid count '{input}': expected {COUNT_FORMS}"));
    let (num, unit) = split_number(s);
    let value = parse_number(num).ok_or_else(bad)?;
    let scale = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" | "m" => 1e6,
        "G" | "g" => 1e9,
        _ => return Err(bad()),
    };
    let total = value * scale;
    if total.fract() != 0.0 {
        return Err(UnitError(format!(
            "invalid count '{input}': it is not a whole number ({total})"
        )));
    }
    if total > 1e18 {
        return Err(UnitError(format!("count '{input}' is too large")));
    }
    Ok(total as u64)
}

const SIZE_FORMS: &str =
    "a number of bytes, optionally with KiB, MiB or GiB (1024s) or k, M or G (1000s) (e.g. 64KiB, 1MiB, 100000)";

/// Parses a size in bytes: `65536`, `64KiB`, `1MiB`, `1.5M`, `100k` (`B` may follow each).
pub fn parse_size(input: &str) -> Result<u64, UnitError> {
    let s = input.trim();
    let bad = || UnitError(format!("invalid size '{input}': expected {SIZE_FORMS}"));
    let (num, unit) = split_number(s);
    let value = parse_number(num).ok_or_else(bad)?;
    let unit = unit.trim_start().to_ascii_lowercase();
    let scale = match unit.strip_suffix('b').unwrap_or(&unit) {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "ki" => 1024.0,
        "mi" => 1024.0 * 1024.0,
        "gi" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let total = value * scale;
    if total.fract() != 0.0 {
        return Err(UnitError(format!(
            "invalid size '{input}': it is not a whole number of bytes ({total})"
        )));
    }
    if total > 1e18 {
        return Err(UnitError(format!("size '{input}' is too large")));
    }
    Ok(total as u64)
}

const RATE_FORMS: &str =
    "a number of requests per second, optionally with k or M and /s, /m, /h or /DURATION (e.g. 5000, 50k, 250/s, 30/m, 50/1s, 100/10s)";

/// Parses a rate in requests per second: `5000`, `50k`, `1.5k/s`, `250/s`, `30/m`, `10/h`, or
/// so many per a duration, vegeta's form: `50/1s`, `100/10s`, `1/500ms` (amount / duration in
/// seconds).
pub fn parse_rate(input: &str) -> Result<f64, UnitError> {
    let s = input.trim();
    if s.starts_with('-') {
        return Err(UnitError(format!(
            "invalid rate '{input}': the rate must be a positive number of requests per second"
        )));
    }
    let bad = || UnitError(format!("invalid rate '{input}': expected {RATE_FORMS}"));
    let (amount, per_s) = match s.split_once('/') {
        None => (s, 1.0),
        Some((a, per)) => (a, 1.0 / per_duration_s(per.trim()).ok_or_else(bad)?),
    };
    let (num, unit) = split_number(amount.trim());
    let value = parse_number(num).ok_or_else(bad)?;
    let scale = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        _ => return Err(bad()),
    };
    let rate = value * scale * per_s;
    if rate > 1e9 {
        return Err(UnitError(format!(
            "rate '{input}' is too high: at most 1G/s"
        )));
    }
    Ok(rate)
}

/// The seconds of the `DURATION` in `AMOUNT/DURATION`: a unit alone is one of it (`s`, `m`,
/// `h`, `ms`), else a duration (`1s`, `10s`, `500ms`, `1m30s`); `None` for anything else or 0.
fn per_duration_s(per: &str) -> Option<f64> {
    let per = match per.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        _ if per.is_empty() => return None,
        true => per.to_string(),
        false => format!("1{per}"),
    };
    let s = parse_duration(&per).ok()?.as_secs_f64();
    (s > 0.0).then_some(s)
}

/// A parsed `--stages` specification.
#[derive(Debug, Clone, PartialEq)]
pub enum StagesSpec {
    /// `10s:0->20000, 60s:20000`: rates in req/s.
    Rates(Vec<(Duration, f64, f64)>),
    /// `10s:1->200c, 30s:200c`: connections.
    Connections(Vec<(Duration, u64, u64)>),
}

const STAGES_FORMS: &str = "stages like '10s:0->20000, 60s:20000, 10s:20000->0' (req/s) \
     or '10s:1->200c, 30s:200c' (connections)";

/// Parses `--stages`: comma-separated `DURATION:FROM->TO` or `DURATION:LEVEL`, all rates or
/// all connections (a `c` suffix).
pub fn parse_stages(input: &str) -> Result<StagesSpec, UnitError> {
    let mut rates = Vec::new();
    let mut conns = Vec::new();
    for (i, part) in input.split(',').map(str::trim).enumerate() {
        let bad = |why: &str| {
            UnitError(format!(
                "invalid stage {} '{part}' in --stages: {why}; expected {STAGES_FORMS}",
                i + 1
            ))
        };
        let (dur, spec) = part.split_once(':').ok_or_else(|| bad("no ':'"))?;
        let dur = parse_duration(dur).map_err(|e| bad(&e.0))?;
        if dur.is_zero() {
            return Err(bad("a stage must last more than 0"));
        }
        let (from, to) = match spec.split_once("->") {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (spec.trim(), spec.trim()),
        };
        // A `c` on either end marks connections: `1->200c` ramps from 1 to 200 connections.
        if from.ends_with('c') || to.ends_with('c') {
            let n = |v: &str| parse_count(v.trim_end_matches('c')).map_err(|e| bad(&e.0));
            conns.push((dur, n(from)?, n(to)?));
        } else {
            let r = |v: &str| parse_rate(v).map_err(|e| bad(&e.0));
            rates.push((dur, r(from)?, r(to)?));
        }
    }
    match (rates.is_empty(), conns.is_empty()) {
        (false, true) => Ok(StagesSpec::Rates(rates)),
        (true, false) => Ok(StagesSpec::Connections(conns)),
        _ => Err(UnitError(format!(
            "invalid --stages '{input}': all stages must be rates or all connections; expected {STAGES_FORMS}"
        ))),
    }
}

/// When to start (`--start-at`): an RFC 3339 time, or `+DURATION` from now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// At this wall-clock time (an RFC 3339 time).
    At(std::time::SystemTime),
    /// After this long from now (`+DURATION`).
    In(Duration),
}

/// Parses `--start-at`: `2026-11-23T10:00:00Z` (RFC 3339) or `+30s`.
pub fn parse_start_at(input: &str) -> Result<StartAt, UnitError> {
    let input = input.trim();
    if let Some(rel) = input.strip_prefix('+') {
        return parse_duration(rel)
            .map(StartAt::In)
            .map_err(|e| UnitError(format!("invalid --start-at '{input}': {}", e.0)));
    }
    let t = time::OffsetDateTime::parse(input, &time::format_description::well_known::Rfc3339)
        .map_err(|e| {
            UnitError(format!(
                "invalid --start-at '{input}' ({e}): expected an RFC 3339 time such as \
                 2026-11-23T10:00:00Z, or +DURATION such as +30s"
            ))
        })?;
    let ns = t.unix_timestamp_nanos();
    if ns < 0 {
        return Err(UnitError(format!(
            "invalid --start-at '{input}': before 1970"
        )));
    }
    Ok(StartAt::At(
        std::time::UNIX_EPOCH + Duration::from_nanos(ns as u64),
    ))
}

/// Formats a duration given in nanoseconds in a human unit with 2 decimals
/// (`812ns`, `35.20us`, `1.25ms`, `2.00s`).
pub fn human_ns(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.2}us", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// Formats a rate (per second) with three significant digits at most and a metric prefix
/// (`950`, `8.9k`, `20.7k`, `100M`).
pub fn human_rate(per_s: f64) -> String {
    let (v, unit) = match per_s.abs() {
        x if x >= 1e9 => (per_s / 1e9, "G"),
        x if x >= 1e6 => (per_s / 1e6, "M"),
        x if x >= 1e3 => (per_s / 1e3, "k"),
        _ => (per_s, ""),
    };
    let digits = match v.abs() {
        x if x >= 99.95 => 0,
        x if x >= 9.995 => 1,
        _ => 2,
    };
    let mut text = format!("{v:.digits$}");
    if text.contains('.') {
        text = text.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    format!("{text}{unit}")
}

/// `n` and a noun, singular for one: `1 thread`, `2 threads`, `0 errors` (every noun reqlife
/// counts takes an `s`).
pub fn counted(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}

/// Formats a byte count with binary prefixes (`512B`, `1.50KiB`, `3.20MiB`).
pub fn human_bytes(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0}B")
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

#[cfg(test)]
mod tests;
