//! `--every D`: one line per interval while the run goes on (vegeta's `report -every`), from
//! the merged intervals the run's collector sends as each is final (and, rarely, a late part
//! of one). An interval is printed once the collector says it is final (every thread moved
//! past it, or its grace is over), not once the clock says it should be: a collector kept off
//! the CPU delays the line, it does not print an interval as empty before its parts came. An
//! interval in which nothing completed is printed too (a stall is news). The record keeps the
//! exact series.

use crate::model::Phase;
use crate::recorder::{hist, IntervalSnapshot};
use crate::util::units::human_ns;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

/// Prints interval lines as they become complete.
pub struct LivePrinter {
    interval: Duration,
    server_total: String,
    pending: BTreeMap<u64, Vec<IntervalSnapshot>>,
    next: u64,
}

impl LivePrinter {
    /// A printer of intervals `interval` long that shows the Server-Timing metric `server_total` as
    /// the server's total.
    pub fn new(interval: Duration, server_total: &str) -> Self {
        LivePrinter {
            interval,
            server_total: server_total.to_string(),
            pending: BTreeMap::new(),
            next: 0,
        }
    }

    /// Takes an interval (or a late part of one) from the collector.
    pub fn push(&mut self, snap: IntervalSnapshot) {
        if snap.index >= self.next {
            self.pending.entry(snap.index).or_default().push(snap);
        }
    }

    /// The lines of the intervals ended at `elapsed` (from the start of recording) that the
    /// collector holds final: those below `final_below`.
    pub fn lines(&mut self, elapsed: Duration, final_below: u64) -> String {
        self.print_while(|next, end| end <= elapsed && next < final_below)
    }

    /// The run is over and the collector has given every interval: the lines of every one
    /// that started before `recorded`.
    pub fn last_lines(&mut self, recorded: Duration) -> String {
        // (a millisecond of slack: a 3 s run has 3 intervals, not a 4th of 0 s)
        let interval = self.interval;
        self.print_while(|_, end| end - interval + Duration::from_millis(1) < recorded)
    }

    /// Prints the next interval while `ready(its index, its end)`.
    fn print_while(&mut self, ready: impl Fn(u64, Duration) -> bool) -> String {
        let mut out = String::new();
        loop {
            let end = self.interval * (self.next as u32 + 1);
            if !ready(self.next, end) {
                break;
            }
            let snaps = self.pending.remove(&self.next).unwrap_or_default();
            self.line(&mut out, &snaps);
            self.next += 1;
        }
        out
    }

    fn line(&self, out: &mut String, snaps: &[IntervalSnapshot]) {
        let mut requests = 0;
        let mut errors = 0;
        let mut total = hist::new_interval_hist();
        let mut wait = hist::new_interval_hist();
        let mut server = hist::new_interval_hist();
        for s in snaps {
            requests += s.counters.requests;
            errors += s.counters.error_total();
            for (p, bytes) in &s.hists {
                let into = match p {
                    Phase::Total => &mut total,
                    Phase::Wait => &mut wait,
                    _ => continue,
                };
                if let Ok(h) = hist::decode_bytes(bytes) {
                    let _ = into.add(&h);
                }
            }
            for (name, bytes) in &s.server {
                if *name == self.server_total {
                    if let Ok(h) = hist::decode_bytes(bytes) {
                        let _ = server.add(&h);
                    }
                }
            }
        }
        let start = self.interval.as_secs_f64() * self.next as f64;
        let rate = requests as f64 / self.interval.as_secs_f64();
        let _ = write!(out, "[{start:>8.1}s] {rate:>10.1} req/s  errors {errors}");
        let stats = |out: &mut String, name: &str, h: &Histogram<u64>| {
            if !h.is_empty() {
                let _ = write!(
                    out,
                    "  {name} p50 {} p99 {} max {}",
                    human_ns(h.value_at_quantile(0.5) as f64),
                    human_ns(h.value_at_quantile(0.99) as f64),
                    human_ns(h.max() as f64)
                );
            }
        };
        stats(out, "total", &total);
        stats(out, "wait", &wait);
        stats(out, &format!("server {}", self.server_total), &server);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::{Counters, PhaseHists};

    /// Interval `index` with `n` requests of 1 ms.
    fn snap(index: u64, n: u64) -> IntervalSnapshot {
        let mut h = PhaseHists::new(hist::new_interval_hist);
        for _ in 0..n {
            hist::record(&mut h.0[Phase::Total.index()], 1_000_000);
        }
        let counters = Counters {
            requests: n,
            ok: n,
            ..Counters::default()
        };
        crate::recorder::snapshot(index, counters, &h, Vec::new())
    }

    #[test]
    fn a_line_waits_for_the_collector_not_for_the_clock() {
        let half = Duration::from_millis(500);
        let mut p = LivePrinter::new(half, "total");
        // Two seconds in, the collector (kept off the CPU) has said nothing: no line, not
        // four lines of 0 req/s.
        assert_eq!(p.lines(4 * half, 0), "");
        // Interval 0 came and is final: its line, with its requests; 1 is not final yet.
        p.push(snap(0, 250));
        let out = p.lines(4 * half, 1);
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("[     0.0s]      500.0 req/s"), "{out}");
        assert!(out.contains("total p50 1.00ms"), "{out}");
        // 1 to 3 final, 1 and 3 with requests and 2 without: a stall is printed as one.
        p.push(snap(1, 100));
        p.push(snap(3, 50));
        let out = p.lines(4 * half, 4);
        let rates: Vec<&str> = out
            .lines()
            .map(|l| l.split_whitespace().nth(2).unwrap())
            .collect();
        assert_eq!(rates, ["200.0", "0.0", "100.0"], "{out}");
        // Final but not ended yet: no line before its end.
        assert_eq!(p.lines(4 * half, u64::MAX), "");
        // A late part of an interval already printed is left out of the lines.
        p.push(snap(1, 7));
        // The run is over: the lines of every interval it started.
        p.push(snap(4, 10));
        let out = p.last_lines(4 * half + Duration::from_millis(300));
        assert_eq!(out.lines().count(), 1, "{out}");
        assert!(out.starts_with("[     2.0s]       20.0 req/s"), "{out}");
    }
}
