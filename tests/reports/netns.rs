//! Three generators, each in a network namespace of its own, load one embedded target across a
//! bridge (`ip netns`, veth pairs): their `--segment` records merge to exactly the counts of
//! one process running the whole plan, and the merged histograms are the sum of the parts'.
//! Creating namespaces needs root and iproute2: without them the test says why and does not
//! run. Everything it creates is removed when it ends, failed or not.

use crate::common::*;
use reqlife::recorder::hist;
use reqlife::server::{ServerConfig, ServerTls};
use std::process::{Command, Stdio};

/// The private subnet of test `which`'s bridge (RFC 1918, unlikely to be in use): each test
/// its own, as its bridge and namespaces have names of their own, so that they run at once.
fn subnet(which: u8) -> String {
    format!("10.213.{}", 77 + which)
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The namespaces, veths and bridge of one test; removed when dropped.
struct Net {
    subnet: String,
    bridge: String,
    namespaces: Vec<String>,
    /// The veths' ends in this namespace.
    veths: Vec<String>,
}

impl Drop for Net {
    fn drop(&mut self) {
        // The host ends first (a namespace is freed lazily, and its veth pair with it).
        for v in &self.veths {
            let _ = ip(&["link", "del", v]);
        }
        for ns in &self.namespaces {
            let _ = ip(&["netns", "del", ns]);
        }
        let _ = ip(&["link", "del", &self.bridge]);
    }
}

/// Test `which`'s bridge at `subnet.1` and `n` namespaces at `subnet.(10+i)`, each joined by
/// a veth pair.
fn build(n: usize, which: u8) -> Result<Net, String> {
    let tag = format!("{}{which}", std::process::id() % 100_000);
    let mut net = Net {
        subnet: subnet(which),
        bridge: format!("rlbr{tag}"),
        namespaces: Vec::new(),
        veths: Vec::new(),
    };
    let br = net.bridge.clone();
    ip(&["link", "add", &br, "type", "bridge"])?;
    ip(&["addr", "add", &format!("{}.1/24", net.subnet), "dev", &br])?;
    ip(&["link", "set", &br, "up"])?;
    for i in 0..n {
        let ns = format!("rl{tag}n{i}");
        ip(&["netns", "add", &ns])?;
        net.namespaces.push(ns.clone());
        let (host, inner) = (format!("rl{tag}h{i}"), format!("rl{tag}v{i}"));
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner])?;
        net.veths.push(host.clone());
        ip(&["link", "set", &host, "master", &br])?;
        ip(&["link", "set", &host, "up"])?;
        ip(&["link", "set", &inner, "netns", &ns])?;
        let addr = format!("{}.{}/24", net.subnet, 10 + i);
        ip(&["-n", &ns, "addr", "add", &addr, "dev", &inner])?;
        ip(&["-n", &ns, "link", "set", &inner, "up"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
    }
    Ok(net)
}

/// Test `which`'s three namespaces ([`build`]) and the embedded target on their bridge;
/// `None`, said in one line, where namespaces cannot be made.
fn bridged(which: u8) -> Option<(Net, reqlife::server::RunningServer)> {
    let net = match build(3, which) {
        Ok(net) => net,
        Err(why) => {
            eprintln!("network namespaces cannot be made here ({why}): not run");
            return None;
        }
    };
    let server = reqlife::server::spawn(ServerConfig::new(
        format!("{}.1:0", net.subnet).parse().unwrap(),
        ServerTls::None,
    ))
    .expect("the embedded target listens on the bridge");
    Some((net, server))
}

#[test]
fn segments_in_namespaces_of_their_own_merge_into_the_whole_plan() {
    let Some((net, server)) = bridged(0) else {
        return;
    };
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let flags = ["-n", "3000", "-c", "6", "-t", "1", "--quiet"];

    // The whole plan, from one namespace.
    let whole = dir.path().join("whole.json");
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            &net.namespaces[0],
            env!("CARGO_BIN_EXE_reqlife"),
            "run",
        ])
        .args(flags)
        .args(["-o", whole.to_str().unwrap(), &url])
        .bounded();
    assert!(out.status.success(), "{}", stderr(&out));

    // Its three segments, one per namespace, at once.
    let children: Vec<_> = (0..3)
        .map(|i| {
            let path = dir.path().join(format!("s{i}.json"));
            let child = Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    &net.namespaces[i],
                    env!("CARGO_BIN_EXE_reqlife"),
                    "run",
                ])
                .args(flags)
                .args(["--segment", &format!("{}/3", i + 1), "--start-at", "+1s"])
                .args(["-o", path.to_str().unwrap(), &url])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (path, child)
        })
        .collect();
    let parts: Vec<String> = children
        .into_iter()
        .map(|(path, child)| {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            path.to_str().unwrap().to_string()
        })
        .collect();
    let merged = dir.path().join("all.json");
    run_ok(&[
        "merge",
        &parts[0],
        &parts[1],
        &parts[2],
        "-o",
        merged.to_str().unwrap(),
    ]);

    let load = |p: &std::path::Path| reqlife::app::load_record(p).unwrap();
    let (m, w) = (load(&merged), load(&whole));
    assert_eq!(m.summary.requests, w.summary.requests);
    assert_eq!(m.summary.status, w.summary.status);
    assert_eq!(m.summary.connections.opened, w.summary.connections.opened);
    let mut sum = hist::new_hist();
    for p in &parts {
        sum.add(load(std::path::Path::new(p)).histogram("total").unwrap())
            .unwrap();
    }
    let got = m.histogram("total").unwrap();
    assert_eq!(got.len(), 3000);
    for q in [0.5, 0.99, 1.0] {
        assert_eq!(got.value_at_quantile(q), sum.value_at_quantile(q));
    }
    // Each segment came from its own address on the bridge.
    assert_eq!(m.config.url, url);
    drop(server);
    drop(net);
}

#[test]
fn segments_in_namespaces_start_together_and_merge_at_the_coordinator() {
    // The same without Kubernetes: `--coordinator` across the bridge, segment 1 in the first
    // namespace listening on its address there; no files shared, the records sent over.
    let Some((net, server)) = bridged(1) else {
        return;
    };
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let coordinator = format!("{}.10:{}", net.subnet, free_fixed_port());
    let children: Vec<_> = (0..3)
        .rev()
        .map(|i| {
            let path = dir.path().join(format!("s{}.json", i + 1));
            Command::new("ip")
                .args(["netns", "exec", &net.namespaces[i]])
                .args([
                    env!("CARGO_BIN_EXE_reqlife"),
                    "run",
                    "-n",
                    "3000",
                    "-c",
                    "6",
                ])
                .args(["--segment", &format!("{}/3", i + 1)])
                .args(["--coordinator", &coordinator, "--quiet"])
                .args(["-o", path.to_str().unwrap(), &url])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let (code, err) = ended(child);
        assert_eq!(code, 0, "{err}");
    }
    let m = reqlife::app::load_record(&dir.path().join("s1.json")).unwrap();
    assert_eq!(m.summary.requests.total, 3000);
    assert_eq!(m.summary.requests.ok, 3000);
    assert_eq!(m.merged_run_ids.len(), 3);
    let g = &m.environment.generators;
    assert_eq!(g.len(), 3);
    let late: Vec<f64> = g.iter().map(|g| g.start_late_ms.unwrap()).collect();
    eprintln!("across namespaces, start late (ms): {late:?}; generators {g:?}");
    assert!(late.iter().all(|&l| (0.0..100.0).contains(&l)), "{late:?}");
    drop(server);
    drop(net);
}
