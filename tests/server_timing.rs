//! Server-Timing end to end: a server that reports known durations (in headers and in a
//! chunked trailer, with labels and a malformed metric) and the medians reqlife reports.

mod common;

use common::*;

#[test]
fn known_durations_come_back_as_medians() {
    let addr = canned_server(
        b"HTTP/1.1 200 OK\r\nServer-Timing: parse;dur=0.25, db;dur=12.5;desc=\"primary\", level;desc=L1\r\n\
Server-Timing: app;dur=3.125, bad;dur=x, total;dur=20\r\nTransfer-Encoding: chunked\r\n\r\n\
2\r\nok\r\n0\r\nServer-Timing: tail;dur=1.5\r\n\r\n",
        false,
    );
    let out = run_ok(&[
        "run",
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
        "--json",
        &format!("http://{addr}/"),
    ]);
    let j = summary(&out);
    // (metric, dur in ms as sent)
    for (name, ms) in [
        ("parse", 0.25),
        ("db", 12.5),
        ("app", 3.125),
        ("total", 20.0),
        ("tail", 1.5),
    ] {
        let p50 = num(&j, &format!("server_timing.{name}.p50_us"));
        let want = ms * 1000.0;
        // HdrHistogram keeps 3 significant digits.
        assert!(
            (p50 - want).abs() <= want * 0.001 + 0.001,
            "{name}: {p50} us, sent {want} us"
        );
        assert_eq!(
            num(&j, &format!("server_timing.{name}.count")),
            200.0,
            "{name}"
        );
    }
    // In the order the server lists them; a metric without dur is counted as a label only.
    let order: Vec<&str> = j["server_timing_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(order, vec!["parse", "db", "level", "app", "total", "tail"]);
    assert_eq!(num(&j, "server_timing.level.count"), 0.0);
    assert_eq!(num(&j, "server_timing_labels.level.L1"), 200.0);
    assert_eq!(num(&j, "server_timing_labels.db.primary"), 200.0);
    assert_eq!(num(&j, "server_timing_invalid"), 200.0);
    assert_eq!(num(&j, "server_timing_responses"), 200.0);
    assert_eq!(j["server_timing_total"], "total");
    // The text report shows the breakdown in the server's order.
    let out = run(&[
        "run",
        "-n",
        "50",
        "-c",
        "1",
        "-t",
        "1",
        &format!("http://{addr}/"),
    ]);
    let text = stdout(&out);
    let at = |s: &str| {
        text.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{text}"))
    };
    assert!(at("server parse") < at("server db") && at("server db") < at("server tail"));
    assert!(text.contains("network+client (wait - server)"));
    assert!(text.contains("level: L1 100.0%"), "{text}");
    assert!(
        text.contains("50 malformed Server-Timing metrics were skipped"),
        "{text}"
    );
}

#[test]
fn server_total_option_picks_the_metric() {
    // The server takes 5 ms and says db took 1 ms and app 2 ms (no `total`).
    let addr = raw_server(|mut s| {
        while read_request(&mut s) {
            std::thread::sleep(std::time::Duration::from_millis(5));
            let r = b"HTTP/1.1 200 OK\r\nServer-Timing: db;dur=1, app;dur=2\r\nContent-Length: 0\r\n\r\n";
            if std::io::Write::write_all(&mut s, r).is_err() {
                return;
            }
        }
    });
    let url = format!("http://{addr}/");
    let a = summary(&run(&[
        "run", "-n", "40", "-c", "1", "-t", "1", "--json", &url,
    ]));
    let b = summary(&run(&[
        "run",
        "-n",
        "40",
        "-c",
        "1",
        "-t",
        "1",
        "--json",
        "--server-total",
        "db",
        &url,
    ]));
    assert_eq!(a["server_timing_total"], "total");
    assert_eq!(b["server_timing_total"], "db");
    // Without a `total` metric the sum (3 ms) is the server's own time: wait − 3 ms ≈ 2 ms;
    // with --server-total db: wait − 1 ms ≈ 4 ms.
    let oa = num(&a, "server_timing_overhead.p50_us");
    let ob = num(&b, "server_timing_overhead.p50_us");
    assert!(
        (1_000.0..4_000.0).contains(&oa),
        "overhead {oa} us with the sum"
    );
    assert!(
        ob - oa > 1_500.0,
        "overhead {oa} us with the sum, {ob} us with db"
    );
}
