//! `--ws-ping INTERVAL`: a connection's pings and their pongs' round trips. While a request is
//! on the connection, a ping goes every INTERVAL (with the request's message when one is due
//! as it starts, else from the read loop when its timer fires); its payload is a sequence
//! number, so that its pong, and only its own, is timed: ping written → pong arrived. One ping
//! is out at a time; a ping still unanswered when its request ends is forgotten (its pong, if
//! it comes later, matches nothing): an idle connection's time is never a round trip's. The
//! round trips are the run's `ws_ping` figure, apart from the requests' phases.

use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::time::Sleep;

/// A connection's pings: when the next is due, the one out, the round trips of this request.
#[derive(Debug, Default)]
pub struct Pinger {
    /// `--ws-ping`: the interval (`None`: no pings).
    every: Option<Duration>,
    /// When the next ping is due (`None`: at once, a new connection's first request).
    next: Option<Instant>,
    /// The sequence number of the last ping sent.
    seq: u64,
    /// When the ping out (`seq`) was written; `None`: none is out.
    out: Option<Instant>,
    /// The round trips timed during the current request, in nanoseconds (capacity kept).
    rtts: Vec<u64>,
    /// The timer the read loop waits on for the next ping (made once, moved after).
    timer: Option<Pin<Box<Sleep>>>,
}

impl Pinger {
    /// Pings every `every` (`None`: never).
    pub fn new(every: Option<Duration>) -> Self {
        Pinger {
            every,
            ..Pinger::default()
        }
    }

    /// A new connection: its first request pings at once.
    pub fn connected(&mut self) {
        self.next = None;
        self.out = None;
    }

    /// A request begins: its round trips start empty; a ping of an earlier request still out
    /// is forgotten.
    pub fn begin(&mut self) {
        self.rtts.clear();
        self.out = None;
    }

    /// When the next ping is due, if pings are on and none is out.
    pub fn due(&self, now: Instant) -> Option<Instant> {
        self.every?;
        match self.out {
            Some(_) => None,
            None => Some(self.next.unwrap_or(now)),
        }
    }

    /// The payload of the next ping: its sequence number.
    pub fn payload(&self) -> [u8; 8] {
        self.seq.wrapping_add(1).to_be_bytes()
    }

    /// The ping of [`Pinger::payload`] was written `at`.
    pub fn sent(&mut self, at: Instant) {
        self.seq = self.seq.wrapping_add(1);
        self.out = Some(at);
        self.next = self.every.map(|every| at + every);
    }

    /// A pong with `payload` arrived `at`: the round trip of the ping out, if it is its pong.
    pub fn pong(&mut self, payload: &[u8], at: Instant) {
        if let Some(sent) = self.out {
            if payload == self.seq.to_be_bytes() {
                self.out = None;
                self.rtts
                    .push(at.saturating_duration_since(sent).as_nanos() as u64);
            }
        }
    }

    /// The round trips timed during the current request, in nanoseconds.
    pub fn rtts(&self) -> &[u64] {
        &self.rtts
    }

    /// Forgets the round trips timed so far (recorded with a pipelined batch's message: the
    /// next message's are those that come after).
    pub fn clear_rtts(&mut self) {
        self.rtts.clear();
    }

    /// Waits until `due` (the timer moved there if it was armed for another time).
    pub async fn wait(&mut self, due: Instant) {
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(due.into())));
        if timer.deadline().into_std() != due {
            timer.as_mut().reset(due.into());
        }
        timer.as_mut().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pong_is_timed_only_when_it_answers_the_ping_out() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = Pinger::new(Some(Duration::from_millis(100)));
        p.connected();
        p.begin();
        // A new connection pings at once; none is due while one is out.
        assert_eq!(p.due(t0), Some(t0));
        let payload = p.payload();
        p.sent(ms(1));
        assert_eq!(p.due(ms(500)), None);
        // Another payload (a stale pong) is not timed; the ping's own is.
        p.pong(&0u64.to_be_bytes(), ms(2));
        assert!(p.rtts().is_empty());
        p.pong(&payload, ms(4));
        assert_eq!(p.rtts(), [3_000_000]);
        // The next is due an interval after the last was written.
        assert_eq!(p.due(ms(5)), Some(ms(101)));
        // A ping out when its request ends is forgotten: its late pong times nothing.
        let late = p.payload();
        p.sent(ms(101));
        p.begin();
        p.pong(&late, ms(300));
        assert!(p.rtts().is_empty());
        assert_eq!(p.due(ms(300)), Some(ms(201)));
        // Pings off: never due.
        assert_eq!(Pinger::new(None).due(t0), None);
    }
}
