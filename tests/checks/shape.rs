//! The shape of the source, checked: no file of `src/` over 600 lines and no function over
//! 80 lines outside unit tests (files named `tests.rs`, files under a `tests` folder, and
//! `#[cfg(test)]` modules are not measured), so that each stays readable in one sitting. The
//! failure names every offender with its length.
//!
//! A ratchet while issue 15's redesign is under way: the offenders left (`KNOWN_*`, with their
//! lengths when listed) may shrink but not grow, no new one may appear, and one that comes
//! under the limit must leave the list (the test says so), until the lists are empty.

use std::fs;
use std::path::Path;

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 80;

/// Files still over the limit: (path under `src/`, lines when listed).
const KNOWN_FILES: &[(&str, usize)] = &[];

/// Functions still over the limit: (path under `src/`, name, lines when listed).
const KNOWN_FNS: &[(&str, &str, usize)] = &[];

/// Checks measured lengths against the limit and the known offenders: what is wrong.
fn judge(measured: &[(String, usize)], known: &[(String, usize)], limit: usize) -> Vec<String> {
    let mut wrong = Vec::new();
    for (what, n) in measured {
        match known.iter().find(|(k, _)| k == what) {
            None if *n > limit => wrong.push(format!("{what}: {n} lines (limit {limit})")),
            Some((_, was)) if n > was => wrong.push(format!(
                "{what}: {n} lines, grew from {was} (limit {limit})"
            )),
            Some(_) if *n <= limit => wrong.push(format!(
                "{what}: {n} lines, now within the limit: remove it from the known list"
            )),
            _ => {}
        }
    }
    for (what, _) in known {
        if !measured.iter().any(|(m, _)| m == what) {
            wrong.push(format!("{what}: listed as known but not found: remove it"));
        }
    }
    wrong
}

/// The text with comments, string and character literals blanked (newlines kept), so that
/// braces can be counted.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && raw_start(&b, i) {
            // r"..." or r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            j += 1; // the quote
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                if b[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&b, i) {
            i += 1;
            while i < b.len() && b[i] != '\'' {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` starts a raw string (not the end of an identifier such as `for`).
fn raw_start(b: &[char], i: usize) -> bool {
    let before_ok = i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_');
    let mut j = i + 1;
    while b.get(j) == Some(&'#') {
        j += 1;
    }
    before_ok && b.get(j) == Some(&'"')
}

/// Whether `'` at `i` opens a character literal rather than a lifetime (`'a`, `'static`).
fn is_char_literal(b: &[char], i: usize) -> bool {
    matches!(
        (b.get(i + 1), b.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

/// (name, first line, length in lines) of every function outside `#[cfg(test)]` modules.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut test_from = lines.len();
    for (i, l) in lines.iter().enumerate() {
        if l.trim() == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with("mod "))
        {
            test_from = i;
            break;
        }
    }
    let mut i = 0;
    while i < test_from {
        let l = lines[i];
        let t = l.trim_start();
        let is_fn = t.starts_with("fn ")
            || t.contains(" fn ") && !t.contains('=') && !t.starts_with("//")
            || t.starts_with("pub fn ")
            || t.starts_with("async fn ");
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = t
            .split("fn ")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // Find the body's opening brace (a declaration without a body ends with ';').
        let mut j = i;
        let mut depth = 0i32;
        let mut opened = false;
        'scan: while j < lines.len() {
            for c in lines[j].chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => {
                        depth -= 1;
                        if opened && depth == 0 {
                            break 'scan;
                        }
                    }
                    ';' if !opened && depth == 0 => break 'scan,
                    _ => {}
                }
            }
            j += 1;
        }
        if opened {
            out.push((name, i + 1, j - i + 1));
        }
        i += 1;
    }
    out
}

fn sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = crate::rust_files(&src);
    files
        .into_iter()
        .filter(|f| f.file_name().unwrap() != "tests.rs")
        .filter(|f| {
            let rel = f.strip_prefix(&src).unwrap();
            !rel.parent().is_some_and(|d| d.iter().any(|c| c == "tests"))
        })
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().display().to_string();
            (rel, fs::read_to_string(&f).unwrap())
        })
        .collect()
}

#[test]
fn no_file_is_over_600_lines() {
    let measured: Vec<(String, usize)> = sources()
        .into_iter()
        .map(|(f, text)| (f, text.lines().count()))
        .collect();
    let known: Vec<(String, usize)> = KNOWN_FILES
        .iter()
        .map(|(f, n)| (f.to_string(), *n))
        .collect();
    let wrong = judge(&measured, &known, MAX_FILE_LINES);
    assert!(wrong.is_empty(), "files:\n{}", wrong.join("\n"));
}

#[test]
fn no_function_is_over_80_lines() {
    let mut measured = Vec::new();
    for (f, text) in sources() {
        for (name, _, n) in functions(&code_only(&text)) {
            measured.push((format!("{f}: fn {name}"), n));
        }
    }
    // Only the longest of same-named functions in one file counts (one entry per name).
    measured.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    measured.dedup_by(|a, b| a.0 == b.0);
    let known: Vec<(String, usize)> = KNOWN_FNS
        .iter()
        .map(|(f, name, n)| (format!("{f}: fn {name}"), *n))
        .collect();
    let wrong = judge(&measured, &known, MAX_FN_LINES);
    assert!(wrong.is_empty(), "functions:\n{}", wrong.join("\n"));
}

#[test]
fn the_ratchet_refuses_growth_newcomers_and_stale_entries() {
    let known = vec![("a".to_string(), 120), ("b".to_string(), 130)];
    let ok = vec![("a".into(), 120), ("b".into(), 125), ("c".into(), 90)];
    assert!(judge(&ok, &known, 100).is_empty());
    let grew = vec![("a".into(), 121), ("b".into(), 130)];
    assert_eq!(judge(&grew, &known, 100).len(), 1);
    let new = vec![("a".into(), 120), ("b".into(), 130), ("c".into(), 101)];
    assert_eq!(judge(&new, &known, 100).len(), 1);
    let fixed = vec![("a".into(), 99), ("b".into(), 130)];
    assert!(judge(&fixed, &known, 100)[0].contains("remove it"));
    let gone = vec![("b".into(), 130)];
    assert!(judge(&gone, &known, 100)[0].contains("not found"));
}

#[test]
fn the_counter_sees_through_strings_comments_and_lifetimes() {
    let code = code_only(
        "fn a<'x>(s: &'x str) -> char {\n    let _ = \"}}\"; // }\n    let _ = r#\"{\"#;\n    '}'\n}\nfn b();\n",
    );
    let fns = functions(&code);
    assert_eq!(fns, vec![("a".to_string(), 1, 5)]);
}
