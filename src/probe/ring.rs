//! The agent's ring of the kernel's events (`reqlife probe --ring EVENTS`): the last events
//! of every connection to the port, bounded, so that a run on another host can ask for those
//! of the requests it keeps or logs ([`crate::recorder::join::remote`]) a second or so after
//! they ended, and only those cross the network.
//!
//! The ring holds at most its capacity of events, each under its connection (the client's
//! port; a function's hit under the connection its thread read last); when full, the oldest
//! goes. A connection opened anew on a port lets go of the old one's events. A request asked
//! for whose events (some of them) have gone, or whose connection is no longer the port's,
//! is answered as gone: it gets no events, never another's.

use crate::recorder::join::remote::{encode, Ask, Pulled};
use crate::recorder::join::KernelEvent;
use std::collections::{BTreeSet, HashMap, VecDeque};

pub use crate::recorder::join::remote::RING_DEFAULT;

/// One connection's events and what of it has gone.
#[derive(Debug, Default)]
struct Conn {
    /// (sequence number, event), oldest first.
    events: VecDeque<(u64, KernelEvent)>,
    /// When it was opened (its `Opened`), if seen.
    opened_ns: Option<u64>,
    /// How far its events that have gone reach: in the client's stream, in the server's.
    gone_tx: u64,
    gone_rx: u64,
    /// The last event handed out (each goes out once a run).
    sent: u64,
}

impl Conn {
    /// Notes the reach of an event that has gone.
    fn lose(&mut self, e: &KernelEvent) {
        use KernelEvent as K;
        match *e {
            K::Arrived { off, .. } | K::Read { off, .. } => self.gone_tx = self.gone_tx.max(off),
            K::Wrote { end, .. } | K::Upstream { end, .. } => self.gone_rx = self.gone_rx.max(end),
            K::Delivered { off, .. } => self.gone_rx = self.gone_rx.max(off),
            _ => {}
        }
    }
}

/// The bounded ring of the kernel's events, by connection.
#[derive(Debug)]
pub struct EventRing {
    capacity: usize,
    conns: HashMap<u16, Conn>,
    /// (sequence number, port) of every event held, oldest first (and of those let go with
    /// their connection, until their turn: counted in the capacity).
    order: VecDeque<(u64, u16)>,
    /// Events held.
    held: usize,
    next: u64,
    /// Per thread (goroutine): the port it read last.
    last_read: HashMap<u64, u16>,
    tick_ns: u64,
    evicted: u64,
}

impl EventRing {
    /// A ring of `capacity` events (at least 1).
    pub fn new(capacity: usize) -> EventRing {
        EventRing {
            capacity: capacity.max(1),
            conns: HashMap::new(),
            order: VecDeque::new(),
            held: 0,
            next: 1,
            last_read: HashMap::new(),
            tick_ns: 0,
            evicted: 0,
        }
    }

    /// A run begins: the events let go counted afresh. The events held stay: a run's
    /// connections open, and its first requests may be sent, before its `/begin` arrives.
    pub fn begin_run(&mut self) {
        self.evicted = 0;
    }

    /// Events held.
    pub fn len(&self) -> usize {
        self.held
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.held == 0
    }

    /// Events let go for room since the run began ([`EventRing::begin_run`]).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// The kernel's events in, in the order it gave them.
    pub fn push(&mut self, events: &[KernelEvent]) {
        for e in events {
            self.push_one(*e);
        }
    }

    fn push_one(&mut self, e: KernelEvent) {
        use KernelEvent as K;
        let port = match e {
            K::Tick { ns } => {
                self.tick_ns = self.tick_ns.max(ns);
                return;
            }
            K::Lost { .. } => return,
            K::Opened { port, ns } => {
                // A new connection on the port: the old one's events go.
                let old = self.conns.insert(
                    port,
                    Conn {
                        opened_ns: Some(ns),
                        ..Conn::default()
                    },
                );
                let old = old.map_or(0, |c| c.events.len());
                self.evicted += old as u64;
                self.held -= old;
                port
            }
            K::Read { port, key, .. } => {
                self.last_read.insert(key, port);
                port
            }
            K::Function { key, .. } => match self.last_read.get(&key) {
                Some(&port) => port,
                None => return,
            },
            K::Arrived { port, .. }
            | K::Wrote { port, .. }
            | K::Delivered { port, .. }
            | K::Upstream { port, .. }
            | K::Backend { port, .. } => port,
        };
        let seq = self.next;
        self.next += 1;
        self.conns
            .entry(port)
            .or_default()
            .events
            .push_back((seq, e));
        self.order.push_back((seq, port));
        self.held += 1;
        while self.order.len() > self.capacity {
            self.evict_oldest();
        }
    }

    /// Lets the oldest event go.
    fn evict_oldest(&mut self) {
        let Some((seq, port)) = self.order.pop_front() else {
            return;
        };
        let Some(c) = self.conns.get_mut(&port) else {
            return;
        };
        // Gone already when its connection was opened anew.
        if c.events.front().is_some_and(|(s, _)| *s == seq) {
            if let Some((_, e)) = c.events.pop_front() {
                c.lose(&e);
                self.evicted += 1;
                self.held -= 1;
            }
        }
    }

    /// The answer to `asks`: the events of their bytes (each once a run, in the kernel's
    /// order), the asks whose events have gone, the clock's last tick.
    pub fn answer(&mut self, asks: &[Ask]) -> Pulled {
        let mut picked: BTreeSet<(u64, u16)> = BTreeSet::new();
        let mut gone = Vec::new();
        for (i, a) in asks.iter().enumerate() {
            let Some(c) = self.conns.get(&a.port) else {
                continue;
            };
            let replaced = c.opened_ns.is_some_and(|o| o > a.done_ns);
            if replaced || c.gone_tx > a.tx.0 || c.gone_rx > a.rx.0 {
                gone.push(i as u32);
                continue;
            }
            picked.extend(of_ask(c, a).into_iter().map(|seq| (seq, a.port)));
        }
        let mut events = Vec::with_capacity(picked.len());
        for (seq, port) in picked {
            let Some(c) = self.conns.get_mut(&port) else {
                continue;
            };
            if seq <= c.sent {
                continue;
            }
            if let Ok(at) = c.events.binary_search_by_key(&seq, |(s, _)| *s) {
                events.extend(encode(&c.events[at].1));
            }
            c.sent = c.sent.max(seq);
        }
        Pulled {
            events,
            gone,
            tick_ns: self.tick_ns,
            evicted: self.evicted,
        }
    }
}

/// How far past a request's end (in the agent's clock, as the run says it) its events are
/// looked for: the clocks' offset is known to far better.
const LATE_NS: u64 = 100_000_000;

/// When an event happened (the time it is ordered by).
fn ns_of(e: &KernelEvent) -> u64 {
    encode(e).map_or(0, |w| w[1])
}

/// The sequence numbers of the events of `c` that request `a` needs: its connection's
/// opening, its bytes' arrivals and reads, its response's writes and arrivals at the client
/// and the calls upstream they carried, and the function hits between its first read and
/// its response's last write. Looked for from its end back to the arrival before its bytes
/// (a connection's events are in time order), not through the whole connection.
fn of_ask(c: &Conn, a: &Ask) -> Vec<u64> {
    use KernelEvent as K;
    // Bytes from..to (to past the last) hold some of lo..hi (or reach hi: an empty request).
    let over =
        |from: u64, to: u64, (lo, hi): (u64, u64)| from < hi.max(lo + 1) && (to > lo || to >= hi);
    let end = c
        .events
        .partition_point(|(_, e)| ns_of(e) <= a.done_ns.saturating_add(LATE_NS));
    let mut start = end;
    while start > 0 && !matches!(c.events[start - 1].1, K::Arrived { off, .. } if off <= a.tx.0) {
        start -= 1;
    }
    let window = c.events.range(start..end);
    let mut span: Option<(u64, u64)> = None;
    let mut mine: Vec<u64> = c
        .events
        .front()
        .filter(|(_, e)| matches!(e, K::Opened { .. }))
        .map(|(seq, _)| *seq)
        .into_iter()
        .collect();
    for (seq, e) in window.clone() {
        let take = match *e {
            K::Arrived { prev, off, .. } => over(prev, off, a.tx),
            K::Read { start, off, .. } => over(start, off, a.tx),
            K::Wrote { start, end, .. } => over(start, end, a.rx),
            K::Delivered { prev, off, .. } => over(prev, off, a.rx),
            K::Upstream { start, .. } | K::Backend { start, .. } => {
                start >= a.rx.0 && start < a.rx.1
            }
            _ => false,
        };
        if take {
            mine.push(*seq);
            if matches!(e, K::Read { .. } | K::Wrote { .. }) {
                let ns = ns_of(e);
                span = Some(span.map_or((ns, ns), |(a, b)| (a.min(ns), b.max(ns))));
            }
        }
    }
    if let Some((from, to)) = span {
        for (seq, e) in window {
            if matches!(e, K::Function { ns, .. } if *ns >= from && *ns <= to) {
                mine.push(*seq);
            }
        }
    }
    mine
}

#[cfg(test)]
mod tests;
