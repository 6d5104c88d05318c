//! `reqlife calibrate` against the embedded target: its figures and its verdict, as JSON and
//! as text; bad input and an unreachable --external target are clear errors.

use crate::common::*;
use std::io::Write;

#[test]
fn calibrate_measures_and_gives_a_verdict() {
    let out = run_ok(&[
        "calibrate",
        "--step",
        "300ms",
        "-c",
        "8",
        "-t",
        "1",
        "--json",
        "--quiet",
    ]);
    let j = summary(&out);
    // Its own costs, measured on this machine.
    assert!(num(&j, "timestamp_ns") > 0.0);
    assert!(num(&j, "record_ns") > num(&j, "timestamp_ns"));
    // The closed loop ran and its client CPU per request was measured.
    assert!(num(&j, "closed.achieved_rps") > 100.0, "{j}");
    assert!(num(&j, "closed.client_cpu_us_per_request") > 0.0);
    // The open-loop search ran at least one step, each with its offered rate and limit.
    let steps = j["open_steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= 12, "{j}");
    for s in steps {
        assert!(num(s, "offered_rps") > 0.0);
        assert!(["none", "client", "server"].contains(&s["limit"].as_str().unwrap()));
    }
    // Low load: the latency the network and the client add, from the target's Server-Timing.
    assert!(num(&j, "low_load.added_p50_us") > 0.0, "{j}");
    let verdict = j["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("one reqlife process on this machine generates up to"),
        "{verdict}"
    );
    assert!(verdict.contains("of client CPU per request"), "{verdict}");
}

#[test]
fn calibrate_prints_a_table_and_the_verdict() {
    let out = run_ok(&[
        "calibrate",
        "--step",
        "200ms",
        "-c",
        "4",
        "-t",
        "1",
        "--quiet",
    ]);
    let text = stdout(&out);
    assert!(text.contains("cost of a timestamp"), "{text}");
    assert!(text.contains("closed"), "{text}");
    assert!(text.contains("Verdict: one reqlife process"), "{text}");
}

#[test]
fn calibrate_bad_input_is_a_clear_error() {
    let out = run(&["calibrate", "--step", "0s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--step"), "{}", stderr(&out));
    let refused = refused_addr();
    let out = run(&[
        "calibrate",
        "--step",
        "200ms",
        "--quiet",
        "--external",
        &format!("http://{refused}/"),
    ]);
    // Every connection refused: the fail-fast rule stops the first step, exit 3, the fix.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no request succeeded"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("is the server running"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_server_slower_than_every_step_is_named_not_measured_as_a_few_req_s() {
    // It answers each request after 300 ms: a 200 ms step holds a few requests, each slower
    // than half the step. Three closed-loop steps in turn (a stall is measured again), then one
    // line naming the fix; no verdict of "up to 5 req/s".
    let slow = raw_server(|mut s| {
        while read_request(&mut s) {
            std::thread::sleep(std::time::Duration::from_millis(300));
            if s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .is_err()
            {
                return;
            }
        }
    });
    let out = run(&[
        "calibrate",
        "--step",
        "200ms",
        "-c",
        "2",
        "--external",
        &format!("http://{slow}/"),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("measuring it again").count(), 2, "{err}");
    assert!(
        err.contains("too few to measure this client by; lengthen --step or raise -c"),
        "{err}"
    );
    assert!(!stdout(&out).contains("Verdict"), "{}", stdout(&out));
}
