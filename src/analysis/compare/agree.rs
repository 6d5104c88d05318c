//! The rows against the records' own intervals (`analysis::precision`): each percentile row
//! carries A's and B's 95% interval as their records give it, and a row that calls no change
//! while those intervals do not overlap says so, with both: the two views of the same data
//! never disagree silently. (A called change with overlapping intervals is no contradiction:
//! a difference is tested more finely than the overlap of two intervals.)

use super::Row;
use crate::analysis::significance::Verdict;
use crate::recorder::hist::Ci;
use crate::util::units::human_ns;

/// Fills `row`'s sides' intervals from `a` and `b` (its figure's stats there, named `pNN`), and
/// notes disjoint ones behind a row that calls no change.
pub(super) fn agree(row: &mut Row, stats: [Option<&crate::recorder::hist::Stats>; 2], q: &str) {
    let ci = |s: Option<&crate::recorder::hist::Stats>| s.and_then(|s| s.named(q)?.1);
    row.a_ci = ci(stats[0]);
    row.b_ci = ci(stats[1]);
    let (Some(a), Some(b)) = (row.a_ci, row.b_ci) else {
        return;
    };
    if row.verdict != Verdict::NoSignificantChange || !disjoint(a, b) {
        return;
    }
    let line = format!(
        "A's and B's own 95% intervals do not overlap (A {}, B {}): a difference this \
         comparison does not call",
        shown(a),
        shown(b)
    );
    row.note = Some(match row.note.take() {
        Some(n) => format!("{n}; {line}"),
        None => line,
    });
}

/// Two intervals with both bounds that do not meet.
fn disjoint(a: Ci, b: Ci) -> bool {
    match (a, b) {
        ([Some(alo), Some(ahi)], [Some(blo), Some(bhi)]) => ahi < blo || bhi < alo,
        _ => false,
    }
}

fn shown(ci: Ci) -> String {
    let b = |v: Option<f64>| v.map_or("unbounded".to_string(), |us| human_ns(us * 1e3));
    format!("{} to {}", b(ci[0]), b(ci[1]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::significance::Estimate;
    use crate::recorder::hist::Stats;

    fn row(verdict: Verdict) -> Row {
        Row {
            figure: "total p99".into(),
            a: 100.0,
            b: 130.0,
            change: Estimate {
                point: 0.3,
                lo: -0.1,
                hi: 0.7,
            },
            p_value: Some(0.2),
            p_adjusted: Some(0.4),
            verdict,
            note: Some("the interval reaches the ±2% noise band".into()),
            mde: None,
            a_ci: None,
            b_ci: None,
        }
    }

    fn p99(lo: f64, hi: f64) -> Stats {
        Stats {
            p99_us: Some((lo + hi) / 2.0),
            p99_ci_us: Some([Some(lo), Some(hi)]),
            ..Default::default()
        }
    }

    #[test]
    fn a_row_calling_no_change_over_disjoint_intervals_says_so() {
        let (a, b) = (p99(90.0, 110.0), p99(120.0, 140.0));
        let mut r = row(Verdict::NoSignificantChange);
        agree(&mut r, [Some(&a), Some(&b)], "p99");
        assert_eq!(r.a_ci, Some([Some(90.0), Some(110.0)]));
        let note = r.note.unwrap();
        assert!(note.starts_with("the interval reaches"), "{note}");
        assert!(
            note.contains("A's and B's own 95% intervals do not overlap (A 90.00us to 110.00us, B 120.00us to 140.00us)"),
            "{note}"
        );
        // Overlapping intervals, or a called change: nothing added.
        let c = p99(105.0, 125.0);
        let mut r = row(Verdict::NoSignificantChange);
        agree(&mut r, [Some(&a), Some(&c)], "p99");
        assert_eq!(
            r.note.as_deref(),
            Some("the interval reaches the ±2% noise band")
        );
        let mut r = row(Verdict::Slower);
        r.note = None;
        agree(&mut r, [Some(&a), Some(&b)], "p99");
        assert_eq!((r.note, r.b_ci), (None, Some([Some(120.0), Some(140.0)])));
        // An unbounded side decides nothing.
        let open = Stats {
            p99_ci_us: Some([Some(120.0), None]),
            ..Default::default()
        };
        let mut r = row(Verdict::NoSignificantChange);
        agree(&mut r, [Some(&a), Some(&open)], "p99");
        assert_eq!(
            r.note.as_deref(),
            Some("the interval reaches the ±2% noise band")
        );
    }
}
