//! Servers nobody tuned the probes for: each request joined to its own server phases, or the
//! reason it has none; what their ways of serving do to a request named.

use super::*;

/// The record's join: (requests, joined), asserting that every request not joined has its
/// reason and that at least 95% are joined.
fn joined(v: &serde_json::Value) -> (u64, u64) {
    let j = &probes_of(v)["joining"];
    let requests = count(v, "summary.requests.total");
    let joined = j["joined"].as_u64().unwrap();
    let why: u64 = j["unjoined"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(j["requests"].as_u64(), Some(requests), "{j}");
    assert_eq!(joined + why, requests, "{j}");
    assert!(joined * 100 >= requests * 95, "{j}");
    assert_eq!(
        probes_of(v)["phases"]["socket"]["count"].as_u64(),
        Some(joined)
    );
    (requests, joined)
}

/// A server started by `cmd` that prints its port first: its guard and port.
fn started(cmd: &mut Command) -> (Stopped, u16) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .expect("the server starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("it prints its port");
    (Stopped(child), port)
}

#[test]
fn node_cluster_workers_that_never_listened_are_followed() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let Some(node) = find_tool("node", "apt-get install nodejs") else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/cluster_server.js");
    let port = free_port();
    let (_server, port) = started(Command::new(node).arg(script).arg(port.to_string()));
    let out = dir.path().join("cluster.json");
    Run::new()
        .n(3000)
        .c(8)
        .t(1)
        .args(["--server-probes", "-o", out.to_str().unwrap()])
        .url(url(port))
        .ok();
    let v = read_json(&out);
    joined(&v);
    // Served by both workers, neither of which holds the listening socket (the primary does).
    let j = &probes_of(&v)["joining"];
    let served = j["served_by"].as_array().unwrap();
    assert_eq!(served.len(), 2, "{j}");
    let listening = probes_of(&v)["pids"].as_array().unwrap();
    assert!(served.iter().all(|p| !listening.contains(p)), "{j}");
}

#[test]
fn a_response_held_back_by_nagle_is_named() {
    let Some((_turn, dir)) = turn() else {
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/nagle_server.py");
    let (_server, port) = started(Command::new("python3").arg(script));
    let out = dir.path().join("nagle.json");
    let report = Run::new()
        .n(200)
        .c(2)
        .t(1)
        .args(["--server-probes", "-o", out.to_str().unwrap()])
        .url(url(port))
        .ok();
    let v = read_json(&out);
    let (requests, _) = joined(&v);
    let j = &probes_of(&v)["joining"];
    // Each response in two writes; most of them the second held for the client's delayed
    // ACK (tens of ms), which is the client's read.
    assert!(
        j["several_writes"].as_u64().unwrap() * 100 >= requests * 95,
        "{j}"
    );
    assert!(j["held_back"].as_u64().unwrap() * 2 > requests, "{j}");
    assert!(j["held_back_mean_us"].as_f64().unwrap() > 1000.0, "{j}");
    let last = &probes_of(&v)["phases"]["last_return"];
    assert!(last["p50_us"].as_f64().unwrap() > 1000.0, "{last}");
    let text = unwrapped(&stdout(&report));
    assert!(
        text.contains("held in the server's send queue (Nagle's algorithm"),
        "{text}"
    );
    assert!(
        text.contains("its last write → the client's socket"),
        "{text}"
    );
}

#[test]
fn nginx_over_http2_joins_each_stream() {
    let Some((_turn, dir, _nginx, port)) = probed_nginx(" http2") else {
        return;
    };
    let out = dir.path().join("h2.json");
    let report = Run::new()
        .n(4000)
        .c(2)
        .t(1)
        .args(["--http2", "--streams", "10", "--server-probes", "-o"])
        .arg(out.to_str().unwrap())
        .url(url(port))
        .ok();
    let v = read_json(&out);
    let (requests, joined) = joined(&v);
    // A read carries several requests: they share it, and the table's counts are requests.
    let j = &probes_of(&v)["joining"];
    assert!(j["shared_read"].as_u64().unwrap() > 0, "{j}");
    let reads = j["events"][1].as_u64().unwrap();
    assert!(reads < requests, "{j}");
    let text = unwrapped(&stdout(&report));
    assert!(
        text.contains(&format!(
            "{joined} of {requests} requests joined by their bytes"
        )),
        "{text}"
    );
}
