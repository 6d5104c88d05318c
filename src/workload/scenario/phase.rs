//! A scenario's phases checked: which requests each sends and by what weights, its load and
//! its stop rule, by the command line's rules ([`LoadSpec`]), and the numbers its keys take.

use super::{Amount, Ctx, RawPhase, ScenarioError, ScenarioPhase, ScenarioRequest};
use crate::model::load_spec::{self as load, Given, LoadSpec};
use crate::model::{Arrival, LoadModel, StopRule};
use crate::util::units::{parse_count, parse_duration, parse_rate, parse_stages};
use crate::workload::mix::Mix;
use std::time::Duration;
use toml::Spanned;

/// What a number of a phase key means.
#[derive(Clone, Copy)]
enum Unit {
    Count,
    Seconds,
    Rate,
}

/// The value of a phase key, in its unit: a count, nanoseconds or requests per second.
fn amount(ctx: &Ctx, key: &str, a: &Spanned<Amount>, unit: Unit) -> Result<f64, ScenarioError> {
    let fail = |m: String| Err(ctx.at(a, format!("{key}: {m}")));
    let v = match (a.get_ref(), unit) {
        (Amount::Text(s), Unit::Count) => parse_count(s).map(|n| n as f64),
        (Amount::Text(s), Unit::Seconds) => parse_duration(s).map(|d| d.as_secs_f64()),
        (Amount::Text(s), Unit::Rate) => parse_rate(s),
        (Amount::Int(i), _) => Ok(*i as f64),
        (Amount::Float(f), _) => Ok(*f),
    };
    match v {
        Err(e) => fail(e.0),
        Ok(v) if !v.is_finite() || v < 0.0 => fail(format!("{v} is negative or not a number")),
        Ok(v) if matches!(unit, Unit::Count) && v.fract() != 0.0 => {
            fail(format!("{v} is not a whole number"))
        }
        Ok(v) if matches!(unit, Unit::Seconds) && v > 1e9 => fail(format!("{v}s is too long")),
        Ok(v) => Ok(v),
    }
}

fn count(ctx: &Ctx, key: &str, a: &Spanned<Amount>) -> Result<u64, ScenarioError> {
    amount(ctx, key, a, Unit::Count).map(|v| v as u64)
}

fn duration(ctx: &Ctx, key: &str, a: &Spanned<Amount>) -> Result<Duration, ScenarioError> {
    amount(ctx, key, a, Unit::Seconds).map(Duration::from_secs_f64)
}

pub(super) fn phase(
    ctx: &Ctx,
    index: usize,
    p: &Spanned<RawPhase>,
    requests: &[ScenarioRequest],
) -> Result<ScenarioPhase, ScenarioError> {
    let raw = p.get_ref();
    let name = match &raw.name {
        Some(n) if n.get_ref().trim().is_empty() => {
            return Err(ctx.at(n, "a phase's name cannot be empty"))
        }
        Some(n) => n.get_ref().trim().to_string(),
        None => format!("phase {}", index + 1),
    };
    // How messages name the phase: `phase 'read'`, or `phase 2` when it has no name.
    let label = match &raw.name {
        Some(_) => format!("phase '{name}'"),
        None => name.clone(),
    };
    let entries = entries(ctx, &label, raw, requests)?;
    let mix = Mix::weighted(&entries).map_err(|e| ctx.error(Some(p.span().start), e))?;
    let (load, stop) = load_of(ctx, &label, p)?;
    Ok(ScenarioPhase {
        name,
        mix,
        load,
        stop,
    })
}

/// The requests a phase sends and their weights: those of `requests = [...]` by their own
/// weights, those of `mix = { name = weight }`, or every request by its own.
fn entries(
    ctx: &Ctx,
    label: &str,
    raw: &RawPhase,
    requests: &[ScenarioRequest],
) -> Result<Vec<(usize, u64)>, ScenarioError> {
    let names = || {
        requests
            .iter()
            .map(|r| r.spec.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let find = |n: &Spanned<String>| {
        requests
            .iter()
            .position(|r| r.spec.name == n.get_ref().trim())
            .ok_or_else(|| {
                ctx.at(
                    n,
                    format!(
                        "{label} names no request '{}': the requests are {}",
                        n.get_ref(),
                        names()
                    ),
                )
            })
    };
    // Adds request i with weight w, named at `at` (a request named twice is refused).
    let add = |entries: &mut Vec<(usize, u64)>, i: usize, w: u64, at: &Spanned<String>| {
        if entries.iter().any(|e| e.0 == i) {
            return Err(ctx.at(at, format!("{label} names '{}' twice", at.get_ref())));
        }
        entries.push((i, w));
        Ok(())
    };
    let mut entries: Vec<(usize, u64)> = Vec::new();
    match (&raw.requests, &raw.mix) {
        (Some(_), Some(m)) => {
            return Err(ctx.at(
                m,
                format!("{label}: requests and mix conflict: give requests = [...] (their own weights) or mix = {{ name = weight, ... }}"),
            ))
        }
        (Some(list), None) => {
            if list.get_ref().is_empty() {
                return Err(ctx.at(list, format!("{label}: requests is empty: name at least one of {}", names())));
            }
            for n in list.get_ref() {
                let i = find(n)?;
                add(&mut entries, i, requests[i].weight, n)?;
            }
        }
        (None, Some(m)) => {
            if m.get_ref().0.is_empty() {
                return Err(ctx.at(m, format!("{label}: mix is empty: give weights to some of {}", names())));
            }
            for (n, w) in &m.get_ref().0 {
                let i = find(n)?;
                if *w.get_ref() < 1 {
                    return Err(ctx.at(
                        w,
                        format!(
                            "{label}, mix: weight {} of '{}' is not a positive integer: weights are 1 or more (leave the request out instead)",
                            w.get_ref(),
                            n.get_ref()
                        ),
                    ));
                }
                add(&mut entries, i, *w.get_ref() as u64, n)?;
            }
        }
        (None, None) => entries = requests.iter().enumerate().map(|(i, r)| (i, r.weight)).collect(),
    }
    Ok(entries)
}

/// The load model and stop rule of a phase, by the command line's rules (the one load
/// builder, [`LoadSpec`]): only the names of the values and the need for a length differ.
fn load_of(
    ctx: &Ctx,
    label: &str,
    p: &Spanned<RawPhase>,
) -> Result<(LoadModel, StopRule), ScenarioError> {
    let raw = p.get_ref();
    let key = |k: &str| format!("{label}, {k}");
    let given = |a: &Spanned<Amount>, v| Given {
        value: v,
        at: Some(a.span().start),
    };
    let mut spec = LoadSpec::new(load::SCENARIO, None);
    if let Some(c) = &raw.connections {
        spec.connections = Some(given(c, count(ctx, &key("connections"), c)?));
    }
    if let Some(r) = &raw.rate {
        let v = amount(ctx, &key("rate"), r, Unit::Rate)?;
        spec.rate = Some(Given {
            value: v,
            at: Some(r.span().start),
        });
    }
    if let Some(st) = &raw.stages {
        let v = parse_stages(st.get_ref())
            .map_err(|e| ctx.at(st, format!("{label}, stages: {}", e.0)))?;
        spec.stages = Some(Given {
            value: v,
            at: Some(st.span().start),
        });
    }
    if let Some(a) = &raw.arrival {
        let v = match a.get_ref().as_str() {
            "constant" => Arrival::Constant,
            "poisson" => Arrival::Poisson,
            other => {
                return Err(ctx.at(
                    a,
                    format!(
                        "{label}: unknown arrival '{other}': expected \"constant\" or \"poisson\""
                    ),
                ))
            }
        };
        spec.arrival = Some(Given {
            value: v,
            at: Some(a.span().start),
        });
    }
    if let Some(c) = &raw.count {
        spec.count = Some(given(c, count(ctx, &key("count"), c)?));
    }
    if let Some(d) = &raw.duration {
        let v = duration(ctx, &key("duration"), d)?;
        spec.duration = Some(Given {
            value: v,
            at: Some(d.span().start),
        });
    }
    if let Some(b) = &raw.burst {
        spec.burst = Some(given(b, count(ctx, &key("burst"), b)?));
    }
    if let Some(i) = &raw.burst_interval {
        let v = duration(ctx, &key("burst_interval"), i)?;
        spec.burst_interval = Some(Given {
            value: v,
            at: Some(i.span().start),
        });
    }
    if let Some(n) = &raw.bursts {
        spec.bursts = Some(given(n, count(ctx, &key("bursts"), n)?));
    }
    let load = spec.build().map_err(|e| {
        ctx.error(
            e.at.or(Some(p.span().start)),
            format!("{label}: {}", e.message),
        )
    })?;
    Ok((load.model, load.stop))
}
