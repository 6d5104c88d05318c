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
        upstream: None,
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
    // --server-upstream: the server's calls to port 5432 timed.
    for follow_fns in ["", "reqlife_calibrate_push,reqlife_calibrate_step"] {
        let upstream = ScriptPlan {
            upstream: Some(5432),
            ..plan(Follow::Client(42), follow_fns, true, 1, false)
        };
        out.push((format!("upstream fns={}", !follow_fns.is_empty()), upstream));
    }
    let older = ScriptPlan {
        upstream: Some(5432),
        ..plan(Follow::Client(42), "", false, 100, false)
    };
    out.push(("upstream pre-6.11 sampled".into(), older));
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
        // Every probe's hits are counted, once: in the kernel, or by reqlife from its events
        // (the kernel's probes: no map update a hit in the server).
        for i in 0..s.probes.len() {
            let in_kernel = s.text.contains(&format!("@n[{i}] = count()"));
            let from_events = s.counted.iter().any(|&(probe, _)| probe == i);
            assert!(in_kernel != from_events, "{name}: {i} ({:?})", s.probes[i]);
            assert_eq!(
                from_events,
                s.probes[i].0.starts_with("kernel:"),
                "{name}: {i}"
            );
        }
        assert_eq!(
            s.text.contains("print(@n)"),
            s.text.contains("@n["),
            "{name}"
        );
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

#[test]
fn the_upstream_calls_are_tied_to_the_next_write_to_a_client() {
    let s = ScriptPlan {
        upstream: Some(5432),
        ..plan(Follow::Client(42), "", true, 1, false)
    }
    .write()
    .text;
    // 5432 = 0x1538, in network order 0x3815: the server's connections to the upstream.
    let up = format!("skc_dport == {}", 0x3815);
    // The exchange: its first write (the send's start), the reply's first arrival after it,
    // both handed to the thread at its read of the reply, which ends the exchange.
    assert!(s.contains(&format!("{up}) {{\n    $u = (uint64)$sk->__sk_common.skc_num;\n    if (@uw[$u] == 0) {{ @uw[$u] = $w; }} @upc[$u] = 1;")), "{s}");
    assert!(
        s.contains("if (@uw[$u] && @ua[$u] == 0) { @ua[$u] = $t; }"),
        "{s}"
    );
    assert!(s.contains(&format!("{up} && @srv[pid])")), "{s}");
    assert!(
        s.contains("@utw[tid] = @uw[$u]; @uta[tid] = @ua[$u]; delete(@uw[$u]); delete(@ua[$u]);"),
        "{s}"
    );
    // Any write of the thread to a client takes it; a followed one prints it with its bytes.
    let take = s
        .find("$vw = @utw[tid];\n    if ($vw) {\n      $va = @uta[tid]; $vb = @utb[tid]; $vr = @utr[tid]; $vx = @utx[tid];\n      delete(@utw[tid]); delete(@uta[tid]); delete(@utb[tid]); delete(@utr[tid]); delete(@utx[tid]);")
        .expect("taken");
    let ours = s[take..]
        .find("if (@ours[$p])")
        .expect("before the check of whose")
        + take;
    let event = s.find(&format!("if ($vw) {{ if (@ep == 0) {{ @e0[$vw, tid] = ((uint64){EV_UPSTREAM}, (uint64)($p), (uint64)($e - (uint64)args->ret), (uint64)($e), $va, (uint64)(0)); }}")).expect("the U event");
    assert!(take < ours && ours < event, "{s}");
    // A closed upstream connection's unanswered exchange is forgotten.
    assert!(
        s.contains("args->dport == 8080 || args->dport == 5432"),
        "{s}"
    );
    assert!(
        s.contains("if (args->newstate == 2 && @srv[pid]) { @upk[args->skaddr] = 1; }\n    else if (args->newstate == 1 && @upk[args->skaddr]) {\n      delete(@upk[args->skaddr]); @upc[$u] = 1;\n    } else if (args->newstate == 7) {\n      delete(@upk[args->skaddr]); delete(@upc[$u]); delete(@uw[$u]); delete(@ua[$u]);\n      delete(@ba[$u]); delete(@br[$u]); delete(@bw[$u]);"),
        "{s}"
    );
    // The upstream here: its own side of the call (its port 5432, its peer the server's),
    // the first arrival, read (its process's writes followed from then) and write.
    assert!(s.contains("skc_num == 5432) {\n    $q = $sk->__sk_common.skc_dport; $u = (uint64)((($q & 255) << 8) | ($q >> 8));\n    if (@upc[$u] && @ba[$u] == 0) { @ba[$u] = $t; }"), "{s}");
    assert!(
        s.contains("if (@ba[$u] && @br[$u] == 0) { @br[$u] = nsecs; @srv[pid] = 1; }"),
        "{s}"
    );
    assert!(
        s.contains("if (@br[$u] && @bw[$u] == 0) { @bw[$u] = $w; }"),
        "{s}"
    );
    assert!(s.contains(&format!("if ($vb && $vx) {{ if (@ep == 0) {{ @e0[$vb, tid] = ((uint64){EV_BACKEND}, (uint64)($p), (uint64)($e - (uint64)args->ret), $vr, $vx, (uint64)(0)); }}")), "{s}");
    // Without the flag, none of it.
    let plain = plan(Follow::Client(42), "", true, 1, false).write().text;
    assert!(!plain.contains("@uw") && !plain.contains("@utw"), "{plain}");
}

#[test]
fn the_kernel_probes_hits_are_their_events_counted() {
    use crate::recorder::join::KernelEvent as E;
    let s = plan(Follow::Client(42), "", true, 1, false).write();
    let mut hits: Vec<(String, u64)> = s.probes.iter().map(|(n, _)| (n.clone(), 0)).collect();
    let arrived = E::Arrived {
        port: 1,
        prev: 0,
        off: 10,
        ns: 1,
    };
    let read = E::Read {
        port: 1,
        start: 0,
        off: 10,
        ns: 2,
        pid: 7,
        key: 7,
    };
    let wrote = E::Wrote {
        port: 1,
        start: 0,
        end: 20,
        ns: 3,
        pid: 7,
    };
    let delivered = E::Delivered {
        port: 1,
        prev: 0,
        off: 20,
        ns: 4,
    };
    let batch = [arrived, read, wrote, delivered, arrived, read];
    Counted::count(&s.counted, &batch, &mut hits);
    Counted::count(&s.counted, &batch[..1], &mut hits);
    let of = |name: &str| hits.iter().find(|h| h.0 == name).map(|h| h.1);
    // The client's arrivals (delivered) are no probe's hits of their own.
    assert_eq!(of("kernel:sk_data_ready"), Some(3));
    assert_eq!(of("kernel:sock_recv_length"), Some(2));
    assert_eq!(of("kernel:sock_send_length"), Some(1));
    assert_eq!(of("kernel:tcp_sendmsg_locked"), Some(1));
}
