//! An interrupt as it really comes, 20 times each way: GNU `timeout -s INT` (which signals
//! reqlife and then its process group: the same interrupt twice within moments), `setsid` and
//! `kill -INT -PGID` (the whole group, as a terminal does; in three tries of four followed by a
//! second one to reqlife itself, at once or 5 or 50 ms later), and Ctrl-C typed on a
//! pseudo-terminal (`script`). Every run must write its report and a record that parses and
//! says `interrupted: true`: a signal within a second of the first is the same interrupt,
//! never an exit without the record.

use crate::common::*;
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Tries each way.
const TRIES: usize = 20;

/// The run each try interrupts: long enough never to end by itself, on the embedded target.
fn run_args(rec: &Path) -> Vec<String> {
    ["run", "-d", "30s", "-c", "10", "-t", "2", "-o"]
        .iter()
        .map(|s| s.to_string())
        .chain([rec.display().to_string()])
        .collect()
}

/// The record of try `i` at `rec`: parses, says it was interrupted, and holds what was
/// measured; `what` names the try in a failure.
#[track_caller]
fn assert_record(rec: &Path, what: &str) {
    let text = std::fs::read_to_string(rec).unwrap_or_else(|e| panic!("{what}: no record: {e}"));
    let record: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{what}: record unparseable: {e}"));
    assert_eq!(record["interrupted"], Value::Bool(true), "{what}");
    assert!(
        count(&record, "summary.requests.total") > 0,
        "{what}: nothing measured was kept"
    );
}

#[test]
fn timeout_s_int_always_leaves_a_record() {
    let Some(timeout) = find_tool("timeout", "apt-get install coreutils") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for i in 0..TRIES {
        let rec = dir.path().join(format!("t{i}.json"));
        let started = Instant::now();
        // --preserve-status: reqlife's own exit code, not timeout's 124.
        let out = std::process::Command::new(&timeout)
            .args(["--preserve-status", "-s", "INT", "1"])
            .arg(env!("CARGO_BIN_EXE_reqlife"))
            .args(run_args(&rec))
            .output()
            .unwrap();
        let what = format!("try {i}: {}", stderr(&out));
        assert!(started.elapsed() < Duration::from_secs(15), "{what}");
        assert_eq!(out.status.code(), Some(130), "{what}");
        assert!(stdout(&out).contains("INTERRUPTED"), "{what}");
        assert_record(&rec, &what);
    }
}

#[test]
fn a_signal_to_the_process_group_always_leaves_a_record() {
    let Some(setsid) = find_tool("setsid", "apt-get install util-linux") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for i in 0..TRIES {
        let rec = dir.path().join(format!("g{i}.json"));
        // Not a group leader here, setsid execs reqlife in a session (and group) of its own.
        let mut child = Stopped(
            std::process::Command::new(&setsid)
                .arg(env!("CARGO_BIN_EXE_reqlife"))
                .args(run_args(&rec))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let child = &mut child.0;
        let pid = child.id() as i32;
        let err = collected(child.stderr.take().unwrap());
        let out = collected(child.stdout.take().unwrap());
        // Signalled once it runs (the header is printed once its signals are watched), with
        // some time measured.
        wait_until("the run's header", Duration::from_secs(20), || {
            err.text().contains("Running")
        });
        std::thread::sleep(Duration::from_millis(300));
        // SAFETY: the group of our own child, then the child, by its pid.
        let pgid = unsafe { libc::getpgid(pid) };
        assert_eq!(pgid, pid, "try {i}: setsid made reqlife a group leader");
        unsafe { libc::kill(-pgid, libc::SIGINT) };
        // As GNU timeout does, the same interrupt to the process itself too: at once (the two
        // may come as one), or once the first was taken.
        if let Some(after) = [None, Some(0), Some(5), Some(50)][i % 4] {
            std::thread::sleep(Duration::from_millis(after));
            unsafe { libc::kill(pid, libc::SIGINT) };
        }
        let status = exit_within(child, "the end after the signal", Duration::from_secs(15));
        let err = String::from_utf8_lossy(&err.all(Duration::from_secs(10))).into_owned();
        let what = format!("try {i}: {err}");
        assert_eq!(status.code(), Some(130), "{what}");
        let out = String::from_utf8_lossy(&out.all(Duration::from_secs(10))).into_owned();
        assert!(out.contains("INTERRUPTED"), "{what}");
        assert_record(&rec, &what);
    }
}

#[test]
fn ctrl_c_on_a_terminal_always_leaves_a_record() {
    let Some(script) = find_tool("script", "apt-get install util-linux") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for i in 0..TRIES {
        let rec = dir.path().join(format!("p{i}.json"));
        // `exec`: reqlife is the terminal's foreground group (no shell between to die of the
        // Ctrl-C and hang the terminal up); `script -e` exits with its code.
        let line = format!(
            "exec {} {}",
            env!("CARGO_BIN_EXE_reqlife"),
            run_args(&rec).join(" ")
        );
        let mut child = Stopped(
            std::process::Command::new(&script)
                .args(["-qec", &line, "/dev/null"])
                .env("SHELL", "/bin/sh")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let child = &mut child.0;
        let out = collected(child.stdout.take().unwrap());
        wait_until("the run's header", Duration::from_secs(20), || {
            out.text().contains("Running")
        });
        std::thread::sleep(Duration::from_millis(300));
        // Ctrl-C as typed: the terminal signals its foreground process group.
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"\x03").unwrap();
        stdin.flush().unwrap();
        let status = exit_within(child, "the end after Ctrl-C", Duration::from_secs(15));
        drop(stdin);
        let text = String::from_utf8_lossy(&out.all(Duration::from_secs(10))).into_owned();
        let what = format!("try {i}: {text}");
        assert_eq!(status.code(), Some(130), "{what}");
        assert!(text.contains("INTERRUPTED"), "{what}");
        assert_record(&rec, &what);
    }
}
