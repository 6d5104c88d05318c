//! The timing group, checked: the tests that assert on wall-clock time or on rates run apart,
//! one at a time, in the first step of `.ci/test` (its `.ci/steps`: `cargo test -- --ignored
//! --test-threads=1 timing_`), and a plain `cargo test` leaves them out. That step picks them
//! by name, so each test of the group is named `timing_…` and ignored with a reason that
//! starts with "timing:", and no other ignored test has `timing_` in its name or its file's
//! path (the step would run it too).

use std::fs;
use std::path::Path;

/// The command of the timing step (`.ci/steps`, run by `.ci/test`).
const STEP: &str = "cargo test -- --ignored --test-threads=1 timing_";

/// An ignored test: (file, line of its `fn`, name, the ignore attribute).
type Ignored = (String, usize, String, String);

/// The test functions of `text` with the attribute lines above each: (line, name, attributes).
fn test_fns(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut out = Vec::new();
    let mut attrs: Vec<String> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with("#[") {
            attrs.push(t.to_string());
            continue;
        }
        if let Some(at) = t.find("fn ") {
            let is_test = attrs
                .iter()
                .any(|a| a.starts_with("#[test") || a.starts_with("#[tokio::test"));
            let name: String = t[at + 3..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if is_test {
                out.push((i + 1, name, std::mem::take(&mut attrs)));
            }
        }
        if !t.starts_with("///") {
            attrs.clear();
        }
    }
    out
}

/// Every test of `src/` and `tests/`: (file, line, name, its ignore attribute if any).
fn tests() -> Vec<(String, usize, String, Option<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for dir in ["src", "tests"] {
        for file in crate::rust_files(&root.join(dir)) {
            let rel = file.strip_prefix(root).unwrap().display().to_string();
            let text = fs::read_to_string(&file).unwrap();
            for (line, name, attrs) in test_fns(&text) {
                let ignore = attrs.into_iter().find(|a| a.starts_with("#[ignore"));
                out.push((rel.clone(), line, name, ignore));
            }
        }
    }
    out
}

#[test]
fn the_timing_group_is_named_ignored_and_run_alone() {
    let all = tests();
    let mut wrong = Vec::new();
    let mut group = Vec::new();
    let mut others: Vec<Ignored> = Vec::new();
    for (file, line, name, ignore) in all {
        let timed = ignore
            .as_deref()
            .is_some_and(|a| a.starts_with("#[ignore = \"timing:"));
        if timed != name.starts_with("timing_") {
            wrong.push(format!(
                "{file}:{line}: {name}: a test named timing_… is ignored with \"timing: …\" \
                 and no other"
            ));
        }
        match ignore {
            _ if timed => group.push(name),
            Some(a) => others.push((file, line, name, a)),
            None => {}
        }
    }
    for (file, line, name, attr) in &others {
        if name.contains("timing_") || file.contains("timing_") {
            wrong.push(format!(
                "{file}:{line}: {name} ({attr}): the timing step would run it"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert!(!group.is_empty(), "no test in the timing group");
    eprintln!("timing group: {} tests", group.len());
    let ci = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/steps")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim().starts_with(STEP)),
        ".ci/steps has no timing step ({STEP})"
    );
}

#[test]
fn the_scanner_finds_test_functions_and_their_attributes() {
    let text = "#[test]\n#[ignore = \"timing: x\"]\nfn timing_a() {}\n\n/// Doc.\n#[test]\n\
                fn b() {}\nfn helper() {}\n#[tokio::test]\nasync fn c() {}\n";
    let fns = test_fns(text);
    let names: Vec<&str> = fns.iter().map(|(_, n, _)| n.as_str()).collect();
    assert_eq!(names, ["timing_a", "b", "c"]);
    assert_eq!(fns[0].0, 3);
    assert_eq!(fns[0].2[1], "#[ignore = \"timing: x\"]");
}
