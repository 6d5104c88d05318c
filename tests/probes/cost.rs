//! `--server-probes-cost`: the probes follow half of the client's connections, picked in the
//! kernel by their port, and the requests of the two halves are compared (what the probes
//! cost the requests they measure); the port's other connections are counted apart, and the
//! listening socket's wake-ups are not others'.

use super::*;

#[test]
fn half_the_connections_are_followed_and_the_halves_compared() {
    let Some((_turn, dir, _nginx, port)) = probed_nginx("") else {
        return;
    };
    let out = dir.path().join("run.json");
    let report = Run::new()
        .c(32)
        .t(1)
        .args([
            "-R",
            "2000",
            "-d",
            "3s",
            "--server-probes-cost",
            "--interval",
            "200ms",
            "-o",
        ])
        .arg(out.to_str().unwrap())
        .url(url(port))
        .ok();
    let v = read_json(&out);
    let p = probes_of(&v);
    let requests = count(&v, "summary.requests.ok");
    let m = &p["cost"]["measured"];
    let (traced, untraced) = (&m["traced"], &m["untraced"]);
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap_or_else(|| panic!("{k}: {m}"));
    // 32 ports of the kernel's: a half with fewer than 4 is one chance in a million.
    assert_eq!(
        n(traced, "connections") + n(untraced, "connections"),
        32,
        "{m}"
    );
    assert!(
        n(traced, "connections") >= 4 && n(untraced, "connections") >= 4,
        "{m}"
    );
    assert_eq!(
        n(traced, "requests") + n(untraced, "requests"),
        requests,
        "{m}"
    );
    // The untraced half's requests are not joined, and said so; the traced half's are.
    let j = &p["joining"];
    assert_eq!(
        j["unjoined"]["untraced"].as_u64(),
        Some(n(untraced, "requests")),
        "{j}"
    );
    let joined = j["joined"].as_u64().unwrap();
    // (On a busy machine bpftrace's reader can fall behind: those are counted and warned.)
    assert!(joined * 100 >= n(traced, "requests") * 90, "{j}");
    assert!(joined <= n(traced, "requests"), "{j}");
    // Neither the untraced half nor the listening socket counts as another's connection.
    assert_eq!(j["other_events"].as_u64(), Some(0), "{j}");
    // Paired by interval: 15 intervals of 200 ms, each half with about 130 requests in each.
    for g in m["gaps"].as_array().unwrap() {
        let [lo, hi] = [0, 1].map(|i| g["ci_us"][i].as_f64().unwrap_or_else(|| panic!("{g}")));
        let d = g["diff_us"].as_f64().unwrap();
        assert!(lo <= d && d <= hi, "{g}");
        assert!(g["intervals"].as_u64().unwrap() >= 10, "{g}");
    }
    let text = unwrapped(&stdout(&report));
    assert!(
        text.contains("probes' cost measured in the run: traced"),
        "{text}"
    );
    assert!(text.contains("half of the connections followed"), "{text}");
    assert!(
        !text.contains("untraced)"),
        "the untraced half is not warned of: {text}"
    );
}

#[test]
fn a_connection_not_reqlifes_is_counted_apart() {
    let Some((_turn, dir, _nginx, port)) = probed_nginx("") else {
        return;
    };
    let out = dir.path().join("run.json");
    // Another client on the port, a request every 100 ms until the run ends (the probes
    // attach after their calibration, a second or two in).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = done.clone();
    let side = std::thread::spawn(move || {
        use std::io::{Read, Write};
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let _ = s.read_to_end(&mut Vec::new());
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    Run::new()
        .c(2)
        .t(1)
        .args(["-d", "3s", "--server-probes", "-o"])
        .arg(out.to_str().unwrap())
        .url(url(port))
        .ok();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    side.join().unwrap();
    let v = read_json(&out);
    let j = &probes_of(&v)["joining"];
    // The side requests' bytes arrived in the server's sockets of connections not
    // reqlife's: 3 s of them, a request every 100 ms.
    assert!(j["other_events"].as_u64().unwrap() >= 10, "{j}");
    assert_eq!(j["unjoined"].get("untraced"), None, "{j}");
}

#[test]
fn the_halves_need_two_connections_and_a_run_here() {
    refused(
        &["--server-probes-cost", "-c", "1", "http://127.0.0.1:9/"],
        "give -c 2 or more",
    );
    refused(
        &[
            "--server-probes-cost",
            "--server-probes-from",
            "http://127.0.0.1:9465",
            "http://127.0.0.1:9/",
        ],
        "--server-probes-cost",
    );
}
