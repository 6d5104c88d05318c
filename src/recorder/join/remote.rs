//! The join of a run probed on another host (`run --server-probes-from`): the agent there
//! keeps the kernel's events in a bounded ring, and the run asks it, about once a second, for
//! the events of the requests it keeps or logs only ([`Ask`]): what crosses the network grows
//! with those requests, not with the load or the run's length. The events that come back
//! ([`Pulled`]) are joined to their requests by the same [`Joiner`] as a run probed here.
//!
//! A request is asked for once, when the agent's clock (its last tick) is past its end by
//! [`Joiner::SLACK_NS`]: every event of it is in the ring by then. Its four stamps (the
//! client's write, the bytes' arrival in the server's socket, the server's write of its
//! response, the response's first byte at the client) give the clocks' offset per request,
//! as NTP does ([`PerRequest`]).

use super::sink::Pool;
use super::{Joined, Joiner, KernelEvent, Trail, Unjoined};
use crate::recorder::exemplar::Exemplars;
use serde::{Deserialize, Serialize};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The agent's ring's capacity when `reqlife probe --ring` is not given, events: 64 bytes
/// each (an event and its place in the order), some 32 MB, some seconds of a busy server's
/// events.
pub const RING_DEFAULT: usize = 500_000;

/// How often the run asks the agent.
pub const PULL_EVERY: Duration = Duration::from_secs(1);
/// How often it asks once the run has ended (waiting for the agent's clock).
const PULL_FINISHING: Duration = Duration::from_millis(100);

/// One request asked for: its connection (the client's port), where its bytes lay in the
/// connection's two streams, and when it ended (the agent's clock: a connection opened on
/// that port since is another).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    /// The client's port.
    pub port: u16,
    /// Its request's bytes, from..to, in the client's stream.
    pub tx: (u64, u64),
    /// Its response's bytes, from..to, in the server's stream.
    pub rx: (u64, u64),
    /// When it ended, the agent's CLOCK_MONOTONIC ns.
    pub done_ns: u64,
}

impl Ask {
    /// The ask of request `t`, the agent's clock `offset_ns` ahead of ours.
    pub fn of(t: &Trail, offset_ns: i64) -> Ask {
        let w = t.wire;
        Ask {
            port: w.port,
            tx: (w.tx_end.saturating_sub(t.bytes_written), w.tx_end),
            rx: (w.rx_first, w.rx_end.max(w.rx_first + 1)),
            done_ns: shift(t.done_ns, offset_ns),
        }
    }

    /// Its line in a request's body: `PORT TX_FROM TX_TO RX_FROM RX_TO DONE_NS`.
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {} {} {}\n",
            self.port, self.tx.0, self.tx.1, self.rx.0, self.rx.1, self.done_ns
        )
    }

    /// The asks of a request's body, one a line, at most `max`; or what is wrong.
    pub fn parse_all(body: &str, max: usize) -> Result<Vec<Ask>, String> {
        let mut out = Vec::new();
        for (i, line) in body.lines().filter(|l| !l.trim().is_empty()).enumerate() {
            if out.len() == max {
                return Err(format!("more than {max} requests asked at once"));
            }
            let n: Vec<u64> = line
                .split_ascii_whitespace()
                .map_while(|v| v.parse().ok())
                .collect();
            let bad = || {
                format!(
                    "line {}: not `PORT TX_FROM TX_TO RX_FROM RX_TO DONE_NS` (numbers, \
                     PORT 1..65535, FROM ≤ TO)",
                    i + 1
                )
            };
            let [port, t0, t1, r0, r1, done] = <[u64; 6]>::try_from(n).map_err(|_| bad())?;
            let port = u16::try_from(port)
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(bad)?;
            if t0 > t1 || r0 > r1 {
                return Err(bad());
            }
            out.push(Ask {
                port,
                tx: (t0, t1),
                rx: (r0, r1),
                done_ns: done,
            });
        }
        Ok(out)
    }
}

/// The agent's answer to a pull: the events of the requests asked (each once, in the order
/// the kernel gave them, [`encode`]d), which asks' events had left its ring, its clock's
/// last tick, and how many events its ring has let go since the run began.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pulled {
    /// The events, `[kind, ns, a, b, c, d, e]`.
    pub events: Vec<[u64; 7]>,
    /// The asks (by index) whose events had left the ring.
    pub gone: Vec<u32>,
    /// The agent's clock's last tick, its CLOCK_MONOTONIC ns: every event before is in.
    pub tick_ns: u64,
    /// Events the ring let go since the run began (the oldest, for room).
    pub evicted: u64,
}

/// `ns` moved by `by`.
fn shift(ns: u64, by: i64) -> u64 {
    ns.saturating_add_signed(by)
}

/// A kernel event as the agent sends it: `[kind, ns, a, b, c, d, e]`, the probes' own layout
/// ([`super::fields`]) with its time second (a tick or lost events are not sent: `None`).
pub fn encode(e: &KernelEvent) -> Option<[u64; 7]> {
    let (ns, [kind, a, b, c, d, e]) = super::fields::fields(e)?;
    Some([kind, ns, a, b, c, d, e])
}

/// An event the agent sent, its times moved by `by` (into the run's clock); `None`: not one.
pub fn decode([kind, ns, a, b, c, d, e]: [u64; 7], by: i64) -> Option<KernelEvent> {
    use KernelEvent as K;
    u16::try_from(a).ok()?;
    Some(
        match super::fields::event(shift(ns, by), [kind, a, b, c, d, e])? {
            K::Upstream {
                port,
                start,
                end,
                sent_ns,
                arrived_ns,
            } => K::Upstream {
                port,
                start,
                end,
                sent_ns,
                arrived_ns: shift(arrived_ns, by),
            },
            K::Backend {
                port,
                start,
                arrived_ns,
                read_ns,
                wrote_ns,
            } => K::Backend {
                port,
                start,
                arrived_ns,
                read_ns: shift(read_ns, by),
                wrote_ns: shift(wrote_ns, by),
            },
            other => other,
        },
    )
}

/// The run's way to the agent: one pull of the events of `asks` (or only its clock, with
/// none), and the bytes its answers took so far.
pub trait Puller: Send {
    /// The events of `asks`; or why the agent did not answer (the run has not begun there).
    fn pull(&mut self, asks: &[Ask]) -> Result<Pulled, String>;
    /// The bytes of the agent's answers so far.
    fn bytes(&self) -> u64;
}

/// What the agent's probes follow, for the run's joiner: `/ready`'s answer after its first
/// line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// The functions probed (`--server-fn`'s labels), in a request's order.
    pub functions: Vec<String>,
    /// `--server-upstream`: the server's calls upstream are timed.
    pub upstream: bool,
    /// One request in this many is followed.
    pub sample: u64,
}

/// The clocks per request, as the record states them (`server_probes.remote.per_request`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PerRequest {
    /// Requests asked for (kept or logged).
    pub asked: u64,
    /// Requests whose four stamps gave an offset.
    pub count: u64,
    /// The agent's clock minus ours by those stamps: the median, µs.
    pub offset_median_us: Option<f64>,
    /// Their 10th and 90th percentiles, µs: the spread.
    pub offset_p10_us: Option<f64>,
    /// (See `offset_p10_us`.)
    pub offset_p90_us: Option<f64>,
    /// The round trip outside the server (δ), median, µs.
    pub delay_median_us: Option<f64>,
    /// Asked requests whose server events had left the agent's ring (none joined to them).
    pub left_ring: u64,
    /// Pulls made during the run.
    pub pulls: u64,
    /// Bytes of the agent's answers to them.
    pub events_bytes: u64,
    /// Bytes of the agent's `/finish` answer (its histograms per tick), apart.
    #[serde(default)]
    pub finish_bytes: u64,
}

impl PerRequest {
    /// Of the joined requests' (θ, δ) in the run's clock, the exchange's `offset_ns` added
    /// back.
    fn of(clocks: &[(i64, i64)], offset_ns: i64) -> PerRequest {
        let mut theta: Vec<i64> = clocks.iter().map(|(t, _)| t + offset_ns).collect();
        let mut delta: Vec<i64> = clocks.iter().map(|(_, d)| *d).collect();
        theta.sort_unstable();
        delta.sort_unstable();
        let at = |v: &[i64], q: f64| -> Option<f64> {
            let i = ((v.len() as f64 - 1.0) * q).round() as usize;
            v.get(i).map(|ns| *ns as f64 / 1e3)
        };
        PerRequest {
            count: theta.len() as u64,
            offset_median_us: at(&theta, 0.5),
            offset_p10_us: at(&theta, 0.1),
            offset_p90_us: at(&theta, 0.9),
            delay_median_us: at(&delta, 0.5),
            ..PerRequest::default()
        }
    }
}

/// On another host (`clocks` kept): the clocks' offset and round trip of request `t`, its
/// bytes arrived at `t2` and its response written at `t3` ([`four_stamps`]).
pub(super) fn note_clocks(clocks: &mut Option<Vec<(i64, i64)>>, t: &Trail, t2: u64, t3: u64) {
    if let Some(clocks) = clocks {
        clocks.extend(four_stamps(t, t2, t3));
    }
}

/// The clocks' offset and the round trip of request `t`, as NTP has them: t1 its write's
/// start, t2 its bytes' arrival in the server's socket, t3 the server's write of its response,
/// t4 the response's first byte at the client: θ = ((t2 − t1) + (t3 − t4)) / 2, δ = (t4 − t1)
/// − (t3 − t2), ns (the server's stamps as given: in the client's clock, θ is what is left).
fn four_stamps(t: &Trail, t2: u64, t3: u64) -> Option<(i64, i64)> {
    use crate::model::Phase;
    let p = &t.kept.phases;
    let t4 = t.write_ns + p[Phase::Write.index()]? + p[Phase::Wait.index()]?;
    let (t1, t2, t3, t4) = (t.write_ns as i64, t2 as i64, t3 as i64, t4 as i64);
    Some((((t2 - t1) + (t3 - t4)) / 2, (t4 - t1) - (t3 - t2)))
}

/// The join of a run probed on another host.
pub struct RemoteJoin {
    joiner: Joiner,
    puller: Box<dyn Puller>,
    /// The agent's clock minus ours (the exchange's), ns.
    offset_ns: i64,
    /// Requests not asked for yet.
    waiting: Vec<Trail>,
    /// What the run would keep of them by their client phases.
    shadow: Exemplars,
    /// The agent's last tick, in our clock.
    agent_tick: u64,
    per: PerRequest,
}

impl RemoteJoin {
    /// The join by `joiner` of the events `puller` brings, the agent's clock `offset_ns`
    /// ahead of ours.
    pub fn new(mut joiner: Joiner, puller: Box<dyn Puller>, offset_ns: i64) -> RemoteJoin {
        joiner.remote();
        RemoteJoin {
            joiner,
            puller,
            offset_ns,
            waiting: Vec::new(),
            shadow: Exemplars::new(),
            agent_tick: 0,
            per: PerRequest::default(),
        }
    }

    /// Requests in (`dropped`: those a worker could not hand over).
    pub fn trails(&mut self, trails: &[Trail], dropped: u64) {
        self.joiner.trails(&[], dropped);
        self.waiting.extend_from_slice(trails);
    }

    /// Requests that ended before `until` (our clock) still waiting to be asked for.
    pub fn waiting_before(&self, until: u64) -> usize {
        self.waiting.iter().filter(|t| t.done_ns <= until).count()
    }

    /// The agent's last tick, in our clock.
    pub fn agent_tick(&self) -> u64 {
        self.agent_tick
    }

    /// Asks the agent for the events of the requests that ended before its last tick (less
    /// [`Joiner::SLACK_NS`]) and that the run keeps or logs, joins those, and records the
    /// others without server phases. Gives why the agent did not answer.
    pub fn pull(&mut self) -> Result<(), String> {
        let limit = self.agent_tick.saturating_sub(Joiner::SLACK_NS);
        let (ready, rest): (Vec<Trail>, Vec<Trail>) =
            self.waiting.drain(..).partition(|t| t.done_ns <= limit);
        self.waiting = rest;
        let wanted = self.wanted(&ready);
        let asks: Vec<Ask> = wanted
            .iter()
            .filter(|(_, w)| *w)
            .map(|&(i, _)| Ask::of(&ready[i], self.offset_ns))
            .collect();
        let pulled = self.puller.pull(&asks);
        self.per.pulls += 1;
        let mut why: Vec<Option<Unjoined>> = wanted
            .iter()
            .map(|&(_, w)| (!w).then_some(Unjoined::NotKept))
            .collect();
        let outcome = match pulled {
            Ok(p) => {
                self.per.asked += asks.len() as u64;
                self.take(&p, &wanted, &mut why);
                Ok(())
            }
            Err(e) => {
                let asked = wanted.iter().filter(|(_, w)| *w).map(|(i, _)| *i);
                asked.for_each(|i| why[i] = Some(Unjoined::NotPulled));
                Err(e)
            }
        };
        for (t, why) in ready.into_iter().zip(why) {
            self.joiner.join_as(t, why);
        }
        self.joiner.resolve(limit);
        outcome
    }

    /// Per request of `ready`, in order: whether the run keeps or logs it (and has its
    /// connection's offsets), so asks for it.
    fn wanted(&mut self, ready: &[Trail]) -> Vec<(usize, bool)> {
        let (mut countdown, every) = self.joiner.log_turn().unwrap_or((0, 0));
        let mut out = Vec::with_capacity(ready.len());
        for (i, t) in ready.iter().enumerate() {
            let logged = every > 0 && countdown == 1;
            if every > 0 {
                countdown = if countdown == 1 { every } else { countdown - 1 };
            }
            let kept = self.shadow.would_keep(&t.kept);
            self.shadow.offer_kept(&t.kept);
            let joinable = t.kept.status.is_some() && t.wire.port != 0;
            out.push((i, (logged || kept) && joinable));
        }
        out
    }

    /// The events of a pull into the joiner; the asks whose events had left the ring marked.
    fn take(&mut self, p: &Pulled, wanted: &[(usize, bool)], why: &mut [Option<Unjoined>]) {
        for w in &p.events {
            if let Some(e) = decode(*w, -self.offset_ns) {
                self.joiner.event(e);
            }
        }
        let asked: Vec<usize> = wanted.iter().filter(|(_, w)| *w).map(|(i, _)| *i).collect();
        for &g in &p.gone {
            if let Some(&i) = asked.get(g as usize) {
                why[i] = Some(Unjoined::LeftRing);
                self.per.left_ring += 1;
            }
        }
        let tick = shift(p.tick_ns, -self.offset_ns);
        self.agent_tick = self.agent_tick.max(tick);
    }

    /// What the join produced; the requests never asked for (the agent's clock did not pass
    /// them) recorded without server phases.
    pub fn finish(mut self) -> Joined {
        for t in std::mem::take(&mut self.waiting) {
            self.joiner.join_as(t, Some(Unjoined::NotPulled));
        }
        let per = PerRequest {
            asked: self.per.asked,
            left_ring: self.per.left_ring,
            pulls: self.per.pulls,
            events_bytes: self.puller.bytes(),
            ..PerRequest::of(self.joiner.clocks(), self.offset_ns)
        };
        let mut joined = self.joiner.finish();
        joined.remote = Some(per);
        joined
    }
}

/// The joiner's thread, probed on another host: the workers' requests in, a pull each
/// [`PULL_EVERY`]; at the run's end (`Finish`), pulls until the agent's clock has passed the
/// last request (at most `wait` later).
pub(super) fn run(
    mut join: RemoteJoin,
    rx: &Receiver<super::JoinMsg>,
    pool: &Pool,
    wait: Duration,
) -> Joined {
    use super::JoinMsg;
    let mut next = Instant::now() + PULL_EVERY;
    let mut finishing: Option<(u64, Instant)> = None;
    let mut closed = false;
    loop {
        let deadline = finishing.map_or(next, |(_, d)| d.min(next));
        let left = deadline.saturating_duration_since(Instant::now());
        let msg = match closed {
            true => {
                std::thread::sleep(left);
                Err(RecvTimeoutError::Timeout)
            }
            false => rx.recv_timeout(left),
        };
        match msg {
            Ok(JoinMsg::Trails(mut v, dropped)) => {
                join.trails(&v, dropped);
                v.clear();
                if let Ok(mut p) = pool.lock() {
                    p.push(v);
                }
            }
            Ok(JoinMsg::Finish(until)) => {
                finishing = Some((until, Instant::now() + wait));
                next = Instant::now();
            }
            Ok(JoinMsg::Events(_) | JoinMsg::Others(_)) => {}
            Err(RecvTimeoutError::Disconnected) if finishing.is_none() => break,
            Err(RecvTimeoutError::Disconnected) => closed = true,
            Err(RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() >= next {
            let _ = join.pull();
            let every = if finishing.is_some() {
                PULL_FINISHING
            } else {
                PULL_EVERY
            };
            next = Instant::now() + every;
        }
        if let Some((until, deadline)) = finishing {
            let past = join.agent_tick() >= until.saturating_add(Joiner::SLACK_NS);
            if (past && join.waiting_before(until) == 0) || Instant::now() >= deadline {
                break;
            }
        }
    }
    join.finish()
}
