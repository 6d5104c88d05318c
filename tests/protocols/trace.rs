//! Trace context (`--trace-context`) as servers see it. A server instrumented with
//! OpenTelemetry's Python SDK (`tests/data/otel_server.py`: its WSGI instrumentation, spans
//! exported to a file): every request the record keeps whole has a span of the same trace id on
//! the server, the child of the span id reqlife sent; `--trace-sample 0.1` has about 10% of the
//! server's spans sampled (binomial bounds); the same `--seed` sends the same ids. Every request
//! of the per-request log (`--log-requests`) carried exactly its ids: over HTTP/1.1 here, over
//! gRPC (HTTP/2) in `grpc.rs` and HTTP/3 in `http3.rs`.

use crate::common::*;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The `traceparent` of each row of a per-request log, as the header it was sent as.
pub fn sent(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|c| *c == name).unwrap();
    let (t, s, f) = (col("trace_id"), col("span_id"), col("sampled"));
    lines
        .map(|l| {
            let v: Vec<&str> = l.split(',').collect();
            format!("00-{}-{}-0{}", v[t], v[s], v[f])
        })
        .collect()
}

/// Every request of the run's log reached the server with its ids: the server's lines (one
/// `traceparent` per request) are the log's, as sets and in number.
pub fn assert_each_request_carried_its_ids(log: &Path, server: &[String]) {
    let sent = sent(log);
    assert!(!sent.is_empty(), "nothing logged");
    let (a, b): (HashSet<&String>, HashSet<&String>) =
        (sent.iter().collect(), server.iter().collect());
    assert_eq!(a.len(), sent.len(), "a trace id repeated");
    assert_eq!(
        a,
        b,
        "the server saw other ids than were sent ({} sent, {} seen)",
        sent.len(),
        server.len()
    );
}

/// The OpenTelemetry server: its port, spans file and headers file.
struct Otel {
    _child: Stopped,
    port: u16,
    spans: PathBuf,
    headers: PathBuf,
}

impl Otel {
    fn start(dir: &Path) -> Option<Otel> {
        let needs = "opentelemetry.sdk, opentelemetry.instrumentation.wsgi";
        let install = "python3 -m pip install opentelemetry-sdk opentelemetry-instrumentation-wsgi";
        if !python_has(needs, "OpenTelemetry's Python SDK", install) {
            return None;
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/otel_server.py");
        let (port_file, spans, headers) =
            (dir.join("port"), dir.join("spans"), dir.join("headers"));
        let child = Stopped(
            Command::new("python3")
                .arg(script)
                .args([&port_file, &spans, &headers])
                .stdout(Stdio::null())
                .spawn()
                .expect("the OpenTelemetry server starts"),
        );
        wait_until(
            "the OpenTelemetry server's port",
            Duration::from_secs(30),
            || port_file.exists(),
        );
        let port = std::fs::read_to_string(&port_file)
            .unwrap()
            .parse()
            .unwrap();
        Some(Otel {
            _child: child,
            port,
            spans,
            headers,
        })
    }

    /// Forgets what it saw so far.
    fn clear(&self) {
        std::fs::write(&self.spans, "").unwrap();
        std::fs::write(&self.headers, "").unwrap();
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The exported spans: (trace id, parent span id).
    fn spans(&self) -> Vec<(String, String)> {
        Otel::lines(&self.spans)
            .iter()
            .map(|l| {
                let v: Vec<&str> = l.split(' ').collect();
                (v[0].to_string(), v[2].to_string())
            })
            .collect()
    }

    fn run(&self, n: u64, extra: &[&str], dir: &Path) -> serde_json::Value {
        let out = dir.join("run.json");
        Run::new()
            .n(n)
            .args(["--trace-context", "--log-requests"])
            .arg(dir.join("log.csv").to_str().unwrap())
            .args(extra)
            .args(["-o", out.to_str().unwrap(), "-q"])
            .url(format!("http://127.0.0.1:{}/", self.port))
            .ok();
        read_json(&out)
    }
}

/// Every request the record keeps whole: (trace id, span id).
fn kept(rec: &serde_json::Value) -> Vec<(String, String)> {
    let s = &rec["slow_requests"];
    let rows = (s["slowest"].as_array().unwrap().iter())
        .chain(
            s["nearest"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| &n["request"]),
        )
        .chain(
            (s["by_phase"].as_object().unwrap().values())
                .flat_map(|v| v.as_array().unwrap().iter()),
        );
    rows.map(|r| {
        let id = |k: &str| r[k].as_str().unwrap().to_string();
        (id("trace_id"), id("span_id"))
    })
    .collect()
}

#[test]
fn an_opentelemetry_server_has_a_span_for_every_request_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let Some(otel) = Otel::start(dir.path()) else {
        return;
    };
    let rec = otel.run(1500, &["--seed", "7", "-c", "4"], dir.path());
    assert_eq!(count(&rec, "summary.requests.ok"), 1500);
    let spans: HashSet<(String, String)> = otel.spans().into_iter().collect();
    assert_eq!(spans.len(), 1500, "every request sampled, one span each");
    let kept = kept(&rec);
    assert!(kept.len() >= 10, "{kept:?}");
    for (trace, span) in &kept {
        assert!(
            spans.contains(&(trace.clone(), span.clone())),
            "no server span of trace {trace} under span {span}"
        );
    }
    assert_each_request_carried_its_ids(&dir.path().join("log.csv"), &Otel::lines(&otel.headers));
    eprintln!(
        "{} requests kept whole, each with its server span",
        kept.len()
    );
    // The same seed sends the same ids (one connection, one thread: the same order too).
    let ids = |seed: &str| {
        otel.clear();
        otel.run(200, &["--seed", seed, "-c", "1", "-t", "1"], dir.path());
        Otel::lines(&otel.headers)
    };
    let (a, b, c) = (ids("11"), ids("11"), ids("12"));
    assert_eq!(a.len(), 200);
    assert_eq!(a, b, "the same seed, other ids");
    assert!(
        a.iter().all(|id| !c.contains(id)),
        "another seed, the same ids"
    );
}

#[test]
fn a_sample_ratio_sets_the_sampled_flag_the_server_follows() {
    let dir = tempfile::tempdir().unwrap();
    let Some(otel) = Otel::start(dir.path()) else {
        return;
    };
    let n = 3000;
    otel.run(n, &["--trace-sample", "0.1", "-c", "4"], dir.path());
    let sampled = otel.spans().len() as f64;
    // Binomial(3000, 0.1): mean 300, sd 16.4; 5 sd either side.
    let (mean, sd) = (n as f64 * 0.1, (n as f64 * 0.1 * 0.9).sqrt());
    eprintln!("{sampled} of {n} server spans sampled (expected {mean} ± {sd:.1})");
    assert!(
        (sampled - mean).abs() <= 5.0 * sd,
        "{sampled} of {n} sampled"
    );
    // Exactly those the log says were sent sampled.
    let sent_sampled = sent(&dir.path().join("log.csv"))
        .iter()
        .filter(|h| h.ends_with("-01"))
        .count();
    assert_eq!(sampled as usize, sent_sampled);
}
