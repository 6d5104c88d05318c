//! What a request's protocol tells besides its protocol-neutral [`Outcome`](super::Outcome):
//! events counted by [`Tally`] (an HTTP/2 stream's reset code, how a WebSocket connection
//! ended, ...), the status a protocol gives a complete response besides its own (gRPC's, with
//! its message), and values of a phase that are not the request's own timing (WebSocket
//! pings' round trips). The session hands one over with each outcome
//! ([`Session::extras`](super::Session::extras)), and the recorder folds it by each tally's
//! [`Rule`], naming no protocol. Fixed-size and borrowed: nothing is allocated per request.

use crate::model::{ErrorKind, Phase};

/// A count a protocol keeps of its requests' events, each folded by its [`Rule`]. The engine
/// names the tallies (their protocol's words are its own); the recorder only folds them, and
/// the record names them once, as its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tally {
    /// HTTP/2: streams reset by the server (RST_STREAM), by error code.
    Reset,
    /// gRPC: calls by status code, with each code's first `grpc-message`.
    Grpc,
    /// WebSocket: connections' ends, by a kind of [`super::websocket::close`].
    WsClose,
    /// WebSocket with `--compressed`: connections by whether they agreed permessage-deflate
    /// (a kind of [`super::websocket::deflate`]).
    WsDeflate,
    /// WebSocket with `--ws-match`: replies that matched no message in flight.
    WsUnmatched,
    /// HTTP/2: the concurrent streams a server allows (SETTINGS_MAX_CONCURRENT_STREAMS), the
    /// smallest announced.
    MaxStreams,
}

/// How a tally folds its events' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Each value is a code, counted (a code's first message kept, when it has one).
    ByCode,
    /// The values are summed.
    Sum,
    /// The smallest value is kept.
    Least,
}

impl Tally {
    /// Every tally, by [`Tally::index`].
    pub const ALL: [Tally; 6] = [
        Tally::Reset,
        Tally::Grpc,
        Tally::WsClose,
        Tally::WsDeflate,
        Tally::WsUnmatched,
        Tally::MaxStreams,
    ];

    /// The tally's position in [`Tally::ALL`], for arrays of counts.
    pub fn index(self) -> usize {
        self as usize
    }

    /// How the tally folds its values.
    pub fn rule(self) -> Rule {
        match self {
            Tally::Reset | Tally::Grpc | Tally::WsClose | Tally::WsDeflate => Rule::ByCode,
            Tally::WsUnmatched => Rule::Sum,
            Tally::MaxStreams => Rule::Least,
        }
    }

    /// The record's name of one of the tally's codes (`REFUSED_STREAM`, `UNAVAILABLE`,
    /// `abnormal`, `agreed`); a code's number for a tally that counts no codes.
    pub fn code_name(self, code: u32) -> String {
        match self {
            Tally::Reset => {
                super::http2::code_name(code).map_or_else(|| format!("0x{code:x}"), str::to_string)
            }
            Tally::Grpc => super::grpc::code_name(code).into_owned(),
            Tally::WsClose => super::websocket::close::name(code),
            Tally::WsDeflate => super::websocket::deflate::name(code),
            Tally::WsUnmatched | Tally::MaxStreams => code.to_string(),
        }
    }
}

/// One event of a request: a value for a tally (a code, an amount or a limit, by its rule).
/// Eight bytes: an outcome carries its events through every connection's task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// What it counts in.
    pub tally: Tally,
    /// Its code, amount or limit.
    pub value: u32,
}

/// The most events one request has: a WebSocket's end, deflate and unmatched replies (over
/// HTTP/2 no deflate, and no reset code: its stream is a tunnel); or an HTTP/2 stream's limit
/// and reset. No more: an outcome carries its events through every connection's task, whose
/// size a test bounds (`a_connection_task_stays_small`).
const MAX_EVENTS: usize = 3;

/// A request's events, in place (no allocation).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Events {
    items: [Option<Event>; MAX_EVENTS],
}

impl Events {
    /// Adds `value` to `tally` (an amount or a limit past `u32::MAX` counts as `u32::MAX`;
    /// an event past the last slot is a bug of the engine's: it panics in a debug build, and
    /// is dropped in a release one).
    #[inline]
    pub fn push(&mut self, tally: Tally, value: u64) {
        let value = u32::try_from(value).unwrap_or(u32::MAX);
        match self.items.iter_mut().find(|e| e.is_none()) {
            Some(slot) => *slot = Some(Event { tally, value }),
            None => debug_assert!(false, "more than {MAX_EVENTS} events of one request"),
        }
    }

    /// The events, in the order pushed.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = Event> + '_ {
        self.items.iter().map_while(|e| *e)
    }
}

/// The status a protocol gave a complete response besides the response's own (gRPC's
/// `grpc-status`): counted in its tally with its code's first message, and, when it is not a
/// success, failing the request as its `failed` kind whatever the response's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status<'a> {
    /// The tally its code counts in.
    pub tally: Tally,
    /// Its code.
    pub code: u32,
    /// Its message (empty when it gave none).
    pub message: &'a str,
    /// The kind of error the request counts as, when the status is not a success.
    pub failed: Option<ErrorKind>,
}

impl Status<'_> {
    /// The detail of a failed status, for the first error of its kind (`UNAVAILABLE: down`).
    pub fn detail(&self) -> String {
        format!("{}: {}", self.tally.code_name(self.code), self.message)
    }
}

/// What a request's protocol tells besides its [`Outcome`](super::Outcome) (see the module's
/// documentation); borrowed from its session until the next request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras<'a> {
    /// Events counted by tally.
    pub events: Events,
    /// The status a protocol gave a complete response besides its own.
    pub status: Option<Status<'a>>,
    /// Values of a phase that are not the request's own timing (nanoseconds; empty when
    /// none): they belong to its connection, so a failed request's count too.
    pub values: Option<(Phase, &'a [u64])>,
}

impl Extras<'_> {
    /// The kind of error a complete response counts as by its protocol's status, if any.
    #[inline]
    pub fn failed(&self) -> Option<ErrorKind> {
        self.status.and_then(|s| s.failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_keep_their_order_and_stop_at_the_first_empty_slot() {
        let mut e = Events::default();
        assert_eq!(e.iter().count(), 0);
        e.push(Tally::WsClose, 1006);
        e.push(Tally::WsUnmatched, 2);
        let got: Vec<_> = e.iter().map(|e| (e.tally, e.value)).collect();
        assert_eq!(got, [(Tally::WsClose, 1006), (Tally::WsUnmatched, 2)]);
    }

    #[test]
    fn every_tally_is_at_its_index_and_names_its_codes() {
        for (i, t) in Tally::ALL.iter().enumerate() {
            assert_eq!(t.index(), i);
        }
        assert_eq!(Tally::Reset.code_name(7), "REFUSED_STREAM");
        assert_eq!(Tally::Reset.code_name(0x99), "0x99");
        assert_eq!(Tally::Grpc.code_name(14), "UNAVAILABLE");
        assert_eq!(Tally::WsClose.code_name(1006), "abnormal");
        assert_eq!(Tally::WsDeflate.code_name(1), "agreed");
        let s = Status {
            tally: Tally::Grpc,
            code: 14,
            message: "down",
            failed: Some(ErrorKind::Grpc),
        };
        assert_eq!(s.detail(), "UNAVAILABLE: down");
    }
}
