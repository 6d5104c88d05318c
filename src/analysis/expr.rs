//! Threshold and SLO expressions (`--threshold 'p99<5ms'`, `--slo 'errors<=0.1%'`): one
//! figure of a run compared with a value. The grammar, written out:
//!
//! ```text
//! expr   = [scope "."] figure op value
//! scope  = a phase (queue, connect, tls, h2_handshake, write, wait, read, decode, total,
//!          uncorrected, schedule_lag) | "server." METRIC | "request." NAME
//! figure = "p" NUMBER (a percentile: p50, p99.9, p999 = p99.9, p9999 = p99.99)
//!        | mean | min | max | stdev | count            (of a scope; the default scope is total)
//!        | errors | non_2xx | rps                      (of the run: no scope)
//! op     = "<" | "<=" | ">" | ">="
//! value  = NUMBER unit     for latencies: ns, us (or µs), ms, s
//!        | NUMBER "%"      for errors and non_2xx: a share of the requests
//!        | NUMBER          a count (count, errors, non_2xx), or requests per second (rps;
//!                          10k and 2.5M allowed)
//! ```
//!
//! A scope's metric or request name may hold dots: the figure is the last part that reads as
//! one. An expression prints back in the form it was written ([`std::fmt::Display`]), so
//! parse → print → parse gives the same expression. [`Expr::measure`] reads the figure from a
//! [`RunRecord`] (percentiles from its HdrHistograms, in nanoseconds), [`Expr::check`] says
//! whether it holds.

use crate::model::Phase;
use crate::recorder::record::RunRecord;
use crate::recorder::{hist, Counters, IntervalSnapshot};
use crate::util::units::human_ns;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt;

/// Where figures come from: a finished run's record, or the part of a run measured so far
/// ([`PartialRun`], for `--abort-on-fail`).
pub trait Figures {
    /// A histogram by its record name (`total`, `server_timing.db`, `request.get.total`), in
    /// nanoseconds.
    fn histogram(&self, key: &str) -> Option<Histogram<u64>>;
    /// (requests, errors, non-2xx/3xx responses); the last `None` when not known.
    fn counts(&self) -> (u64, u64, Option<u64>);
    /// Requests completed per second.
    fn rps(&self) -> f64;
    /// The names available of a scope kind, for messages.
    fn available(&self, scope: &Scope) -> Vec<String>;
}

impl Figures for RunRecord {
    fn histogram(&self, key: &str) -> Option<Histogram<u64>> {
        RunRecord::histogram(self, key).ok()
    }

    fn counts(&self) -> (u64, u64, Option<u64>) {
        let r = &self.summary.requests;
        (r.total, r.errors, Some(r.non_2xx_3xx))
    }

    fn rps(&self) -> f64 {
        self.summary.throughput_rps
    }

    fn available(&self, scope: &Scope) -> Vec<String> {
        match scope {
            Scope::Server(_) => self.summary.server_timing_order.clone(),
            Scope::Request(_) => self.summary.by_request.keys().cloned().collect(),
            _ => Phase::ALL.iter().map(|p| p.name().to_string()).collect(),
        }
    }
}

/// The figures of a run measured so far, from the merged intervals the run's collector sends as
/// each is final (a late part of one is added as it comes).
#[derive(Default)]
pub struct PartialRun {
    counters: Counters,
    hists: BTreeMap<String, Histogram<u64>>,
    /// The intervals seen (their indices) and the interval's length.
    intervals: std::collections::BTreeSet<u64>,
    interval_s: f64,
}

impl PartialRun {
    pub fn new(interval: std::time::Duration) -> Self {
        PartialRun {
            interval_s: interval.as_secs_f64(),
            ..Default::default()
        }
    }

    /// Adds an interval (or a late part of one).
    pub fn add(&mut self, snap: &IntervalSnapshot) {
        self.counters.merge(&snap.counters);
        self.intervals.insert(snap.index);
        let named = snap
            .hists
            .iter()
            .map(|(p, b)| (p.name().to_string(), b))
            .chain(
                snap.server
                    .iter()
                    .map(|(n, b)| (format!("server_timing.{n}"), b)),
            );
        for (name, bytes) in named {
            if let Ok(h) = hist::decode_bytes(bytes) {
                let into = self.hists.entry(name).or_insert_with(hist::new_hist);
                let _ = into.add(&h);
            }
        }
    }

    /// Intervals seen so far.
    pub fn intervals(&self) -> usize {
        self.intervals.len()
    }
}

impl Figures for PartialRun {
    fn histogram(&self, key: &str) -> Option<Histogram<u64>> {
        self.hists.get(key).cloned()
    }

    fn counts(&self) -> (u64, u64, Option<u64>) {
        (self.counters.requests, self.counters.error_total(), None)
    }

    fn rps(&self) -> f64 {
        let secs = self.intervals.len() as f64 * self.interval_s;
        if secs > 0.0 {
            self.counters.requests as f64 / secs
        } else {
            0.0
        }
    }

    fn available(&self, scope: &Scope) -> Vec<String> {
        let prefix = match scope {
            Scope::Server(_) => "server_timing.",
            _ => "",
        };
        self.hists
            .keys()
            .filter_map(|k| k.strip_prefix(prefix))
            .filter(|k| !prefix.is_empty() || !k.contains('.'))
            .map(str::to_string)
            .collect()
    }
}

/// What the valid figures are, for error messages.
const FIGURES: &str = "valid figures are pNN (p50, p99, p99.9, ...), mean, min, max, stdev, count \
     (of a phase, server.METRIC or request.NAME; total by default), and errors, non_2xx, rps (of the run)";
const UNITS: &str = "ns, us, ms or s";

/// Whose figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    Phase(Phase),
    /// A `Server-Timing` metric.
    Server(String),
    /// A named request's total latency (`--scenario`, `--targets`).
    Request(String),
    /// The run as a whole (errors, non_2xx, rps).
    Run,
}

/// Which figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    /// A percentile, 0 < p ≤ 100, as written (`99.9`).
    Percentile(f64),
    Mean,
    Min,
    Max,
    Stdev,
    Count,
    Errors,
    Non2xx,
    Rps,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    pub fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
}

/// The unit a value was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Ns,
    Us,
    Ms,
    S,
    Percent,
    /// A bare number (a count, or requests per second).
    None,
}

impl Unit {
    /// Nanoseconds per unit (latencies).
    fn ns(self) -> f64 {
        match self {
            Unit::Ns => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
            Unit::S => 1e9,
            Unit::Percent | Unit::None => 1.0,
        }
    }

    fn text(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::Percent => "%",
            Unit::None => "",
        }
    }
}

/// One parsed expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    pub scope: Scope,
    pub figure: Figure,
    pub op: Op,
    /// The number as written, in `unit`.
    pub value: f64,
    pub unit: Unit,
}

/// Bad input: the expression and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExprError(pub String);

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
    /// Parses `text` (whitespace around its parts is allowed).
    pub fn parse(text: &str) -> Result<Expr, ExprError> {
        let whole = text.trim();
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
        // The figure is the whole left side, or its last dotted part that reads as one.
        let (scope, figure) = match figure_of(lhs) {
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
        };
        let (number, unit) = split_value(rhs)
            .ok_or_else(|| ExprError(format!("no number after '{op_text}' in '{whole}'")))?;
        let mut value: f64 = number
            .parse()
            .map_err(|_| ExprError(format!("'{number}' is not a number in '{whole}'")))?;
        let unit = match (unit, &figure) {
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
        let latency = matches!(
            figure,
            Figure::Percentile(_) | Figure::Mean | Figure::Min | Figure::Max | Figure::Stdev
        );
        match (latency, unit) {
            (true, Unit::None | Unit::Percent) => {
                return Err(ExprError(format!(
                    "the latency in '{whole}' needs a unit: {UNITS} (e.g. 5ms)"
                )))
            }
            (false, Unit::Ns | Unit::Us | Unit::Ms | Unit::S) => {
                return Err(ExprError(format!(
                    "'{}' is not a latency in '{whole}': give a count{} without a time unit",
                    lhs,
                    if matches!(figure, Figure::Errors | Figure::Non2xx) {
                        " or a share with %"
                    } else {
                        ""
                    }
                )))
            }
            (false, Unit::Percent) if !matches!(figure, Figure::Errors | Figure::Non2xx) => {
                return Err(ExprError(format!(
                    "'%' applies to errors and non_2xx, not to '{lhs}' in '{whole}'"
                )))
            }
            _ => {}
        }
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

    /// The threshold in the figure's natural unit: ns for latencies, percent for shares,
    /// else the number.
    pub fn threshold(&self) -> f64 {
        self.value * self.unit.ns()
    }

    /// The figure's value in `record` (a finished run, or the part measured so far), in the
    /// natural unit of [`Expr::threshold`]; why not, when there is none (no data included).
    pub fn measure(&self, record: &dyn Figures) -> Result<f64, String> {
        match self.measured(record) {
            Measured::Value(v) => Ok(v),
            Measured::NoData(e) | Measured::Invalid(e) => Err(e),
        }
    }

    /// The figure's value in `record`, or why not: no data (a latency of a scope that
    /// measured nothing, a share of no requests), or a figure the record cannot give.
    pub fn measured(&self, record: &dyn Figures) -> Measured {
        match self.measure_inner(record) {
            Ok(v) => Measured::Value(v),
            Err(Unmeasured::NoData(e)) => Measured::NoData(e),
            Err(Unmeasured::Invalid(e)) => Measured::Invalid(e),
        }
    }

    fn measure_inner(&self, record: &dyn Figures) -> Result<f64, Unmeasured> {
        let (total, errors, non_2xx) = record.counts();
        let share = |n: u64| {
            if total == 0 {
                Err(Unmeasured::NoData(format!(
                    "'{}' is a share of the requests, and none was made",
                    self.subject()
                )))
            } else {
                Ok(100.0 * n as f64 / total as f64)
            }
        };
        let non_2xx = || {
            non_2xx.ok_or_else(|| {
                Unmeasured::Invalid("non_2xx is known at the end of the run".to_string())
            })
        };
        match (&self.figure, self.unit) {
            (Figure::Errors, Unit::Percent) => return share(errors),
            (Figure::Errors, _) => return Ok(errors as f64),
            (Figure::Non2xx, Unit::Percent) => return share(non_2xx()?),
            (Figure::Non2xx, _) => return Ok(non_2xx()? as f64),
            (Figure::Rps, _) => return Ok(record.rps()),
            _ => {}
        }
        let key = match &self.scope {
            Scope::Phase(p) => p.name().to_string(),
            Scope::Server(m) => format!("server_timing.{m}"),
            Scope::Request(n) => format!("request.{n}.total"),
            Scope::Run => {
                return Err(Unmeasured::Invalid(
                    "internal: a run figure with a latency".into(),
                ))
            }
        };
        let h = record
            .histogram(&key)
            .ok_or_else(|| Unmeasured::Invalid(self.missing(record)))?;
        if h.is_empty() && !matches!(self.figure, Figure::Count) {
            return Err(Unmeasured::NoData(format!(
                "'{}' measured nothing in this run",
                self.subject()
            )));
        }
        Ok(match self.figure {
            Figure::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
            Figure::Mean => h.mean(),
            Figure::Min => h.min() as f64,
            Figure::Max => h.max() as f64,
            Figure::Stdev => h.stdev(),
            Figure::Count => h.len() as f64,
            Figure::Errors | Figure::Non2xx | Figure::Rps => unreachable!("answered above"),
        })
    }

    /// What the record offers instead of a missing scope.
    fn missing(&self, record: &dyn Figures) -> String {
        let kind = match &self.scope {
            Scope::Server(_) => "Server-Timing metrics",
            Scope::Request(_) => "request names",
            _ => "phases",
        };
        let have = record.available(&self.scope);
        let have = if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ")
        };
        format!(
            "the record has no {} for '{}': its {kind} are {have}",
            self.subject(),
            self.scope_text()
        )
    }

    fn scope_text(&self) -> String {
        match &self.scope {
            Scope::Phase(p) => p.name().to_string(),
            Scope::Server(m) => format!("server.{m}"),
            Scope::Request(n) => format!("request.{n}"),
            Scope::Run => String::new(),
        }
    }

    /// The left side, as printed.
    fn subject(&self) -> String {
        let figure = match &self.figure {
            Figure::Percentile(p) => format!("p{p}"),
            Figure::Mean => "mean".into(),
            Figure::Min => "min".into(),
            Figure::Max => "max".into(),
            Figure::Stdev => "stdev".into(),
            Figure::Count => "count".into(),
            Figure::Errors => "errors".into(),
            Figure::Non2xx => "non_2xx".into(),
            Figure::Rps => "rps".into(),
        };
        match &self.scope {
            Scope::Phase(Phase::Total) | Scope::Run => figure,
            _ => format!("{}.{figure}", self.scope_text()),
        }
    }

    /// Measures and compares: pass or fail, or no data (neither: nothing was measured to
    /// compare).
    pub fn check(&self, record: &dyn Figures) -> Check {
        match self.measured(record) {
            Measured::Value(v) => Check {
                expr: self.clone(),
                measured: Some(v),
                pass: self.op.holds(v, self.threshold()),
                no_data: false,
                note: None,
            },
            Measured::NoData(e) => Check {
                expr: self.clone(),
                measured: None,
                pass: false,
                no_data: true,
                note: Some(e),
            },
            Measured::Invalid(e) => Check {
                expr: self.clone(),
                measured: None,
                pass: false,
                no_data: false,
                note: Some(e),
            },
        }
    }

    /// A measured value in the expression's own terms (`1.23ms`, `0.5%`, `120`).
    pub fn show(&self, v: f64) -> String {
        match self.unit {
            Unit::Ns | Unit::Us | Unit::Ms | Unit::S => human_ns(v),
            Unit::Percent => format!("{v:.3}%"),
            Unit::None if matches!(self.figure, Figure::Rps) => format!("{v:.1}"),
            Unit::None => format!("{v:.0}"),
        }
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

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}{}{}{}",
            self.subject(),
            self.op.text(),
            self.value,
            self.unit.text()
        )
    }
}

/// Why an expression has no figure.
enum Unmeasured {
    NoData(String),
    Invalid(String),
}

/// An expression's figure in a record, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Measured {
    Value(f64),
    /// Nothing was measured that the figure is made of (an empty histogram, a share of no
    /// requests): neither pass nor fail.
    NoData(String),
    /// The record cannot give the figure (a metric the server does not send): a failure.
    Invalid(String),
}

/// One expression checked against a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub expr: Expr,
    /// The figure, in the expression's natural unit; `None` when it could not be measured.
    pub measured: Option<f64>,
    /// Held (false when there was no data: see `no_data`).
    pub pass: bool,
    /// Nothing was measured to compare: neither pass nor fail.
    pub no_data: bool,
    /// Why it could not be measured.
    pub note: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threshold_over_no_data_is_neither_pass_nor_fail() {
        // Nothing measured yet: no requests, no histograms.
        let empty = PartialRun::new(std::time::Duration::from_secs(1));
        for text in ["errors<1%", "non_2xx<1%"] {
            let c = p(text).check(&empty);
            if text.starts_with("errors") {
                assert!(
                    c.no_data && !c.pass && c.measured.is_none(),
                    "{text}: {c:?}"
                );
                assert!(c.note.unwrap().contains("none was made"));
            }
        }
        // A count of nothing is a count: 0.
        let mut run = PartialRun::new(std::time::Duration::from_secs(1));
        run.hists.insert("total".into(), hist::new_hist());
        let c = p("count>=0").check(&run);
        assert!(c.pass && !c.no_data, "{c:?}");
        // A percentile of an empty histogram: no data.
        let c = p("p99<5ms").check(&run);
        assert!(c.no_data && !c.pass, "{c:?}");
        // A histogram the record does not have at all is a failure, not "no data".
        let c = p("server.nope.p99<1ms").check(&run);
        assert!(!c.no_data && !c.pass, "{c:?}");
    }

    fn p(text: &str) -> Expr {
        Expr::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn valid_expressions() {
        use Figure::*;
        // (text, scope, figure, op, threshold in natural units)
        let rows: Vec<(&str, Scope, Figure, Op, f64)> = vec![
            (
                "p99<5ms",
                Scope::Phase(Phase::Total),
                Percentile(99.0),
                Op::Lt,
                5e6,
            ), // total by default
            (
                " p99 <= 2ms ",
                Scope::Phase(Phase::Total),
                Percentile(99.0),
                Op::Le,
                2e6,
            ), // spaces
            (
                "wait.p90<2ms",
                Scope::Phase(Phase::Wait),
                Percentile(90.0),
                Op::Lt,
                2e6,
            ),
            (
                "p99.9<1.5ms",
                Scope::Phase(Phase::Total),
                Percentile(99.9),
                Op::Lt,
                1.5e6,
            ),
            (
                "p999<1s",
                Scope::Phase(Phase::Total),
                Percentile(99.9),
                Op::Lt,
                1e9,
            ), // alias
            (
                "mean<=1.5ms",
                Scope::Phase(Phase::Total),
                Mean,
                Op::Le,
                1.5e6,
            ),
            (
                "connect.max<250us",
                Scope::Phase(Phase::Connect),
                Max,
                Op::Lt,
                250e3,
            ),
            (
                "queue.p50<10µs",
                Scope::Phase(Phase::Queue),
                Percentile(50.0),
                Op::Lt,
                10e3,
            ),
            ("errors<0.1%", Scope::Run, Errors, Op::Lt, 0.1), // a share, in percent
            ("errors<=0", Scope::Run, Errors, Op::Le, 0.0),   // a count
            ("rps>10000", Scope::Run, Rps, Op::Gt, 10_000.0),
            ("rps>=10k", Scope::Run, Rps, Op::Ge, 10_000.0), // with a multiplier
            ("non_2xx<1%", Scope::Run, Non2xx, Op::Lt, 1.0),
            (
                "server.db.p99<1ms",
                Scope::Server("db".into()),
                Percentile(99.0),
                Op::Lt,
                1e6,
            ),
            (
                "server.app.db.p99.9<1ms", // a metric name with a dot
                Scope::Server("app.db".into()),
                Percentile(99.9),
                Op::Lt,
                1e6,
            ),
            (
                "request.get.p99<3ms",
                Scope::Request("get".into()),
                Percentile(99.0),
                Op::Lt,
                3e6,
            ),
            (
                "wait.count>=100",
                Scope::Phase(Phase::Wait),
                Count,
                Op::Ge,
                100.0,
            ),
        ];
        for (text, scope, figure, op, threshold) in rows {
            let e = p(text);
            assert_eq!((&e.scope, &e.figure, e.op), (&scope, &figure, op), "{text}");
            assert!(
                (e.threshold() - threshold).abs() < 1e-6,
                "{text}: {}",
                e.threshold()
            );
        }
    }

    #[test]
    fn invalid_expressions_say_what_is_valid() {
        // (text, parts of the message)
        let rows = [
            ("p99 5ms", vec!["no comparison", "<, <=, >, >="]),
            ("p99x<5ms", vec!["unknown figure 'p99x'", "pNN", "rps"]),
            ("p101<5ms", vec!["unknown figure", "pNN"]),
            ("p99<5", vec!["needs a unit", "ns, us, ms or s"]),
            ("p99<5kg", vec!["unknown unit 'kg'", "ns, us, ms or s"]),
            ("errors<5ms", vec!["not a latency", "%"]),
            ("rps<5%", vec!["'%' applies to errors"]),
            (
                "nope.p99<5ms",
                vec!["unknown scope 'nope'", "wait", "server.METRIC"],
            ),
            (
                "wait.errors<1%",
                vec!["figure of the whole run", "without a scope"],
            ),
            ("<5ms", vec!["no figure"]),
            ("p99<", vec!["no number"]),
            ("p99<<5ms", vec!["one comparison"]),
            ("server.<5ms", vec!["unknown figure"]),
            ("p99<-1ms", vec!["no number"]),
        ];
        for (text, parts) in rows {
            let e = Expr::parse(text).expect_err(text).0;
            for part in parts {
                assert!(e.contains(part), "{text}: {e}");
            }
        }
    }

    #[test]
    fn printing_gives_back_the_expression() {
        for text in [
            "p99<5ms",
            "wait.p90<=2.5ms",
            "errors<0.1%",
            "rps>=10000",
            "server.app.db.p99.9>1us",
            "request.put.mean<3s",
        ] {
            let e = p(text);
            assert_eq!(e.to_string(), text);
            assert_eq!(p(&e.to_string()), e);
        }
    }

    proptest::proptest! {
        // That parsing never panics, and a parsed expression prints and parses back, whatever
        // the text: fuzz/fuzz_targets/expr.rs.
        #[test]
        fn parse_print_parse_is_stable(
            scope in proptest::sample::select(vec!["", "wait.", "server.db.", "request.get."]),
            q in 1u32..=9999,
            op in proptest::sample::select(vec!["<", "<=", ">", ">="]),
            v in 0u32..100_000,
            unit in proptest::sample::select(vec!["ns", "us", "ms", "s"]),
        ) {
            let text = format!("{scope}p{}{op}{}{unit}", q as f64 / 100.0, v as f64 / 10.0);
            let e = Expr::parse(&text).unwrap();
            proptest::prop_assert_eq!(Expr::parse(&e.to_string()).unwrap(), e);
        }
    }
}
