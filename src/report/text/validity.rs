//! The verdict on the load (`analysis::validity`) in the report: its one line at the top, and
//! the `~` that marks a printed percentile resting on too few values beyond it.

use crate::recorder::record::RunRecord;
use std::fmt::Write as _;

/// The mark of a rough percentile.
pub(super) const MARK: char = '~';

/// `  Load valid: …` or `  Load NOT VALID: …`, under the header.
pub(super) fn line(out: &mut String, r: &RunRecord) {
    if let Some(v) = &r.validity {
        let _ = writeln!(out, "  {}", v.line);
    }
}

/// Whether the percentile headed `head` of `count` values has too few values beyond it.
fn rough(count: u64, head: &str) -> bool {
    crate::analysis::validity::too_few(count).contains(&head)
}

/// `cell` (the figure headed `head` of a row of `count` values), marked when it is rough; a
/// decimal fewer when the mark would fill its column of `width` (`~151.4us`, not `~151.42us`).
pub(super) fn mark(cell: String, count: u64, head: &str, width: usize) -> String {
    if !rough(count, head) || cell == "-" {
        return cell;
    }
    let mut cell = cell;
    if cell.chars().count() + 1 >= width {
        if let Some(dot) = cell.find('.') {
            let digits = cell[dot + 1..]
                .chars()
                .take_while(char::is_ascii_digit)
                .count();
            match digits {
                0 => {}
                1 => drop(cell.drain(dot..dot + 2)),
                _ => drop(cell.remove(dot + digits)),
            }
        }
    }
    format!("{MARK}{cell}")
}

/// What the mark means, under a table of rows of `counts` with columns `heads`, if one was
/// marked.
pub(super) fn footnote(out: &mut String, counts: &[u64], heads: &[&str]) {
    let any = counts.iter().any(|&n| heads.iter().any(|h| rough(n, h)));
    if any {
        let _ = writeln!(
            out,
            "  {MARK}: fewer than {} values beyond the percentile in its row: a rough figure",
            crate::analysis::precision::BEYOND_MIN
        );
    }
}
