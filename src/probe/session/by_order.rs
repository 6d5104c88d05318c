//! The probe agent's fold of the kernel's events by order, per read and write (the requests
//! are on the client's host), into its accumulator's ticks.

use super::{target, Into, Shared};
use crate::recorder::join::KernelEvent;
use crate::recorder::probes::bucket_key;
use std::collections::HashMap;

/// The agent's fold of one event: per connection, the first arrival after the server's last
/// read to its next read (`socket`), that read to its next write (`handle`): per read and
/// write, not per request (the requests are on the client's host).
#[derive(Debug, Default)]
pub struct ByOrder {
    /// Per client port: the first arrival since the last read, and the last read not yet
    /// followed by a write.
    ports: HashMap<u16, (Option<u64>, Option<u64>)>,
    /// The functions of the chain (`--server-fn`'s list).
    functions: usize,
    /// Per thread (goroutine): the next function of its chain, the chain's start and its
    /// last hit.
    chains: HashMap<u64, (usize, u64, u64)>,
    /// This tick's (phase, bucket key, count).
    counts: Vec<(usize, u64, u64)>,
}

impl ByOrder {
    /// A fold of `functions` functions' chain beside the kernel's phases.
    pub fn new(functions: usize) -> ByOrder {
        ByOrder {
            functions,
            ..ByOrder::default()
        }
    }

    /// A function hit: each pairs with the one before it in the chain, once (phases from
    /// index 2: the pairs, then the total of three or more).
    fn function(&mut self, index: usize, key: u64, ns: u64) {
        let n = self.functions;
        if n < 2 {
            return;
        }
        let chain = self.chains.entry(key).or_insert((0, 0, 0));
        if index == 0 {
            // A second entry of the first function (a Go stack's growth) starts nothing.
            if chain.0 != 1 {
                *chain = (1, ns, ns);
            }
            return;
        }
        if chain.0 != index {
            return;
        }
        self.counts
            .push((2 + index - 1, bucket_key(ns.saturating_sub(chain.2)), 1));
        if index == n - 1 {
            if n > 2 {
                self.counts
                    .push((2 + n - 1, bucket_key(ns.saturating_sub(chain.1)), 1));
            }
            *chain = (0, 0, 0);
        } else {
            *chain = (index + 1, chain.1, ns);
        }
    }
}

pub(super) fn by_order(s: &mut Shared, e: KernelEvent) {
    let Into::ByOrder(f) = &mut s.into else {
        return;
    };
    match e {
        KernelEvent::Arrived { port, ns, .. } => {
            let p = f.ports.entry(port).or_default();
            p.0.get_or_insert(ns);
        }
        KernelEvent::Read { port, ns, .. } => {
            let p = f.ports.entry(port).or_default();
            if let Some(a) = p.0.take() {
                f.counts.push((0, bucket_key(ns.saturating_sub(a)), 1));
            }
            p.1 = Some(ns);
        }
        KernelEvent::Wrote { port, ns, .. } => {
            if let Some(r) = f.ports.get_mut(&port).and_then(|p| p.1.take()) {
                f.counts.push((1, bucket_key(ns.saturating_sub(r)), 1));
            }
        }
        KernelEvent::Function { index, key, ns } => f.function(index as usize, key, ns),
        KernelEvent::Tick { ns } => {
            let counts = std::mem::take(&mut f.counts);
            tick(s, ns, &counts);
        }
        _ => {}
    }
}

/// One tick's counts into the interval of its middle, when it overlaps the window.
fn tick(s: &mut Shared, ns: u64, counts: &[(usize, u64, u64)]) {
    let prev = std::mem::replace(&mut s.last_tick_ns, ns);
    if s.gone_ns.is_none() && !s.acc.pids.iter().any(|&p| target::alive(p)) {
        s.gone_ns = Some(ns);
    }
    let index = s.window.and_then(|w| {
        let overlaps = ns > w.from_ns && w.until_ns.is_none_or(|u| prev < u);
        let middle = (prev / 2 + ns / 2).max(w.from_ns);
        overlaps.then(|| (middle - w.from_ns) / w.interval_ns)
    });
    if let (Some(snap), Some(on_interval)) = (s.acc.add_tick(index, counts), &s.on_interval) {
        on_interval(&snap);
    }
}
