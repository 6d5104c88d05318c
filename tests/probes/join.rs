//! The join's accuracy against a server that measures itself (tests/data/truth_server.c: per
//! request, its own socket time from its socket's arrival stamps and its read to its write,
//! keyed by the bytes the request took; tests/data/truth_check.py compares): over
//! keep-alive, `--pipeline 4`, HTTP/2 with 10 streams, 1,000 connections and WebSocket, and
//! the tail's socket share behind a slow request of a single-threaded server.

use super::*;
use std::path::PathBuf;

/// The known-truth server built and started with `args`: its guard, port and log.
fn truth_server(dir: &Path, args: &[&str]) -> (Stopped, u16, PathBuf) {
    let bin = build(dir, "cc", &["-O2"], "truth_server.c").expect("cc runs");
    let log = dir.join(format!(
        "truth-{}.log",
        args.join("_").replace(['/', ':'], "-")
    ));
    let mut child = Command::new(&bin)
        .args(args)
        .arg("--log")
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("the known-truth server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("it prints its port");
    (Stopped(child), port, log)
}

/// `truth_check.py` on the server's log and reqlife's per-request log: its JSON.
fn check(server_log: &Path, csv: &Path, extra: &[&str]) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/truth_check.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(server_log)
        .arg(csv)
        .args(extra)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "truth_check.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One case: reqlife's `args` against the server started with `server`, the server stopped
/// (its log flushed), the comparison.
fn case(dir: &Path, name: &str, server: &[&str], args: &[&str], ws: bool) -> serde_json::Value {
    case_with(dir, name, server, args, ws, "own")
}

/// [`case`] with the kernel's probes as `with` (`REQLIFE_PROBES_WITH`): reqlife's own
/// programs (`own`, the default) or bpftrace's (`bpftrace`).
fn case_with(
    dir: &Path,
    name: &str,
    server: &[&str],
    args: &[&str],
    ws: bool,
    with: &str,
) -> serde_json::Value {
    let (guard, port, log) = truth_server(dir, server);
    let csv = dir.join(format!("{name}.csv"));
    let out = dir.join(format!("{name}.json"));
    let url = if ws {
        format!("ws://127.0.0.1:{port}/")
    } else {
        url(port)
    };
    let ran = reqlife()
        .env("REQLIFE_PROBES_WITH", with)
        .arg("run")
        .args(args)
        .args(["--server-probes", "--log-requests"])
        .arg(csv.to_str().unwrap())
        .arg("-o")
        .arg(out.to_str().unwrap())
        .arg(url)
        .bounded();
    assert!(ran.status.success(), "{name}: {}", stderr(&ran));
    drop(guard);
    let v = check(&log, &csv, &[]);
    let record = read_json(&out);
    let joining = &record["summary"]["server_probes"]["joining"];
    eprintln!("{name}: the record's join {joining}; checker {v}");
    // The events came from reqlife's own programs' ring, or from bpftrace's maps read by
    // reqlife (not from bpftrace's print).
    let (own, maps) = (with == "own", with == "bpftrace");
    assert_eq!(joining["own_programs"], own, "{name}");
    assert_eq!(joining["maps_read"], maps, "{name}");
    v
}

/// The kernel probes' hits, counted by reqlife from their events (not in the kernel), in a
/// closed loop kept alive: one arrival, one read and one write a request at least (a read or a
/// write may be split), and as many stamped send starts as writes.
fn kernel_hits_are_the_events(record: &serde_json::Value) {
    let p = &record["summary"]["server_probes"];
    let requests = record["summary"]["requests"]["total"].as_u64().unwrap();
    let hits = |probe: &str| p["hits"][probe].as_u64().unwrap_or(0);
    eprintln!("keep-alive: {requests} requests; hits {}", p["hits"]);
    for probe in [
        "kernel:sk_data_ready",
        "kernel:sock_recv_length",
        "kernel:sock_send_length",
    ] {
        let n = hits(probe);
        assert!(
            n >= requests && n <= 2 * requests,
            "{probe}: {n} hits for {requests} requests: {}",
            p["hits"]
        );
    }
    if p["hits"].get("kernel:tcp_sendmsg_locked").is_some() {
        assert_eq!(
            hits("kernel:tcp_sendmsg_locked"),
            hits("kernel:sock_send_length")
        );
    }
}

#[test]
fn every_request_is_joined_to_the_servers_own_figures() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let dir = dir.path();
    // (case, reqlife's flags, whether WebSocket, the share of joined requests whose
    // read → write must be within max(5 µs, 5%) of the server's own). The kernel's read →
    // write is longer than the server's own stamps by the system calls' edges (the read's
    // return, the send's way to tcp_sendmsg_locked): a median of 2 to 5 µs on the 2-core VM,
    // so that with builds running beside it 91 to 99.7% were within (docs/server-side.md);
    // the rule that holds there is 90%, asserted here.
    let cases: [(&str, &[&str], bool, f64); 6] = [
        (
            "keep-alive",
            &["-c", "4", "-t", "1", "-n", "3000"],
            false,
            0.90,
        ),
        (
            "pipeline-4",
            &["-c", "4", "-t", "1", "--pipeline", "4", "-n", "4000"],
            false,
            0.90,
        ),
        (
            "h2-10-streams",
            &[
                "--http2",
                "-c",
                "2",
                "-t",
                "1",
                "--streams",
                "10",
                "-n",
                "4000",
            ],
            false,
            0.90,
        ),
        (
            "1000-connections",
            &["-c", "1000", "-t", "2", "-n", "6000"],
            false,
            0.90,
        ),
        (
            "websocket",
            &["-c", "4", "-t", "1", "-n", "3000", "--data", "hello"],
            true,
            0.90,
        ),
        // The same load as the first, through bpftrace's programs: the two paths agree.
        (
            "keep-alive, bpftrace",
            &["-c", "4", "-t", "1", "-n", "3000"],
            false,
            0.90,
        ),
    ];
    let (mut table, mut failures) = (Vec::new(), Vec::new());
    for (name, args, ws, handle_bar) in cases {
        let v = match name.strip_suffix(", bpftrace") {
            Some(base) => case_with(dir, base, &[], args, ws, "bpftrace"),
            None => case(dir, name, &[], args, ws),
        };
        if name == "keep-alive" {
            kernel_hits_are_the_events(&read_json(dir.join("keep-alive.json")));
        }
        let joined = v["with_server_phases_share"].as_f64().unwrap_or(0.0);
        let keyed = v["joined_share"].as_f64().unwrap_or(0.0);
        let handle = v["handle"]["within_share"].as_f64().unwrap_or(0.0);
        let socket = v["socket"]["last_in_read"]["within_share"]
            .as_f64()
            .unwrap_or(0.0);
        table.push(format!(
            "| {name} | {:.1}% | {:.1}% | {:.1}% (median {} µs) | {:.1}% (median {} µs) |",
            joined * 100.0,
            keyed * 100.0,
            handle * 100.0,
            v["handle"]["median_abs_diff_us"],
            socket * 100.0,
            v["socket"]["last_in_read"]["median_abs_diff_us"],
        ));
        let mut failed = Vec::new();
        if joined < 0.95 {
            failed.push(format!("{joined} of the requests joined"));
        }
        if keyed < 0.95 {
            failed.push(format!("the server logged {keyed} of them"));
        }
        if handle < handle_bar {
            failed.push(format!("read → write within max(5 µs, 5%) for {handle}"));
        }
        if socket < 0.95 {
            failed.push(format!("socket time within max(15 µs, 15%) for {socket}"));
        }
        if !failed.is_empty() {
            failures.push(format!("{name}: {}: {v}", failed.join(", ")));
        }
    }
    eprintln!(
        "| case | requests with server phases | keyed to the server's log | read → write within max(5 µs, 5%) | socket within max(15 µs, 15%) |"
    );
    for row in table {
        eprintln!("{row}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_tails_socket_share_is_the_servers_own() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let dir = dir.path();
    // One thread; 1 request in 100 takes 3 ms, the others 20 µs; 8 connections: the requests
    // behind a slow one wait in their sockets, and they are the tail.
    let (guard, port, log) = truth_server(dir, &["--delay-us-every", "3000:100:20"]);
    let csv = dir.join("tail.csv");
    let out = dir.join("tail.json");
    Run::new()
        .args(["-c", "8", "-t", "1", "-n", "6000", "--server-probes"])
        .args(["--log-requests", csv.to_str().unwrap()])
        .args(["-o", out.to_str().unwrap()])
        .url(url(port))
        .ok();
    drop(guard);
    let own = check(&log, &csv, &["--tail"]);
    let record = read_json(&out);
    let tail = record["summary"]["server_probes"]["tail"]
        .as_array()
        .unwrap();
    let p99 = tail.iter().find(|t| t["which"] == "p99").unwrap();
    let ours = p99["shares"]["server: socket"].as_f64().unwrap();
    let theirs = own["tail"]["server_socket_share"].as_f64().unwrap();
    eprintln!("the slowest 1%: socket share {ours:.3} (the server's own {theirs:.3}): {p99}");
    assert!(
        (ours - theirs).abs() <= 0.10,
        "the tail's socket share {ours} against the server's own {theirs}: {own}"
    );
    // The shares add up, and the socket is most of the tail's time.
    let sum: f64 = p99["shares"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((sum - 1.0).abs() < 0.01, "{sum}");
    assert!(ours > 0.5, "{p99}");
}

/// The older kernels' script (before Linux 6.11 there is no `tcp:tcp_sendmsg_locked`: a write
/// is stamped when its send returned), run for real on this kernel: reqlife writes it when
/// `REQLIFE_PROBES_KERNEL=pre-6.11`. Every request is joined as on a newer kernel; its read →
/// write then holds the send itself, so it ends later than the server's own stamp.
#[test]
fn the_older_kernels_script_runs_and_joins() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let dir = dir.path();
    let (guard, port, log) = truth_server(dir, &[]);
    let (csv, out) = (dir.join("pre-6.11.csv"), dir.join("pre-6.11.json"));
    let pre = |args: &[&str]| {
        reqlife()
            .env("REQLIFE_PROBES_KERNEL", "pre-6.11")
            .args(["run", "-c", "4", "-t", "1", "-n", "2000", "--server-probes"])
            .args(args)
            .arg(url(port))
            .bounded()
    };
    let script = pre(&["--print-probe-script"]);
    let text = String::from_utf8_lossy(&script.stdout);
    assert!(text.contains("sock_send_length"), "{text}");
    assert!(!text.contains("tcp_sendmsg_locked"), "{text}");
    let ran = pre(&[
        "--log-requests",
        csv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(ran.status.success(), "{}", stderr(&ran));
    drop(guard);
    let p = probes_of(&read_json(&out)).clone();
    assert!(
        p["hits"].get("kernel:tcp_sendmsg_locked").is_none(),
        "{}",
        p["hits"]
    );
    let v = check(&log, &csv, &[]);
    eprintln!("pre-6.11: the record's join {}; checker {v}", p["joining"]);
    let joined = v["with_server_phases_share"].as_f64().unwrap();
    let socket = v["socket"]["last_in_read"]["within_share"]
        .as_f64()
        .unwrap();
    assert!(joined >= 0.95, "{v}");
    assert!(socket >= 0.95, "{v}");
    // Read → write: the send's own time more than the server's figure, tens of µs at most.
    let handle_us = v["handle"]["median_abs_diff_us"].as_f64().unwrap();
    assert!(handle_us < 50.0, "{v}");
}
