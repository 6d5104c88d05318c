//! The raw instants of one request ([`Timestamps`]) and the one place its phases' durations
//! are derived from them ([`Timestamps::durations`]).

use super::Phase;
use std::time::{Duration, Instant};

/// Raw instants stamped on one request. Durations are derived only by
/// [`Timestamps::durations`].
#[derive(Debug, Clone, Copy)]
pub struct Timestamps {
    /// When the request was due: its scheduled time in an open loop, when its connection became
    /// free in a closed loop. The total counts from here.
    pub intended: Instant,
    /// When the scheduler released the request (see [`Phase::Lag`]).
    pub released: Instant,
    /// When a connection took the request and began on it (the uncorrected time counts from here).
    pub dispatched: Instant,
    /// The TCP connect (or QUIC handshake) began (`None`: the request reused an open connection).
    pub connect_start: Option<Instant>,
    /// The TCP connection was established (`None`: no connect for this request).
    pub connect_end: Option<Instant>,
    /// The TLS handshake completed (`None`: no TLS handshake for this request).
    pub tls_end: Option<Instant>,
    /// HTTP/2: the server's first frame (its SETTINGS) arrived.
    pub h2_settings: Option<Instant>,
    /// HTTP/2: the stream opened after waiting under the server's stream limit (`None`: it
    /// did not wait; see [`Phase::StreamWait`]).
    pub stream_open: Option<Instant>,
    /// HTTP/1.1 with `Expect: 100-continue`: the head written, and the server's `100 Continue`
    /// arrived or the bound ran out (`None`: the body went with the head, or never went: the
    /// server answered first).
    pub head_written: Option<Instant>,
    /// The server's `100 Continue` arrived or the bound ran out, and the body could go (`None`: no
    /// `Expect: 100-continue` wait).
    pub continued: Option<Instant>,
    /// HTTP/3: the QUIC handshake completed (from `connect_start`).
    pub quic_end: Option<Instant>,
    /// HTTP/3 with `--zero-rtt`: the resumed connection was usable with 0-RTT keys (instead of
    /// `quic_end`).
    pub quic_0rtt: Option<Instant>,
    /// WebSocket: the server's `101` to the upgrade arrived and was checked (`None`: no
    /// upgrade for this request).
    pub ws_upgraded: Option<Instant>,
    /// The request was fully written (`None`: the write never finished).
    pub written: Option<Instant>,
    /// The first response byte arrived (`None`: no response).
    pub first_byte: Option<Instant>,
    /// The last response byte.
    pub done: Option<Instant>,
    /// `--compressed`: the body decoded (after `done`).
    pub decoded: Option<Instant>,
    /// Streamed responses: the first complete event.
    pub first_event: Option<Instant>,
    /// Streamed responses: the events of the response (`None`: not a tracked stream).
    pub events: Option<u32>,
}

impl Timestamps {
    /// Timestamps of a request intended at `intended` and dispatched at `dispatched`
    /// (released by the scheduler when intended; see [`Timestamps::released_at`]).
    pub fn new(intended: Instant, dispatched: Instant) -> Self {
        Timestamps {
            intended,
            released: intended,
            dispatched,
            connect_start: None,
            connect_end: None,
            tls_end: None,
            h2_settings: None,
            stream_open: None,
            head_written: None,
            continued: None,
            quic_end: None,
            quic_0rtt: None,
            ws_upgraded: None,
            written: None,
            first_byte: None,
            done: None,
            decoded: None,
            first_event: None,
            events: None,
        }
    }

    /// The same stamps with the scheduler's release time.
    pub fn released_at(mut self, released: Instant) -> Self {
        self.released = released;
        self
    }

    /// This request opened a connection: a TCP connect or a QUIC handshake completed.
    pub fn opened(&self) -> bool {
        self.connect_end.is_some() || self.quic_end.is_some() || self.quic_0rtt.is_some()
    }

    /// When writing the request could begin: after the connection (and TLS) was ready if this
    /// request opened it, else at dispatch.
    fn ready(&self) -> Instant {
        self.ws_upgraded
            .or(self.tls_end)
            .or(self.connect_end)
            .or(self.quic_end)
            .or(self.quic_0rtt)
            .map_or(self.dispatched, |t| t.max(self.dispatched))
    }

    /// When writing the request began: when it could, or when its HTTP/2 stream opened if it
    /// waited for one.
    pub fn write_started(&self) -> Instant {
        self.write_start()
    }

    fn write_start(&self) -> Instant {
        let ready = self.ready();
        self.stream_open.map_or(ready, |s| s.max(ready))
    }

    /// From the start of the request's write to its first byte (write + wait): the span that
    /// holds the server's own time whatever the scheduler did. The wait alone does not: a
    /// generator preempted between its write and the stamp of its end sees the response
    /// arrive (the kernel's stamp) before it, and its wait is 0.
    pub fn to_first_byte(&self) -> Option<Duration> {
        self.first_byte
            .map(|b| b.saturating_duration_since(self.write_start()))
    }

    /// The total less the phases that tile it ([`Phase::tiles`]), in nanoseconds: 0 for a request whose
    /// stamps are in order (the phases tile it); `None` for a request that did not end.
    pub fn unaccounted_ns(&self) -> Option<i128> {
        let d = self.durations();
        let total = d[Phase::Total.index()]? as i128;
        let parts: i128 = Phase::LIFE
            .iter()
            .filter(|p| p.tiles())
            .filter_map(|p| d[p.index()])
            .map(i128::from)
            .sum();
        Some(total - parts)
    }

    /// The duration of every phase the request reached the end of, in nanoseconds, by
    /// [`Phase::index`]: all of them from one reading of each stamp (the recorder's path, once
    /// per request).
    ///
    /// Each phase is the difference of two stamps:
    /// lag = released − intended; queue = dispatched − released; connect = connect_end − dispatched (on a request that
    /// opened the connection: `connect_start` set; the moment between the dispatch and the
    /// connect call is the connect's); tls = tls_end − connect_end; stream_wait = stream_open −
    /// ready (the connection ready: tls_end, connect_end or dispatched); write = written −
    /// write_start (stream_open when the request waited for a stream, else ready) less the
    /// continue; continue = continued − head_written (`Expect: 100-continue`: the wait for the
    /// server's 100 between the head's write and the body's); The phases of a request tile its life from its dispatch: a connection
    /// opened before it (stamps before `dispatched`) counts from the dispatch, 0 if ready by
    /// then, so that the client phases add up to the total;
    /// wait = first_byte − written; read = done − first_byte; decode = decoded − done;
    /// total = end − intended; uncorrected = end − dispatched, where end is decoded when the
    /// body was decoded, else done;
    /// h2_handshake = h2_settings − (tls_end or connect_end); ws_upgrade = ws_upgraded −
    /// (tls_end or connect_end, from the dispatch); quic_handshake = quic_end −
    /// dispatched (as connect, for the QUIC handshake); quic_0rtt = quic_0rtt − dispatched;
    /// first_event = first_event −
    /// written; events = the count as nanoseconds; event_gap is not one request's (`None`).
    pub fn durations(&self) -> [Option<u64>; Phase::ALL.len()] {
        // Each stamp as signed nanoseconds from the intended time, read once.
        let base = self.intended;
        let at = |t: Instant| -> i64 {
            if t == base {
                // A closed loop's dispatch and release: no subtraction.
                return 0;
            }
            match t.checked_duration_since(base) {
                Some(d) => nanos(d),
                None => -nanos(base.duration_since(t)),
            }
        };
        let on = |t: Option<Instant>| t.map(at);
        let span = |a: i64, b: Option<i64>| b.map(|b| b.saturating_sub(a).max(0) as u64);
        let dispatched = at(self.dispatched);
        let (connect_end, tls_end) = (on(self.connect_end), on(self.tls_end));
        let (quic_end, quic_0rtt) = (on(self.quic_end), on(self.quic_0rtt));
        let (written, first_byte) = (on(self.written), on(self.first_byte));
        let (done, decoded) = (on(self.done), on(self.decoded));
        let end = decoded.or(done);
        let ws_upgraded = on(self.ws_upgraded);
        let ready = ws_upgraded
            .or(tls_end)
            .or(connect_end)
            .or(quic_end)
            .or(quic_0rtt)
            .map_or(dispatched, |t| t.max(dispatched));
        let stream_open = on(self.stream_open);
        let write_start = stream_open.map_or(ready, |s| s.max(ready));
        let opened = self.connect_start.is_some();
        let released = at(self.released);
        let mut out = [None; Phase::ALL.len()];
        let mut put = |p: Phase, d: Option<u64>| out[p.index()] = d;
        put(Phase::Lag, span(0, Some(released)));
        put(Phase::Queue, span(released.max(0), Some(dispatched)));
        put(
            Phase::StreamWait,
            stream_open.and_then(|_| span(ready, Some(write_start))),
        );
        put(
            Phase::Connect,
            span(dispatched, connect_end.filter(|_| opened)),
        );
        put(
            Phase::Tls,
            connect_end.and_then(|c| span(c.max(dispatched), tls_end)),
        );
        let cont = on(self.head_written).and_then(|h| span(h, on(self.continued)));
        put(Phase::Continue, cont);
        put(
            Phase::Write,
            span(write_start, written).map(|w| w.saturating_sub(cont.unwrap_or(0))),
        );
        put(Phase::Wait, written.and_then(|w| span(w, first_byte)));
        put(Phase::Read, first_byte.and_then(|f| span(f, done)));
        put(Phase::Decode, done.and_then(|d| span(d, decoded)));
        put(Phase::Total, span(0, end));
        put(Phase::Uncorrected, span(dispatched, end));
        put(
            Phase::H2Handshake,
            tls_end
                .or(connect_end)
                .and_then(|r| span(r, on(self.h2_settings))),
        );
        put(
            Phase::FirstEvent,
            written.and_then(|w| span(w, on(self.first_event))),
        );
        put(Phase::Events, self.events.map(u64::from));
        put(
            Phase::QuicHandshake,
            span(dispatched, quic_end.filter(|_| opened)),
        );
        put(
            Phase::Quic0Rtt,
            span(dispatched, quic_0rtt.filter(|_| opened)),
        );
        put(
            Phase::WsUpgrade,
            tls_end
                .or(connect_end)
                .and_then(|r| span(r.max(dispatched), ws_upgraded)),
        );
        out
    }

    /// The duration of `phase`, if the request reached the end of it (see
    /// [`Timestamps::durations`]).
    pub fn phase(&self, phase: Phase) -> Option<Duration> {
        self.durations()[phase.index()].map(Duration::from_nanos)
    }
}

/// `d` in nanoseconds, saturated at `i64::MAX` (292 years).
fn nanos(d: Duration) -> i64 {
    i64::try_from(d.as_secs())
        .unwrap_or(i64::MAX)
        .saturating_mul(1_000_000_000)
        .saturating_add(i64::from(d.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, us: u64) -> Instant {
        base + Duration::from_micros(us)
    }

    #[test]
    fn phases_of_a_request_that_opened_a_tls_connection() {
        let b = Instant::now();
        let mut t = Timestamps::new(b, at(b, 10)).released_at(at(b, 4));
        t.connect_start = Some(at(b, 10));
        t.connect_end = Some(at(b, 60));
        t.tls_end = Some(at(b, 460));
        t.written = Some(at(b, 470));
        t.first_byte = Some(at(b, 970));
        t.done = Some(at(b, 1000));
        let us = |p| t.phase(p).map(|d| d.as_micros() as u64);
        // (phase, expected µs): each row is one difference of two stamps.
        let rows = [
            (Phase::Lag, Some(4)),           // released − intended
            (Phase::Queue, Some(6)),         // dispatched − released
            (Phase::Connect, Some(50)),      // connect_end − dispatched
            (Phase::Tls, Some(400)),         // tls_end − connect_end
            (Phase::Write, Some(10)),        // written − tls_end
            (Phase::Wait, Some(500)),        // first_byte − written
            (Phase::Read, Some(30)),         // done − first_byte
            (Phase::Total, Some(1000)),      // done − intended
            (Phase::Uncorrected, Some(990)), // done − dispatched
            (Phase::StreamWait, None),       // no wait for an HTTP/2 stream
        ];
        for (phase, want) in rows {
            assert_eq!(us(phase), want, "{}", phase.name());
        }
        assert_eq!(t.unaccounted_ns(), Some(0));
        // The connect call a moment after the dispatch: that moment is the connect's.
        t.connect_start = Some(at(b, 25));
        assert_eq!(t.phase(Phase::Connect), Some(Duration::from_micros(50)));
        assert_eq!(t.unaccounted_ns(), Some(0));
    }

    #[test]
    fn each_wait_is_its_own_phase_and_the_phases_add_up() {
        // An open loop's request: the pacer released it 30 µs late, it waited 200 µs for a
        // busy connection, then 70 µs for an HTTP/2 stream under the server's limit.
        let b = Instant::now();
        let mut t = Timestamps::new(b, at(b, 230)).released_at(at(b, 30));
        t.stream_open = Some(at(b, 300));
        t.written = Some(at(b, 310));
        t.first_byte = Some(at(b, 810));
        t.done = Some(at(b, 820));
        let us = |p| t.phase(p).map(|d| d.as_micros() as u64);
        // (phase, expected µs): whose each wait is, apart.
        let rows = [
            (Phase::Lag, Some(30)),          // the generator's: released − intended
            (Phase::Queue, Some(200)),       // a free connection: dispatched − released
            (Phase::StreamWait, Some(70)),   // the server's stream limit: stream_open − dispatched
            (Phase::Write, Some(10)),        // written − stream_open
            (Phase::Wait, Some(500)),        // first_byte − written
            (Phase::Read, Some(10)),         // done − first_byte
            (Phase::Total, Some(820)),       // done − intended
            (Phase::Uncorrected, Some(590)), // done − dispatched
        ];
        for (phase, want) in rows {
            assert_eq!(us(phase), want, "{}", phase.name());
        }
        assert_eq!(t.unaccounted_ns(), Some(0));
        // The same request taken at once by an idle connection: its lag runs to the dispatch
        // (the load sets `released` to it), and it has no queue.
        let t = Timestamps::new(b, at(b, 32)).released_at(at(b, 32));
        assert_eq!(t.phase(Phase::Lag), Some(Duration::from_micros(32)));
        assert_eq!(t.phase(Phase::Queue), Some(Duration::ZERO));
    }

    #[test]
    fn the_wait_for_a_100_continue_is_apart_from_the_write() {
        // The head written in 5 µs, the server's 100 after 300 µs more, the body written in
        // 10 µs: write 15 µs, continue 300 µs, and they tile the total with the rest.
        let b = Instant::now();
        let mut t = Timestamps::new(b, b);
        t.head_written = Some(at(b, 5));
        t.continued = Some(at(b, 305));
        t.written = Some(at(b, 315));
        t.first_byte = Some(at(b, 815));
        t.done = Some(at(b, 815));
        let us = |p| t.phase(p).map(|d| d.as_micros() as u64);
        for (phase, want) in [
            (Phase::Continue, Some(300)),
            (Phase::Write, Some(15)),
            (Phase::Wait, Some(500)),
            (Phase::Total, Some(815)),
        ] {
            assert_eq!(us(phase), want, "{}", phase.name());
        }
        assert_eq!(t.unaccounted_ns(), Some(0));
    }

    #[test]
    fn a_websocket_upgrade_is_its_own_phase_and_the_phases_add_up() {
        // Connected in 50 µs, TLS in 400, the upgrade's 101 after 300 more, then the message.
        let b = Instant::now();
        let mut t = Timestamps::new(b, b);
        t.connect_start = Some(b);
        t.connect_end = Some(at(b, 50));
        t.tls_end = Some(at(b, 450));
        t.ws_upgraded = Some(at(b, 750));
        t.written = Some(at(b, 760));
        t.first_byte = Some(at(b, 1760));
        t.done = Some(at(b, 1770));
        let us = |p| t.phase(p).map(|d| d.as_micros() as u64);
        for (phase, want) in [
            (Phase::Connect, Some(50)),
            (Phase::Tls, Some(400)),
            (Phase::WsUpgrade, Some(300)),
            (Phase::Write, Some(10)),
            (Phase::Wait, Some(1000)),
            (Phase::Read, Some(10)),
            (Phase::Total, Some(1770)),
        ] {
            assert_eq!(us(phase), want, "{}", phase.name());
        }
        assert_eq!(t.unaccounted_ns(), Some(0));
        // Plain TCP: from the connect's end.
        t.tls_end = None;
        let upgrade = t.phase(Phase::WsUpgrade).map(|d| d.as_micros() as u64);
        assert_eq!(upgrade, Some(700));
        assert_eq!(t.unaccounted_ns(), Some(0));
    }

    #[test]
    fn phases_of_a_request_on_a_reused_connection() {
        let b = Instant::now();
        let mut t = Timestamps::new(b, b);
        t.written = Some(at(b, 5));
        t.first_byte = Some(at(b, 105));
        t.done = Some(at(b, 105));
        let us = |p| t.phase(p).map(|d| d.as_micros() as u64);
        let rows = [
            (Phase::Queue, Some(0)),   // closed loop: intended == dispatched
            (Phase::Connect, None),    // no connection opened
            (Phase::Tls, None),        // no handshake
            (Phase::Write, Some(5)),   // written − dispatched
            (Phase::Wait, Some(100)),  // first_byte − written
            (Phase::Read, Some(0)),    // whole response in one read
            (Phase::Total, Some(105)), // done − intended
        ];
        for (phase, want) in rows {
            assert_eq!(us(phase), want, "{}", phase.name());
        }
    }

    #[test]
    fn a_failed_request_has_no_end_phases() {
        let b = Instant::now();
        let mut t = Timestamps::new(b, b);
        t.connect_start = Some(b);
        t.connect_end = Some(at(b, 20));
        // (phase, present?)
        let rows = [
            (Phase::Connect, true), // the connection was measured, so it counts
            (Phase::Tls, false),
            (Phase::Write, false),
            (Phase::Wait, false),
            (Phase::Total, false),
        ];
        for (phase, present) in rows {
            assert_eq!(t.phase(phase).is_some(), present, "{}", phase.name());
        }
    }

    /// The per-phase formulas `durations` replaced, one `Instant` difference each: the
    /// reference it must equal.
    fn reference(t: &Timestamps, phase: Phase) -> Option<Duration> {
        let span = |a: Instant, b: Option<Instant>| b.map(|b| b.saturating_duration_since(a));
        let end = t.decoded.or(t.done);
        match phase {
            Phase::Queue => Some(
                t.dispatched
                    .saturating_duration_since(t.released.max(t.intended)),
            ),
            Phase::Connect => t.connect_start.and(span(t.dispatched, t.connect_end)),
            Phase::Tls => span(t.connect_end?.max(t.dispatched), t.tls_end),
            Phase::Write => span(t.write_start(), t.written).map(|w| {
                w.saturating_sub(
                    t.head_written
                        .and_then(|h| span(h, t.continued))
                        .unwrap_or_default(),
                )
            }),
            Phase::Wait => span(t.written?, t.first_byte),
            Phase::Read => span(t.first_byte?, t.done),
            Phase::Decode => span(t.done?, t.decoded),
            Phase::Total => span(t.intended, end),
            Phase::Uncorrected => span(t.dispatched, end),
            Phase::Lag => Some(t.released.saturating_duration_since(t.intended)),
            Phase::H2Handshake => span(t.tls_end.or(t.connect_end)?, t.h2_settings),
            Phase::FirstEvent => span(t.written?, t.first_event),
            Phase::EventGap | Phase::WsPing => None,
            Phase::Events => t.events.map(|n| Duration::from_nanos(n.into())),
            Phase::QuicHandshake => t.connect_start.and(span(t.dispatched, t.quic_end)),
            Phase::Quic0Rtt => t.connect_start.and(span(t.dispatched, t.quic_0rtt)),
            Phase::StreamWait => t.stream_open.and(Some(t.write_start() - t.ready())),
            Phase::Continue => span(t.head_written?, t.continued),
            Phase::WsUpgrade => span(
                t.tls_end.or(t.connect_end)?.max(t.dispatched),
                t.ws_upgraded,
            ),
        }
    }

    #[test]
    fn durations_equal_each_phase_taken_alone() {
        let mut rng = crate::util::rng::SplitMix64(7);
        let b = Instant::now() + Duration::from_secs(10);
        // A stamp from 5 s before to 5 s after `b` (some before the intended time, out of
        // order), or none.
        let stamp = |rng: &mut crate::util::rng::SplitMix64| {
            let ns = rng.below(10_000_000_000);
            let t = (b - Duration::from_secs(5)) + Duration::from_nanos(ns);
            (rng.below(3) > 0).then_some(t)
        };
        for _ in 0..20_000 {
            let mut t = Timestamps::new(b, stamp(&mut rng).unwrap_or(b));
            t.released = stamp(&mut rng).unwrap_or(b);
            t.connect_start = stamp(&mut rng);
            t.connect_end = stamp(&mut rng);
            t.tls_end = stamp(&mut rng);
            t.h2_settings = stamp(&mut rng);
            t.stream_open = stamp(&mut rng);
            t.head_written = stamp(&mut rng);
            t.continued = stamp(&mut rng);
            t.quic_end = stamp(&mut rng);
            t.quic_0rtt = stamp(&mut rng);
            t.ws_upgraded = stamp(&mut rng);
            t.written = stamp(&mut rng);
            t.first_byte = stamp(&mut rng);
            t.done = stamp(&mut rng);
            t.decoded = stamp(&mut rng);
            t.first_event = stamp(&mut rng);
            t.events = stamp(&mut rng).map(|_| rng.below(5000) as u32);
            let all = t.durations();
            for p in Phase::ALL {
                let want = reference(&t, p).map(|d| d.as_nanos() as u64);
                assert_eq!(all[p.index()], want, "{} of {t:?}", p.name());
            }
        }
    }
}
