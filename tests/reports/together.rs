//! `run --segment K/N --coordinator HOST:PORT` (issue 50, points 3, 4 and 6): the segments of
//! a plan, as separate processes, start at one instant given by segment 1 once all are ready,
//! send their records to it over the coordinator's connection (no shared files), and it writes
//! the merged record and exits with the verdict, which every segment exits with too. A segment
//! that dies mid-run is named missing and fails the run; one that never comes fails the start,
//! named; bad input is one line.

use crate::common::*;
use reqlife::server::ServerTls;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::Duration;

/// One plan's segments against the embedded target, coordinated on a port of their own, each
/// one's record in the plan's folder (`s1.json`: the merged one).
struct Plan {
    _server: reqlife::server::RunningServer,
    dir: tempfile::TempDir,
    addr: String,
    url: String,
    flags: Vec<String>,
}

impl Plan {
    /// A plan of `flags`.
    fn new(flags: &[&str]) -> Plan {
        let server = embedded(ServerTls::None);
        Plan {
            url: server.url("/"),
            _server: server,
            dir: tempfile::tempdir().unwrap(),
            addr: format!("127.0.0.1:{}", free_fixed_port()),
            flags: flags.iter().map(|f| f.to_string()).collect(),
        }
    }

    /// `name` in the plan's folder.
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Segment `k`'s record (`s1.json`: the merged one).
    fn record(&self, k: usize) -> reqlife::recorder::record::RunRecord {
        reqlife::app::load_record(&self.path(&format!("s{k}.json"))).unwrap()
    }

    /// Segment `k` of `n`, its record to `s<k>.json`.
    fn segment(&self, k: usize, n: usize) -> Child {
        self.segment_to(k, n, &format!("s{k}.json"))
    }

    /// Segment `k` of `n`, its record to `name`.
    fn segment_to(&self, k: usize, n: usize, name: &str) -> Child {
        reqlife()
            .args([
                "run",
                "--segment",
                &format!("{k}/{n}"),
                "--coordinator",
                &self.addr,
            ])
            .args(&self.flags)
            .args(["-o", self.path(name).to_str().unwrap(), &self.url])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// All `n` segments started in reverse order (segment 1 last: the others wait for it):
    /// their exit codes and stderr, segment 1's first.
    fn together(&self, n: usize) -> Vec<(i32, String)> {
        let children: Vec<Child> = (1..=n).rev().map(|k| self.segment(k, n)).collect();
        let mut ends: Vec<_> = children.into_iter().map(ended).collect();
        ends.reverse();
        ends
    }
}

#[test]
fn three_segments_start_together_and_segment_1_writes_the_whole_plan() {
    let plan = Plan::new(&["-n", "3000", "-R", "3000", "-c", "6", "-t", "1"]);
    let ends = plan.together(3);
    for (k, (code, err)) in ends.iter().enumerate() {
        assert_eq!(*code, 0, "segment {}: {err}", k + 1);
    }
    assert!(
        ends[0].1.contains("3 segments started within"),
        "{}",
        ends[0].1
    );
    let text = std::fs::read_to_string(plan.path("s1.json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let schema = crate::record::validator();
    let errors: Vec<String> = schema.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let merged = plan.record(1);
    assert_eq!(merged.summary.requests.total, 3000);
    assert_eq!(merged.summary.requests.ok, 3000);
    assert_eq!(merged.config.segment, None, "the whole plan's record");
    assert_eq!(merged.merged_run_ids.len(), 3);
    // Every other segment's own record: its share, no more.
    for k in [2, 3] {
        let own = plan.record(k);
        assert_eq!(own.summary.requests.total, 1000);
        assert_eq!(
            own.config.segment.as_deref(),
            Some(format!("{k}/3").as_str())
        );
    }
    let g = &merged.environment.generators;
    let names: Vec<&str> = g.iter().map(|g| g.segment.as_str()).collect();
    assert_eq!(names, ["1/3", "2/3", "3/3"]);
    assert_eq!(g[0].clock_offset_us, 0.0);
    let late: Vec<f64> = g.iter().map(|g| g.start_late_ms.unwrap()).collect();
    let spread = late.iter().cloned().fold(f64::MIN, f64::max)
        - late.iter().cloned().fold(f64::MAX, f64::min);
    eprintln!("start late (ms): {late:?}; spread {spread:.2} ms; generators {g:?}");
    // One clock here: each offset is the exchange's error, within half its delay.
    for s in &g[1..] {
        assert!(
            s.clock_offset_us.abs() <= s.exchange_delay_us / 2.0 + 1.0,
            "{s:?}"
        );
    }
    // Each started after the start given, and all within 100 ms of each other (a debug
    // build opening its connections on a busy 2-core machine; the note gives the figures).
    assert!(late.iter().all(|&l| l >= 0.0), "{late:?}");
    assert!(spread < 100.0, "{late:?}");
}

#[test]
fn a_threshold_the_merged_record_fails_is_every_segments_exit_code() {
    let plan = Plan::new(&["-n", "600", "-c", "2", "-t", "1", "--threshold", "p50<1ns"]);
    let ends = plan.together(2);
    for (k, (code, err)) in ends.iter().enumerate() {
        assert_eq!(*code, 99, "segment {}: {err}", k + 1);
    }
    let merged = plan.record(1);
    assert_eq!(merged.summary.requests.total, 600);
    assert_eq!(merged.summary.thresholds.len(), 1);
    assert!(
        !merged.summary.thresholds[0].pass,
        "{:?}",
        merged.summary.thresholds
    );
    // A segment's own record is judged by no threshold: they are the whole plan's.
    assert!(plan.record(2).summary.thresholds.is_empty());
}

#[test]
fn a_segment_killed_mid_run_is_named_missing_and_fails_the_run() {
    let plan = Plan::new(&["-d", "3s", "-R", "200", "-c", "3", "-t", "1"]);
    let third = plan.segment(3, 3);
    let second = plan.segment(2, 3);
    let first = plan.segment(1, 3);
    // Killed a second into its run (the start is given within a second or so of segment 1's
    // launch).
    std::thread::sleep(Duration::from_millis(2500));
    let mut third = Stopped(third);
    send_signal(&third.0, libc::SIGKILL);
    let _ = third.0.wait();
    let (code, err) = ended(first);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("segment 3/3 is missing from the merge: its connection ended"),
        "{err}"
    );
    assert!(
        err.contains("the merged record is not the whole plan"),
        "{err}"
    );
    let (code2, err2) = ended(second);
    assert_eq!(code2, 1, "{err2}");
    // What was measured is kept: the two segments' requests, the loss said in the record.
    let merged = plan.record(1);
    assert!(merged.summary.requests.total > 0);
    assert!(
        merged
            .summary
            .warnings
            .iter()
            .any(|w| w.contains("segment 3/3 is missing")),
        "{:?}",
        merged.summary.warnings
    );
    assert_eq!(merged.merged_run_ids.len(), 2);
}

#[test]
fn a_segment_that_never_comes_fails_the_start_naming_it() {
    let plan = Plan::new(&["-n", "100", "-c", "3", "--coordinator-timeout", "2s"]);
    let second = plan.segment(2, 3);
    let first = plan.segment(1, 3);
    let (code, err) = ended(first);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("segment 3/3 never came to the coordinator within 2s"),
        "{err}"
    );
    let (code2, err2) = ended(second);
    assert_eq!(code2, 1, "{err2}");
    assert!(
        err2.contains("gave no start: segment 3/3 never came"),
        "{err2}"
    );
    assert!(!plan.path("s1.json").exists(), "nothing was measured");
}

#[test]
fn a_segment_given_twice_of_another_plan_or_late_is_refused_in_one_line() {
    let plan = Plan::new(&[
        "-d",
        "2s",
        "-R",
        "100",
        "-c",
        "4",
        "--coordinator-timeout",
        "10s",
    ]);
    let first = plan.segment(1, 3);
    let second = plan.segment(2, 3);
    std::thread::sleep(Duration::from_millis(1500));
    // A second 2/3 (Kubernetes may start two pods for one index), and a 2/4.
    let (code, err) = ended(plan.segment_to(2, 3, "x.json"));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("refused this segment: segment 2/3 is here already"),
        "{err}"
    );
    let (code, err) = ended(plan.segment_to(2, 4, "y.json"));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("segment 2/4 is not of this plan: it has 3 segments"),
        "{err}"
    );
    let third = plan.segment(3, 3);
    // Once started, a segment that comes (a pod restarted) is refused: the run began.
    std::thread::sleep(Duration::from_millis(1500));
    let (code, err) = ended(plan.segment_to(3, 3, "z.json"));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("segment 3/3 came after the start"), "{err}");
    let ends = [ended(first), ended(second), ended(third)];
    for (k, (code, err)) in ends.iter().enumerate() {
        assert_eq!(*code, 0, "segment {}: {err}", k + 1);
    }
    assert_eq!(plan.record(1).merged_run_ids.len(), 3);

    for (args, says) in [
        (
            vec!["run", "--coordinator", "127.0.0.1:9", "-n", "1"],
            "--segment",
        ),
        (
            vec![
                "run",
                "--segment",
                "1/2",
                "--coordinator",
                "nohost",
                "-n",
                "1",
            ],
            "invalid --coordinator 'nohost': no port",
        ),
        (
            vec!["run", "--segment", "1/2", "--coordinator", "h:0", "-n", "1"],
            "the port is not 1 to 65535",
        ),
        (
            vec![
                "run",
                "--segment",
                "1/2",
                "--coordinator",
                "h:1",
                "--start-at",
                "+1s",
                "-n",
                "1",
            ],
            "--start-at",
        ),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_segment_interrupted_on_its_own_is_named_short_and_fails_the_run() {
    // SIGTERM to segment 2 alone (a pod deleted: its container is signalled): its record
    // still comes, and is merged, but its part is short of its share.
    let plan = Plan::new(&["-d", "3s", "-R", "200", "-c", "2", "-t", "1"]);
    let second = plan.segment(2, 2);
    let first = plan.segment(1, 2);
    std::thread::sleep(Duration::from_millis(2500));
    send_signal(&second, libc::SIGTERM);
    let (code, err) = ended(first);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("segment 2/2 is short in the merge: it was interrupted after"),
        "{err}"
    );
    let (code2, err2) = ended(second);
    assert_eq!(code2, 143, "{err2}");
    let merged = plan.record(1);
    assert!(merged.interrupted);
    assert_eq!(merged.merged_run_ids.len(), 2, "its record came");
}
