//! The names a binary offers to probes, as `bpftrace -l` lists them (its symbol tables), and
//! a Go binary's functions from its own table (`.gopclntab`, kept when the binary is stripped:
//! see [`gopclntab`]): a function named in `--server-fn` is checked against them before the
//! run (an inlined or misspelled one, or one a stripped binary has no name for, is refused
//! with the closest names the binary has), and a C++ or Rust name written as the source spells
//! it is found through the symbols' demangled names (`c++filt`). A Go function found only in
//! `.gopclntab` is attached by its offset in the file ([`spec::offset_symbol`]).

pub mod gopclntab;

use super::spec::{self, FnProbe, Site};
use super::ProbeError;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The names of `kind` (`uprobe` or `usdt`) that `bpftrace -l` lists for `binary`: function
/// symbols, or `provider:name` for USDT probes.
pub fn list(bpftrace: &Path, kind: &str, binary: &Path) -> Vec<String> {
    let pattern = format!("{kind}:{}:*", binary.display());
    let Ok(out) = Command::new(bpftrace).arg("-l").arg(&pattern).output() else {
        return Vec::new();
    };
    let prefix = format!("{kind}:{}:", binary.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_string))
        .collect()
}

/// Whether `exe` is a Go program (it has Go's function table, or Go's runtime among its
/// symbols).
pub fn is_go(bpftrace: &Path, exe: &Path) -> bool {
    gopclntab::has_table(exe)
        || list(bpftrace, "uprobe", exe)
            .iter()
            .any(|n| n == "runtime.goexit" || n == "runtime.goexit.abi0" || n == "runtime.goexit0")
}

/// The names a binary offers to uprobes: its symbols (`bpftrace -l`), and, once asked for, the
/// functions of its Go table.
struct Names {
    symbols: Vec<String>,
    /// `None` until a name is not among the symbols; then the Go functions (empty when the
    /// binary is not Go's).
    go: Option<Result<Vec<gopclntab::GoFunc>, String>>,
}

impl Names {
    /// `want` resolved: a symbol (maybe mangled), or the file offset of a Go function that only
    /// `.gopclntab` names.
    /// `label`: the item as written, for the error.
    fn find(&mut self, label: &str, want: &str, binary: &Path) -> Result<String, ProbeError> {
        if let Some(found) = find_symbol(want, &self.symbols) {
            return Ok(found);
        }
        let go = self
            .go
            .get_or_insert_with(|| gopclntab::read(binary).map(Option::unwrap_or_default));
        let mut all = self.symbols.clone();
        let unread = match go {
            Ok(funcs) => {
                if let Some(f) = gopclntab::find(funcs, want) {
                    return Ok(spec::offset_symbol(f.file_offset));
                }
                all.extend(funcs.iter().map(|f| f.name.clone()));
                String::new()
            }
            Err(why) => format!("; its Go function table (.gopclntab) could not be read: {why}"),
        };
        match missing(label, want, binary, &all) {
            ProbeError::Input(line) => Err(ProbeError::Input(line + &unread)),
            other => Err(other),
        }
    }
}

/// Each function of `probes` resolved to a symbol of its binary (`exe` unless it names
/// another), its binary made explicit; a name the binary lacks is refused with the closest.
pub fn resolve(bpftrace: &Path, exe: &Path, probes: &mut [FnProbe]) -> Result<(), ProbeError> {
    let mut cache: Vec<(PathBuf, &str, Names)> = Vec::new();
    for p in probes.iter_mut() {
        let (binary, kind) = match &mut p.site {
            Site::Function { binary, .. } => (binary, "uprobe"),
            Site::Usdt { binary, .. } => (binary, "usdt"),
        };
        let path = binary.get_or_insert_with(|| exe.to_path_buf()).clone();
        if !path.exists() {
            return Err(ProbeError::Input(format!(
                "--server-fn {}: no file {}",
                p.label,
                path.display()
            )));
        }
        if !cache.iter().any(|(b, k, _)| *b == path && *k == kind) {
            let symbols = list(bpftrace, kind, &path);
            cache.push((path.clone(), kind, Names { symbols, go: None }));
        }
        let names = &mut cache
            .iter_mut()
            .find(|(b, k, _)| *b == path && *k == kind)
            .expect("listed above")
            .2;
        match &mut p.site {
            Site::Function { symbol, .. } => {
                *symbol = names.find(&p.label, symbol, &path)?;
            }
            Site::Usdt { provider, name, .. } => {
                let want = format!("{provider}:{name}");
                if !names.symbols.contains(&want) {
                    return Err(missing(&p.label, &want, &path, &names.symbols));
                }
            }
        }
    }
    Ok(())
}

/// `want` among `names`: itself, or the symbol whose demangled name is `want` (with or
/// without its parameters, a Rust symbol without its hash).
fn find_symbol(want: &str, names: &[String]) -> Option<String> {
    if names.iter().any(|n| n == want) {
        return Some(want.to_string());
    }
    // C++ and Rust (legacy) symbols: a name as the source spells it (`ns::f`, or a plain
    // `parse` that C++ mangles to `_Z5parsev`).
    let mangled: Vec<&String> = names.iter().filter(|n| n.starts_with("_Z")).collect();
    if mangled.is_empty() {
        return None;
    }
    let plain = demangle(&mangled)?;
    mangled
        .iter()
        .zip(&plain)
        .find(|(_, d)| source_name(d) == want || d.as_str() == want)
        .map(|(m, _)| m.to_string())
}

/// A demangled name as its source spells it: without parameters, and a Rust symbol's hash
/// (`::h0123456789abcdef`) taken off.
fn source_name(demangled: &str) -> &str {
    let no_params = demangled.split('(').next().unwrap_or(demangled);
    match no_params.rsplit_once("::h") {
        Some((head, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => {
            head
        }
        _ => no_params,
    }
}

/// The demangled forms of `names`, through `c++filt` (None when it cannot be run).
fn demangle(names: &[&String]) -> Option<Vec<String>> {
    let mut child = Command::new("c++filt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let input: String = names.iter().map(|n| format!("{n}\n")).collect();
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().ok()?;
    let _ = writer.join();
    let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    (lines.len() == names.len()).then_some(lines)
}

fn missing(label: &str, want: &str, binary: &Path, names: &[String]) -> ProbeError {
    let near = closest(want, names, 5);
    let hint = if names.is_empty() {
        " (it lists no symbols and no Go functions: a stripped binary has none; probe one built \
         with symbols)"
            .to_string()
    } else if near.is_empty() {
        String::new()
    } else {
        format!("; the closest it has: {}", near.join(", "))
    };
    ProbeError::Input(format!(
        "--server-fn {label}: {} has no {want:?} to probe (stripped, inlined or misspelled?){hint}",
        binary.display()
    ))
}

/// Up to `n` names of `names` nearest to `want` (by edit distance to the name, or to its part
/// after the last `/`, as a Go name's package path is often left out; names that contain it
/// first), nearest first, each once.
pub fn closest(want: &str, names: &[String], n: usize) -> Vec<String> {
    let mut scored: Vec<(usize, &String)> = names
        .iter()
        .filter_map(|name| {
            let short = name.rsplit('/').next().unwrap_or(name);
            let d = distance(want, name).min(distance(want, short));
            let d = if name.contains(want) { d.min(1) } else { d };
            (d <= want.len().max(short.len()) / 2).then_some((d, name))
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(n).map(|(_, s)| s.clone()).collect()
}

/// The Levenshtein distance between `a` and `b` (bytes).
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_names_come_first() {
        let names: Vec<String> = [
            "ngx_http_process_request",
            "ngx_http_finalize_request",
            "main",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            closest("ngx_http_proces_request", &names, 2)[0],
            "ngx_http_process_request"
        );
        assert!(closest("zzzzzzzz", &names, 5).is_empty());
        assert_eq!(distance("kitten", "sitting"), 3);
        // A Go name without its package's path, misspelled; a name twice in Go's table (a
        // function and its ABI wrapper) is given once.
        let serve = "go.etcd.io/etcd/etcdserver/api/etcdhttp.serveVersion";
        let go: Vec<String> = [serve, serve, "net/http.ParseHTTPVersion", "main.main"]
            .map(String::from)
            .to_vec();
        assert_eq!(closest("etcdhttp.serveVersoin", &go, 5), [serve]);
    }

    #[test]
    fn demangled_names_lose_parameters_and_rust_hashes() {
        assert_eq!(source_name("srv::Task::process(int)"), "srv::Task::process");
        assert_eq!(
            source_name("core::fmt::write::h0123456789abcdef"),
            "core::fmt::write"
        );
        assert_eq!(source_name("a::hb"), "a::hb");
    }

    #[test]
    fn a_cpp_name_is_found_through_cxxfilt() {
        if Command::new("c++filt").arg("x").output().is_err() {
            eprintln!("skipped: no c++filt");
            return;
        }
        let names = vec![
            "main".to_string(),
            "_ZN3srv4Task7processEi".to_string(),
            "_Z5parsev".to_string(),
        ];
        assert_eq!(find_symbol("parse", &names).as_deref(), Some("_Z5parsev"));
        assert_eq!(
            find_symbol("srv::Task::process", &names).as_deref(),
            Some("_ZN3srv4Task7processEi")
        );
        assert_eq!(find_symbol("main", &names).as_deref(), Some("main"));
        assert_eq!(find_symbol("srv::Task::other", &names), None);
    }
}
