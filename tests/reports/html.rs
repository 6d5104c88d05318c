//! The HTML report end to end: `run --html` (the embedded target, in-process) and `report
//! --html` from the saved record write the same self-contained page; an interrupted run still
//! writes it; a path that cannot be written is refused before the run (exit 2). And the page
//! as a person sees it: headless Chromium renders it, light and dark, and the screenshots are
//! checked for content and colour.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
            "slow-requests",
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
    // Kept: the run measures for 1.5 s (intervals for the page's figures) before the signal.
    std::thread::sleep(Duration::from_millis(1500));
    send_signal(&child, libc::SIGINT);
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

/// Debian's Chromium, which .ci/run installs.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Renders `page` in headless Chromium into `png` (a 1280 × 4000 window), with `extra`
/// flags; a hung browser is killed after two minutes.
fn screenshot(page: &Path, png: &Path, extra: &[&str]) {
    // Missing Chromium fails rather than skips: .ci/run installs it, and a browser check that
    // quietly passes without a browser checks nothing.
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: this test renders the HTML report in a real browser; install \
         Debian's package with `apt-get install chromium` (.ci/run does)"
    );
    let profile = tempfile::tempdir().unwrap();
    let mut child = Stopped(
        Command::new(CHROMIUM)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg(format!("--screenshot={}", png.display()))
            .arg("--window-size=1280,4000")
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts"),
    );
    // A hung browser is stopped (by the guard) as the panic unwinds.
    let status = exit_within(
        &mut child.0,
        "chromium's screenshot",
        Duration::from_secs(120),
    );
    let mut err = String::new();
    if let Some(mut e) = child.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(status.success() && png.exists(), "chromium failed: {err}");
}

/// A decoded screenshot: width, height and RGB pixels.
struct Shot {
    width: usize,
    height: usize,
    rgb: Vec<[u8; 3]>,
}

impl Shot {
    fn read(path: &Path) -> Shot {
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let mut decoder = png::Decoder::new(file);
        decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("a sane size")];
        let info = reader.next_frame(&mut buf).expect("a frame");
        let channels = info.color_type.samples();
        assert!(channels >= 3, "{:?}", info.color_type);
        let rgb = buf[..info.buffer_size()]
            .chunks_exact(channels)
            .map(|p| [p[0], p[1], p[2]])
            .collect();
        Shot {
            width: info.width as usize,
            height: info.height as usize,
            rgb,
        }
    }

    /// The most frequent colour: the page's background.
    fn background(&self) -> [u8; 3] {
        let mut counts: std::collections::HashMap<[u8; 3], usize> = Default::default();
        for p in &self.rgb {
            *counts.entry(*p).or_default() += 1;
        }
        counts.into_iter().max_by_key(|(_, n)| *n).unwrap().0
    }

    /// The share of pixels that differ from the background.
    fn inked(&self) -> f64 {
        let bg = self.background();
        self.rgb.iter().filter(|p| **p != bg).count() as f64 / self.rgb.len() as f64
    }

    /// Pixels unlike the background at `x` or right of it: what overflows a column that ends
    /// there.
    fn inked_right_of(&self, x: usize) -> usize {
        let bg = self.background();
        self.rgb
            .chunks_exact(self.width)
            .map(|row| {
                row[x.min(self.width)..]
                    .iter()
                    .filter(|p| **p != bg)
                    .count()
            })
            .sum()
    }

    /// Distinct colours, to 4 bits per channel.
    fn colours(&self) -> usize {
        let set: std::collections::HashSet<[u8; 3]> = self
            .rgb
            .iter()
            .map(|p| [p[0] >> 4, p[1] >> 4, p[2] >> 4])
            .collect();
        set.len()
    }

    /// Pixels within `tolerance` (per channel) of `colour`.
    fn near(&self, colour: [u8; 3], tolerance: u8) -> usize {
        self.rgb
            .iter()
            .filter(|p| (0..3).all(|i| p[i].abs_diff(colour[i]) <= tolerance))
            .count()
    }
}

/// Perceived lightness, 0..255.
fn luma(p: [u8; 3]) -> f64 {
    0.299 * p[0] as f64 + 0.587 * p[1] as f64 + 0.114 * p[2] as f64
}

#[test]
fn a_real_browser_renders_the_page_with_its_plots_light_and_dark() {
    let dir = tempfile::tempdir().unwrap();
    let (_, page) = run_with_page(dir.path());
    // The series blue of the plots (the p50 line, the histograms' bars).
    const BLUE: [u8; 3] = [0x4C, 0x9B, 0xE8];
    for (mode, flags) in [("light", &[][..]), ("dark", &["--force-dark-mode"][..])] {
        let png = dir.path().join(format!("{mode}.png"));
        screenshot(&page, &png, flags);
        let shot = Shot::read(&png);
        assert_eq!((shot.width, shot.height), (1280, 4000), "{mode}");
        let bg = shot.background();
        let (inked, colours, blue) = (shot.inked(), shot.colours(), shot.near(BLUE, 12));
        eprintln!(
            "{mode}: background {bg:?}, {:.1}% of the pixels inked, {colours} colours, {blue} blue pixels",
            inked * 100.0
        );
        match mode {
            "light" => assert!(luma(bg) > 230.0, "a light page: {bg:?}"),
            _ => assert!(
                luma(bg) < 40.0,
                "prefers-color-scheme: dark honoured: {bg:?}"
            ),
        }
        // Not blank: text, tables and plots cover a good share of the page…
        assert!(inked > 0.08, "{mode}: only {:.1}% inked", inked * 100.0);
        // …in several colours (text, rules, series, shaded bands)…
        assert!(colours >= 40, "{mode}: {colours} colours");
        // …and the plots were drawn: their blue fills thousands of pixels.
        assert!(blue > 5_000, "{mode}: {blue} blue pixels");
        // The text follows the theme: dark on light, light on dark.
        let text = shot
            .rgb
            .iter()
            .filter(|p| (luma(**p) - luma(bg)).abs() > 150.0)
            .count();
        assert!(text > 20_000, "{mode}: {text} pixels of text contrast");
        eprintln!("{mode}: {text} pixels of text contrast");
    }
    // The checks can fail: a page of one line of text and no plot does not pass them.
    let plain = dir.path().join("plain.html");
    std::fs::write(
        &plain,
        "<!DOCTYPE html><title>t</title><p>no plots here</p>",
    )
    .unwrap();
    let png = dir.path().join("plain.png");
    screenshot(&plain, &png, &[]);
    let shot = Shot::read(&png);
    assert!(
        shot.inked() < 0.01 && shot.near(BLUE, 12) == 0,
        "the control passed"
    );
}

/// The new pages of knee, --repeat and compare: written by the real commands, with their
/// sections, and rendered by the browser with their plots.
#[test]
fn knee_repeat_and_compare_pages() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = reqlife::server::spawn(reqlife::server::ServerConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        reqlife::server::ServerTls::None,
    ))
    .unwrap();
    let knee = d.join("knee.html");
    // Steps of 500 ms against a server of 250 req/s: a step near the knee ends with a request
    // or two in flight, about 1% of its rate, and on a busy machine the debug build's
    // generator may fall behind, so the search may find no rate that passes (exit 1, "no rate
    // tried met", or the generator's limit). Either way it writes its page.
    let out = run(&[
        "knee",
        "--slo",
        "p99<=60ms",
        "--step",
        "500ms",
        "--pause",
        "300ms",
        "--max-lag",
        "50ms",
        "-c",
        "20",
        "-t",
        "1",
        "--quiet",
        "--html",
        knee.to_str().unwrap(),
        &s.url("/serial/4"),
    ]);
    let answered = out.status.success();
    assert!(
        answered || out.status.code() == Some(1),
        "{:?}: {}",
        out.status,
        stderr(&out)
    );
    let page = std::fs::read_to_string(&knee).unwrap();
    let ids = sections(&page);
    assert!(ids.contains(&"knee".to_string()), "{ids:?}");
    assert!(
        if answered {
            page.contains("the highest rate that meets p99&lt;=60ms is")
        } else {
            page.contains("no rate tried met p99&lt;=60ms")
                || page.contains("the generator could not keep its schedule even at the lowest")
        },
        "answer in words"
    );
    assert!(page.contains("aria-label=\"latency and achieved rate against the offered rate\""));
    // The steps that passed apart from those that failed (the search doubles until one
    // fails), in the summary and in the knee section, with each failure's reasons.
    assert!(page.contains("<th>steps passed</th>"), "summary");
    assert!(
        page.contains("<th>steps failed</th>")
            || page.contains("<th>steps the generator limited</th>")
    );
    assert!(page.contains("<h3>Steps that passed</h3>"));
    assert!(page.contains("<h3>Steps that failed, and why</h3>"));
    assert!(page.contains("<td class=\"why\"><div>"));
    // No tick label of a log axis at a half decade (3.162, 31.623, …): 1-2-5 only.
    for half in ["3.162", "31.623", "316.228", "0.316"] {
        assert!(!page.contains(&format!(">\n{half}\n</text>")), "{half}");
    }

    let rep = d.join("repeat.html");
    let rep_json = d.join("repeat.json");
    run_ok(&[
        "run",
        "-d",
        "500ms",
        "--repeat",
        "3",
        "--pause",
        "100ms",
        "-c",
        "4",
        "--interval",
        "100ms",
        "--quiet",
        "-o",
        rep_json.to_str().unwrap(),
        "--html",
        rep.to_str().unwrap(),
        &s.url("/delay/2"),
    ]);
    let page = std::fs::read_to_string(&rep).unwrap();
    assert!(sections(&page).contains(&"repetitions".to_string()));
    for row in ["run 1", "run 3", "median", "range (of the median)"] {
        assert!(page.contains(row), "{row}");
    }

    let other = d.join("other.json");
    run_ok(&[
        "run",
        "-d",
        "500ms",
        "--repeat",
        "3",
        "--pause",
        "100ms",
        "-c",
        "4",
        "--interval",
        "100ms",
        "--quiet",
        "-o",
        other.to_str().unwrap(),
        &s.url("/delay/3"),
    ]);
    let cmp = d.join("compare.html");
    run_ok(&[
        "compare",
        rep_json.to_str().unwrap(),
        other.to_str().unwrap(),
        "--html",
        cmp.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&cmp).unwrap();
    for id in ["changes", "spectrum", "runs"] {
        assert!(sections(&page).contains(&id.to_string()), "{id}");
    }
    // 3 runs against 3 cannot reach p < 0.05 (the smallest exact p is 0.1): the rows say so
    // instead of a verdict.
    assert!(
        page.contains("class=\"same\">too few runs: 4+ per side can show a change"),
        "a 3 ms delay against 2 ms, 3 runs a side"
    );
    assert!(
        !page.contains("http://") || !page.contains("src=\"http"),
        "self-contained"
    );
    // Each page draws in a real browser: not blank, with its plots' colours.
    for (name, page) in [("knee", &knee), ("repeat", &rep), ("compare", &cmp)] {
        let png = d.join(format!("{name}.png"));
        screenshot(page, &png, &[]);
        if std::env::var_os("REQLIFE_KEEP_SHOTS").is_some() {
            std::fs::copy(&png, format!("/tmp/{name}.png")).unwrap();
        }
        let shot = Shot::read(&png);
        let (inked, colours) = (shot.inked(), shot.colours());
        eprintln!("{name}: {:.1}% inked, {colours} colours", inked * 100.0);
        assert!(inked > 0.02 && colours >= 20, "{name}: {inked} {colours}");
        if name == "knee" {
            // Nothing runs off the page's column (1010 px, centred in the 1280 px window):
            // the navigation wraps, the tables fit.
            let right = (1280 + 1010) / 2 + 4;
            let over = shot.inked_right_of(right);
            assert_eq!(over, 0, "{name}: {over} pixels right of the column");
        }
    }
}

#[test]
fn thresholds_are_shown_on_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("t.html");
    let out = run(&[
        "run",
        "-n",
        "200",
        "-c",
        "2",
        "--threshold",
        "p99<10s",
        "--threshold",
        "p50<1ns",
        "--html",
        page.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(99));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(sections(&html).contains(&"thresholds".to_string()));
    assert!(
        html.contains("p99&lt;10s") && html.contains("class=\"pass\">pass"),
        "escaped, passed"
    );
    assert!(html.contains("p50&lt;1ns") && html.contains("class=\"FAIL\">FAIL"));
}

/// The page of a run with `--trace-context` and `--trace-link` cut to its head and one section
/// (`id`), and the record.
fn traced_section(dir: &Path, link: bool, id: &str) -> (PathBuf, serde_json::Value) {
    let json = dir.join(format!("traced-{link}.json"));
    let page = dir.join(format!("traced-{link}.html"));
    let mut args = vec!["run", "-d", "1s", "-c", "4", "--trace-context", "-q"];
    if link {
        args.extend(["--trace-link", "http://tempo.invalid:3200/trace/{trace_id}"]);
    }
    args.extend([
        "-o",
        json.to_str().unwrap(),
        "--html",
        page.to_str().unwrap(),
    ]);
    run_ok(&args);
    let html = std::fs::read_to_string(&page).unwrap();
    let head = &html[..html.find("<body>").expect("a body") + "<body>".len()];
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no {id} section"));
    let end = start + html[start..].find("</section>").unwrap() + "</section>".len();
    let cut = dir.join(format!("{id}-{link}.html"));
    std::fs::write(&cut, format!("{head}{}</body></html>", &html[start..end])).unwrap();
    (cut, read_json(&json))
}

#[test]
fn the_slowest_requests_are_on_the_page_linked_to_their_traces() {
    let dir = tempfile::tempdir().unwrap();
    let (linked, rec) = traced_section(dir.path(), true, "slow-requests");
    // (minijinja escapes `/` in attributes as `&#x2f;`, which the browser reads as `/`)
    let html = std::fs::read_to_string(&linked)
        .unwrap()
        .replace("&#x2f;", "/");
    let slowest = rec["slow_requests"]["slowest"].as_array().unwrap();
    assert_eq!(slowest.len(), 5, "{slowest:?}");
    for r in slowest {
        let id = r["trace_id"].as_str().unwrap();
        let href = format!("href=\"http://tempo.invalid:3200/trace/{id}\"");
        assert!(html.contains(&href), "no link to {id}");
    }
    let (plain, _) = traced_section(dir.path(), false, "slow-requests");
    assert!(!std::fs::read_to_string(&plain).unwrap().contains("<a href"));
    // As a person sees it: the table is drawn, its ids in the browser's link blue; the page
    // without --trace-link has the same table and no link.
    const LINK: [u8; 3] = [0, 0, 238];
    let mut seen = Vec::new();
    for page in [&linked, &plain] {
        let png = page.with_extension("png");
        screenshot(page, &png, &[]);
        let shot = Shot::read(&png);
        seen.push((shot.inked(), shot.near(LINK, 40)));
    }
    eprintln!("linked page: {:?}, plain page: {:?}", seen[0], seen[1]);
    assert!(seen[0].0 > 0.01 && seen[1].0 > 0.01, "a table: {seen:?}");
    assert!(seen[0].1 > 1_000, "the trace ids are links: {seen:?}");
    assert!(seen[1].1 < 50, "no link without --trace-link: {seen:?}");
}
