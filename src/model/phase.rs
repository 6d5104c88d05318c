//! The phases of a request's life ([`Phase`]) and their names, which are the keys of a
//! RunRecord's per-phase figures. A phase is written as its name (and read from it);
//! [`phase_map`] writes a map
//! keyed by phase as records always had it (the keys in name order) and reads one back.

/// One phase of a request's life, in the order a request lives it.
///
/// `Total` is measured from the intended send time (corrected for coordinated omission);
/// `Uncorrected` from the moment the request was actually dispatched. In a closed loop the
/// two are equal because a request is intended when its connection becomes free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    /// released → dispatched: the wait for a free connection, a request due while every
    /// connection (or stream) was busy with an earlier one: the server's time. A request taken
    /// by a connection that was idle has none (the moment its connection took to start is the
    /// generator's, in [`Phase::Lag`]). Open loops only: a closed loop's request is intended
    /// when its connection is free.
    Queue,
    /// dispatched → connection ready: the TCP connect, from the request's dispatch (so the
    /// phases of a request add up to its total; only on requests that opened a connection).
    Connect,
    /// TLS handshake (only on requests that opened a TLS connection).
    Tls,
    /// start of writing → request fully written.
    Write,
    /// written → first response byte (time to first byte).
    Wait,
    /// first → last response byte.
    Read,
    /// `--compressed`: last response byte → the body decoded (gzip, deflate, br).
    Decode,
    /// intended → done (decoded, with `--compressed`).
    Total,
    /// dispatched → done (decoded, with `--compressed`).
    Uncorrected,
    /// intended → released by the scheduler (or, for a request that an idle connection took,
    /// → dispatched): how late the generator let the request go, waiting for a free connection
    /// excluded. The generator's own precision: the client's time, never the server's.
    Lag,
    /// HTTP/2: connection (and TLS) ready → the server's first frame, its SETTINGS (only on
    /// requests that opened a connection).
    H2Handshake,
    /// Streamed responses: written → the first complete event (see [`EventMode`](super::EventMode)).
    FirstEvent,
    /// Streamed responses: the time between two events, one sample per gap (recorded from the
    /// engine's gaps, not from [`Timestamps`](super::Timestamps)).
    EventGap,
    /// Streamed responses: the events of one response, a count. Its histogram holds the count
    /// as nanoseconds (one event = 1 ns, exact up to 2048); the record's statistics of this
    /// phase are counts in the `_us` fields.
    Events,
    /// HTTP/3: dispatched → the QUIC handshake (TLS 1.3 inside it) complete: the connect
    /// phase of a QUIC connection, which has no TCP connect and no TLS apart from it (only on
    /// requests that opened a connection).
    QuicHandshake,
    /// HTTP/3 with `--zero-rtt`: dispatched → a resumed QUIC connection usable with 0-RTT keys
    /// (its requests leave before the handshake completes); in place of `QuicHandshake`.
    Quic0Rtt,
    /// HTTP/2: the wait for a stream under the server's `SETTINGS_MAX_CONCURRENT_STREAMS`
    /// (every stream it allows was open): the server's limit, recorded only when a request had
    /// to wait. h2load starts its clock after it; here it is a part of the total.
    StreamWait,
    /// HTTP/1.1, a request sent with `Expect: 100-continue`: its head written → the server's
    /// `100 Continue`, or the bound (`--expect100-timeout`) if none came, before the body goes.
    /// Apart from `write`, which holds the head's write and the body's.
    Continue,
    /// WebSocket: connection (and TLS) ready → the server's `101 Switching Protocols` to the
    /// upgrade request, checked (only on requests that opened a connection).
    WsUpgrade,
    /// WebSocket with `--ws-ping`: a ping written → its pong arrived, one sample per pong
    /// (recorded from the engine's round trips, not from [`Timestamps`](super::Timestamps)):
    /// the connection's, apart from its requests' phases, which it does not tile.
    WsPing,
}

impl Phase {
    /// Every phase, in the order of a request's life.
    pub const ALL: [Phase; 20] = [
        Phase::Queue,
        Phase::Connect,
        Phase::Tls,
        Phase::Write,
        Phase::Wait,
        Phase::Read,
        Phase::Decode,
        Phase::Total,
        Phase::Uncorrected,
        Phase::Lag,
        Phase::H2Handshake,
        Phase::FirstEvent,
        Phase::EventGap,
        Phase::Events,
        Phase::QuicHandshake,
        Phase::Quic0Rtt,
        Phase::StreamWait,
        Phase::Continue,
        Phase::WsUpgrade,
        Phase::WsPing,
    ];
    /// The phases of opening a connection: TCP and TLS (and a WebSocket's upgrade), or QUIC
    /// (full or 0-RTT).
    pub const OPENING: [Phase; 5] = [
        Phase::Connect,
        Phase::Tls,
        Phase::WsUpgrade,
        Phase::QuicHandshake,
        Phase::Quic0Rtt,
    ];
    /// The phases a request has in every run: the others (a connection's opening, a decoded or
    /// streamed body) only some requests, or only some runs, have. (`Queue`, `Lag` and
    /// `Uncorrected` are an open loop's: a closed loop's requests imply them.)
    pub const EVERY_REQUEST: [Phase; 7] = [
        Phase::Queue,
        Phase::Write,
        Phase::Wait,
        Phase::Read,
        Phase::Total,
        Phase::Uncorrected,
        Phase::Lag,
    ];
    /// The phases of streamed responses (`--stream`), shown when recorded.
    pub const STREAM: [Phase; 3] = [Phase::FirstEvent, Phase::EventGap, Phase::Events];
    /// The figures apart from a request's life, which do not add up to its total: a stream's
    /// phases and the WebSocket pings' round trips (`--ws-ping`), shown when recorded.
    pub const APART: [Phase; 4] = [
        Phase::FirstEvent,
        Phase::EventGap,
        Phase::Events,
        Phase::WsPing,
    ];
    /// A request's life, in order: the rows of the phase tables. Each wait apart, whose it is
    /// (the generator's lag, then the server's queue for a free connection), the opening, the
    /// HTTP/2 handshake, the waits for a stream and for a `100 Continue`, then the exchange.
    /// All but the HTTP/2 handshake, which overlaps the write and the wait, tile the request:
    /// they add up to `Total` ([`Phase::tiles`]).
    pub const LIFE: [Phase; 14] = [
        Phase::Lag,
        Phase::Queue,
        Phase::Connect,
        Phase::Tls,
        Phase::WsUpgrade,
        Phase::QuicHandshake,
        Phase::Quic0Rtt,
        Phase::H2Handshake,
        Phase::StreamWait,
        Phase::Continue,
        Phase::Write,
        Phase::Wait,
        Phase::Read,
        Phase::Decode,
    ];
    /// The client phases of a record's `latency.phases`: those of [`Phase::LIFE`] but the lag
    /// (`latency.schedule_lag`); `QuicHandshake`, `StreamWait`, `Continue` and `WsUpgrade` only where
    /// recorded, see [`Phase::shown`].
    pub const CLIENT: &'static [Phase] = Phase::LIFE.split_at(1).1;

    /// Whether this phase is one of the parts of a request that add up to its total.
    pub fn tiles(self) -> bool {
        Phase::LIFE.contains(&self) && self != Phase::H2Handshake
    }

    /// The name used in reports and in the RunRecord's JSON.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Queue => "queue",
            Phase::Connect => "connect",
            Phase::Tls => "tls",
            Phase::Write => "write",
            Phase::Wait => "wait",
            Phase::Read => "read",
            Phase::Decode => "decode",
            Phase::Total => "total",
            Phase::Uncorrected => "uncorrected",
            Phase::Lag => "schedule_lag",
            Phase::H2Handshake => "h2_handshake",
            Phase::FirstEvent => "first_event",
            Phase::EventGap => "event_gap",
            Phase::Events => "events",
            Phase::QuicHandshake => "quic_handshake",
            Phase::Quic0Rtt => "quic_0rtt",
            Phase::StreamWait => "stream_wait",
            Phase::Continue => "continue",
            Phase::WsUpgrade => "ws_upgrade",
            Phase::WsPing => "ws_ping",
        }
    }

    /// Whether a record's latency lists this client phase given whether it saw a value: the
    /// QUIC handshake and the wait for an HTTP/2 stream only when there was one (records of
    /// other runs keep the keys they had), every other phase always.
    pub fn shown(self, recorded: bool) -> bool {
        recorded
            || !matches!(
                self,
                Phase::QuicHandshake
                    | Phase::Quic0Rtt
                    | Phase::StreamWait
                    | Phase::Continue
                    | Phase::WsUpgrade
            )
    }

    /// Index into per-phase arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The phase named `name`, if any.
    pub fn from_name(name: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.name() == name)
    }
}

by_name!(Phase, "phase");

/// A map keyed by phase (`#[serde(with = "crate::model::phase_map")]`), written as records
/// always had it: an object keyed by the phases' names, in name order (not in the order of
/// a request's life, which is [`Phase`]'s own order). Reading it, a name this version does not
/// know is left out, as serde leaves out a field it does not know: a record of a newer
/// reqlife, with a phase added, still reads (its other figures unchanged), and the phase it
/// added, which this version could not show, is not written back.
pub mod phase_map {
    use super::Phase;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    /// Writes `map` as an object keyed by phase names, in name order.
    pub fn serialize<V: Serialize, S: Serializer>(
        map: &BTreeMap<Phase, V>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let named: BTreeMap<&str, &V> = map.iter().map(|(p, v)| (p.name(), v)).collect();
        s.collect_map(named)
    }

    /// Reads an object keyed by phase names; names this version does not know are left out.
    pub fn deserialize<'de, V: Deserialize<'de>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<Phase, V>, D::Error> {
        let named = BTreeMap::<String, V>::deserialize(d)?;
        Ok(named
            .into_iter()
            .filter_map(|(name, v)| Some((Phase::from_name(&name)?, v)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use std::collections::BTreeMap;

    #[test]
    fn names_round_trip() {
        for p in Phase::ALL {
            assert_eq!(Phase::from_name(p.name()), Some(p));
        }
        assert_eq!(Phase::from_name("bogus"), None);
    }

    #[test]
    fn a_phase_is_written_and_read_as_its_name() {
        for p in Phase::ALL {
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(json, format!("\"{}\"", p.name()));
            assert_eq!(serde_json::from_str::<Phase>(&json).unwrap(), p);
        }
        // A name this version does not know: one line, naming it and the known ones.
        let e = serde_json::from_str::<Phase>("\"dns\"")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown phase 'dns'"), "{e}");
        assert!(e.contains("queue, connect, tls"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        // Not a string at all.
        assert!(serde_json::from_str::<Phase>("3").is_err());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Keyed {
        #[serde(with = "phase_map")]
        phases: BTreeMap<Phase, u32>,
    }

    #[test]
    fn a_phase_map_is_keyed_by_names_in_name_order() {
        let keyed = Keyed {
            phases: [(Phase::Queue, 1), (Phase::Wait, 2), (Phase::Connect, 3)].into(),
        };
        let json = serde_json::to_string(&keyed).unwrap();
        // Name order (connect, queue, wait), as a map keyed by the names was written.
        assert_eq!(json, r#"{"phases":{"connect":3,"queue":1,"wait":2}}"#);
        let named: BTreeMap<String, BTreeMap<String, u32>> = serde_json::from_str(&json).unwrap();
        assert_eq!(serde_json::to_string(&named).unwrap(), json);
        assert_eq!(serde_json::from_str::<Keyed>(&json).unwrap(), keyed);
        // Every phase, the same way: the schedule lag by its record name.
        let all = Keyed {
            phases: Phase::ALL.iter().map(|&p| (p, p.index() as u32)).collect(),
        };
        let json = serde_json::to_string(&all).unwrap();
        assert!(json.contains(r#""schedule_lag":9"#), "{json}");
        assert_eq!(serde_json::from_str::<Keyed>(&json).unwrap(), all);
    }

    #[test]
    fn a_phase_map_leaves_out_names_it_does_not_know() {
        // A newer reqlife's phase (`dns`) beside known ones: the record still reads, the known
        // phases as they were; the unknown one is left out.
        let json = r#"{"phases":{"dns":7,"queue":1,"wait":2}}"#;
        let keyed: Keyed = serde_json::from_str(json).unwrap();
        assert_eq!(keyed.phases, [(Phase::Queue, 1), (Phase::Wait, 2)].into());
        assert_eq!(
            serde_json::to_string(&keyed).unwrap(),
            r#"{"phases":{"queue":1,"wait":2}}"#
        );
        // A value of the wrong type is still an error.
        assert!(serde_json::from_str::<Keyed>(r#"{"phases":{"queue":"x"}}"#).is_err());
    }
}
