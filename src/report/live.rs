//! `--every D`: one line per interval while the run goes on (vegeta's `report -every`), from
//! the merged intervals the run's collector sends as each is final (and, rarely, a late part
//! of one). An interval is printed once it has ended and had a moment to arrive; an interval in which
//! nothing completed is printed too (a stall is news). The record keeps the exact series.

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
    pub fn new(interval: Duration, server_total: &str) -> Self {
        LivePrinter {
            interval,
            server_total: server_total.to_string(),
            pending: BTreeMap::new(),
            next: 0,
        }
    }

    /// The lines of the intervals complete at `elapsed` (from the start of recording); with
    /// `last`, every interval up to `elapsed`.
    /// Takes an interval (or a late part of one) from the collector.
    pub fn push(&mut self, snap: IntervalSnapshot) {
        if snap.index >= self.next {
            self.pending.entry(snap.index).or_default().push(snap);
        }
    }

    pub fn lines(&mut self, elapsed: Duration, last: bool) -> String {
        let grace = (self.interval / 2).min(Duration::from_millis(500));
        let mut out = String::new();
        loop {
            let end = self.interval * (self.next as u32 + 1);
            let ready = if last {
                // (a millisecond of slack: a 3 s run has 3 intervals, not a 4th of 0 s)
                self.interval * (self.next as u32) + Duration::from_millis(1) < elapsed
            } else {
                end + grace <= elapsed
            };
            if !ready {
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
