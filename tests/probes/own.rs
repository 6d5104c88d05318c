//! reqlife's own programs (the default plan's probes): no bpftrace started, the programs
//! attached while the run lasts and gone after it however it ends (SIGINT, SIGKILL): the
//! kernel detaches them when reqlife's descriptors close.

use super::*;

/// The BPF programs loaded now whose names are reqlife's (`reqlife_…`), from `bpftool`.
fn reqlife_programs() -> usize {
    let out = Command::new("bpftool")
        .args(["prog", "show"])
        .output()
        .expect("bpftool runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(" name reqlife_"))
        .count()
}

#[test]
fn reqlifes_own_programs_are_gone_after_a_signal() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    if find_tool("bpftool", "apt-get install bpftool").is_none() {
        return;
    }
    let (_server, port, _) = probe_server(dir.path());
    let (bpftrace_before, before) = (bpftraces(), reqlife_programs());
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGKILL, "SIGKILL")] {
        let out = dir.path().join(format!("own-{name}.json"));
        let run = AttachedRun::start(&["--server-probes"], &out, port, name);
        assert!(
            run.line.contains("(reqlife's own programs)"),
            "{}",
            run.line
        );
        std::thread::sleep(Duration::from_secs(2));
        // Attached: the five programs (four before Linux 6.11), and no bpftrace.
        let running = reqlife_programs() - before;
        assert!(running == 4 || running == 5, "{name}: {running} programs");
        assert_eq!(bpftraces(), bpftrace_before, "{name}: no bpftrace started");
        let status = run.signal(sig);
        wait_until(
            &format!("reqlife's programs gone after {name}"),
            Duration::from_secs(10),
            || reqlife_programs() == before,
        );
        if sig != libc::SIGKILL {
            assert!(status.code().is_some(), "{name}: {status:?}");
            let v = read_json(&out);
            assert_eq!(v["interrupted"], true, "{name}");
            let p = probes_of(&v);
            assert_eq!(p["joining"]["own_programs"], true, "{}", p["joining"]);
            let socket = p["phases"]["socket"]["count"].as_u64().unwrap();
            let requests = v["summary"]["requests"]["total"].as_u64().unwrap();
            assert!(socket > 0 && socket <= requests, "{socket} of {requests}");
            // Their cost counted by the kernel, not calibrated.
            assert!(
                p["cost"]["program_runs"].as_u64().unwrap() > 0,
                "{}",
                p["cost"]
            );
            assert!(p["cost"]["probe_cpu_s"].as_f64().unwrap() > 0.0);
        }
    }
}

/// The default plan needs no bpftrace (reqlife's own programs); a plan of bpftrace's says it
/// needs it, in one line.
#[test]
fn the_default_plan_runs_without_bpftrace_in_path() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let (_server, port, _) = probe_server(dir.path());
    let out = dir.path().join("no-bpftrace.json");
    let without = |args: &[&str]| {
        reqlife()
            .env("PATH", "/usr/sbin:/sbin")
            .args(["run", "-n", "300", "-c", "1", "--server-probes"])
            .args(args)
            .arg(url(port))
            .bounded()
    };
    let ran = without(&["-o", out.to_str().unwrap()]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    let p = probes_of(&read_json(&out)).clone();
    assert_eq!(p["joining"]["own_programs"], true, "{}", p["joining"]);
    assert_eq!(p["phases"]["socket"]["count"].as_u64(), Some(300), "{p}");
    let refused = without(&["--server-fn", "parse,finish"]);
    assert!(!refused.status.success());
    let err = stderr(&refused);
    assert!(
        err.contains("needs bpftrace, which is not in PATH"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
