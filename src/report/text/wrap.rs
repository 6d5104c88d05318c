//! The default text report fits 80 columns, as wrk's does: its tables are chosen to fit (the
//! wide ones are `--detail`'s), and what is prose (a totals line, a warning, the first error
//! of a kind) is wrapped here at spaces, each continuation indented under the text it
//! continues, at least [`MIN_INDENT`] deep, so that a reader (and the README's check) can join
//! it back to its line.

/// The width of the default report, in characters.
pub const WIDTH: usize = 80;
/// The least indent of a continuation line: deeper than any row of a table (2) or of the
/// errors' list (4).
pub const MIN_INDENT: usize = 6;
/// The column where the text of a labelled totals line (`  Throughput   …`) starts.
const LABEL_COLUMN: usize = 15;

/// `text` with every line over `width` characters wrapped at its spaces.
pub fn fit(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.split_inclusive('\n') {
        let (body, newline) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        wrap(&mut out, body, width, indent_of(body));
        out.push_str(newline);
    }
    out
}

/// Where a continuation of `line` starts: under the text of a labelled line (`  Traffic
/// …`, `  WARNING: …`), else two deeper than the line; never less than [`MIN_INDENT`].
fn indent_of(line: &str) -> usize {
    let lead = line.len() - line.trim_start_matches(' ').len();
    let labelled = lead == 2
        && line.len() > LABEL_COLUMN
        && line.is_char_boundary(LABEL_COLUMN)
        && line[..LABEL_COLUMN].ends_with(' ')
        && !line[LABEL_COLUMN..].starts_with(' ')
        && line[2..LABEL_COLUMN].trim_end().len() >= 3;
    let indent = if line.starts_with("  WARNING: ") {
        "  WARNING: ".len()
    } else if labelled {
        LABEL_COLUMN
    } else {
        lead + 2
    };
    indent.max(MIN_INDENT)
}

/// Writes `line` as lines of at most `width` characters (a word longer than that stays
/// whole), the continuations indented by `indent`, joined by newlines (none after the last).
/// Spaces within a line are kept as they were (a label's column); those at a break go.
fn wrap(out: &mut String, line: &str, width: usize, indent: usize) {
    let lead = line.len() - line.trim_start_matches(' ').len();
    out.push_str(&line[..lead]);
    let mut col = lead;
    let mut first = true;
    let mut rest = &line[lead..];
    while !rest.is_empty() {
        // The spaces before the next word, and the word.
        let gap = rest.len() - rest.trim_start_matches(' ').len();
        let word_len = rest[gap..].find(' ').unwrap_or(rest.len() - gap);
        let (space, word) = (&rest[..gap], &rest[gap..gap + word_len]);
        rest = &rest[gap + word_len..];
        if word.is_empty() {
            break;
        }
        let n = word.chars().count();
        if !first && col + space.len() + n > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = indent;
        } else {
            out.push_str(space);
            col += space.len();
        }
        out.push_str(word);
        col += n;
        first = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_under_their_text_and_short_ones_stay() {
        let line = "  End          48 ended in the drain (3.43ms after the window, 0 timed out), 0 still in flight, 0 due but never sent";
        let out = fit(&format!("Running x\n{line}\n  ok\n"), 80);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "Running x");
        assert_eq!(
            lines[1],
            "  End          48 ended in the drain (3.43ms after the window, 0 timed out), 0"
        );
        assert_eq!(
            lines[2],
            "               still in flight, 0 due but never sent"
        );
        assert_eq!(lines[3], "  ok");
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
        // The same words, in the same order.
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&out), words(&format!("Running x\n{line}\n  ok\n")));
    }

    #[test]
    fn warnings_continue_under_their_text_and_other_lines_deeper() {
        let w = format!("  WARNING: {}", "word ".repeat(30));
        let out = fit(&w, 40);
        assert!(out.lines().skip(1).all(|l| l.starts_with(&" ".repeat(11))));
        assert!(out.lines().all(|l| l.chars().count() <= 40), "{out}");
        let e = format!("    connect {}", "x ".repeat(40));
        let out = fit(&e, 40);
        assert!(out.lines().nth(1).unwrap().starts_with("      x"), "{out}");
        // A word longer than the width stays whole, on a line of its own.
        let long = format!("  a {}", "y".repeat(50));
        assert_eq!(fit(&long, 40), format!("  a\n      {}", "y".repeat(50)));
    }
}
