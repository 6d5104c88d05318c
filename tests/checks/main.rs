//! The static checks, one test binary: the help texts, the README and the manual (`docs/`)
//! against the tool and their links, the shape of the source and its module layers, no switch
//! read outside the plan (`switches.rs`), the timing group's names, the test command's steps
//! and totals (`ci.rs`), and where reqlife builds (`platform.rs`). None needs a server or a
//! network; sharing one binary saves linking the crate several times.
//! Each module is the test file it was (`cargo test --test checks layers::` runs the layers'
//! tests alone).

#[path = "../common/mod.rs"]
mod common;

mod ci;
mod docs;
mod drift;
mod help;
mod layers;
mod platform;
mod readme;
mod shape;
mod switches;
mod timing;
mod words;

/// Every `.rs` file under `dir`, recursively, in order.
fn rust_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}
