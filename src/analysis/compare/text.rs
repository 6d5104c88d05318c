//! A comparison as the text table `compare` prints.

use super::{Comparison, Verdict};

/// The text table.
pub fn render(c: &Comparison, a_name: &str, b_name: &str) -> String {
    use std::fmt::Write as _;
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
            "single runs, resampled by blocks of their intervals ({} and {}): 95% intervals",
            c.n_a, c.n_b
        ),
    };
    let _ = writeln!(out, "Comparing A = {a_name} with B = {b_name}");
    let _ = writeln!(
        out,
        "  {how}; changes within ±{:.0}% count as noise",
        c.noise * 100.0
    );
    let _ = writeln!(out, "  Verdict rule: {}.", c.rule);
    if let Some(caveat) = &c.caveat {
        let _ = writeln!(out, "  Caveat: {caveat}.");
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "  {:<24} {:>12} {:>12} {:>9} {:>20} {:>8} {:>7}  verdict",
        "figure", "A", "B", "change", "95% interval", "p", "MDE"
    );
    for r in &c.rows {
        let show = |v: f64| {
            if r.figure == "throughput" {
                format!("{v:.1}/s")
            } else {
                crate::util::units::human_ns(v * 1000.0)
            }
        };
        let pct = |v: f64| format!("{:+.1}%", v * 100.0);
        let verdict = match (&r.note, r.verdict) {
            (Some(note), Verdict::NoSignificantChange) => {
                format!("{} ({note})", r.verdict.words())
            }
            _ => r.verdict.words().to_string(),
        };
        let _ = writeln!(
            out,
            "  {:<24} {:>12} {:>12} {:>9} {:>20} {:>8} {:>7}  {}",
            r.figure,
            show(r.a),
            show(r.b),
            pct(r.change.point),
            format!("[{}, {}]", pct(r.change.lo), pct(r.change.hi)),
            r.p_value.map_or("-".into(), |p| format!("{p:.3}")),
            r.mde.map_or("-".into(), |m| format!("{:.1}%", m * 100.0)),
            verdict
        );
    }
    out
}
