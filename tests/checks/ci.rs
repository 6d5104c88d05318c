//! `.ci/steps`, the test command's three steps (`bash .ci/test` runs it once what the tests
//! need is installed): run with a stand-in `cargo` on the PATH that prints captured `cargo
//! test` output and exits as told, and a stand-in cluster step (`CI_CLUSTER_STEP`), it ends with
//! one line of the totals, the timing group's and the rest's, and a failed step still fails it
//! with that step's exit code, the line printed.

use std::path::Path;
use std::process::Command;

/// What `cargo test -- --ignored --test-threads=1 timing_` printed (two binaries).
const TIMING: &str = "
running 2 tests
test timing_a ... ok
test timing_b ... ok

test result: ok. 2 passed; 0 failed; 0 ignored; 0 measured; 31 filtered out; finished in 1.20s

     Running tests/compare.rs (target/debug/deps/compare-0123456789abcdef)

running 1 test
test timing_c ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 4 filtered out; finished in 3.02s
";

/// What `cargo test` printed: two binaries (one with a failure), then the doc-tests' "0 passed".
const REST: &str = "
running 12 tests
test a ... ok
test timing_a ... ignored, timing: run alone by .ci/test's timing step

test result: ok. 10 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.31s

     Running tests/checks/main.rs (target/debug/deps/checks-0123456789abcdef)

running 8 tests
test x ... FAILED

test result: FAILED. 6 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.05s

   Doc-tests reqlife

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

/// Runs `.ci/steps` with a `cargo` that prints the captured outputs and a cluster step that
/// prints one line, exiting with the codes given (the timing step's, the rest's, the
/// cluster's): its exit code, stdout and stderr.
fn steps(timing_code: i32, rest_code: i32, cluster_code: i32) -> (Option<i32>, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("timing.out"), TIMING).unwrap();
    std::fs::write(dir.path().join("rest.out"), REST).unwrap();
    let cargo = dir.path().join("cargo");
    let script = format!(
        "#!/bin/sh\ncase \"$*\" in\n  *--ignored*timing_*) cat '{d}/timing.out'; exit {timing_code};;\n  \
         *) cat '{d}/rest.out'; exit {rest_code};;\nesac\n",
        d = dir.path().display()
    );
    std::fs::write(&cargo, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cluster = dir.path().join("cluster");
    std::fs::write(
        &cluster,
        format!("echo 'the cluster step ran'\nexit {cluster_code}\n"),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join(".ci/steps"))
        .env("PATH", path)
        .env("CI_CLUSTER_STEP", &cluster)
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// The line of the totals of [`TIMING`] and [`REST`].
const TOTALS: &str = ".ci/test: 19 passed, 1 failed in all; the timing group 3 passed, 0 failed, \
                      0 ignored; the rest 16 passed, 1 failed, 3 ignored (the timing group's \
                      among them)";

#[test]
fn the_test_command_ends_with_the_totals_and_fails_as_its_steps_do() {
    // (the timing step's exit code, the rest's, the cluster's, the script's, what stderr says)
    let rows: [(i32, i32, i32, i32, &[&str]); 6] = [
        (0, 0, 0, 0, &[]),
        (
            0,
            101,
            0,
            101,
            &["the rest of the suite failed (exit 101, above)"],
        ),
        (
            101,
            0,
            0,
            101,
            &["the timing group failed (exit 101, above)"],
        ),
        (
            3,
            101,
            0,
            101,
            &[
                "the timing group failed (exit 3, above)",
                "the rest of the suite failed (exit 101, above)",
            ],
        ),
        (0, 0, 1, 1, &["the cluster step failed (exit 1, above)"]),
        (
            3,
            0,
            1,
            3,
            &[
                "the timing group failed (exit 3, above)",
                "the cluster step failed (exit 1, above)",
            ],
        ),
    ];
    for (timing_code, rest_code, cluster_code, want, said) in rows {
        let (code, stdout, stderr) = steps(timing_code, rest_code, cluster_code);
        let case = format!("timing {timing_code}, rest {rest_code}, cluster {cluster_code}");
        assert_eq!(code, Some(want), "{case}: {stdout}{stderr}");
        // The steps' output goes through, and the totals are its last line.
        assert!(stdout.contains("test timing_c ... ok"), "{case}: {stdout}");
        assert!(stdout.contains("   Doc-tests reqlife"), "{case}: {stdout}");
        assert!(stdout.contains("the cluster step ran"), "{case}: {stdout}");
        assert_eq!(
            stdout.contains(".ci/test: the cluster step passed"),
            cluster_code == 0,
            "{case}: {stdout}"
        );
        assert_eq!(stdout.lines().last(), Some(TOTALS), "{case}: {stdout}");
        for line in said {
            assert!(stderr.contains(line), "{case}: {stderr}");
        }
        assert_eq!(stderr.lines().count(), said.len(), "{case}: {stderr}");
    }
}
