//! The OpenMetrics text being written: each family's `# TYPE` and `# HELP` lines, then its
//! series with the common labels first.

use super::{seconds, Buckets, BOUNDS_NS, BUCKETS};
use std::fmt::Write as _;

/// An exposition being written: its text, and the labels every series carries.
pub(super) struct Exposition<'a> {
    pub(super) out: String,
    /// The common labels (`segment="2/3"`), possibly empty.
    pub(super) base: &'a str,
}

impl Exposition<'_> {
    /// `{a="b"}` with the common labels first; `{}` left out.
    pub(super) fn labels(&self, extra: &str) -> String {
        let base = self.base;
        match (base.is_empty(), extra.is_empty()) {
            (true, true) => String::new(),
            (false, true) => format!("{{{base}}}"),
            (true, false) => format!("{{{extra}}}"),
            (false, false) => format!("{{{base},{extra}}}"),
        }
    }

    /// A family's `# TYPE` and `# HELP` lines.
    pub(super) fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
        let _ = writeln!(self.out, "# HELP {name} {help}");
    }

    /// A counter family of one series.
    pub(super) fn counter(&mut self, name: &str, help: &str, v: u64) {
        self.family(name, "counter", help);
        let l = self.labels("");
        let _ = writeln!(self.out, "{name}_total{l} {v}");
    }

    /// A gauge family of one series, or none when there is no value.
    pub(super) fn gauge(&mut self, name: &str, help: &str, v: Option<f64>) {
        self.family(name, "gauge", help);
        if let Some(v) = v {
            let l = self.labels("");
            let _ = writeln!(self.out, "{name}{l} {v}");
        }
    }

    /// The buckets, count and sum of one histogram series labelled `p`.
    pub(super) fn histogram(&mut self, name: &str, p: &str, b: &Buckets) {
        let mut cumulative = 0;
        for (i, bound) in BOUNDS_NS.iter().enumerate() {
            cumulative += b.counts[i];
            let l = self.labels(&format!("{p},le=\"{}\"", seconds(*bound)));
            let e = b.exemplar(i);
            let _ = writeln!(self.out, "{name}_bucket{l} {cumulative}{e}");
        }
        let l = self.labels(&format!("{p},le=\"+Inf\""));
        let e = b.exemplar(BUCKETS);
        let _ = writeln!(self.out, "{name}_bucket{l} {}{e}", b.count);
        let l = self.labels(p);
        let _ = writeln!(self.out, "{name}_count{l} {}", b.count);
        let _ = writeln!(self.out, "{name}_sum{l} {}", b.sum_ns / 1e9);
    }
}

/// A label value escaped for the exposition (backslash, quote, newline).
pub(super) fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
