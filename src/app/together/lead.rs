//! Segment 1 of a plan run `--coordinator`: it listens, lets each other segment in once (its
//! clock exchanges answered), gives the start to all at one instant once every segment is
//! ready, and takes their records at the end. One thread per connection, each read bounded;
//! a connection that closes before its record is its segment lost.

use super::wire::{self, Wire};
use super::Joined;
use crate::recorder::record::RunRecord;
use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The most connections handled at once: a flood beyond it is closed unread.
const MOST_AT_ONCE: usize = 256;

/// How long a new connection may take to say who it is.
const HELLO_WITHIN: Duration = Duration::from_secs(10);

/// Where a segment stands, as its connection has it.
#[derive(Debug)]
pub(super) enum Peer {
    /// Said who it is; exchanging clocks.
    Joined,
    /// Ready to start: the delay of its clock exchange, ns.
    Ready { delay: i128 },
    /// Its record came.
    Done {
        offset: i128,
        delay: i128,
        record: Box<RunRecord>,
    },
    /// Its connection ended before its record: why, and when (s after the start, if started).
    Lost { why: String, at: Option<f64> },
}

/// What the connections' threads and the coordinator share.
#[derive(Default)]
pub(super) struct State {
    /// By segment index, 1-based.
    pub(super) peers: BTreeMap<u64, Peer>,
    /// The agreed start, Unix ns of the coordinator's clock.
    pub(super) start: Option<i128>,
    /// Said to every segment instead of a start.
    pub(super) abort: Option<String>,
    /// The merged verdict, for every segment's exit code.
    pub(super) done: Option<i32>,
    /// Connections open now.
    pub(super) open: usize,
}

/// Segment 1's side: the listener and the state its connections share.
pub struct Lead {
    count: u64,
    shared: Arc<(Mutex<State>, Condvar)>,
    /// The connections open, by number, to end the reads still waiting once the run is
    /// merged.
    streams: Arc<Mutex<BTreeMap<u64, TcpStream>>>,
}

impl Lead {
    /// Listens on `listener` for the other `count - 1` segments of the plan.
    pub fn listen(listener: TcpListener, count: u64) -> Lead {
        let lead = Lead {
            count,
            shared: Arc::default(),
            streams: Arc::default(),
        };
        let (shared, streams) = (lead.shared.clone(), lead.streams.clone());
        std::thread::Builder::new()
            .name("reqlife-lead".into())
            .spawn(move || {
                for (id, stream) in listener.incoming().flatten().enumerate() {
                    let (shared, streams) = (shared.clone(), streams.clone());
                    let Ok(clone) = stream.try_clone() else {
                        continue;
                    };
                    {
                        let mut s = shared.0.lock().unwrap();
                        if s.open >= MOST_AT_ONCE {
                            continue;
                        }
                        s.open += 1;
                    }
                    streams.lock().unwrap().insert(id as u64, clone);
                    let _ = std::thread::Builder::new()
                        .name("reqlife-segment".into())
                        .spawn(move || {
                            serve(stream, count, &shared);
                            if let Some(s) = streams.lock().unwrap().remove(&(id as u64)) {
                                let _ = s.shutdown(std::net::Shutdown::Both);
                            }
                            shared.0.lock().unwrap().open -= 1;
                        });
                }
            })
            .expect("a thread for the coordinator");
        lead
    }

    /// Waits until every other segment is ready (or `timeout` passes, or `stop` says so), then
    /// gives them all one start, `lead` ahead: the start (Unix ns), or why there is none.
    pub fn barrier(
        &self,
        timeout: Duration,
        lead: Duration,
        stop: impl Fn() -> bool,
    ) -> Result<i128, String> {
        let until = Instant::now() + timeout;
        let (lock, cond) = &*self.shared;
        let mut s = lock.lock().unwrap();
        loop {
            let ready = (2..=self.count)
                .filter(|k| matches!(s.peers.get(k), Some(Peer::Ready { .. })))
                .count() as u64;
            if ready + 1 == self.count {
                break;
            }
            let now = Instant::now();
            let why = if stop() {
                Some("interrupted before the start".to_string())
            } else if now >= until {
                Some(self.never_came(&s, timeout))
            } else {
                None
            };
            if let Some(why) = why {
                s.abort = Some(why.clone());
                cond.notify_all();
                return Err(why);
            }
            let wait = (until - now).min(Duration::from_millis(100));
            s = cond.wait_timeout(s, wait).unwrap().0;
        }
        // Far enough ahead for the slowest exchange to carry it, and for every process to
        // be waiting for it.
        let most_delay = s
            .peers
            .values()
            .filter_map(|p| match p {
                Peer::Ready { delay, .. } => Some(*delay),
                _ => None,
            })
            .max()
            .unwrap_or(0);
        let start = wire::now_ns() + lead.as_nanos() as i128 + 4 * most_delay;
        s.start = Some(start);
        cond.notify_all();
        Ok(start)
    }

    /// The start given (Unix ns of this clock), once given.
    pub fn start(&self) -> Option<i128> {
        self.shared.0.lock().unwrap().start
    }

    /// The line for segments that never came (or never got ready) within `timeout`.
    fn never_came(&self, s: &State, timeout: Duration) -> String {
        let n = self.count;
        let absent: Vec<String> = (2..=n)
            .filter(|k| !matches!(s.peers.get(k), Some(Peer::Ready { .. })))
            .map(|k| match s.peers.get(&k) {
                Some(Peer::Lost { why, .. }) => format!("{k}/{n} (its connection: {why})"),
                Some(_) => format!("{k}/{n} (came, never ready)"),
                None => format!("{k}/{n}"),
            })
            .collect();
        format!(
            "segment{} {} never came to the coordinator within {:.0}s \
             (--coordinator-timeout): start {} with the same --coordinator",
            if absent.len() > 1 { "s" } else { "" },
            absent.join(", "),
            timeout.as_secs_f64(),
            if absent.len() > 1 { "them" } else { "it" }
        )
    }

    /// Waits until every other segment's record came or its connection ended, `timeout` at
    /// most: the segments joined (their records, offsets and delays) and those missing
    /// (segment index, and what is said of it: `is missing from the merge: …`).
    pub fn collect(&self, timeout: Duration) -> (Vec<Joined>, Vec<(u64, String)>) {
        let until = Instant::now() + timeout;
        let (lock, cond) = &*self.shared;
        let mut s = lock.lock().unwrap();
        loop {
            let pending = (2..=self.count).any(|k| {
                matches!(
                    s.peers.get(&k),
                    Some(Peer::Ready { .. } | Peer::Joined) | None
                )
            });
            let now = Instant::now();
            if !pending || now >= until {
                break;
            }
            s = cond.wait_timeout(s, until - now).unwrap().0;
        }
        let mut joined = Vec::new();
        let mut missing = Vec::new();
        for k in 2..=self.count {
            match s.peers.remove(&k) {
                Some(Peer::Done {
                    offset,
                    delay,
                    record,
                }) => joined.push(Joined {
                    index: k,
                    offset,
                    delay,
                    record: *record,
                }),
                Some(Peer::Lost { why, at }) => missing.push((
                    k,
                    match at {
                        Some(at) => format!(
                            "is missing from the merge: its connection ended {at:.1}s after \
                             the start: {why}"
                        ),
                        None => format!(
                            "is missing from the merge: its connection ended before the \
                             start: {why}"
                        ),
                    },
                )),
                _ => missing.push((
                    k,
                    format!(
                        "is missing from the merge: no record within {:.0}s of this \
                         segment's end (--coordinator-timeout)",
                        timeout.as_secs_f64()
                    ),
                )),
            }
        }
        (joined, missing)
    }

    /// Gives every segment still connected the merged verdict, and lets go of them.
    pub fn done(self, code: i32) {
        let (lock, cond) = &*self.shared;
        lock.lock().unwrap().done = Some(code);
        cond.notify_all();
        // Each waiting thread sends its DONE; a moment for them, then every read still
        // waiting ends.
        let until = Instant::now() + Duration::from_secs(2);
        while lock.lock().unwrap().open > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        for s in self.streams.lock().unwrap().values() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// One segment's connection, from its `HELLO` to its `DONE` (or its end).
fn serve(stream: TcpStream, count: u64, shared: &(Mutex<State>, Condvar)) {
    let Ok(mut wire) = Wire::new(stream, Some(HELLO_WITHIN)) else {
        return;
    };
    let index = match hello(&mut wire, count, &shared.0) {
        Ok(index) => index,
        Err(why) => {
            let _ = wire.send(&format!("REFUSED {why}"));
            return;
        }
    };
    let result = follow_segment(&mut wire, index, shared);
    let (lock, cond) = shared;
    let mut s = lock.lock().unwrap();
    if let Err(e) = result {
        let at = s.start.map(|t| (wire::now_ns() - t) as f64 / 1e9);
        if !matches!(s.peers.get(&index), Some(Peer::Done { .. })) {
            s.peers.insert(
                index,
                Peer::Lost {
                    why: e.to_string(),
                    at,
                },
            );
        }
    }
    cond.notify_all();
}

/// Reads `HELLO reqlife/1 K N`: the segment's index, if it is one of this plan's and not
/// here already (nor too late).
fn hello(wire: &mut Wire, count: u64, lock: &Mutex<State>) -> Result<u64, String> {
    let line = wire.line().map_err(|e| format!("no HELLO: {e}"))?;
    let words: Vec<&str> = wire::after(&line, "HELLO")
        .ok_or_else(|| format!("expected HELLO {} K N, got '{line}'", wire::VERSION))?
        .split(' ')
        .collect();
    let [version, k, n] = words[..] else {
        return Err(format!(
            "expected HELLO {} K N, got '{line}'",
            wire::VERSION
        ));
    };
    if version != wire::VERSION {
        return Err(format!(
            "this coordinator speaks {}, not {version}: run the same reqlife version",
            wire::VERSION
        ));
    }
    let (k, n): (u64, u64) = match (k.parse(), n.parse()) {
        (Ok(k), Ok(n)) => (k, n),
        _ => return Err(format!("'{line}' does not name a segment K of N")),
    };
    if n != count {
        return Err(format!(
            "segment {k}/{n} is not of this plan: it has {count} segments"
        ));
    }
    if !(2..=count).contains(&k) {
        return Err(format!(
            "segment {k}/{n}: the others of 1/{count} are 2 to {count}"
        ));
    }
    let mut s = lock.lock().unwrap();
    if s.start.is_some() {
        return Err(format!(
            "segment {k}/{n} came after the start: the run began without it"
        ));
    }
    if let Some(p) = s.peers.get(&k) {
        if !matches!(p, Peer::Lost { .. }) {
            return Err(format!("segment {k}/{n} is here already"));
        }
    }
    s.peers.insert(k, Peer::Joined);
    Ok(k)
}

/// A joined segment: its clock exchanges and `READY`, the start (or the abort), then its
/// record and the verdict.
fn follow_segment(
    wire: &mut Wire,
    index: u64,
    (lock, cond): &(Mutex<State>, Condvar),
) -> std::io::Result<()> {
    wire.send("WELCOME")?;
    let (offset, delay) = loop {
        let line = wire.line()?;
        if let Some(t1) = wire::after(&line, "PING") {
            let t2 = wire::now_ns();
            wire.send(&format!("PONG {t1} {t2} {}", wire::now_ns()))?;
        } else if let Some(rest) = wire::after(&line, "READY") {
            break ready(rest)?;
        } else {
            return Err(wire::invalid(format!(
                "expected PING or READY, got '{line}'"
            )));
        }
    };
    let start = {
        let mut s = lock.lock().unwrap();
        s.peers.insert(index, Peer::Ready { delay });
        cond.notify_all();
        while s.start.is_none() && s.abort.is_none() {
            s = cond.wait(s).unwrap();
        }
        match (s.start, &s.abort) {
            (Some(t), _) => Ok(t),
            (None, why) => Err(why.clone().unwrap_or_default()),
        }
    };
    match start {
        Ok(t) => wire.send(&format!("START {t}"))?,
        Err(why) => return wire.send(&format!("ABORT {why}")),
    }
    // The run: the record comes at its end, however long it is.
    wire.timeout(None)?;
    let line = wire.line()?;
    let len = wire::after(&line, "RECORD")
        .ok_or_else(|| wire::invalid(format!("expected RECORD, got '{line}'")))?;
    let json = wire.record_body(len)?;
    let record = RunRecord::from_json(&json, &format!("segment {index}'s record"))
        .map_err(|e| wire::invalid(e.to_string()))?;
    let mut s = lock.lock().unwrap();
    s.peers.insert(
        index,
        Peer::Done {
            offset,
            delay,
            record: Box::new(record),
        },
    );
    cond.notify_all();
    while s.done.is_none() {
        s = cond.wait(s).unwrap();
    }
    let code = s.done.unwrap_or(0);
    drop(s);
    wire.send(&format!("DONE {code}"))
}

/// `READY <offset ns> <delay ns>`.
fn ready(rest: &str) -> std::io::Result<(i128, i128)> {
    let bad = || wire::invalid(format!("expected READY OFFSET DELAY, got 'READY {rest}'"));
    let (o, d) = rest.split_once(' ').ok_or_else(bad)?;
    Ok((o.parse().map_err(|_| bad())?, d.parse().map_err(|_| bad())?))
}
