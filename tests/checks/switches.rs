//! Switches outside the plan (issue 47): the benchmarks' before figures were environment
//! variables read where they acted (`REQLIFE_NO_NAPS`, `REQLIFE_COARSE_TIMER`,
//! `REQLIFE_H2_NO_GATHER`), so a run could change how it behaved without its plan or its
//! record saying so. They are flags now (`--pacer-naps off`, `--pacer-timer coarse`,
//! `--h2-writes at-once`) that pass through the plan into the record's config: no file of
//! `src/` names them any more, tests and comments included, so that none reads them again.

use std::path::Path;

/// The environment variables that became flags.
const NOW_FLAGS: [&str; 3] = [
    "REQLIFE_NO_NAPS",
    "REQLIFE_COARSE_TIMER",
    "REQLIFE_H2_NO_GATHER",
];

/// Every (file under `src/`, variable) where a file names one of `names`.
fn naming(names: &[&str]) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for file in crate::rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        for name in names.iter().filter(|n| text.contains(*n)) {
            let rel = file.strip_prefix(&src).unwrap().display();
            found.push(format!("src/{rel}: {name}"));
        }
    }
    found
}

#[test]
fn no_source_reads_the_switches_that_became_flags() {
    let found = naming(&NOW_FLAGS);
    assert!(
        found.is_empty(),
        "read through the plan instead (--pacer-naps, --pacer-timer, --h2-writes):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_search_finds_a_name_where_it_is() {
    // A variable still read under src/ (the probes' older kernels' script, another switch):
    // the search sees it, so an empty answer above is not a search that sees nothing.
    let found = naming(&["REQLIFE_PROBES_KERNEL"]);
    assert!(
        found.iter().any(|f| f.starts_with("src/probe/")),
        "{found:?}"
    );
}
