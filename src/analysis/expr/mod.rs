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
//! parse → print → parse gives the same expression. [`Expr::measured`] reads the figure from a
//! [`RunRecord`](crate::recorder::record::RunRecord) (percentiles from its HdrHistograms, in
//! nanoseconds), [`Expr::check`] says whether it holds.

//!
//! By concern: `parse` reads an expression, `source` gives the figures it is measured
//! on, and this file holds the expression itself, its measurement and its check.

mod parse;
mod source;
#[cfg(test)]
mod tests;

pub use source::{Figures, PartialRun};

use crate::model::Phase;
use crate::util::units::human_ns;
use std::fmt;

/// Whose figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    /// A phase's latency (the default scope is `total`).
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
    /// The mean.
    Mean,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
    /// The standard deviation.
    Stdev,
    /// The number of values recorded.
    Count,
    /// The run's failed requests: a count, or a share with `%`.
    Errors,
    /// The run's responses whose status was not 2xx or 3xx: a count, or a share with `%`.
    Non2xx,
    /// The run's requests per second.
    Rps,
}

/// How the figure is compared with the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Op {
    /// Whether `a op b` holds (`a` the figure, `b` the value).
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
    /// Nanoseconds (`ns`).
    Ns,
    /// Microseconds (`us` or `µs`).
    Us,
    /// Milliseconds (`ms`).
    Ms,
    /// Seconds (`s`).
    S,
    /// A share of the requests (`%`).
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
    /// Whose figure.
    pub scope: Scope,
    /// Which figure.
    pub figure: Figure,
    /// How it is compared.
    pub op: Op,
    /// The number as written, in `unit`.
    pub value: f64,
    /// The unit `value` was written in.
    pub unit: Unit,
}

/// Bad input: the expression and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ExprError(pub String);

// An expression that does not parse is bad input: exit 2.
crate::util::exit::exit_code!(crate::util::exit::EXIT_USAGE => ExprError);
impl Expr {
    /// The threshold in the figure's natural unit: ns for latencies, percent for shares,
    /// else the number.
    pub fn threshold(&self) -> f64 {
        self.value * self.unit.ns()
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
            Measured::Value(v) => {
                let interval = self.interval(record);
                let limit = self.threshold();
                // Undecided: the limit lies inside the figure's 95% interval (an open bound
                // reaches as far as it goes), so that the bounds judge it both ways.
                let undecided = interval.is_some_and(|[lo, hi]| {
                    let lo = lo.unwrap_or(f64::NEG_INFINITY);
                    let hi = hi.unwrap_or(f64::INFINITY);
                    self.op.holds(lo, limit) != self.op.holds(hi, limit)
                });
                Check {
                    expr: self.clone(),
                    measured: Some(v),
                    pass: self.op.holds(v, limit),
                    no_data: false,
                    note: None,
                    interval,
                    undecided,
                }
            }
            Measured::NoData(e) => Check {
                expr: self.clone(),
                measured: None,
                pass: false,
                no_data: true,
                note: Some(e),
                interval: None,
                undecided: false,
            },
            Measured::Invalid(e) => Check {
                expr: self.clone(),
                measured: None,
                pass: false,
                no_data: false,
                note: Some(e),
                interval: None,
                undecided: false,
            },
        }
    }

    /// A percentile's 95% interval (ns, as the record gives it: `analysis::precision`);
    /// `None` for other figures.
    fn interval(&self, record: &dyn Figures) -> Option<[Option<f64>; 2]> {
        let Figure::Percentile(p) = self.figure else {
            return None;
        };
        let key = match &self.scope {
            Scope::Phase(p) => p.name().to_string(),
            Scope::Server(m) => format!("server_timing.{m}"),
            Scope::Request(n) => format!("request.{n}.total"),
            Scope::Run => return None,
        };
        let [lo, hi] = record.interval(&key, p / 100.0)?;
        Some([lo.map(|us| us * 1000.0), hi.map(|us| us * 1000.0)])
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
    /// The figure, in the expression's natural unit (ns for latencies, percent for shares).
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
    /// The expression checked.
    pub expr: Expr,
    /// The figure, in the expression's natural unit; `None` when it could not be measured.
    pub measured: Option<f64>,
    /// Held (false when there was no data: see `no_data`).
    pub pass: bool,
    /// Nothing was measured to compare: neither pass nor fail.
    pub no_data: bool,
    /// Why it could not be measured.
    pub note: Option<String>,
    /// A percentile's 95% interval (ns; a bound `None` where the run cannot give it).
    pub interval: Option<[Option<f64>; 2]>,
    /// The limit lies inside that interval: the run cannot tell pass from fail; `pass` is
    /// still the measured figure's.
    pub undecided: bool,
}
