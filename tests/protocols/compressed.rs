//! `--compressed` and the traffic figures: the embedded target's `/text/{n}` compresses as the
//! request's `Accept-Encoding` allows (its `compress` metric), reqlife decodes (the `decode`
//! phase) over HTTP/1.1 and HTTP/2, counts header and body bytes as received and decoded
//! (h2load's traffic line), and a body that does not decode is a counted error, not a failure
//! of the run.

use crate::common::*;
use reqlife::server::ServerTls;

const TEXT_BYTES: u64 = 20_000;
const N: u64 = 300;

fn text_run(url: &str, extra: &[&str]) -> serde_json::Value {
    Run::new().n(N).c(2).t(1).args(extra).url(url).json()
}

/// The figures every decoded run of `/text/20000` must show.
fn assert_decoded(j: &serde_json::Value, what: &str) {
    // One decode per response.
    assert_counts(
        j,
        &[
            ("requests.ok", N),
            ("latency.phases.decode.count", N),
            ("bytes.body_decoded", N * TEXT_BYTES),
        ],
    );
    let body = count(j, "bytes.body");
    assert!(
        body * 10 < N * TEXT_BYTES,
        "{what}: {body} bytes received for text"
    );
    // The server's side of the same work.
    assert_counts(j, &[("server_timing.compress.count", N)]);
    // total runs to the end of decoding: at least wait + read + decode at the median.
    assert!(num(j, "latency.total.p50_us") >= num(j, "latency.phases.decode.p50_us"));
}

#[test]
fn every_coding_is_decoded_over_http1() {
    let s = embedded(ServerTls::None);
    let url = s.url("/text/20000");
    // (extra flags: the coding asked for; the default asks for all three, gzip first)
    for extra in [
        vec!["--compressed"],
        vec!["--compressed", "-H", "Accept-Encoding: br"],
        vec!["--compressed", "-H", "Accept-Encoding: deflate"],
    ] {
        let j = text_run(&url, &extra);
        assert_decoded(&j, &format!("{extra:?}"));
        // HTTP/1.1 heads are not compressed: as received = as decoded.
        assert_eq!(
            count(&j, "bytes.headers"),
            count(&j, "bytes.headers_decoded")
        );
        // Content-Length framing, no interim responses: every byte read is a head or a body.
        assert_eq!(
            count(&j, "bytes.read"),
            count(&j, "bytes.headers") + count(&j, "bytes.body"),
            "{extra:?}"
        );
    }
}

#[test]
fn without_compressed_bodies_are_counted_not_decoded() {
    let s = embedded(ServerTls::None);
    let j = text_run(&s.url("/text/20000"), &[]);
    // The body sent plain: as received = as decoded, nothing to decode.
    assert_counts(
        &j,
        &[
            ("requests.ok", N),
            ("latency.phases.decode.count", 0),
            ("bytes.body", N * TEXT_BYTES),
            ("bytes.body_decoded", N * TEXT_BYTES),
        ],
    );
    assert!(
        j["server_timing"].get("compress").is_none(),
        "{}",
        j["server_timing"]
    );
}

#[test]
fn http2_decodes_and_reports_header_compression() {
    let s = embedded(ServerTls::None);
    let j = text_run(
        &s.url("/text/20000"),
        &["--http2", "--streams", "4", "--compressed"],
    );
    assert_decoded(&j, "h2c");
    let headers = count(&j, "bytes.headers");
    let decoded = count(&j, "bytes.headers_decoded");
    // HPACK: after the first response, repeated fields are indexed.
    assert!(
        headers > 0 && headers * 2 < decoded,
        "{headers} of {decoded}"
    );
    // Frames of every kind are read: more than the header blocks and bodies.
    assert!(count(&j, "bytes.read") > headers + count(&j, "bytes.body"));

    let out = Run::new()
        .args(["--http2", "--compressed"])
        .n(200)
        .c(1)
        .url(s.url("/text/20000"))
        .ok();
    let text = unwrapped(&stdout(&out));
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Traffic"))
        .unwrap_or_else(|| panic!("no traffic line in {text}"));
    assert!(
        line.contains("headers (space savings") && line.contains("decoded to"),
        "{line}"
    );
}

#[test]
fn a_body_that_does_not_decode_is_a_counted_protocol_error() {
    let addr = canned_server(
        b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 9\r\n\r\nnot gzip!",
        false,
    );
    let url = format!("http://{addr}/");
    // Exit 1: no request succeeded.
    let (_, j) = Run::new()
        .n(20)
        .c(1)
        .arg("--compressed")
        .url(&url)
        .json_exits(1);
    assert_counts(&j, &[("errors.protocol", 20)]);
    // Without --compressed the same body is just bytes.
    let j = Run::new().n(20).c(1).url(&url).json();
    assert_counts(&j, &[("requests.ok", 20), ("bytes.body", 20 * 9)]);
}

#[test]
fn max_body_bounds_what_is_kept_for_decoding() {
    let s = embedded(ServerTls::None);
    let j = summary(
        &Run::new()
            .n(10)
            .c(1)
            .args(["--compressed", "--max-body", "100", "--json"])
            .url(s.url("/text/20000"))
            .output(),
    );
    assert_counts(&j, &[("errors.protocol", 10)]);
    let out = run(&["run", "--max-body", "0", &s.url("/")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--max-body"), "{}", stderr(&out));
}
