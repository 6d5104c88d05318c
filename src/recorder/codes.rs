//! Counts by code, for the codes a protocol gives a request's end: HTTP/2's RST_STREAM error
//! codes and gRPC's status codes, each with the message of its first occurrence (gRPC's
//! `grpc-message`). A handful of codes at most: a short list, searched in place.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A record's gRPC statuses (in its summary, flattened): calls by status code name, and the
/// first `grpc-message` of each code. Both absent from runs that made no gRPC call.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GrpcStatuses {
    /// Calls by status code name (`OK`, `UNAVAILABLE`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
    /// The first `grpc-message` of each status code name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_messages: BTreeMap<String, String>,
}

impl GrpcStatuses {
    /// The statuses counted in `codes`.
    pub fn of(codes: &CodeCounts) -> Self {
        let name = crate::engine::grpc::code_name;
        GrpcStatuses {
            grpc_status: codes.by_name(name),
            grpc_messages: codes.messages(name),
        }
    }

    /// The statuses of several summaries together (the first message of a code wins).
    pub fn sum<'a>(parts: impl Iterator<Item = &'a GrpcStatuses>) -> Self {
        let mut out = GrpcStatuses::default();
        for p in parts {
            for (code, n) in &p.grpc_status {
                *out.grpc_status.entry(code.clone()).or_default() += n;
            }
            for (code, m) in &p.grpc_messages {
                out.grpc_messages
                    .entry(code.clone())
                    .or_insert_with(|| m.clone());
            }
        }
        out
    }
}

/// Counts per code and the first message of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeCounts {
    counts: Vec<(u32, u64)>,
    first: Vec<(u32, String)>,
}

impl CodeCounts {
    /// Counts one `code`.
    pub fn count(&mut self, code: u32) {
        match self.counts.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((code, 1)),
        }
    }

    /// Counts one `code`, keeping `message` if it is the code's first.
    pub fn count_with(&mut self, code: u32, message: &str) {
        self.count(code);
        if !self.first.iter().any(|(c, _)| *c == code) {
            self.first.push((code, message.to_string()));
        }
    }

    /// Adds another thread's counts (a message already kept stays).
    pub fn merge(&mut self, o: &CodeCounts) {
        for &(code, n) in &o.counts {
            match self.counts.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => self.counts.push((code, n)),
            }
        }
        for (code, m) in &o.first {
            if !self.first.iter().any(|(c, _)| c == code) {
                self.first.push((*code, m.clone()));
            }
        }
    }

    /// The counts by the codes' names.
    pub fn by_name<N: ToString>(&self, name: impl Fn(u32) -> N) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .map(|&(c, n)| (name(c).to_string(), n))
            .collect()
    }

    /// The first non-empty message of each code, by the codes' names.
    pub fn messages<N: ToString>(&self, name: impl Fn(u32) -> N) -> BTreeMap<String, String> {
        self.first
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(c, m)| (name(*c).to_string(), m.clone()))
            .collect()
    }
}

/// WebSocket's counts: how connections ended, by kind, whether they agreed permessage-deflate
/// (`--compressed`), and the replies that matched no message in flight (`--ws-match`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WsCounts {
    /// Connections' ends by kind ([`crate::engine::websocket::close`]).
    pub closes: CodeCounts,
    /// Connections upgraded with `--compressed`, by whether they agreed permessage-deflate.
    pub deflate: CodeCounts,
    /// Replies that matched no message in flight.
    pub unmatched: u64,
}

impl WsCounts {
    /// Adds another thread's counts.
    pub fn merge(&mut self, o: &WsCounts) {
        self.closes.merge(&o.closes);
        self.deflate.merge(&o.deflate);
        self.unmatched += o.unmatched;
    }
}

/// The name of an HTTP/2 error code (RFC 9113, section 7), or its number in hex.
pub fn h2_code_name(code: u32) -> String {
    crate::engine::http2::code_name(code).map_or_else(|| format!("0x{code:x}"), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_keep_the_first_message() {
        let mut a = CodeCounts::default();
        a.count_with(14, "down");
        a.count_with(14, "still down");
        a.count_with(0, "");
        let mut b = CodeCounts::default();
        b.count_with(14, "other thread");
        b.count_with(4, "late");
        b.count(8);
        a.merge(&b);
        let name = |c: u32| format!("c{c}");
        let counts = a.by_name(name);
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            [
                ("c0".to_string(), 1),
                ("c14".to_string(), 3),
                ("c4".to_string(), 1),
                ("c8".to_string(), 1)
            ]
        );
        let messages = a.messages(name);
        // the empty message of OK is not kept; a's message of 14 came first
        assert_eq!(messages.len(), 2);
        assert_eq!(messages["c14"], "down");
        assert_eq!(messages["c4"], "late");
    }
}
