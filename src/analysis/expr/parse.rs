//! Parsing an expression (the grammar is in the module comment of [`super`]): the comparison
//! splits it into a left side (scope and figure) and a value (a number and its unit), each
//! checked with one clear message that names what is valid.

use super::{Expr, ExprError, Figure, Op, Scope, Unit};
use crate::model::Phase;

/// What the valid figures are, for error messages.
const FIGURES: &str = "valid figures are pNN (p50, p99, p99.9, ...), mean, min, max, stdev, count \
     (of a phase, server.METRIC or request.NAME; total by default), and errors, non_2xx, rps (of the run)";
const UNITS: &str = "ns, us, ms or s";

/// The figure a text names, if it is one.
fn figure_of(text: &str) -> Option<Figure> {
    Some(match text {
        "mean" | "avg" => Figure::Mean,
        "min" => Figure::Min,
        "max" => Figure::Max,
        "stdev" => Figure::Stdev,
        "count" => Figure::Count,
        "errors" => Figure::Errors,
        "non_2xx" => Figure::Non2xx,
        "rps" => Figure::Rps,
        "p999" => Figure::Percentile(99.9),
        "p9999" => Figure::Percentile(99.99),
        _ => {
            let n = text.strip_prefix('p')?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return None;
            }
            let p: f64 = n.parse().ok()?;
            if !(p > 0.0 && p <= 100.0) {
                return None;
            }
            Figure::Percentile(p)
        }
    })
}

fn is_run_figure(f: &Figure) -> bool {
    matches!(f, Figure::Errors | Figure::Non2xx | Figure::Rps)
}

fn scope_of(text: &str, whole: &str) -> Result<Scope, ExprError> {
    if let Some(m) = text.strip_prefix("server.") {
        if m.is_empty() {
            return Err(ExprError(format!("no metric after 'server.' in '{whole}'")));
        }
        return Ok(Scope::Server(m.to_string()));
    }
    if let Some(n) = text.strip_prefix("request.") {
        if n.is_empty() {
            return Err(ExprError(format!("no name after 'request.' in '{whole}'")));
        }
        return Ok(Scope::Request(n.to_string()));
    }
    match Phase::from_name(text) {
        Some(p) => Ok(Scope::Phase(p)),
        None => {
            let phases: Vec<&str> = Phase::ALL.iter().map(|p| p.name()).collect();
            Err(ExprError(format!(
                "unknown scope '{text}' in '{whole}': valid scopes are {}, server.METRIC and request.NAME",
                phases.join(", ")
            )))
        }
    }
}
impl Expr {
    /// A command-line value (`--threshold`, `--slo`): [`Expr::parse`] with its message.
    pub fn arg(text: &str) -> Result<Expr, String> {
        Expr::parse(text).map_err(|e| e.0)
    }

    /// Parses `text` (whitespace around its parts is allowed).
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let whole = text.trim();
        let (lhs, op_text, op, rhs) = split_comparison(whole)?;
        let (scope, figure) = scope_and_figure(lhs, whole)?;
        let (value, unit) = value_of(rhs, op_text, &figure, whole)?;
        unit_fits(&figure, unit, lhs, whole)?;
        if !value.is_finite() || value < 0.0 {
            return Err(ExprError(format!(
                "the value in '{whole}' must be a number of 0 or more"
            )));
        }
        Ok(Expr {
            scope,
            figure,
            op,
            value,
            unit,
        })
    }
}

/// The left side, the comparison (as written, and its [`Op`]) and the right side of `whole`:
/// the first comparison found, and only one.
fn split_comparison(whole: &str) -> Result<(&str, &'static str, Op, &str), ExprError> {
    let (at, op) = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
        .iter()
        .filter_map(|(s, op)| whole.find(s).map(|i| (i, (*s, *op))))
        .min_by_key(|(i, (s, _))| (*i, std::cmp::Reverse(s.len())))
        .ok_or_else(|| {
            ExprError(format!(
                "no comparison in '{whole}': write FIGURE OP VALUE with OP one of <, <=, >, >= (e.g. 'p99<5ms')"
            ))
        })?;
    let (op_text, op) = op;
    let lhs = whole[..at].trim();
    let rhs = whole[at + op_text.len()..].trim();
    if rhs.starts_with(['<', '>', '=']) || rhs.contains(['<', '>']) {
        return Err(ExprError(format!(
            "one comparison in '{whole}': OP is one of <, <=, >, >="
        )));
    }
    if lhs.is_empty() {
        return Err(ExprError(format!(
            "no figure before '{op_text}' in '{whole}': {FIGURES}"
        )));
    }
    Ok((lhs, op_text, op, rhs))
}

/// The scope and figure of a left side: the whole of it, or its last dotted part that reads
/// as a figure (a run figure takes no scope; a figure alone is of the total).
fn scope_and_figure(lhs: &str, whole: &str) -> Result<(Scope, Figure), ExprError> {
    Ok(match figure_of(lhs) {
        Some(f) if is_run_figure(&f) => (Scope::Run, f),
        Some(f) => (Scope::Phase(Phase::Total), f),
        None => {
            let split = lhs
                .match_indices('.')
                .map(|(i, _)| i)
                .find_map(|i| Some((&lhs[..i], figure_of(&lhs[i + 1..])?)));
            match split {
                Some((_, f)) if is_run_figure(&f) => {
                    return Err(ExprError(format!(
                        "'{}' is a figure of the whole run in '{whole}': write it without a scope",
                        lhs.rsplit('.').next().unwrap_or(lhs)
                    )))
                }
                Some((scope, f)) => (scope_of(scope.trim(), whole)?, f),
                None => {
                    let last = lhs.rsplit('.').next().unwrap_or(lhs);
                    return Err(ExprError(format!(
                        "unknown figure '{last}' in '{whole}': {FIGURES}"
                    )));
                }
            }
        }
    })
}

/// The number of a right side in its unit (`10k` and `2.5M` of a count or a rate scaled).
fn value_of(
    rhs: &str,
    op_text: &str,
    figure: &Figure,
    whole: &str,
) -> Result<(f64, Unit), ExprError> {
    let (number, unit) = split_value(rhs)
        .ok_or_else(|| ExprError(format!("no number after '{op_text}' in '{whole}'")))?;
    let mut value: f64 = number
        .parse()
        .map_err(|_| ExprError(format!("'{number}' is not a number in '{whole}'")))?;
    let unit = match (unit, figure) {
        ("ns", _) => Unit::Ns,
        ("us" | "µs", _) => Unit::Us,
        ("ms", _) => Unit::Ms,
        ("s", _) => Unit::S,
        ("%", _) => Unit::Percent,
        ("", _) => Unit::None,
        ("k" | "K", Figure::Rps | Figure::Count | Figure::Errors | Figure::Non2xx) => {
            value *= 1e3;
            Unit::None
        }
        ("M", Figure::Rps | Figure::Count | Figure::Errors | Figure::Non2xx) => {
            value *= 1e6;
            Unit::None
        }
        (other, _) => {
            return Err(ExprError(format!(
                "unknown unit '{other}' in '{whole}': latencies take {UNITS}; errors and non_2xx take % or a count"
            )))
        }
    };
    Ok((value, unit))
}

/// Whether `unit` fits the figure: a time for a latency, none for a count or a rate, `%`
/// only for a share (errors, non_2xx).
fn unit_fits(figure: &Figure, unit: Unit, lhs: &str, whole: &str) -> Result<(), ExprError> {
    let latency = matches!(
        figure,
        Figure::Percentile(_) | Figure::Mean | Figure::Min | Figure::Max | Figure::Stdev
    );
    match (latency, unit) {
        (true, Unit::None | Unit::Percent) => Err(ExprError(format!(
            "the latency in '{whole}' needs a unit: {UNITS} (e.g. 5ms)"
        ))),
        (false, Unit::Ns | Unit::Us | Unit::Ms | Unit::S) => Err(ExprError(format!(
            "'{}' is not a latency in '{whole}': give a count{} without a time unit",
            lhs,
            if matches!(figure, Figure::Errors | Figure::Non2xx) {
                " or a share with %"
            } else {
                ""
            }
        ))),
        (false, Unit::Percent) if !matches!(figure, Figure::Errors | Figure::Non2xx) => {
            Err(ExprError(format!(
                "'%' applies to errors and non_2xx, not to '{lhs}' in '{whole}'"
            )))
        }
        _ => Ok(()),
    }
}

/// Splits `12.5ms` into the number and its unit.
fn split_value(text: &str) -> Option<(&str, &str)> {
    let end = text
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.'))
        .map_or(text.len(), |(i, _)| i);
    if end == 0 {
        return None;
    }
    Some((text[..end].trim(), text[end..].trim()))
}
