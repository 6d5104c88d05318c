//! `reqlife compare`'s text: how the comparison was made, then one row per figure (A, B, the
//! change, its 95% interval, the adjusted p, the minimum detectable effect and the verdict),
//! within [`WIDTH`] columns; with `--detail`, under each row without a verdict, why it has
//! none. Runs probed with `--server-probes`: then how the tail's shares moved, each group's
//! parts in A, in B and the move in points (or which record lacks them, and why).

use crate::analysis::compare::tail::TailMoves;
use crate::analysis::compare::Comparison;
use crate::analysis::significance::Verdict;
use crate::util::units::human_ns;
use std::fmt::Write as _;

/// The widest line of the comparison (a path longer than that excepted).
pub const WIDTH: usize = 100;
/// The figure column: a longer name gets a line of its own above its row.
const FIGURE: usize = 22;

/// A relative change: one decimal under ±1000%, none above.
fn pct(v: f64) -> String {
    if v.abs() < 10.0 {
        format!("{:+.1}%", v * 100.0)
    } else {
        format!("{:+.0}%", v * 100.0)
    }
}

/// A minimum detectable effect: as [`pct`], unsigned.
fn mde(v: f64) -> String {
    if v < 10.0 {
        format!("{:.1}%", v * 100.0)
    } else {
        format!("{:.0}%", v * 100.0)
    }
}

/// A row's verdict, as short as the table needs.
fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        Verdict::NoSignificantChange => "no change",
        Verdict::TooFewRuns => "too few runs",
    }
}

/// The text of `c`, A named `a_name` and B `b_name`; `detail`: why each row without a verdict
/// has none.
pub fn render(c: &Comparison, a_name: &str, b_name: &str, detail: bool) -> String {
    let mut out = String::new();
    let how = match c.method.as_str() {
        "runs" => format!(
            "across repeated runs ({} and {}): 95% intervals by a bootstrap of the median ratio, p by an exact rank test",
            c.n_a, c.n_b
        ),
        "interleaved" => format!(
            "across interleaved rounds ({} runs of each, A and B in turn): 95% intervals by a bootstrap of the median ratio, p by an exact rank test",
            c.n_a
        ),
        _ => format!(
            "single runs, resampled by blocks of their intervals ({} and {}): 95% intervals of ln(B/A) by Student's t",
            c.n_a, c.n_b
        ),
    };
    let _ = writeln!(out, "Comparing A = {a_name} with B = {b_name}");
    let _ = writeln!(
        out,
        "  {how}; changes within ±{:.0}% count as noise; quantiles interpolated between tied values (mid-quantiles)",
        c.noise * 100.0
    );
    let _ = writeln!(out, "  Verdict rule: {}.", c.rule);
    if let Some(caveat) = &c.caveat {
        let _ = writeln!(out, "  Caveat: {caveat}.");
    }
    out.push('\n');
    table(&mut out, c, detail);
    if let Some(t) = &c.tail {
        tail(&mut out, t);
    }
    // The rows fit as they are; the prose around them is wrapped.
    super::wrap::fit(&out, WIDTH)
}

/// The table of `c`'s rows.
fn table(out: &mut String, c: &Comparison, detail: bool) {
    let _ = writeln!(
        out,
        "  {:<FIGURE$} {:>9} {:>9} {:>8} {:>18} {:>6} {:>6}  verdict",
        "figure", "A", "B", "change", "95% interval", "adj. p", "MDE"
    );
    for r in &c.rows {
        let show = |v: f64| {
            if r.figure != "throughput" {
                human_ns(v * 1000.0)
            } else if v >= 10_000.0 {
                format!("{v:.0}/s")
            } else {
                format!("{v:.1}/s")
            }
        };
        let name = if r.figure.chars().count() > FIGURE {
            let _ = writeln!(out, "  {}", r.figure);
            ""
        } else {
            r.figure.as_str()
        };
        let p = r.p_adjusted.or(r.p_value).map_or("-".into(), |p| {
            if p < 0.001 {
                "<0.001".into()
            } else {
                format!("{p:.3}")
            }
        });
        let _ = writeln!(
            out,
            "  {name:<FIGURE$} {:>9} {:>9} {:>8} {:>18} {p:>6} {:>6}  {}",
            show(r.a),
            show(r.b),
            pct(r.change.point),
            format!("[{}, {}]", pct(r.change.lo), pct(r.change.hi)),
            r.mde.map_or("-".into(), mde),
            verdict(r.verdict)
        );
        if let (true, Some(note)) = (detail, &r.note) {
            let _ = writeln!(out, "      {note}");
        }
    }
    let few = c.rows.iter().find(|r| r.verdict == Verdict::TooFewRuns);
    if let Some(note) = few.and_then(|r| r.note.as_ref()) {
        let _ = writeln!(out, "  {}: {note}", Verdict::TooFewRuns.words());
    }
    if !detail && c.rows.iter().any(|r| r.note.is_some()) {
        let _ = writeln!(out, "  (--detail: why each row without a verdict has none)");
    }
    let _ = writeln!(
        out,
        "  adj. p: the row's p adjusted for the {} rows (Benjamini-Hochberg); MDE: the smallest change the row could show (80% power)",
        c.rows.len()
    );
}

/// The part column of the tail's table.
const PART: usize = 15;

/// How the tail's shares moved: per group, each part's share in A, in B and the move in
/// points (parts under 0.05% everywhere left out), then the groups' requests and mean totals.
fn tail(out: &mut String, t: &TailMoves) {
    out.push('\n');
    let _ = writeln!(
        out,
        "  Why the tail is slow, A and B: each part's share of the group's time; move: B - A in \
         points"
    );
    let _ = writeln!(out, "  {}.", t.note);
    if let Some(missing) = &t.missing {
        let _ = writeln!(out, "  {missing}");
        return;
    }
    let (mut head, mut sub) = (format!("  {:<PART$}", ""), format!("  {:<PART$}", "Part"));
    for g in &t.groups {
        let label = crate::recorder::join::tail::label(&g.which);
        let _ = write!(head, " {label:^25}");
        let _ = write!(sub, " {:>8} {:>8} {:>7}", "A", "B", "move");
    }
    let _ = writeln!(out, "{}", head.trim_end());
    let _ = writeln!(out, "{sub}");
    let names: Vec<&str> = t.groups.first().map_or(Vec::new(), |g| {
        g.parts.iter().map(|p| p.part.as_str()).collect()
    });
    for name in names {
        let moves: Vec<_> = t
            .groups
            .iter()
            .filter_map(|g| g.parts.iter().find(|p| p.part == name))
            .collect();
        if moves
            .iter()
            .all(|m| m.a.abs() < 0.0005 && m.b.abs() < 0.0005)
        {
            continue;
        }
        let mut line = format!("  {name:<PART$}");
        for m in moves {
            let (a, b) = (
                format!("{:.1}%", m.a * 100.0),
                format!("{:.1}%", m.b * 100.0),
            );
            let _ = write!(line, " {a:>8} {b:>8} {:>7}", format!("{:+.1}pt", m.points));
        }
        let _ = writeln!(out, "{line}");
    }
    let (mut n, mut mean) = (
        format!("  {:<PART$}", "requests"),
        format!("  {:<PART$}", "mean total"),
    );
    for g in &t.groups {
        let _ = write!(n, " {:>8} {:>8} {:>7}", g.a_requests, g.b_requests, "");
        let change = (g.a_mean_us > 0.0).then(|| pct(g.b_mean_us / g.a_mean_us - 1.0));
        let _ = write!(
            mean,
            " {:>8} {:>8} {:>7}",
            human_ns(g.a_mean_us * 1e3),
            human_ns(g.b_mean_us * 1e3),
            change.unwrap_or_default()
        );
    }
    let _ = writeln!(out, "{}", n.trim_end());
    let _ = writeln!(out, "{mean}");
}
