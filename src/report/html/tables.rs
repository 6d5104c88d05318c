//! The page's tables and texts: the header, the summary and phase tables, stages, status
//! codes, errors and the environment (with the command line quoted for a shell).

use super::{cell, open_loop, PhaseCell, PhaseRow};
use crate::model::Phase;
use crate::recorder::hist::Stats;
use crate::recorder::record::RunRecord;
use crate::report::plot::human;
use crate::util::units::counted;

pub(super) fn header_lines(r: &RunRecord) -> Vec<String> {
    let c = &r.config;
    let mut out = Vec::new();
    let what = match (c.duration_s, c.requests) {
        _ if r.knee.is_some() => format!(
            "a knee search of {} of {}",
            counted(r.levels.len() as u64, "step"),
            human(c.duration_s.unwrap_or(0.0) * 1e9)
        ),
        (Some(d), _) => format!("{} test", human(d * 1e9)),
        (None, Some(n)) => format!("{n}-request test"),
        (None, None) => "test".into(),
    };
    out.push(match &c.sweep {
        Some(sw) => format!(
            "{what}, a sweep of {} over {} levels; {} {}, {} loop",
            sw.of,
            sw.levels.len(),
            c.method,
            c.protocol,
            c.load_model
        ),
        None => format!(
            "{what}; {} and {}, {} {}, {} loop",
            counted(c.threads, "thread"),
            counted(c.connections, "connection"),
            c.method,
            c.protocol,
            c.load_model
        ),
    });
    if let (Some(rate), None, None) = (c.rate_rps, &c.sweep, &r.knee) {
        out.push(format!(
            "offered {rate} req/s, {} arrivals (seed {})",
            c.arrival.as_deref().unwrap_or("constant"),
            c.seed
        ));
    }
    if c.repeat > 1 {
        out.push(format!(
            "repeated {} times ({} ran): the figures merge the runs",
            c.repeat,
            r.repetitions.len()
        ));
    }
    if let Some(w) = &c.workload {
        out.push(w.clone());
    }
    if let Some(seg) = &c.segment {
        out.push(format!("segment {seg} of the plan"));
    }
    out.push(format!("started {}", r.environment.start_time));
    out
}

pub(super) fn summary(r: &RunRecord) -> Vec<(String, String)> {
    let s = &r.summary;
    let t = &s.latency.total;
    let kv = |k: &str, v: String| (k.to_string(), v);
    let mut out = vec![
        kv(
            "requests",
            format!(
                "{} in all: {}, {}, {} not 2xx/3xx",
                s.requests.total,
                counted(s.requests.ok, "response"),
                counted(s.requests.errors, "error"),
                s.requests.non_2xx_3xx
            ),
        ),
        kv("recorded", human(s.duration_s * 1e9)),
        kv("throughput", format!("{:.1} req/s", s.throughput_rps)),
        kv(
            "latency (total)",
            format!(
                "p50 {}, p99 {}, p99.9 {}, max {}",
                cell(t.p50_us),
                cell(t.p99_us),
                cell(t.p999_us),
                cell(t.max_us)
            ),
        ),
        kv(
            "bytes",
            format!(
                "read {} ({}/s), written {}",
                crate::util::units::human_bytes(s.bytes.read as f64),
                crate::util::units::human_bytes(s.bytes.read_per_s),
                crate::util::units::human_bytes(s.bytes.written as f64)
            ),
        ),
        kv(
            "connections",
            format!(
                "{} opened, {} closed by the server after a response",
                s.connections.opened, s.connections.server_closes
            ),
        ),
    ];
    if let Some(offered) = s.generator.offered_rps {
        out.push(kv("offered", format!("{offered} req/s")));
    }
    if let Some(k) = &r.knee {
        // The answer, then the steps that passed apart from those that failed: the figures
        // above add them all up.
        let mut rows = vec![kv("answer", k.summary.clone())];
        rows.extend(knee_groups(k).into_iter().map(|(name, v)| kv(name, v)));
        out.splice(0..0, rows);
        if let Some(l) = out.iter_mut().find(|(k, _)| k == "latency (total)") {
            l.0 = "latency (total, all steps)".into();
        }
    }
    if let Some(m) = s.h2_max_concurrent_streams {
        out.push(kv(
            "HTTP/2",
            format!(
                "the server allows {m} concurrent streams per connection; {} asked",
                r.config.streams
            ),
        ));
    }
    if !s.generator.thread_busy.is_empty() {
        let busy: Vec<String> = s
            .generator
            .thread_busy
            .iter()
            .map(|b| format!("{:.0}%", b * 100.0))
            .collect();
        out.push(kv("worker threads on a CPU", busy.join(", ")));
    }
    out
}

/// A knee search's steps in groups: the ones that passed, failed (an SLO missed or the rate
/// not achieved), or stopped at the generator's limit; each with its step numbers, rates and
/// (for the failures) the SLOs or checks that failed.
pub(super) fn knee_groups(k: &crate::analysis::knee::KneeResult) -> Vec<(&'static str, String)> {
    use crate::analysis::knee::Verdict;
    let group = |verdict: Verdict| -> Option<String> {
        let steps: Vec<(usize, &crate::analysis::knee::KneeStep)> = k
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| s.verdict == verdict)
            .map(|(i, s)| (i + 1, s))
            .collect();
        if steps.is_empty() {
            return None;
        }
        let numbers: Vec<String> = steps.iter().map(|(i, _)| i.to_string()).collect();
        let rates = steps.iter().map(|(_, s)| s.offered_rps);
        let lo = rates.clone().fold(f64::MAX, f64::min);
        let hi = rates.fold(0.0, f64::max);
        let range = if lo == hi {
            format!("{lo:.0} req/s")
        } else {
            format!("{lo:.0} to {hi:.0} req/s")
        };
        let plural = if steps.len() == 1 { "step" } else { "steps" };
        let mut text = format!("{plural} {} ({range})", numbers.join(", "));
        if verdict != Verdict::Pass {
            // What failed, once each, in the order first met: "p99<=20ms, the rate".
            let mut why: Vec<String> = Vec::new();
            for r in steps.iter().flat_map(|(_, s)| &s.reasons) {
                let what = match r.split_once(" (") {
                    _ if r.starts_with("achieved ") => "the offered rate not achieved".to_string(),
                    Some((expr, _)) => expr.to_string(),
                    None => r.clone(),
                };
                if !why.contains(&what) {
                    why.push(what);
                }
            }
            if !why.is_empty() {
                text += &format!(": {} (each step's reasons under Knee)", why.join("; "));
            }
        }
        Some(text)
    };
    [
        ("steps passed", Verdict::Pass),
        ("steps failed", Verdict::Fail),
        ("steps the generator limited", Verdict::Client),
    ]
    .into_iter()
    .filter_map(|(name, v)| {
        group(v)
            .or_else(|| (v == Verdict::Pass).then(|| "none".to_string()))
            .map(|t| (name, t))
    })
    .collect()
}

/// The client phases of the tables and figures, in the order of a request's life.
pub(super) const CLIENT_PHASES: &[Phase] = &Phase::LIFE;

/// The client phases before the wait (up to `write`).
pub(super) const BEFORE_THE_WAIT: &[Phase] = CLIENT_PHASES.split_at(10).0;

/// The rows of the phase table, with the text report's rules ([`crate::report::phase_rows`]).
pub(super) fn phases(r: &RunRecord) -> Vec<PhaseRow> {
    let l = &r.summary.latency;
    let open = open_loop(r);
    let mut rows: Vec<(&str, &Stats)> = crate::report::phase_rows(r)
        .into_iter()
        .map(|(p, st)| (p.name(), st))
        .collect();
    rows.push(("total", &l.total));
    if open {
        rows.push(("uncorrected", &l.uncorrected));
    }
    // The figures apart from the request's life (streamed responses' events, WebSocket pings);
    // `events` is a count, shown as a number.
    for p in Phase::APART {
        if let Some(st) = l.phases.get(&p) {
            rows.push((p.name(), st));
        }
    }
    rows.into_iter()
        .map(|(name, s)| {
            let plain = |text: String| PhaseCell {
                text,
                pm: String::new(),
                title: String::new(),
            };
            let figure = |v: Option<f64>| match v {
                Some(n) if name == "events" => format!("{n}"),
                v => cell(v),
            };
            let percentiles = crate::model::until::PERCENTILES.iter().map(|(q, _)| {
                let (v, ci) = s.named(q).unwrap_or((None, None));
                match (ci, name) {
                    (_, "events") | (None, _) => plain(figure(v)),
                    (Some(ci), _) => interval_cell(figure(v), v, ci),
                }
            });
            PhaseRow {
                name: name.to_string(),
                cells: [plain(figure(s.min_us)), plain(figure(s.mean_us))]
                    .into_iter()
                    .chain(percentiles)
                    .chain([plain(figure(s.max_us)), plain(s.count.to_string())])
                    .collect(),
            }
        })
        .collect()
}

/// A percentile's cell with its 95% interval `ci` (µs): `±4%` beside it, the bounds on hover;
/// an open bound says the run cannot bound it.
fn interval_cell(text: String, v: Option<f64>, ci: crate::recorder::hist::Ci) -> PhaseCell {
    let bound = |b: Option<f64>| b.map_or("unbounded".to_string(), |us| human(us * 1e3));
    let title = format!("95% interval {} to {}", bound(ci[0]), bound(ci[1]));
    let pm = match (v, ci) {
        (Some(v), [Some(lo), Some(hi)]) if v > 0.0 => {
            format!("±{:.0}%", (hi - lo) / 2.0 / v * 100.0)
        }
        // A figure of zero has no share to give.
        (Some(_), [Some(_), Some(_)]) | (None, _) => String::new(),
        (Some(_), _) => "±?".to_string(),
    };
    PhaseCell { text, pm, title }
}

pub(super) fn stages(r: &RunRecord) -> Vec<Vec<String>> {
    r.stages
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let t = &s.latency.total;
            vec![
                (i + 1).to_string(),
                format!("{:.1}s", s.start_s),
                s.label.clone(),
                s.requests.total.to_string(),
                format!("{:.1}", s.throughput_rps),
                cell(t.p50_us),
                cell(t.p90_us),
                cell(t.p99_us),
                cell(t.p999_us),
                s.requests.errors.to_string(),
            ]
        })
        .collect()
}

pub(super) fn status(r: &RunRecord) -> Vec<(String, u64, String)> {
    let all: u64 = r.summary.status.values().sum();
    r.summary
        .status
        .iter()
        .map(|(code, n)| {
            (
                code.clone(),
                *n,
                format!("{:.2}%", 100.0 * *n as f64 / all.max(1) as f64),
            )
        })
        .collect()
}

pub(super) fn errors(r: &RunRecord) -> Vec<(String, u64, String)> {
    r.summary
        .errors
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(kind, n)| {
            (
                kind.clone(),
                *n,
                r.first_errors.get(kind).cloned().unwrap_or_default(),
            )
        })
        .collect()
}

/// Where and how the run was made: enough to run it again.
pub(super) fn environment(r: &RunRecord) -> Vec<(String, String, bool)> {
    let e = &r.environment;
    let c = &r.config;
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let mut out: Vec<(String, String, bool)> = vec![
        ("command line".into(), shell_words(&c.command_line), true),
        ("reqlife".into(), e.tool_version.clone(), false),
        (
            "host".into(),
            format!("{} ({} cores, {} {})", e.hostname, e.cores, e.os, e.arch),
            false,
        ),
        ("kernel".into(), e.kernel.clone(), false),
        ("started".into(), e.start_time.clone(), false),
        ("stop".into(), r.stop_reason.text(), false),
        ("url".into(), c.url.clone(), true),
        (
            "request".into(),
            format!("{} {}, body {} bytes", c.method, c.protocol, c.body_bytes),
            false,
        ),
    ];
    for (name, value) in &c.headers {
        out.push(("header".into(), format!("{name}: {value}"), true));
    }
    let flags = [
        ("connections", c.connections.to_string()),
        ("threads", c.threads.to_string()),
        ("streams per connection", c.streams.to_string()),
        ("pipelined requests per connection", c.pipeline.to_string()),
        (
            "HTTP/2 coalescing (--h2-coalesce)",
            opt(c.h2_coalesce_s.map(|s| format!("{s}s"))),
        ),
        ("duration", opt(c.duration_s.map(|d| format!("{d}s")))),
        ("requests", opt(c.requests.map(|n| n.to_string()))),
        ("warm-up", format!("{}s", c.warmup_s)),
        ("timeout", format!("{}s", c.timeout_s)),
        ("interval", format!("{}s", c.interval_s)),
        ("load model", c.load_model.to_string()),
        ("rate", opt(c.rate_rps.map(|r| format!("{r} req/s")))),
        ("arrival", opt(c.arrival.clone())),
        ("seed", c.seed.to_string()),
        ("connection policy", c.connection_policy.clone()),
        (
            "max connections per second",
            opt(c.max_connections_per_second.map(|v| v.to_string())),
        ),
        ("insecure TLS", c.insecure.to_string()),
        ("CA certificates", opt(c.cacert.clone())),
        (
            "sweep",
            opt(c.sweep.as_ref().map(|s| {
                let levels: Vec<String> = s.levels.iter().map(|v| v.to_string()).collect();
                format!("{}: {}", s.of, levels.join(", "))
            })),
        ),
    ];
    out.extend(flags.into_iter().map(|(k, v)| (k.to_string(), v, false)));
    out
}

/// The command line as a shell would take it back: words with spaces or quotes quoted.
pub(super) fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_read_back_in_a_shell() {
        // (words, as shown)
        for (words, shown) in [
            (vec!["reqlife", "run", "-c", "10"], "reqlife run -c 10"),
            (
                vec!["reqlife", "run", "-H", "A: b"],
                "reqlife run -H 'A: b'",
            ),
            (vec!["x", "it's"], "x 'it'\\''s'"),
            (vec!["x", ""], "x ''"),
        ] {
            let words: Vec<String> = words.into_iter().map(String::from).collect();
            assert_eq!(shell_words(&words), shown);
        }
    }
}
