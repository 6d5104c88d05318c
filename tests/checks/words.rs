//! The words of the output, checked in the source: one style of units (`441.97ms`, as
//! `util::units::human_ns` writes and the tables show, never `441.97 ms` in a warning), and
//! no count written before a plural noun where the count can be one (`1 threads`), in the
//! lines that were found so (issue 46). Tests, and the files of the server's probes, the
//! engine and the load (whose owners keep their own words), are left out.

use std::fs;
use std::path::Path;

/// Files whose words are not checked here: other owners', other tools' habits (`--vus N`'s
/// answer, issue 46's sixth point), and the reports' test fixture.
const OTHERS: [&str; 7] = [
    "src/probe/",
    "src/engine/",
    "src/load/",
    "src/recorder/probes.rs",
    "src/recorder/record/probes.rs",
    "src/app/habits.rs",
    "src/report/fixture.rs",
];

/// The lines of the source's output code: (file, line number, text), test modules left out.
fn output_lines() -> Vec<(String, usize, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    for file in crate::rust_files(&root.join("src")) {
        let rel = file.strip_prefix(root).unwrap().display().to_string();
        let probes = rel.ends_with("/probes.rs");
        if OTHERS.iter().any(|o| rel.starts_with(o)) || rel.ends_with("tests.rs") || probes {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            let code = line.trim_start();
            if !code.starts_with("//") {
                out.push((rel.clone(), i + 1, line.to_string()));
            }
        }
    }
    out
}

#[test]
fn a_number_and_its_time_unit_are_written_together() {
    // A format argument, a space, a unit of time: `{:.2} ms`, `{lag:.0} us`, `{} s`.
    let units = ["ns", "us", "µs", "ms", "s"];
    let mut found = Vec::new();
    for (file, n, line) in output_lines() {
        for (at, _) in line.match_indices("} ") {
            let rest = &line[at + 2..];
            let word: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == 'µ')
                .collect();
            if units.contains(&word.as_str()) && line[..at].contains('{') && line.contains('"') {
                found.push(format!("{file}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "write a duration as util::units::human_ns does (441.97ms), not with a space:\n{}",
        found.join("\n")
    );
}

#[test]
fn counts_of_one_are_singular() {
    // The counts that can be one, written before a plural noun in the output: each now goes
    // through util::units::counted.
    let plural = [
        "} threads",
        "} connections,",
        "} connections\"",
        "} steps of",
        "} bursts of",
        "} errors,",
        "} requests took",
        "} requests were still",
        "} requests due were",
        "} intervals (",
        "} intervals with",
        "{errors} errors\"",
        "{kind} errors",
        "{local} connections",
        "} values{unit}",
    ];
    let mut found = Vec::new();
    for (file, n, line) in output_lines() {
        if plural.iter().any(|p| line.contains(p)) {
            found.push(format!("{file}:{n}: {}", line.trim()));
        }
    }
    assert!(
        found.is_empty(),
        "a count that can be one: util::units::counted(n, \"thread\") writes 1 thread, 2 threads:\n{}",
        found.join("\n")
    );
    // A verb after a plural field name: "the connections differs" (merge's error).
    let differs = output_lines()
        .into_iter()
        .filter(|(_, _, l)| l.contains("{field} differs"))
        .count();
    assert_eq!(differs, 0, "say \"the records differ in {{field}}\"");
}
