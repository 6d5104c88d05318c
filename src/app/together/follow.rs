//! A segment other than 1 of a plan run `--coordinator`: it reaches the coordinator (trying
//! again while it is not up yet), measures the offset of its clock, says it is ready, waits
//! for the start, and at its end sends its record and takes the merged verdict.

use super::wire::{self, Exchange, Wire};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// Clock exchanges before `READY`: the least delayed one gives the offset.
const EXCHANGES: usize = 8;

/// How long a read waits at a time while the start is awaited (a signal is looked at between).
const LOOK: Duration = Duration::from_millis(100);

/// A segment joined to its coordinator.
pub struct Follow {
    wire: Wire,
    /// The coordinator's clock minus this one's, ns (from the least delayed exchange).
    offset: i128,
    /// `--coordinator`, for messages.
    addr: String,
}

impl Follow {
    /// Reaches the coordinator at `addr` as segment `index` of `count` within `timeout`
    /// (`stop`: give up, interrupted); says `HELLO`, exchanges clocks and says `READY`.
    pub fn join(
        addr: &str,
        (index, count): (u64, u64),
        timeout: Duration,
        stop: &impl Fn() -> bool,
    ) -> Result<Follow, String> {
        let stream = connect(addr, timeout, stop)?;
        let mut wire = Wire::new(stream, Some(timeout)).map_err(|e| format!("{addr}: {e}"))?;
        let said = |e: std::io::Error| format!("the coordinator at {addr}: {e}");
        wire.send(&format!("HELLO {} {index} {count}", wire::VERSION))
            .map_err(said)?;
        let answer = wire.line().map_err(said)?;
        if let Some(why) = wire::after(&answer, "REFUSED") {
            return Err(format!(
                "the coordinator at {addr} refused this segment: {why}"
            ));
        }
        if answer != "WELCOME" {
            return Err(format!(
                "{addr} is not a reqlife coordinator: it said '{answer}'"
            ));
        }
        let mut exchanges = Vec::with_capacity(EXCHANGES);
        for _ in 0..EXCHANGES {
            let t1 = wire::now_ns();
            wire.send(&format!("PING {t1}")).map_err(said)?;
            let line = wire.line().map_err(said)?;
            let t4 = wire::now_ns();
            exchanges.push(pong(&line, t1, t4).map_err(said)?);
        }
        let (offset, delay) = wire::best(&exchanges).unwrap_or((0, 0));
        wire.send(&format!("READY {offset} {delay}"))
            .map_err(said)?;
        Ok(Follow {
            wire,
            offset,
            addr: addr.to_string(),
        })
    }

    /// Waits for the start every segment is given: its time on this machine's clock; `Err`
    /// naming why there is none (the coordinator aborted, went away, or `stop`).
    pub fn start(&mut self, stop: &impl Fn() -> bool) -> Result<std::time::SystemTime, String> {
        let addr = self.addr.clone();
        self.wire
            .timeout(Some(LOOK))
            .map_err(|e| format!("{addr}: {e}"))?;
        let line = loop {
            match self.wire.line() {
                Ok(line) => break line,
                Err(e) if timed_out(&e) => {
                    if stop() {
                        return Err("interrupted before the start".into());
                    }
                }
                Err(e) => return Err(format!("the coordinator at {addr} went away: {e}")),
            }
        };
        if let Some(why) = wire::after(&line, "ABORT") {
            return Err(format!("the coordinator at {addr} gave no start: {why}"));
        }
        let at: i128 = wire::after(&line, "START")
            .and_then(|t| t.parse().ok())
            .ok_or_else(|| format!("expected START from {addr}, got '{line}'"))?;
        Ok(wire::time_of(at - self.offset))
    }

    /// Sends this segment's record and waits (`timeout` at most after the coordinator's own
    /// wait) for the merged verdict: its exit code.
    pub fn finish(mut self, json: &str, timeout: Duration) -> Result<i32, String> {
        let addr = self.addr.clone();
        let said = |e: std::io::Error| format!("the coordinator at {addr}: {e}");
        self.wire.send_record(json).map_err(said)?;
        self.wire
            .timeout(Some(timeout + Duration::from_secs(30)))
            .map_err(said)?;
        let line = self.wire.line().map_err(said)?;
        wire::after(&line, "DONE")
            .and_then(|c| c.parse().ok())
            .ok_or_else(|| format!("expected DONE from {addr}, got '{line}'"))
    }
}

/// Whether `e` is a read's timeout.
fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// `PONG t1 t2 t3` to the `PING t1` sent, received at `t4`.
fn pong(line: &str, t1: i128, t4: i128) -> std::io::Result<Exchange> {
    let bad = || wire::invalid(format!("expected PONG {t1} T2 T3, got '{line}'"));
    let words: Vec<i128> = wire::after(line, "PONG")
        .ok_or_else(bad)?
        .split(' ')
        .map(|w| w.parse().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    match words[..] {
        [echo, t2, t3] if echo == t1 => Ok(Exchange { t1, t2, t3, t4 }),
        _ => Err(bad()),
    }
}

/// A connection to `addr`, tried again every 200 ms while it is refused or its name does not
/// resolve yet (the coordinator's process or pod may start after this one), `timeout` at most.
fn connect(addr: &str, timeout: Duration, stop: &impl Fn() -> bool) -> Result<TcpStream, String> {
    let until = Instant::now() + timeout;
    loop {
        let tried = addr
            .to_socket_addrs()
            .map_err(|e| e.to_string())
            .and_then(|addrs| {
                let mut last = "it resolves to no address".to_string();
                for a in addrs {
                    match TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                        // A port in the ephemeral range can be given to this very socket as
                        // its own while nothing listens there: connected to itself (and
                        // keeping segment 1 from binding it). Let go and try again.
                        Ok(s) if s.local_addr().ok() == Some(a) => {
                            last = format!("connected to itself ({a}: segment 1 not up)")
                        }
                        Ok(s) => return Ok(s),
                        Err(e) => last = e.to_string(),
                    }
                }
                Err(last)
            });
        match tried {
            Ok(s) => return Ok(s),
            Err(_) if stop() => return Err("interrupted before the start".into()),
            Err(e) if Instant::now() >= until => {
                return Err(format!(
                    "no coordinator at {addr} within {:.0}s (--coordinator-timeout): {e}; \
                     segment 1 of the plan listens there",
                    timeout.as_secs_f64()
                ))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}
