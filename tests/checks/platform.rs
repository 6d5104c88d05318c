//! Where reqlife runs (issue 46): on Linux only, said where a user looks first (the README's
//! opening paragraph, `reqlife --version` and `-V`), and a build for any other system stops at
//! one `compile_error!` that names what is missing, before any of the Linux code.
//!
//! No other target's standard library can be had on this machine, so the build for another
//! system is made of `src/lib.rs` itself read as that system's compiler reads it: each
//! `target_os = "linux"` evaluates as `target_os = "macos"` does there (`rustc --print cfg
//! --target x86_64-apple-darwin` says `target_os="macos"`), which on this host is the text
//! with one written for the other; rustc compiles that alone.

use crate::common::*;
use std::path::Path;
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// rustc, as cargo names it to build scripts, else the one on the PATH.
fn rustc() -> Command {
    Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
}

#[test]
fn another_system_stops_at_one_compile_error_naming_what_is_missing() {
    // The cfg the swap stands for: macOS's target_os is not linux.
    let cfg = rustc()
        .args(["--print", "cfg", "--target", "x86_64-apple-darwin"])
        .output()
        .unwrap();
    let cfg = String::from_utf8_lossy(&cfg.stdout);
    assert!(cfg.lines().any(|l| l == "target_os=\"macos\""), "{cfg}");

    let lib = std::fs::read_to_string(Path::new(ROOT).join("src/lib.rs")).unwrap();
    let elsewhere = lib.replace("target_os = \"linux\"", "target_os = \"macos\"");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), elsewhere).unwrap();
    let out = rustc()
        .current_dir(dir.path())
        .args([
            "--edition",
            "2021",
            "--crate-type",
            "lib",
            "--crate-name",
            "reqlife",
            "--emit",
            "metadata",
            "--error-format",
            "short",
            "lib.rs",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}");
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error"))
        .filter(|l| !l.starts_with("error: aborting due to"))
        .collect();
    assert_eq!(
        errors.len(),
        1,
        "one error, no module of the Linux code: {text}"
    );
    for needed in [
        "reqlife runs on Linux only",
        "timerfd",
        "PR_SET_TIMERSLACK",
        "SO_TIMESTAMPNS",
        "eBPF",
    ] {
        assert!(errors[0].contains(needed), "{needed} not named: {text}");
    }
}

#[test]
fn the_readme_and_version_say_linux_only() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).unwrap();
    let opening: String = readme
        .split("\n\n")
        .nth(1)
        .unwrap_or_default()
        .replace('\n', " ");
    assert!(opening.contains("It runs on Linux only"), "{opening}");
    for flag in ["-V", "--version"] {
        let out = run_ok(&[flag]);
        let first = stdout(&out).lines().next().unwrap_or_default().to_string();
        assert_eq!(
            first,
            format!("reqlife {} (Linux only)", env!("CARGO_PKG_VERSION")),
            "{flag}"
        );
    }
    let long = stdout(&run_ok(&["--version"]));
    for needed in ["timerfd", "SO_TIMESTAMPNS", "eBPF", "Linux VM or container"] {
        assert!(long.contains(needed), "{needed}: {long}");
    }
}
