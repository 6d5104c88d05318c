use super::*;
use crate::recorder::{Counters, PhaseHists};

/// The text of a 120×40 frame of `s`, `elapsed` of `length` seconds, one line per row.
fn drawn(s: &LiveState, steps: Option<&Steps>, elapsed: u64, length: u64) -> String {
    let shown = Shown {
        title: "GET http://x/",
        elapsed: Duration::from_secs(elapsed),
        length: Some(Duration::from_secs(length)),
        steps,
    };
    let backend = ratatui::backend::TestBackend::new(120, 40);
    let mut t = ratatui::Terminal::new(backend).unwrap();
    t.draw(|f| frame(f, s, &shown)).unwrap();
    let buffer = t.backend().buffer();
    let width = buffer.area.width as usize;
    let cells: Vec<&str> = buffer.content().iter().map(|c| c.symbol()).collect();
    cells.chunks(width).map(|row| row.concat() + "\n").collect()
}

/// Asserts that the frame `text` shows each of `wants`.
fn assert_shows(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "{want} not in the frame:\n{text}");
    }
}

#[test]
fn a_knee_search_shows_its_steps_and_a_run_in_stages_its_current_stage() {
    let s = LiveState::new(Duration::from_secs(1));
    let row = |rate_rps, p99_us, verdict: &str| StepRow {
        rate_rps,
        p99_us,
        verdict: verdict.into(),
    };
    let steps = Steps {
        title: " knee search: steps so far ".into(),
        rows: vec![
            row(60.0, Some(4_100.0), "pass"),
            row(480.0, Some(1_250_000.0), "fail"),
            StepRow::running(240.0),
        ],
    };
    let wants = [
        "knee search: steps so far",
        "   1         60     4.10ms  pass",
        "   2        480      1.25s  fail",
        "   3        240          -  running",
    ];
    assert_shows(&drawn(&s, Some(&steps), 1, 2), &wants);
    // Stages: the one running marked, with its time left; the one before it and the
    // next listed.
    let mut s = LiveState::new(Duration::from_secs(1));
    s.stages = vec![
        ("0->100 req/s".into(), Duration::from_secs(10)),
        ("100 req/s".into(), Duration::from_secs(20)),
        ("100->0 req/s".into(), Duration::from_secs(10)),
    ];
    let wants = [
        " stages ",
        "  1/3  0->100 req/s  (10s)",
        "> 2/3  100 req/s  (20s): 18s left",
        "  3/3  100->0 req/s  (10s)",
    ];
    assert_shows(&drawn(&s, None, 12, 40), &wants);
    // Neither: no such panel.
    s.stages.clear();
    assert!(!drawn(&s, None, 12, 40).contains(" stages "));
}

#[test]
fn a_frame_draws_the_figures_of_the_snapshots() {
    let mut h = PhaseHists::new(hist::new_interval_hist);
    for v in [1_000_000u64, 2_000_000, 30_000_000] {
        hist::record(&mut h.0[Phase::Total.index()], v);
        hist::record(&mut h.0[Phase::Wait.index()], v / 2);
    }
    let counters = Counters {
        requests: 3,
        ok: 3,
        ..Counters::default()
    };
    let mut snap = crate::recorder::snapshot(0, counters, &h, Vec::new());
    snap.status = vec![(200, 3)];
    snap.busy_max = Some(0.25);
    let mut s = LiveState::new(Duration::from_secs(1));
    s.push(&snap);
    let wants = [
        "9s left",
        "3 requests",
        "200: 3",
        "25% (busiest)",
        "wait",
        "total",
    ];
    assert_shows(&drawn(&s, None, 1, 10), &wants);
}
