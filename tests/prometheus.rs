//! `--metrics-addr` against a real Prometheus (Debian's `prometheus` package, started here on
//! a free loopback port, scraping reqlife every second): the series are there while the run
//! goes on, and after it the last scrape (during `--metrics-linger`) holds the whole run:
//! the request count of the record exactly, and a `histogram_quantile(0.99, …)` over the
//! cumulative phase buckets within 10% of the record's own p99 of the whole run (the buckets
//! are 20 per decade: the estimate falls in the exact value's bucket, at most 14.3% wide, and
//! linear interpolation inside it is usually much closer). `.ci/run` installs Prometheus; in
//! CI (`CI` set) its absence fails the test, elsewhere the test says so and does not run.
//! Also: every query of the Grafana dashboard in `deploy/grafana/` names a series reqlife
//! exports, and the three generators of one plan (`--coordinator`) scraped at once sum to
//! their merged record's request count exactly.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A plain HTTP/1.1 GET on 127.0.0.1:`port`: (status, body).
fn get(port: u16, target: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    // Prometheus answers small bodies with Content-Length, larger ones chunked.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_string()
    };
    Some((status, body))
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An instant query: the value of each series of the result (empty if none).
fn query(port: u16, promql: &str) -> Vec<(serde_json::Value, f64)> {
    query_at(port, promql, None)
}

/// An instant query at `time` (Unix seconds; now if none).
fn query_at(port: u16, promql: &str, time: Option<f64>) -> Vec<(serde_json::Value, f64)> {
    let mut target = format!("/api/v1/query?query={}", percent_encode(promql));
    if let Some(t) = time {
        target.push_str(&format!("&time={t:.3}"));
    }
    let (status, body) =
        get(port, &target).unwrap_or_else(|| panic!("no answer from Prometheus to {promql}"));
    assert_eq!(status, 200, "{promql}: {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["status"], "success", "{promql}: {body}");
    v["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
            (r["metric"].clone(), value)
        })
        .collect()
}

fn one(port: u16, promql: &str) -> f64 {
    let r = query(port, promql);
    assert_eq!(r.len(), 1, "{promql}: {r:?}");
    r[0].1
}

/// Waits until the exporter on `port` says the run is over (`reqlife_running` 0, every
/// series of it): it has taken the run's last interval, as the linger begins.
fn wait_ended(port: u16) {
    let ended = |text: &str| {
        let mut running = text
            .lines()
            .filter(|l| l.starts_with("reqlife_running"))
            .peekable();
        running.peek().is_some() && running.all(|l| l.ends_with(" 0"))
    };
    wait_until(
        "the exporter's end of the run",
        Duration::from_secs(10),
        || get(port, "/metrics").is_some_and(|(_, text)| ended(&text)),
    );
}

/// A real Prometheus on a free loopback port, scraping reqlife on `targets` (loopback ports)
/// every second, its files in `dir`, ready: its process (stopped when dropped) and its port.
fn prometheus(bin: &std::path::Path, dir: &std::path::Path, targets: &[u16]) -> (Stopped, u16) {
    let prom_port = free_port();
    let config = dir.join("prometheus.yml");
    let targets: Vec<String> = targets.iter().map(|p| format!("'127.0.0.1:{p}'")).collect();
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: reqlife\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .unwrap();
    let prom = Stopped(
        Command::new(bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--log.level=warn")
            .arg("--enable-feature=exemplar-storage")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    assert!(
        within(Duration::from_secs(60), || get(prom_port, "/-/ready")
            .is_some_and(|(s, _)| s == 200)),
        "Prometheus did not get ready"
    );
    (prom, prom_port)
}

#[test]
fn prometheus_scrapes_the_run_and_agrees_on_its_p99() {
    let Some(bin) = find_tool("prometheus", "apt-get install prometheus") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let metrics_port = free_port();
    let (_prom, prom_port) = prometheus(&bin, dir.path(), &[metrics_port]);
    let record = dir.path().join("run.json");
    let addr = format!("127.0.0.1:{metrics_port}");
    let mut run = Stopped(
        reqlife()
            .args([
                "run",
                "-R",
                "300",
                "-d",
                "9s",
                "-q",
                "--metrics-addr",
                &addr,
            ])
            .args([
                "--metrics-linger",
                "4s",
                "--trace-context",
                "--log-requests",
            ])
            .arg(dir.path().join("log.csv"))
            .arg("-o")
            .arg(&record)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // While the run goes on: the target is up and the load is seen running.
    let running = within(Duration::from_secs(8), || {
        query(prom_port, "reqlife_running")
            .first()
            .is_some_and(|(_, v)| *v == 1.0)
            && query(prom_port, "reqlife_achieved_rate")
                .first()
                .is_some_and(|(_, v)| *v > 0.0)
    });
    assert!(running, "no scrape saw the run going on");
    let status = run.0.wait().unwrap();
    let exited = unix_now();
    let mut err = String::new();
    run.0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "{err}");
    // Every scrape parsed (OpenMetrics) and none failed while reqlife was there.
    assert_eq!(
        one(prom_port, "max_over_time(up{job=\"reqlife\"}[1m])"),
        1.0
    );
    let rec: serde_json::Value = read_json(&record);
    let total = rec["summary"]["requests"]["total"].as_f64().unwrap();
    let p99_us = rec["summary"]["latency"]["total"]["p99_us"]
        .as_f64()
        .unwrap();
    // reqlife has exited: its series went stale at the next scrape; the last one before (in
    // the linger) holds the whole run.
    let requests = one(prom_port, "last_over_time(reqlife_requests_total[1m])");
    assert_eq!(
        requests, total,
        "Prometheus's request count vs the record's"
    );
    let ok = one(
        prom_port,
        "sum(last_over_time(reqlife_responses_total{status=\"200\"}[1m]))",
    );
    assert_eq!(ok, rec["summary"]["requests"]["ok"].as_f64().unwrap());
    let count = one(
        prom_port,
        "last_over_time(reqlife_latency_seconds_count{phase=\"total\"}[1m])",
    );
    assert_eq!(
        count,
        rec["summary"]["latency"]["total"]["count"]
            .as_f64()
            .unwrap()
    );
    let prom_p99_s = one(
        prom_port,
        "histogram_quantile(0.99, last_over_time(reqlife_latency_seconds_bucket{phase=\"total\"}[1m]))",
    );
    let prom_p99_us = prom_p99_s * 1e6;
    let error = (prom_p99_us - p99_us).abs() / p99_us;
    eprintln!(
        "{total} requests; p99 of the total: reqlife {p99_us:.1} us, Prometheus histogram_quantile {prom_p99_us:.1} us ({:+.1}%)",
        (prom_p99_us / p99_us - 1.0) * 100.0
    );
    // Both in the same bucket (HdrHistogram's 0.1% aside).
    let bounds_us: Vec<f64> = reqlife::watch::metrics::BOUNDS_NS
        .iter()
        .map(|&ns| ns as f64 / 1000.0)
        .collect();
    let i = bounds_us.partition_point(|&b| b < p99_us);
    let lo = if i == 0 { 0.0 } else { bounds_us[i - 1] };
    let hi = bounds_us.get(i).copied().unwrap_or(f64::INFINITY);
    assert!(
        prom_p99_us > lo * 0.999 && prom_p99_us <= hi * 1.001,
        "Prometheus's p99 {prom_p99_us} us is not in the bucket ({lo}, {hi}] of reqlife's {p99_us} us"
    );
    assert!(
        error <= 0.10,
        "Prometheus's p99 is {:.1}% off",
        error * 100.0
    );
    exemplars_are_the_runs(prom_port, &rec, &dir.path().join("log.csv"), exited);
    // The dashboard's queries run on this Prometheus and find data, in the linger (the
    // gauges went stale once reqlife exited).
    let at = exited - 1.5;
    for (file, e) in dashboard_queries() {
        let e = e.replace("$__rate_interval", "1m");
        let r = query_at(prom_port, &e, Some(at));
        // (the per-name series exist in runs of named requests only: checked for syntax here)
        if !e.contains("reqlife_request_") {
            assert!(!r.is_empty(), "{file}: '{e}' found nothing");
        }
    }
}

/// The exemplars Prometheus stored of the total's buckets (`--trace-context`): each trace id
/// is one of the run's requests (its per-request log has every one), and some are requests
/// the record keeps whole (an interval's slowest).
fn exemplars_are_the_runs(port: u16, rec: &serde_json::Value, log: &std::path::Path, exited: f64) {
    let q = percent_encode("reqlife_latency_seconds_bucket{phase=\"total\"}");
    let target = format!(
        "/api/v1/query_exemplars?query={q}&start={:.3}&end={:.3}",
        exited - 60.0,
        unix_now()
    );
    let (status, body) = get(port, &target).expect("Prometheus answers query_exemplars");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let ids: Vec<String> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|series| series["exemplars"].as_array().unwrap().iter())
        .map(|e| e["labels"]["trace_id"].as_str().unwrap().to_string())
        .collect();
    assert!(!ids.is_empty(), "no exemplar stored: {body}");
    let logged = std::fs::read_to_string(log).unwrap();
    let column = logged
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|c| c == "trace_id")
        .unwrap();
    let sent: std::collections::HashSet<&str> = logged
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').nth(column))
        .collect();
    let kept: std::collections::HashSet<String> = rec["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["slowest"].as_array().into_iter().flatten())
        .chain(
            rec["slow_requests"]["slowest"]
                .as_array()
                .into_iter()
                .flatten(),
        )
        .filter_map(|r| r["trace_id"].as_str().map(String::from))
        .collect();
    for id in &ids {
        assert!(
            sent.contains(id.as_str()),
            "exemplar {id} is no request of the run"
        );
    }
    let in_record = ids.iter().filter(|id| kept.contains(*id)).count();
    eprintln!(
        "{} exemplars stored, all requests of the run; {in_record} kept whole in the record",
        ids.len()
    );
    assert!(in_record > 0, "no exemplar is a request the record keeps");
}

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Every query of every dashboard in deploy/grafana: (file, expr).
fn dashboard_queries() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let v: serde_json::Value = read_json(&path);
        let mut found = Vec::new();
        exprs(&v, &mut found);
        assert!(!found.is_empty(), "{}: no query", path.display());
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        out.extend(found.into_iter().map(|e| (file.clone(), e)));
    }
    assert!(!out.is_empty(), "no dashboard in {}", dir.display());
    out
}

/// The PromQL expressions of a Grafana dashboard: every `expr` of every target.
fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

#[test]
fn every_query_of_the_grafana_dashboard_names_an_exported_series() {
    for (file, e) in dashboard_queries() {
        // Every metric-like word (reqlife_…) must be an exported series, and each query
        // names at least one.
        let names: Vec<&str> = e
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("reqlife_"))
            .collect();
        assert!(!names.is_empty(), "{file}: '{e}' names no reqlife series");
        for n in names {
            assert!(
                reqlife::watch::metrics::SERIES.contains(&n),
                "{file}: '{e}' names {n}, which reqlife does not export"
            );
        }
    }
}

/// The value of the sample `series{labels}` in an exposition (labels as written).
fn sample(text: &str, series_and_labels: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series_and_labels)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_scenario_labels_its_requests_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "[[request]]\nname = \"home\"\npath = \"/\"\nweight = 3\n\n[[request]]\nname = \"put\"\nmethod = \"PUT\"\npath = \"/kv/{seq}\"\nbody = \"x\"\nweight = 1\n",
    )
    .unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let record = dir.path().join("run.json");
    let mut run = Stopped(
        reqlife()
            .args(["run", "-R", "200", "-d", "3s", "-q", "--scenario"])
            .arg(&scenario)
            .args(["--metrics-addr", &addr, "--metrics-linger", "30s", "-o"])
            .arg(&record)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The record is written before the linger: then the exposition holds the whole run.
    assert!(within(Duration::from_secs(60), || record.exists()
        && std::fs::metadata(&record).is_ok_and(|m| m.len() > 0)));
    wait_ended(port);
    let (status, text) = get(port, "/metrics").expect("the exporter answers in the linger");
    assert_eq!(status, 200);
    assert!(run.0.try_wait().unwrap().is_none(), "still lingering");
    let rec: serde_json::Value = read_json(&record);
    let mut sum = 0.0;
    for name in ["home", "put"] {
        let n = sample(
            &text,
            &format!("reqlife_request_requests_total{{request=\"{name}\"}}"),
        )
        .unwrap_or_else(|| panic!("no series of {name}: {text}"));
        let count = sample(
            &text,
            &format!("reqlife_request_latency_seconds_count{{request=\"{name}\",phase=\"total\"}}"),
        )
        .unwrap();
        assert!(
            n > 0.0 && count > 0.0,
            "{name}: {n} requests, {count} latencies"
        );
        sum += n;
    }
    assert_eq!(
        sum,
        rec["summary"]["requests"]["total"].as_f64().unwrap(),
        "the names add up to the run"
    );
}

/// Starts `reqlife ARGS --metrics-addr PORT --metrics-linger 30s`, waits until `done` holds
/// of its stdout so far (the record or the figures are written before the linger) and scrapes
/// once: the exposition of the whole command, and what the command printed.
fn scrape_after(args: &[&str], done: impl Fn(&str) -> bool) -> (String, String, Stopped) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut run = Stopped(
        reqlife()
            .args(args)
            .args(["--metrics-addr", &addr, "--metrics-linger", "30s"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let printed = collected(run.0.stdout.take().unwrap());
    let text = || String::from_utf8_lossy(&printed.lock().unwrap()).into_owned();
    assert!(
        within(Duration::from_secs(90), || done(&text())),
        "not done: {}",
        text()
    );
    wait_ended(port);
    let (status, exposition) = get(port, "/metrics").expect("the exporter answers in the linger");
    assert_eq!(status, 200);
    assert!(run.0.try_wait().unwrap().is_none(), "still lingering");
    let printed = text();
    (exposition, printed, run)
}

#[test]
fn knee_and_calibrate_serve_their_metrics_with_the_segment_label() {
    let dir = tempfile::tempdir().unwrap();
    // A knee search, one segment of two: every step's requests, labelled with the segment.
    let record = dir.path().join("knee.json");
    let written = || std::fs::metadata(&record).is_ok_and(|m| m.len() > 0);
    #[rustfmt::skip]
    let knee = [
        "knee", "--slo", "p99<=200ms", "--start-rate", "100", "--max-rate", "200",
        "--step", "500ms", "--pause", "100ms", "-c", "4", "-t", "1", "-q",
        "--segment", "1/2", "-o", record.to_str().unwrap(),
    ];
    let (text, _, _run) = scrape_after(&knee, |_| written());
    let rec: serde_json::Value = read_json(&record);
    assert!(!rec["knee"]["steps"].as_array().unwrap().is_empty());
    assert_eq!(
        sample(&text, "reqlife_requests_total{segment=\"1/2\"}"),
        rec["summary"]["requests"]["total"].as_f64(),
        "the steps' requests, labelled: {text}"
    );
    assert_eq!(sample(&text, "reqlife_running{segment=\"1/2\"}"), Some(0.0));
    // A calibration: every step's requests (its figures keep no count), and the phases.
    #[rustfmt::skip]
    let calibrate = ["calibrate", "--step", "200ms", "-c", "4", "-t", "1", "--json", "-q"];
    let (text, printed, _run) = scrape_after(&calibrate, |out| out.ends_with("}\n"));
    let figures: serde_json::Value = serde_json::from_str(&printed).unwrap();
    // The closed loop alone ran this many for 200 ms.
    let closed = figures["closed"]["achieved_rps"].as_f64().unwrap() * 0.2;
    let requests = sample(&text, "reqlife_requests_total").unwrap_or(0.0);
    assert!(
        requests > closed,
        "{requests} requests, closed loop {closed}: {text}"
    );
    assert!(text.contains("reqlife_latency_seconds_count{phase=\"total\"}"));
}

#[test]
fn prometheus_sums_the_segments_of_a_plan_to_its_merged_record() {
    // Three generators of one plan (`--coordinator`), each serving its segment's figures:
    // the sum of their last scrapes is the merged record's request count, exactly.
    let Some(bin) = find_tool("prometheus", "apt-get install prometheus") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let (_prom, prom_port) = prometheus(&bin, dir.path(), &ports);
    let server = embedded(reqlife::server::ServerTls::None);
    let url = server.url("/");
    let coordinator = format!("127.0.0.1:{}", free_fixed_port());
    let children: Vec<std::process::Child> = (1..=3)
        .rev()
        .map(|k| {
            let metrics = format!("127.0.0.1:{}", ports[k - 1]);
            reqlife()
                .args(["run", "-R", "300", "-d", "6s", "-c", "3", "-q"])
                .args([
                    "--segment",
                    &format!("{k}/3"),
                    "--coordinator",
                    &coordinator,
                ])
                .args(["--metrics-addr", &metrics, "--metrics-linger", "4s"])
                .arg("-o")
                .arg(dir.path().join(format!("s{k}.json")))
                .arg(&url)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let (code, err) = ended(child);
        assert_eq!(code, 0, "{err}");
    }
    let merged: serde_json::Value = read_json(dir.path().join("s1.json"));
    let total = merged["summary"]["requests"]["total"].as_f64().unwrap();
    let summed = one(prom_port, "sum(last_over_time(reqlife_requests_total[1m]))");
    let generators = one(prom_port, "count(last_over_time(reqlife_running[1m]))");
    eprintln!(
        "{generators} generators scraped; Prometheus's sum {summed}, the merged record {total}"
    );
    assert_eq!(generators, 3.0);
    assert_eq!(
        summed, total,
        "Prometheus's sum vs the merged record's count"
    );
}
