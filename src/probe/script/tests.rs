//! The script in every variant: each kernel's branch (with and without
//! `tcp:tcp_sendmsg_locked`), each way of following connections (the client's, or all: the
//! agent's), sampling on and off, with and without functions, a Go server or not. Each is
//! written by the typed builder (which refuses a map read and never assigned) and, where
//! bpftrace and root are here, checked by `bpftrace -d` (parsed and compiled for this kernel,
//! not attached).

use super::*;
use crate::probe::bpf::dry_run;
use crate::probe::spec::parse_list;
use crate::recorder::join::halves::traced;

/// The test binary itself, whose two calibration functions stand in for a server's.
fn exe() -> PathBuf {
    std::fs::read_link("/proc/self/exe").unwrap()
}

fn plan(follow: Follow, functions: &str, send_start: bool, sample: u64, go: bool) -> ScriptPlan {
    let mut functions = if functions.is_empty() {
        Vec::new()
    } else {
        parse_list(functions).unwrap()
    };
    for f in &mut functions {
        if let Site::Function { binary, .. } = &mut f.site {
            *binary = Some(exe());
        }
    }
    ScriptPlan {
        port: 8080,
        follow,
        functions,
        go,
        send_start,
        sample,
        split: false,
        tick_ms: 100,
    }
}

/// Every branch of the script: each way of following, each kernel, and sampling on and
/// off with and without functions (a Go server's or not).
fn variants() -> Vec<(String, ScriptPlan)> {
    let mut out = Vec::new();
    let fns = "reqlife_calibrate_push,reqlife_calibrate_step";
    for follow in [Follow::Client(42), Follow::All] {
        for send_start in [true, false] {
            for (sample, functions, go) in [(1, "", false), (100, fns, false), (1, fns, true)] {
                let name = format!(
                    "{follow:?} send_start={send_start} sample={sample} fns={} go={go}",
                    !functions.is_empty()
                );
                out.push((name, plan(follow, functions, send_start, sample, go)));
            }
        }
    }
    // --server-probes-cost: half of the client's connections followed.
    let split = ScriptPlan {
        split: true,
        ..plan(Follow::Client(42), "", true, 1, false)
    };
    out.push(("split".into(), split));
    out
}

#[test]
fn the_split_follows_the_ports_its_rust_twin_picks_and_knows_the_others() {
    let s = ScriptPlan {
        split: true,
        ..plan(Follow::Client(42), "", true, 1, false)
    }
    .write();
    assert!(
        s.text
            .contains("if (((((uint64)$p * 40503) >> 15) & 1) == 0) { @ours[$p] = 2; }"),
        "{}",
        s.text
    );
    assert!(s.text.contains("@ours[$p] == 1"), "{}", s.text);
    assert!(
        s.text
            .contains("else if ($p != 0 && @ours[$p] != 2) { @other = count(); }"),
        "{}",
        s.text
    );
    // The Rust twin: about half of the ports a kernel gives `connect` (even ones, in a row)
    // are followed, and of any 16 in a row, some of each.
    let even: Vec<u16> = (32768..60999).step_by(2).collect();
    let followed = even.iter().filter(|p| traced(**p)).count() as f64 / even.len() as f64;
    assert!((followed - 0.5).abs() < 0.01, "{followed}");
    for w in even.windows(16) {
        let n = w.iter().filter(|p| traced(**p)).count();
        assert!((2..=14).contains(&n), "{w:?}: {n}");
    }
    // The arithmetic as bpftrace does it, in u64: 40503 × port, bit 15.
    assert!(!traced(0));
    assert_eq!(traced(1), (40503u64 >> 15) & 1 == 1);
}

#[test]
fn every_variant_is_written_and_checked_by_the_builder() {
    for (name, p) in variants() {
        let s = p.try_write().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(s.text.contains("skc_num == 8080"), "{name}");
        // 8080 = 0x1F90, in network order 0x901F: the client's socket, the client followed.
        let client = matches!(p.follow, Follow::Client(_));
        assert_eq!(
            s.text.contains(&format!("skc_dport == {}", 0x901F)),
            client,
            "{name}"
        );
        assert_eq!(s.text.contains("pid == 42"), client, "{name}");
        assert_eq!(
            s.text.contains("tracepoint:tcp:tcp_sendmsg_locked"),
            p.send_start,
            "{name}"
        );
        assert_eq!(s.text.contains("rand % 100"), p.sample > 1, "{name}");
        assert_eq!(s.functions.len(), p.functions.len(), "{name}");
        if p.go && !p.functions.is_empty() {
            assert!(s.text.contains("reg(\"r14\")"), "{name}");
        }
        // Every probe's counter is counted somewhere.
        for i in 0..s.probes.len() {
            assert!(
                s.text.contains(&format!("@n[{i}] = count()")),
                "{name}: {i}"
            );
        }
        assert!(s.text.contains("interval:ms:100"), "{name}");
    }
}

#[test]
fn the_older_kernels_script_reads_no_send_start() {
    // Before Linux 6.11 (Ubuntu 22.04 and 24.04, RHEL 9, Debian 12) there is no
    // tcp:tcp_sendmsg_locked: the write is stamped when its send returned, and no map is
    // read that only that probe assigned.
    let s = plan(Follow::Client(1), "", false, 1, false).write();
    assert!(!s.text.contains("@ws"), "{}", s.text);
    assert!(s.text.contains("$w = nsecs;"), "{}", s.text);
}

#[test]
fn the_calibration_script_is_checked_too() {
    let s = calibration(42, &exe());
    assert_eq!(s.probes.len(), 3);
    assert_eq!(s.calibration, Some(0));
    assert!(
        s.text.contains("reqlife_calibrate_step /pid == 42/"),
        "{}",
        s.text
    );
}

#[test]
fn bpftrace_accepts_every_variant() {
    let Some(bpftrace) = dry_run::bpftrace() else {
        return;
    };
    let mut scripts: Vec<(String, String)> = variants()
        .into_iter()
        .map(|(name, p)| (name, p.write().text))
        .collect();
    scripts.push(("calibration".into(), calibration(42, &exe()).text));
    // Four at a time: a dry run takes seconds (it reads the kernel's BTF).
    let mut outputs = Vec::new();
    for chunk in scripts.chunks(4) {
        let children: Vec<_> = chunk
            .iter()
            .map(|(_, text)| dry_run::start(&bpftrace, text))
            .collect();
        outputs.extend(children.into_iter().map(|c| c.wait_with_output().unwrap()));
    }
    for ((name, text), out) in scripts.iter().zip(outputs) {
        if let Err(said) = dry_run::verdict(&out) {
            panic!("{name}: bpftrace -d refused it or warned:\n{said}\n{text}");
        }
    }
}
