//! The module layers that `src/lib.rs` describes, checked: each top-level module of `src/` may use
//! only the modules of the layers below its own (and itself). A `use crate::…` (or a `crate::…`
//! path anywhere in the code) that points up or sideways fails this test, naming the file and line,
//! so an import cycle cannot come back. Unit-test code (`#[cfg(test)] mod …` to the end of a file,
//! and the files of modules declared under `#[cfg(test)]`) may reach up: it builds plans the way a
//! user would.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first; a module may use those of lower layers and its own.
const LAYERS: &[&[&str]] = &[
    &["util"],
    &["model"],
    &["workload"],
    &["plan"],
    &["engine"],
    &["recorder"],
    &["load", "server", "probe", "watch"],
    &["analysis"],
    &["report"],
    &["cli"],
    &["app"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The non-test code of a file, each line with its number; comments removed.
fn code_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|(_, next)| next.trim_start().starts_with("mod "))
        {
            break;
        }
        let code = match trimmed.find("//") {
            Some(at) => &trimmed[..at],
            None => trimmed,
        };
        out.push((i + 1, code.to_string()));
    }
    out
}

/// The top-level modules a line names through `crate::`, `crate::{a::…, b}` included.
fn modules_named(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // Each item at depth 0 of the group starts with a module name.
            let mut depth = 0;
            let mut item_start = true;
            let mut name = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        item_start = true;
                        continue;
                    }
                    _ => {}
                }
                if item_start {
                    if c.is_alphanumeric() || c == '_' {
                        name.push(c);
                    } else if !name.is_empty() {
                        out.push(std::mem::take(&mut name));
                        item_start = false;
                    }
                }
            }
            if !name.is_empty() {
                out.push(name);
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
        rest = after;
    }
    out
}

/// The files of modules declared under `#[cfg(test)]` (`#[cfg(test)] mod fixture;` in
/// `report/mod.rs` is `report/fixture.rs`).
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = fs::read_to_string(file).unwrap();
        let dir = match file.file_name().unwrap().to_str().unwrap() {
            "mod.rs" | "lib.rs" | "main.rs" => file.parent().unwrap().to_path_buf(),
            name => file.parent().unwrap().join(name.trim_end_matches(".rs")),
        };
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            if line.trim() != "#[cfg(test)]" {
                continue;
            }
            let Some(next) = lines.peek() else { break };
            let decl = next
                .trim()
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// (module, file, line, used module) for every use of another top-level module.
fn uses() -> Vec<(String, String, usize, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = crate::rust_files(&src);
    let test_only = test_only_files(&files);
    let mut out = Vec::new();
    for file in files {
        // A test-only module's file, or a file of its folder (`tests/mod.rs`'s submodules).
        let under =
            |t: &PathBuf| t.ends_with("mod.rs") && t.parent().is_some_and(|d| file.starts_with(d));
        if test_only.contains(&file) || test_only.iter().any(under) {
            continue;
        }
        let rel = file.strip_prefix(&src).unwrap();
        let module = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for (line_no, code) in code_lines(&text) {
            for used in modules_named(&code) {
                if used != module {
                    out.push((module.clone(), rel.display().to_string(), line_no, used));
                }
            }
        }
    }
    out
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let mut wrong = Vec::new();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file, line, used) in uses() {
        graph
            .entry(module.clone())
            .or_default()
            .insert(used.clone());
        let (Some(from), Some(to)) = (layer_of(&module), layer_of(&used)) else {
            wrong.push(format!(
                "src/{file}:{line}: {module} -> {used}: a module missing from LAYERS"
            ));
            continue;
        };
        if to >= from {
            wrong.push(format!(
                "src/{file}:{line}: {module} (layer {from}) uses {used} (layer {to})"
            ));
        }
    }
    for (module, used) in &graph {
        eprintln!(
            "{module} -> {}",
            used.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    assert!(
        wrong.is_empty(),
        "uses against the layers:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scanner_finds_grouped_and_inline_paths() {
    assert_eq!(
        modules_named("use crate::{model::{A, B}, util::units::x, load};"),
        ["model", "util", "load"]
    );
    assert_eq!(
        modules_named("let x = crate::engine::f(crate::model::Y);"),
        ["engine", "model"]
    );
    let lines =
        code_lines("use crate::a; // crate::b\n#[cfg(test)]\nmod tests {\nuse crate::c;\n}");
    assert_eq!(lines.len(), 1);
    assert_eq!(modules_named(&lines[0].1), ["a"]);
}
