//! The RunRecord: real output validates against `schema/runrecord.schema.json`, and
//! `reqlife report` re-renders exactly the report the run printed, from the record alone.

use crate::common::*;
use serde_json::Value;

pub(crate) fn validator() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../../schema/runrecord.schema.json")).unwrap();
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid(validator: &jsonschema::Validator, record: &Value) {
    let errors: Vec<String> = validator
        .iter_errors(record)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");
}

#[test]
fn an_open_loop_record_validates_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("open.json");
    let p = path.to_str().unwrap();
    run_ok(&[
        "run",
        "-R",
        "1000",
        "-d",
        "500ms",
        "-c",
        "2",
        "-t",
        "1",
        "--arrival",
        "poisson",
        "--pacer-slack",
        "100us",
        "-o",
        p,
    ]);
    let record: Value = read_json(&path);
    assert_valid(&validator(), &record);
    assert_eq!(record["config"]["load_model"], "open");
    assert_eq!(record["config"]["arrival"], "poisson");
    assert_eq!(record["config"]["pacer_slack_s"], 0.0001);
    assert!(
        record["summary"]["latency"]["schedule_lag"]["count"]
            .as_u64()
            .unwrap()
            > 0
    );
}

/// A host given by name is looked up once, before the run: the record keeps the address and
/// how long the resolver took (the report says it under the header), and validates; an address
/// has no lookup to state.
#[test]
fn a_name_resolved_before_the_run_is_stated() {
    let s = embedded(reqlife::server::ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.json");
    let url = format!("http://localhost:{}/", s.addr().port());
    let out = run_ok(&[
        "run",
        "-n",
        "20",
        "-c",
        "1",
        "-o",
        path.to_str().unwrap(),
        &url,
    ]);
    let record: Value = read_json(&path);
    assert_valid(&validator(), &record);
    let resolved = &record["config"]["resolved"];
    assert_eq!(resolved["addr"], s.addr().ip().to_string(), "{resolved}");
    let took = resolved["took_s"].as_f64().unwrap();
    assert!((0.0..5.0).contains(&took), "took {took} s");
    let text = stdout(&out);
    assert!(text.contains("  resolved to 127.0.0.1 in "), "{text}");
    // An address: nothing looked up.
    let path = dir.path().join("addr.json");
    run_ok(&[
        "run",
        "-n",
        "5",
        "-c",
        "1",
        "-o",
        path.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert!(read_json(&path)["config"].get("resolved").is_none());
}

#[test]
fn a_sweep_record_validates_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sweep.json");
    let p = path.to_str().unwrap();
    let out = run_ok(&["run", "-c", "1,2", "-n", "100", "--pause", "0s", "-o", p]);
    let record: Value = read_json(&path);
    assert_valid(&validator(), &record);
    assert_eq!(record["levels"].as_array().unwrap().len(), 2);
    // The series runs level after level, each interval once, adding up to the whole.
    let intervals = record["intervals"].as_array().unwrap();
    let starts: Vec<f64> = intervals
        .iter()
        .map(|i| i["start_s"].as_f64().unwrap())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    let sum: u64 = intervals
        .iter()
        .map(|i| i["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        sum,
        record["summary"]["requests"]["total"].as_u64().unwrap()
    );
    // The report re-renders a sweep from the record alone.
    let again = run(&["report", p]);
    assert_eq!(stdout(&again), stdout(&out));
}

#[test]
fn a_repeated_run_keeps_every_run_and_reports_their_spread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("repeat.json");
    let p = path.to_str().unwrap();
    let out = run_ok(&[
        "run", "-n", "300", "-c", "2", "-t", "1", "--repeat", "3", "--pause", "50ms", "-o", p,
    ]);
    let record: Value = read_json(&path);
    assert_valid(&validator(), &record);
    assert_eq!(record["config"]["repeat"], 3);
    let runs = record["repetitions"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["run 1", "run 2", "run 3"]);
    for r in runs {
        assert_eq!(r["summary"]["requests"]["total"], 300);
    }
    // The top level merges the runs; a repetition is not a sweep.
    assert_eq!(record["summary"]["requests"]["total"], 900);
    assert!(record["levels"].as_array().unwrap().is_empty());
    let text = stdout(&out);
    assert!(text.contains("repeated 3 times (3 ran)"), "{text}");
    for row in ["run 1", "median", "min", "max", "range"] {
        assert!(
            text.lines().any(|l| l.trim_start().starts_with(row)),
            "{row}: {text}"
        );
    }
    assert_eq!(
        stdout(&run(&["report", p])),
        text,
        "re-rendered from the record"
    );
    // A repetition of a sweep, and no run at all, are refused.
    for bad in [
        vec!["run", "--repeat", "2", "-c", "1,2", "-n", "10"],
        vec!["run", "--repeat", "0", "-n", "10"],
    ] {
        let out = run(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&out).contains("--repeat"), "{}", stderr(&out));
    }
}

#[test]
fn record_validates_against_the_schema_and_re_renders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let p = path.to_str().unwrap();
    let out = run_ok(&[
        "run",
        "-d",
        "1500ms",
        "-c",
        "2",
        "-t",
        "2",
        "--interval",
        "500ms",
        "-o",
        p,
    ]);
    let record: Value = read_json(&path);

    let schema: Value =
        serde_json::from_str(include_str!("../../schema/runrecord.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&record)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:#?}");

    // The schema is not vacuous: a record missing a required key is refused.
    let mut broken = record.clone();
    broken["summary"]["latency"]["phases"]
        .as_object_mut()
        .unwrap()
        .remove("wait");
    assert!(!validator.is_valid(&broken));

    // Three intervals of 500 ms, their requests adding up to the total.
    let intervals = record["intervals"].as_array().unwrap();
    let starts: Vec<f64> = intervals
        .iter()
        .map(|i| i["start_s"].as_f64().unwrap())
        .collect();
    assert_eq!(starts, vec![0.0, 0.5, 1.0]);
    let sum: u64 = intervals
        .iter()
        .map(|i| i["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        sum,
        record["summary"]["requests"]["total"].as_u64().unwrap()
    );
    assert!(intervals[0]["latency"]["total"]["p99_us"].as_f64().unwrap() > 0.0);
    // The embedded target's Server-Timing metrics are in every interval too.
    for i in intervals {
        assert!(
            i["server_timing"]["total"]["count"].as_u64().unwrap() > 0,
            "{i}"
        );
        assert!(i["server_timing"]["handler"]["max_us"].as_f64().is_some());
    }

    // The report from the file is the report the run printed.
    let again = run_ok(&["report", p]);
    assert_eq!(stdout(&again), stdout(&out));

    // Histograms decode and agree with the summary.
    let rec = reqlife::app::load_record(&path).unwrap();
    let total = rec.histogram("total").unwrap();
    assert_eq!(total.len(), rec.summary.latency.total.count);

    // The intervals' histograms add up exactly to the run's, per phase and server metric.
    for key in ["total", "wait", "server_timing.handler"] {
        let mut sum = reqlife::recorder::hist::new_hist();
        for i in &rec.intervals {
            sum.add(reqlife::recorder::hist::decode(&i.histograms[key]).unwrap())
                .unwrap();
        }
        let run = rec.histogram(key).unwrap();
        // (Histograms are compared by their figures: their Debug output is megabytes.)
        let figures = |h: &hdrhistogram::Histogram<u64>| {
            let q: Vec<u64> = [0.0, 0.5, 0.9, 0.99, 1.0]
                .iter()
                .map(|&q| h.value_at_quantile(q))
                .collect();
            (h.len(), q)
        };
        assert_eq!(figures(&sum), figures(&run), "{key}");
    }
}

#[test]
fn the_hdr_interval_log_reads_back_with_the_crate_s_reader() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.hlog");
    run_ok(&[
        "run",
        "-R",
        "2000",
        "-n",
        "1500",
        "-c",
        "4",
        "-t",
        "2",
        "--interval",
        "250ms",
        "--json",
        "--hdr-log",
        path.to_str().unwrap(),
    ]);
    let text = std::fs::read(&path).unwrap();
    let mut counts: std::collections::BTreeMap<String, u64> = Default::default();
    let mut starts = Vec::new();
    let mut base_time = false;
    for entry in IntervalLogIterator::new(&text) {
        match entry.expect("a valid interval log") {
            LogEntry::BaseTime(_) => base_time = true,
            LogEntry::Interval(h) => {
                let tag = h
                    .tag()
                    .expect("every histogram is tagged")
                    .as_str()
                    .to_string();
                let bytes = base64_decode(h.encoded_histogram());
                let hist: hdrhistogram::Histogram<u64> =
                    Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
                *counts.entry(tag.clone()).or_default() += hist.len();
                if tag == "total" {
                    starts.push(h.start_timestamp().as_secs_f64());
                    assert!((h.duration().as_secs_f64() - 0.25).abs() < 1e-9);
                }
            }
            _ => {}
        }
    }
    assert!(base_time);
    // Every request is in exactly one interval of each phase.
    for phase in ["total", "uncorrected", "wait", "queue", "schedule_lag"] {
        assert_eq!(counts.get(phase), Some(&1500), "{phase}: {counts:?}");
    }
    assert!(
        starts.len() >= 3 && starts.windows(2).all(|w| w[0] < w[1]),
        "{starts:?}"
    );
}

/// Standard base64 (the log's payload encoding), decoded without another dependency.
fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(s).unwrap()
}

#[test]
fn the_sample_of_responses_is_uniform_bounded_and_agrees_with_the_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let p = path.to_str().unwrap();
    run_ok(&["run", "-d", "1s", "-c", "4", "-t", "2", "--json", "-o", p]);
    let value: Value = read_json(&path);
    assert_valid(&validator(), &value);
    let rec = reqlife::app::load_record(&path).unwrap();
    let s = rec
        .samples
        .as_ref()
        .expect("a run with responses has samples");
    let total = rec.histogram("total").unwrap();
    // The population is every response with a total latency; the sample is bounded by the
    // capacity, and whole when the run was smaller.
    assert_eq!(s.seen, total.len());
    assert_eq!(s.at_us.len(), s.total_ns.len());
    assert_eq!(s.at_us.len() as u64, s.seen.min(s.capacity));
    assert!(s.at_us.windows(2).all(|w| w[0] <= w[1]), "sorted by time");
    let end_us = (rec.summary.duration_s * 1e6).ceil() as u64;
    assert!(
        *s.at_us.last().unwrap() <= end_us,
        "inside the recorded window"
    );
    for &ns in &s.total_ns {
        assert!(
            total.lowest_equivalent(ns) >= total.lowest_equivalent(total.min())
                && total.highest_equivalent(ns) <= total.highest_equivalent(total.max()),
            "{ns} outside the histogram's range"
        );
    }
    // Uniform over time: each half of the run holds a share of the sample close to its share
    // of the requests (intervals of 1 s: compare halves of the sample's own span instead).
    let half = end_us / 2;
    let early = s.at_us.iter().filter(|&&t| t < half).count() as f64 / s.at_us.len() as f64;
    assert!((0.3..0.7).contains(&early), "{early}");

    // A record written before samples existed still loads.
    let mut old = value.clone();
    old.as_object_mut().unwrap().remove("samples");
    let old_path = dir.path().join("old.json");
    std::fs::write(&old_path, old.to_string()).unwrap();
    assert_valid(&validator(), &old);
    assert!(reqlife::app::load_record(&old_path)
        .unwrap()
        .samples
        .is_none());
}

#[test]
fn report_exports_hgrm_csv_and_json_from_the_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let p = path.to_str().unwrap();
    run_ok(&[
        "run",
        "-d",
        "1s",
        "-c",
        "2",
        "-t",
        "1",
        "--interval",
        "250ms",
        "--json",
        "-o",
        p,
    ]);
    let rec = reqlife::app::load_record(&path).unwrap();

    // csv: a header and one row per interval.
    let csv = stdout(&run_ok(&["report", p, "--format", "csv"]));
    assert_eq!(csv.lines().count(), 1 + rec.intervals.len(), "{csv}");
    assert_eq!(rec.intervals.len(), 4);
    assert!(csv.starts_with("start_s,duration_s,requests,ok,errors,throughput_rps,"));

    // hgrm: per phase, its last row counts every value of the phase's histogram.
    for (phase, key) in [(None, "total"), (Some("wait"), "wait")] {
        let mut args = vec!["report", p, "--format", "hgrm"];
        args.extend(phase.iter().flat_map(|ph| ["--phase", ph]));
        let text = stdout(&run_ok(&args));
        let last_row = text
            .lines()
            .rfind(|l| !l.starts_with('#') && !l.is_empty())
            .unwrap();
        let fields: Vec<&str> = last_row.split_whitespace().collect();
        assert_eq!(fields[1], "1.000000", "{last_row}");
        assert_eq!(fields[2], rec.histogram(key).unwrap().len().to_string());
        assert!(text.contains("#[Mean    = "), "{text}");
    }

    // json: the whole record, as saved.
    let json: Value =
        serde_json::from_slice(&run_ok(&["report", p, "--format", "json"]).stdout).expect("JSON");
    let saved: Value = read_json(&path);
    assert_eq!(json, saved);

    // Bad input: one error naming the valid choices, exit 2.
    let out = run(&["report", p, "--format", "hgrm", "--phase", "latency"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("unknown phase 'latency'") && err.contains("wait"),
        "{err}"
    );
    let out = run(&["report", p, "--phase", "wait"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--format hgrm"), "{}", stderr(&out));
}

#[test]
fn a_streamed_record_validates_and_names_its_stream_mode() {
    let s = embedded(reqlife::server::ServerTls::None);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sse.json");
    let p = path.to_str().unwrap();
    let url = s.url("/sse/3/1");
    run_ok(&[
        "run", "-n", "20", "-c", "2", "-t", "1", "--stream", "sse", "-o", p, &url,
    ]);
    let record: Value = read_json(&path);
    assert_eq!(record["config"]["stream"], "sse");
    let v = validator();
    assert_valid(&v, &record);
    // Only the three modes are valid.
    let mut broken = record.clone();
    broken["config"]["stream"] = "frames".into();
    assert!(!v.is_valid(&broken));
}
