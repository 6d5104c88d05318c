//! The manual's links, as a book's build would check them: the README and every page of
//! `docs/` are plain Markdown (GitHub renders them; no tool to install), and this is their
//! link check. Every relative link leads to a file of the repository and every `#anchor` to a
//! heading of its page (GitHub's slugs); nothing points out of the repository but the web
//! addresses allowed by name; every page of `docs/` is in the manual's table of contents and
//! in the README's; and every path a page names under a top-level directory exists.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The web addresses a page may link to (none yet): a link out of the repository is a choice,
/// made here by name, not an accident.
const ALLOWED_OUTSIDE: &[&str] = &[];

/// README.md and every page of docs/, as (path under the root, text).
pub fn pages() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&n)).expect(&n);
            (n, text)
        })
        .collect()
}

/// The lines of `text` outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|l| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// GitHub's anchor of a heading: lower case, punctuation dropped (letters, digits, `-`, `_`
/// and spaces kept), each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings, a repeated one numbered as GitHub does (`x`, `x-1`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.len() - line.trim_start_matches('#').len();
        if hashes == 0 || hashes > 6 || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while out.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        out.insert(anchor);
    }
    out
}

/// The targets of a page's inline links, `[text](target)`, outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        for part in line.split("](").skip(1) {
            let end = part.find(')').unwrap_or(part.len());
            out.push(part[..end].trim().to_string());
        }
    }
    out
}

/// `base/rel` with `.` and `..` resolved, or None when it climbs above the root.
fn resolve(base: &Path, rel: &str) -> Option<PathBuf> {
    let mut parts: Vec<String> = base
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for c in Path::new(rel).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// What is wrong with each link of the pages, in words (empty when all are right).
fn broken_links(pages: &[(String, String)]) -> Vec<String> {
    let mut wrong = Vec::new();
    for (page, text) in pages {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for target in links(text) {
            let bad = |why: &str| format!("{page}: link ({target}): {why}");
            if target.contains("://") || target.starts_with("mailto:") {
                if !ALLOWED_OUTSIDE.contains(&target.as_str()) {
                    wrong.push(bad(
                        "points out of the repository (allow it by name in ALLOWED_OUTSIDE)",
                    ));
                }
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            if path.is_empty() {
                // An anchor of the page itself.
                let anchor = anchor.unwrap_or_default();
                if !anchors(text).contains(anchor) {
                    wrong.push(bad(&format!("no heading #{anchor} in {page}")));
                }
                continue;
            }
            let Some(file) = resolve(dir, path) else {
                wrong.push(bad("leaves the repository"));
                continue;
            };
            let full = Path::new(ROOT).join(&file);
            if !full.exists() {
                wrong.push(bad("no such file in the repository"));
                continue;
            }
            if let Some(anchor) = anchor {
                let is_md = file.extension().is_some_and(|e| e == "md");
                let text = if is_md {
                    std::fs::read_to_string(&full).unwrap_or_default()
                } else {
                    String::new()
                };
                if !is_md || !anchors(&text).contains(anchor) {
                    wrong.push(bad(&format!("no heading #{anchor} in {}", file.display())));
                }
            }
        }
    }
    wrong
}

#[test]
fn slugs_are_githubs() {
    for (heading, want) in [
        (
            "The server's side: `Server-Timing`",
            "the-servers-side-server-timing",
        ),
        ("`reqlife run [URL]`", "reqlife-run-url"),
        ("HTTP/3", "http3"),
        (
            "Looking closer: `--detail`, `--every`, `--hdr-log` and `stats`",
            "looking-closer---detail---every---hdr-log-and-stats",
        ),
        (
            "Watching a run: metrics for Prometheus",
            "watching-a-run-metrics-for-prometheus",
        ),
    ] {
        assert_eq!(slug(heading), want, "{heading}");
    }
    let repeated = anchors("# A\n## B\n```\n# not a heading\n```\n## B\n#nospace\n");
    assert_eq!(
        repeated.into_iter().collect::<Vec<_>>(),
        ["a", "b", "b-1"],
        "repeated headings are numbered; code and #words are not headings"
    );
}

#[test]
fn every_link_leads_to_a_file_and_every_anchor_to_a_heading() {
    let pages = pages();
    let count: usize = pages.iter().map(|(_, t)| links(t).len()).sum();
    assert!(count >= 30, "only {count} links found: the scan is broken");
    let wrong = broken_links(&pages);
    assert!(wrong.is_empty(), "broken links:\n{}", wrong.join("\n"));
}

#[test]
fn the_link_check_finds_what_is_broken() {
    // The check itself, on pages made to fail it: each broken link is found, each good one
    // passes.
    let page = |text: &str| vec![("docs/x.md".to_string(), text.to_string())];
    for (text, found) in [
        ("[a](nowhere.md)", "no such file"),
        (
            "[a](reference.md#no-such-heading)",
            "no heading #no-such-heading",
        ),
        ("[a](../../etc/passwd)", "leaves the repository"),
        ("[a](https://example.com/)", "out of the repository"),
        ("[a](#missing)", "no heading #missing"),
    ] {
        let wrong = broken_links(&page(text));
        assert!(
            wrong.len() == 1 && wrong[0].contains(found),
            "{text}: {wrong:?}"
        );
    }
    for good in [
        "[a](reference.md#exit-codes)",
        "[a](../README.md#what-a-run-prints)",
        "[a](../src/lib.rs)",
        "```\n[not a link](nowhere.md)\n```",
    ] {
        assert_eq!(broken_links(&page(good)), Vec::<String>::new(), "{good}");
    }
}

#[test]
fn every_page_is_in_the_tables_of_contents() {
    let pages = pages();
    let text_of = |name: &str| {
        pages
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    let linked = |name: &str, prefix: &str| -> BTreeSet<String> {
        links(&text_of(name))
            .into_iter()
            .map(|l| l.split('#').next().unwrap().to_string())
            .filter_map(|l| l.strip_prefix(prefix).map(str::to_string))
            .collect()
    };
    let in_manual = linked("docs/README.md", "");
    let in_readme = linked("README.md", "docs/");
    for (page, _) in &pages {
        let Some(name) = page.strip_prefix("docs/") else {
            continue;
        };
        if name == "README.md" {
            assert!(
                in_readme.contains(name),
                "README.md does not link the manual"
            );
            continue;
        }
        assert!(
            in_manual.contains(name),
            "docs/README.md does not list {page}"
        );
        assert!(in_readme.contains(name), "README.md does not list {page}");
    }
}

/// Top-level entries of the repository (`src`, `tests`, `bench` …).
fn top_level() -> Vec<String> {
    std::fs::read_dir(ROOT)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') || n == ".ci")
        // cargo's build output is made by a build, not kept in the repository.
        .filter(|n| n != "target")
        .collect()
}

#[test]
fn the_pages_point_nowhere_outside_the_repository() {
    let tops = top_level();
    let mut named = 0;
    for (page, text) in pages() {
        // No absolute path of this machine's checkouts; from the README (at the root) no
        // relative path up and out either (the pages of docs/ go up to the root: their links
        // are resolved and checked above).
        let mut outside = vec!["/work/", "/shared/", "file://", "~/"];
        if page == "README.md" {
            outside.push("../");
        }
        for outside in outside {
            let at: Vec<usize> = text.match_indices(outside).map(|(i, _)| i).collect();
            assert!(
                at.is_empty(),
                "{page} points outside the repository with {outside:?}: {:?}",
                at.iter()
                    .map(|i| &text[i.saturating_sub(30)..(i + 40).min(text.len())])
                    .collect::<Vec<_>>()
            );
        }
        // Every path it names under a top-level directory exists (`bench/README.md`,
        // `deploy/kubernetes/`, `tests/reports/netns.rs`).
        for word in text.split(|c: char| c.is_whitespace() || "`'\"()[]<>,;".contains(c)) {
            let word = word.trim_end_matches(['.', ':']);
            let word = word.split('#').next().unwrap();
            let Some((top, _)) = word.split_once('/') else {
                continue;
            };
            if !tops.iter().any(|t| t == top) || word.contains(['{', '*', '$']) {
                continue;
            }
            named += 1;
            assert!(
                Path::new(ROOT).join(word).exists(),
                "{page} names {word:?}, which is not in the repository"
            );
        }
    }
    assert!(named >= 10, "only {named} paths found: the scan is broken");
}
