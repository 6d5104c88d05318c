//! The trace headers (`--trace-context`, [`crate::model::trace`]) written into a request: in
//! HTTP/1.1 bytes after the request line (this module); in an HTTP/2 header block as literals
//! never indexed (they change per request: `http2::conn`); as fields of an HTTP/3 request.

use crate::model::trace::TraceHeaders;

/// Writes `request` (HTTP/1.1 bytes) into `out` with the trace headers after its request
/// line; `out` is cleared first and keeps its capacity (no allocation once it has grown).
pub fn http1_into(out: &mut Vec<u8>, request: &[u8], headers: &TraceHeaders<'_>) {
    out.clear();
    let line_end = request
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(request.len(), |i| i + 2);
    out.extend_from_slice(&request[..line_end]);
    for (name, value) in headers.fields() {
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(&request[line_end..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trace::{TraceContext, TraceId};

    #[test]
    fn the_headers_follow_the_request_line() {
        let ctx = TraceContext {
            seed: 1,
            sample: 1.0,
            tracestate: Some("v=1".into()),
            link: None,
        };
        let id = TraceId {
            trace: 1,
            span: 2,
            sampled: true,
        };
        let mut out = Vec::new();
        http1_into(
            &mut out,
            b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
            &TraceHeaders::new(&ctx, &id),
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "GET / HTTP/1.1\r\ntraceparent: 00-00000000000000000000000000000001-0000000000000002-01\r\ntracestate: v=1\r\nHost: a\r\n\r\n"
        );
    }
}
