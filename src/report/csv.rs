//! `reqlife report FILE --format csv`: the interval series as CSV (RFC 4180), one row per
//! interval of the record: `start_s, duration_s, requests, ok, errors, throughput_rps`, then
//! `<phase>_p50_us, <phase>_p99_us, <phase>_max_us` for every phase that has figures in some
//! interval (client phases, `total`, `uncorrected`, `schedule_lag`, in a request's order),
//! then the same for each `Server-Timing` metric (`server_timing.<name>_…`, in the server's
//! order). A phase without figures in an interval leaves its cells empty. For a sweep, the
//! intervals of the levels follow one another (as in the record).

use crate::model::Phase;
use crate::recorder::hist::IntervalStats;
use crate::recorder::record::{Interval, RunRecord};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The CSV of `record`'s intervals.
pub fn render(record: &RunRecord) -> String {
    let phases: Vec<Phase> = Phase::ALL
        .into_iter()
        .filter(|p| record.intervals.iter().any(|i| i.latency.contains_key(p)))
        .collect();
    let metrics = metric_names(record);
    let mut out = String::new();
    let mut head: Vec<String> = [
        "start_s",
        "duration_s",
        "requests",
        "ok",
        "errors",
        "throughput_rps",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for p in &phases {
        head.extend(stat_columns(p.name()));
    }
    for name in &metrics {
        head.extend(stat_columns(&format!("server_timing.{name}")));
    }
    let _ = writeln!(out, "{}", join(&head));
    for i in &record.intervals {
        let mut row = vec![
            i.start_s.to_string(),
            i.duration_s.to_string(),
            i.requests.to_string(),
            i.ok.to_string(),
            i.errors.to_string(),
            i.throughput_rps.to_string(),
        ];
        for p in &phases {
            row.extend(stat_cells(i.latency.get(p)));
        }
        for name in &metrics {
            row.extend(stat_cells(i.server_timing.get(name)));
        }
        let _ = writeln!(out, "{}", join(&row));
    }
    out
}

/// The metric names of the series: the server's order first, then any other seen.
fn metric_names(record: &RunRecord) -> Vec<String> {
    let mut names: Vec<String> = record.summary.server_timing_order.clone();
    let seen: BTreeMap<&String, ()> = record
        .intervals
        .iter()
        .flat_map(|i: &Interval| i.server_timing.keys())
        .map(|k| (k, ()))
        .collect();
    for name in seen.keys() {
        if !names.contains(name) {
            names.push((*name).clone());
        }
    }
    names.retain(|n| seen.contains_key(n));
    names
}

fn stat_columns(name: &str) -> [String; 3] {
    ["p50_us", "p99_us", "max_us"].map(|s| format!("{name}_{s}"))
}

fn stat_cells(s: Option<&IntervalStats>) -> [String; 3] {
    match s {
        Some(s) => [s.p50_us, s.p99_us, s.max_us].map(|v| v.to_string()),
        None => Default::default(),
    }
}

/// One CSV line; fields with a comma, a quote or a line break are quoted (RFC 4180).
fn join(fields: &[String]) -> String {
    fields
        .iter()
        .map(|f| {
            if f.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixture;

    /// Splits simple CSV (quoted fields may hold commas and doubled quotes).
    fn fields(line: &str) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut quoted = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, quoted) {
                ('"', false) => quoted = true,
                ('"', true) if chars.peek() == Some(&'"') => {
                    chars.next();
                    out.last_mut().unwrap().push('"');
                }
                ('"', true) => quoted = false,
                (',', false) => out.push(String::new()),
                (c, _) => out.last_mut().unwrap().push(c),
            }
        }
        out
    }

    #[test]
    fn one_row_per_interval_with_the_record_s_figures() {
        let record = fixture::plain();
        let text = render(&record);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + record.intervals.len());
        assert_eq!(record.intervals.len(), 3);
        let head = fields(lines[0]);
        assert_eq!(
            head[..6],
            [
                "start_s",
                "duration_s",
                "requests",
                "ok",
                "errors",
                "throughput_rps"
            ]
        );
        for want in [
            "total_p50_us",
            "total_p99_us",
            "total_max_us",
            "wait_p99_us",
            "server_timing.handler_max_us",
        ] {
            assert!(head.iter().any(|h| h == want), "{want} in {head:?}");
        }
        let col = |name: &str| head.iter().position(|h| h == name).unwrap();
        for (line, i) in lines[1..].iter().zip(&record.intervals) {
            let row = fields(line);
            assert_eq!(row.len(), head.len(), "{line}");
            assert_eq!(row[col("start_s")].parse::<f64>().unwrap(), i.start_s);
            assert_eq!(row[col("requests")].parse::<u64>().unwrap(), i.requests);
            assert_eq!(row[col("errors")].parse::<u64>().unwrap(), i.errors);
            assert_eq!(
                row[col("total_p99_us")].parse::<f64>().unwrap(),
                i.latency[&Phase::Total].p99_us
            );
            assert_eq!(
                row[col("server_timing.handler_p50_us")]
                    .parse::<f64>()
                    .unwrap(),
                i.server_timing["handler"].p50_us
            );
        }
        // The rows add up to the run.
        let total: u64 = lines[1..]
            .iter()
            .map(|l| fields(l)[col("requests")].parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, record.summary.requests.total);
    }

    #[test]
    fn a_phase_missing_from_an_interval_leaves_empty_cells() {
        let record = fixture::plain();
        // connect happened in the first interval only (the first four requests).
        let text = render(&record);
        let lines: Vec<&str> = text.lines().collect();
        let head = fields(lines[0]);
        let c = head.iter().position(|h| h == "connect_p50_us").unwrap();
        assert!(!fields(lines[1])[c].is_empty());
        assert_eq!(fields(lines[2])[c], "");
    }

    #[test]
    fn fields_are_quoted_when_needed() {
        // (field, as written)
        for (f, want) in [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("two\nlines", "\"two\nlines\""),
        ] {
            assert_eq!(join(&[f.to_string()]), want);
            assert_eq!(fields(want), vec![f.to_string()]);
        }
    }
}
