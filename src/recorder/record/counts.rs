//! The relations between a summary's counts (issue 37): every count follows from the others.
//! Checked on real runs (`tests/reports/invariants.rs`) and on synthetic counters (unit tests).

use super::sections::Summary;

impl Summary {
    /// What breaks the relations between this summary's counts, of a run with `connections`
    /// connections (`-c`: those that may exist before the window, opened in a warm-up or ahead
    /// of an open loop's load). Empty when they hold:
    /// - `total = ok + errors`, the errors by kind add up to `errors`, `non_2xx_3xx ≤ ok`;
    /// - the throughput divides the requests that ended within the window by the window;
    /// - the drained requests are among the requests, their timeouts among both;
    /// - a server close is one response's (`server_closes ≤ ok`) and one connection's: at most
    ///   those opened in the window and those that existed before it;
    /// - everything counted as a response's headers and body was read (`read ≥ headers +
    ///   body`), and a response, or a body cut short, means bytes read.
    pub fn count_violations(&self, connections: u64) -> Vec<String> {
        let mut out = Vec::new();
        let r = &self.requests;
        if r.ok + r.errors != r.total {
            out.push(format!(
                "{} ok + {} errors is not the {} total",
                r.ok, r.errors, r.total
            ));
        }
        let by_kind: u64 = self.errors.values().sum();
        if by_kind != r.errors {
            out.push(format!(
                "the errors by kind add up to {by_kind}, not {}",
                r.errors
            ));
        }
        if r.non_2xx_3xx > r.ok {
            out.push(format!("{} non-2xx/3xx of {} ok", r.non_2xx_3xx, r.ok));
        }
        let ended = r.total.saturating_sub(self.end.drained) as f64;
        let expected = if self.duration_s > 0.0 {
            ended / self.duration_s
        } else {
            0.0
        };
        // The throughput is rounded to 3 decimals.
        if (self.throughput_rps - expected).abs() > 0.001 + 1e-9 * expected {
            out.push(format!(
                "a throughput of {} req/s where {ended} requests ended within {}s ({expected:.3} req/s)",
                self.throughput_rps, self.duration_s
            ));
        }
        if self.end.drained > r.total {
            out.push(format!(
                "{} drained of {} requests",
                self.end.drained, r.total
            ));
        }
        let timeouts = self.errors.get("timeout").copied().unwrap_or(0);
        if self.end.drain_timeouts > self.end.drained.min(timeouts) {
            out.push(format!(
                "{} drain timeouts of {} drained and {timeouts} timeouts",
                self.end.drain_timeouts, self.end.drained
            ));
        }
        let c = &self.connections;
        if c.server_closes > r.ok {
            out.push(format!(
                "{} server closes after {} responses",
                c.server_closes, r.ok
            ));
        }
        if c.server_closes > c.opened + connections {
            out.push(format!(
                "{} server closes of {} connections opened and {connections} before the window",
                c.server_closes, c.opened
            ));
        }
        let b = &self.bytes;
        if b.read < b.headers + b.body {
            out.push(format!(
                "{} bytes read, fewer than the {} of headers and body",
                b.read,
                b.headers + b.body
            ));
        }
        if r.ok > 0 && b.read == 0 {
            out.push(format!("{} responses and no byte read", r.ok));
        }
        out
    }
}
