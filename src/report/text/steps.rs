//! The text report's sections beyond one run's own figures: each named request's, the
//! thresholds' verdicts, a sweep's levels, a knee search's steps, repeated runs, bursts and
//! stages.

use super::*;

/// A sweep: one row per level, offered and achieved, latency and errors (`wide`: p90 and
/// the mean too; else the row fits 80 columns).
pub(super) fn levels(out: &mut String, r: &RunRecord, wide: bool) {
    let heads: &[&str] = if wide {
        &["p50", "p90", "p99", "p99.9", "mean"]
    } else {
        &["p50", "p99", "p99.9"]
    };
    let _ = writeln!(out);
    let _ = write!(out, "  {:<18} {:>8} {:>9}", "Level", "offered", "achieved");
    for h in heads {
        let _ = write!(out, " {h:>8}");
    }
    let _ = writeln!(out, " {:>7}", "errors");
    for l in &r.levels {
        let t = &l.summary.latency.total;
        let offered = l
            .offered_rps
            .map(|o| format!("{o:.0}"))
            .unwrap_or_else(|| "-".into());
        let _ = write!(
            out,
            "  {:<18} {:>8} {:>9.1}",
            l.label, offered, l.summary.throughput_rps
        );
        for h in heads {
            let v = match *h {
                "p50" => t.p50_us,
                "p90" => t.p90_us,
                "p99" => t.p99_us,
                "p99.9" => t.p999_us,
                _ => t.mean_us,
            };
            let _ = write!(out, " {:>8}", cell(v));
        }
        let _ = writeln!(out, " {:>7}", l.summary.requests.errors);
    }
    not_valid(out, &r.levels);
}

/// Under a table of levels or runs, each whose own load was not valid, with why.
fn not_valid(out: &mut String, parts: &[crate::recorder::record::Level]) {
    for (label, v) in parts
        .iter()
        .filter_map(|l| Some((&l.label, l.validity.as_ref()?)))
        .filter(|(_, v)| !v.valid)
    {
        let _ = writeln!(out, "  {label}: {}", v.line);
    }
}

/// `reqlife knee`: one row per step (offered, achieved, latency, errors, verdict; why on the
/// lines below it), then the answer. `wide`: p90 and the mean too, and why on the row itself.
pub(super) fn knee(out: &mut String, k: &crate::analysis::knee::KneeResult, wide: bool) {
    use crate::analysis::knee::Verdict;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  Knee search for {} (precision {:.0}%)",
        k.slos.join(", "),
        k.precision * 100.0
    );
    let heads: &[&str] = if wide {
        &["p50", "p90", "p99", "mean"]
    } else {
        &["p50", "p99"]
    };
    let _ = write!(out, "  {:<4} {:>8} {:>9}", "step", "offered", "achieved");
    for h in heads {
        let _ = write!(out, " {h:>8}");
    }
    let _ = writeln!(out, " {:>6}  result", "errors");
    for (i, s) in k.steps.iter().enumerate() {
        let verdict = match s.verdict {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Client => "CLIENT LIMIT",
        };
        let _ = write!(
            out,
            "  {:<4} {:>8.0} {:>9.1}",
            i + 1,
            s.offered_rps,
            s.achieved_rps
        );
        for h in heads {
            let v = match *h {
                "p50" => s.p50_us,
                "p90" => s.p90_us,
                "p99" => s.p99_us,
                _ => s.mean_us,
            };
            let _ = write!(out, " {:>8}", cell(v));
        }
        let again = if s.confirmation { " (confirm)" } else { "" };
        let _ = write!(out, " {:>6}  {verdict}{again}", s.errors);
        let mut why = s.reasons.clone();
        why.extend(crate::analysis::knee::step_notes(s));
        match (why.is_empty(), wide) {
            (true, _) => {}
            (false, true) => {
                let _ = write!(out, ": {}", why.join("; "));
            }
            (false, false) => {
                let _ = write!(out, "\n        {}", why.join("; "));
            }
        }
        out.push('\n');
    }
    let _ = writeln!(out, "\n  Answer: {}.", k.summary);
}

/// Named requests (`--scenario`, `--targets`): a row per name, its count, rate, errors,
/// latency and statuses (`wide`: p90 and the max too).
pub(super) fn by_request(
    out: &mut String,
    title: &str,
    s: &crate::recorder::record::Summary,
    wide: bool,
) {
    if s.by_request.is_empty() {
        return;
    }
    let heads: &[&str] = if wide {
        &["p50", "p90", "p99", "max"]
    } else {
        &["p50", "p99"]
    };
    let _ = writeln!(out);
    let _ = write!(
        out,
        "  {:<20} {:>8} {:>9} {:>6}",
        format!("{title}request"),
        "count",
        "req/s",
        "errors"
    );
    for h in heads {
        let _ = write!(out, " {h:>8}");
    }
    let _ = writeln!(out, "  status");
    for (name, f) in s.by_request.iter().filter(|(_, f)| f.requests.total > 0) {
        let t = &f.latency.total;
        let status: Vec<String> = f.status.iter().map(|(c, n)| format!("{c}: {n}")).collect();
        let _ = write!(
            out,
            "  {:<20} {:>8} {:>9.1} {:>6}",
            name, f.requests.total, f.throughput_rps, f.requests.errors
        );
        for h in heads {
            let v = match *h {
                "p50" => t.p50_us,
                "p90" => t.p90_us,
                "p99" => t.p99_us,
                _ => t.max_us,
            };
            let _ = write!(out, " {:>8}", cell(v));
        }
        let _ = writeln!(out, "  {}", status.join(", "));
    }
}

/// The `--threshold`s checked: each with its measured figure, pass or FAIL.
pub(super) fn thresholds(out: &mut String, r: &RunRecord) {
    let t = &r.summary.thresholds;
    if t.is_empty() {
        return;
    }
    let width = t
        .iter()
        .map(|c| c.threshold.len())
        .max()
        .unwrap_or(0)
        .max(9);
    let _ = writeln!(out);
    let _ = writeln!(out, "  {:<width$} {:>12}  result", "Threshold", "measured");
    for c in t {
        let _ = write!(
            out,
            "  {:<width$} {:>12}  {}",
            c.threshold,
            c.shown.as_deref().unwrap_or("-"),
            c.result()
        );
        if let Some(note) = &c.note {
            let _ = write!(out, " ({note})");
        }
        if let (true, Some(ci)) = (c.undecided, c.interval) {
            let us = |b: Option<f64>| b.map(|ns| ns / 1000.0);
            let _ = write!(
                out,
                " (undecided: its 95% interval {} holds the limit; judged by the measured figure)",
                super::precision::bounds(&[us(ci[0]), us(ci[1])])
            );
        }
        out.push('\n');
    }
    // The banner is the verdict's, as are the JSON's and the exit code.
    if let Some(v) = r.summary.thresholds_verdict() {
        if v.state != crate::recorder::record::ThresholdState::Pass {
            let _ = writeln!(out, "  {}", v.banner);
        }
    }
}

/// `--repeat N`: one row per run, then the median of each figure across the runs and its
/// spread (the lowest and highest run, and that range as a share of the median); `wide`:
/// the mean too.
pub(super) fn repetitions(out: &mut String, r: &RunRecord, wide: bool) {
    if r.repetitions.is_empty() {
        return;
    }
    // Wide: every figure; else all but the mean, in 80 columns.
    let all = crate::report::REPETITION_FIGURES;
    let figures = &all[..if wide { all.len() } else { all.len() - 1 }];
    let _ = writeln!(out);
    let _ = write!(out, "  {:<10}", "Run");
    for (name, _) in figures {
        let _ = write!(out, " {name:>10}");
    }
    let _ = writeln!(out, " {:>8}", "errors");
    let show = |i: usize, v: f64| {
        if i == 0 {
            format!("{v:.1}")
        } else {
            human_ns(v * 1000.0)
        }
    };
    for run in &r.repetitions {
        let _ = write!(out, "  {:<10}", run.label);
        for (i, (_, f)) in figures.iter().enumerate() {
            let cell = f(&run.summary).map_or("-".into(), |v| show(i, v));
            let _ = write!(out, " {cell:>10}");
        }
        let _ = writeln!(out, " {:>8}", run.summary.requests.errors);
    }
    let columns: Vec<Vec<f64>> = figures
        .iter()
        .map(|(_, f)| r.repetitions.iter().filter_map(|l| f(&l.summary)).collect())
        .collect();
    let row = |out: &mut String, label: &str, pick: &dyn Fn(usize, &[f64]) -> String| {
        let _ = write!(out, "  {label:<10}");
        for (i, col) in columns.iter().enumerate() {
            let cell = if col.is_empty() {
                "-".into()
            } else {
                pick(i, col)
            };
            let _ = write!(out, " {cell:>10}");
        }
        let _ = writeln!(out);
    };
    row(out, "median", &|i, col| show(i, median(col)));
    row(out, "min", &|i, col| {
        show(i, col.iter().cloned().fold(f64::MAX, f64::min))
    });
    row(out, "max", &|i, col| {
        show(i, col.iter().cloned().fold(f64::MIN, f64::max))
    });
    row(out, "range", &|_, col| {
        let (lo, hi) = (
            col.iter().cloned().fold(f64::MAX, f64::min),
            col.iter().cloned().fold(f64::MIN, f64::max),
        );
        format!(
            "{:.1}%",
            100.0 * (hi - lo) / median(col).max(f64::MIN_POSITIVE)
        )
    });
    not_valid(out, &r.repetitions);
}

/// The median of some values (the mean of the middle two for an even count).
fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Bursts: the time to dispatch all and the time waiting for the answers, per burst.
pub(super) fn bursts(out: &mut String, r: &RunRecord) {
    let Some(b) = &r.summary.bursts else { return };
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {} of {}, {} apart (one thread)",
        crate::util::units::counted(b.count, "burst"),
        crate::util::units::counted(b.size, "request"),
        human_ns(b.interval_s * 1e9)
    );
    let _ = writeln!(
        out,
        "  {:<26} {:>10} {:>10} {:>10} {:>10}",
        "Per burst", "mean", "p50", "p95", "max"
    );
    for (name, s) in [
        ("dispatch all (connect+write)", &b.dispatch),
        ("wait for all answers", &b.wait),
    ] {
        let _ = writeln!(
            out,
            "  {:<26} {:>10} {:>10} {:>10} {:>10}",
            name,
            human_ns(s.mean_us * 1000.0),
            human_ns(s.p50_us * 1000.0),
            human_ns(s.p95_us * 1000.0),
            human_ns(s.max_us * 1000.0)
        );
    }
}

/// One row per stage: what it asked for, what it got, and its latency (`wide`: the requests,
/// p90 and p99.9 too).
pub(super) fn stages(out: &mut String, r: &RunRecord, wide: bool) {
    if r.stages.is_empty() {
        return;
    }
    let heads: &[&str] = if wide {
        &["p50", "p90", "p99", "p99.9"]
    } else {
        &["p50", "p99"]
    };
    let _ = writeln!(out);
    let _ = write!(out, "  {:<5} {:>7} {:<24}", "Stage", "from", "target");
    if wide {
        let _ = write!(out, " {:>10}", "requests");
    }
    let _ = write!(out, " {:>9}", "req/s");
    for h in heads {
        let _ = write!(out, " {h:>8}");
    }
    let _ = writeln!(out, " {:>6}", "errors");
    for (i, s) in r.stages.iter().enumerate() {
        let t = &s.latency.total;
        let _ = write!(out, "  {:<5} {:>6.1}s {:<24}", i + 1, s.start_s, s.label);
        if wide {
            let _ = write!(out, " {:>10}", s.requests.total);
        }
        let _ = write!(out, " {:>9.1}", s.throughput_rps);
        for h in heads {
            let v = match *h {
                "p50" => t.p50_us,
                "p90" => t.p90_us,
                "p99" => t.p99_us,
                _ => t.p999_us,
            };
            let _ = write!(out, " {:>8}", cell(v));
        }
        let _ = writeln!(out, " {:>6}", s.requests.errors);
    }
}
