//! The shared types of the pipeline: the [`Ticket`] a worker must send, the raw [`Timestamps`]
//! of one request and the [`Sample`] it becomes, the [`Phase`]s derived from those timestamps
//! (in one place: [`Timestamps::durations`]), the [`ErrorKind`]s errors are counted by, and
//! where a request's bytes lay on its connection ([`Wire`]).
//! Modules talk to each other only through these and the validated
//! [`RunPlan`](crate::plan::RunPlan) built from them.

/// Display, Serialize and Deserialize by name for an enum of the record with `name()`,
/// `from_name()` and `ALL` (`$what` names the kind in messages): written as its name, read
/// from it; a name this version does not know is refused in one line naming the known ones.
macro_rules! by_name {
    ($t:ty, $what:literal) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <String as serde::Deserialize>::deserialize(d)?;
                <$t>::from_name(&name).ok_or_else(|| {
                    let known: Vec<&str> = <$t>::ALL.iter().map(|v| v.name()).collect();
                    <D::Error as serde::de::Error>::custom(format!(
                        "unknown {} '{name}' (this reqlife knows {}): written by a newer reqlife? upgrade reqlife",
                        $what,
                        known.join(", ")
                    ))
                })
            }
        }
    };
}

mod error;
pub mod load_spec;
mod phase;
mod protocol;
mod reconnect;
mod stamps;
mod stop;
mod target;
pub mod trace;
pub mod until;
mod window_end;
mod wire;

pub use error::ModelError;
pub use phase::{phase_map, Phase};
pub use protocol::Protocol;
pub use reconnect::{Reconnect, RECONNECT_FIRST, RECONNECT_MOST};
pub use stamps::Timestamps;
pub use stop::StopReason;
pub use target::{split_url, Scheme, Target, TlsPlan};
pub use window_end::WindowEnd;
pub use wire::Wire;

use std::time::{Duration, Instant};

/// Why a request failed. Errors are counted by kind, never thrown out of the hot loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The TCP connection could not be opened (refused, unreachable).
    Connect,
    /// The TLS handshake failed (bad certificate, protocol mismatch).
    Tls,
    /// Writing the request failed.
    Write,
    /// Reading the response failed with an I/O error (e.g. a reset).
    Read,
    /// The request did not complete within `--timeout`.
    Timeout,
    /// The server answered something that is not valid HTTP (or over our limits).
    Protocol,
    /// The server closed the connection before the response was complete.
    Closed,
    /// No local port was free for a new connection (`EADDRNOTAVAIL`).
    AddrNotAvail,
    /// HTTP/2: the server reset the stream (RST_STREAM; counted by code too).
    Reset,
    /// gRPC: the call ended with a status other than OK (counted by code too).
    Grpc,
}

impl ErrorKind {
    /// Every kind, in report order.
    pub const ALL: [ErrorKind; 10] = [
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Write,
        ErrorKind::Read,
        ErrorKind::Timeout,
        ErrorKind::Protocol,
        ErrorKind::Closed,
        ErrorKind::AddrNotAvail,
        ErrorKind::Reset,
        ErrorKind::Grpc,
    ];

    /// The name used in reports and in the RunRecord's JSON.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::Write => "write",
            ErrorKind::Read => "read",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Closed => "closed",
            ErrorKind::AddrNotAvail => "addr_not_avail",
            ErrorKind::Reset => "reset",
            ErrorKind::Grpc => "grpc",
        }
    }

    /// Index into per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The OS's reason for an I/O error, without Rust's " (os error N)" suffix: the wording of
/// every message about an I/O failure.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// What a worker must send and when it should have gone.
#[derive(Debug, Clone, Copy)]
pub struct Ticket {
    /// Sequence number of the request within the run (0-based, unique across threads).
    pub seq: u64,
    /// The intended send time. Latency is measured from here.
    pub intended: Instant,
    /// When the scheduler let it go (≥ intended; equal in a closed loop).
    pub released: Instant,
}

/// What counts as an event of a streamed response (`--stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventMode {
    /// Server-Sent Events (the HTML standard's event-stream format): an event is dispatched by
    /// an empty line after at least one `data` field.
    Sse,
    /// Transport units: an HTTP/1.1 chunk, an HTTP/2 DATA frame (a read, for a body that is
    /// not chunked).
    Chunks,
    /// Lines ending with LF (NDJSON, JSON lines); an unterminated last line counts too.
    Lines,
    /// WebSocket: the data messages the server pushes after the request's message (a
    /// subscription), each an event.
    Messages,
}

impl EventMode {
    /// The mode's name as `--stream` takes it and the record writes it: `sse`, `chunks`,
    /// `lines` or `messages`.
    pub fn name(self) -> &'static str {
        match self {
            EventMode::Sse => "sse",
            EventMode::Chunks => "chunks",
            EventMode::Lines => "lines",
            EventMode::Messages => "messages",
        }
    }
}

/// What became of one request: its stamps and either a response or an error.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// The instants stamped on the request, from its intended send time to its end.
    pub stamps: Timestamps,
    /// The HTTP status of a complete response.
    pub status: Option<u16>,
    /// Why it failed, if it did.
    pub error: Option<ErrorKind>,
    /// Response bytes read (head and body, as received; HTTP/2: this request's share of the
    /// connection's frames).
    pub bytes_read: u64,
    /// Request bytes written.
    pub bytes_written: u64,
    /// The response's header and body bytes, as sent and decoded.
    pub traffic: Traffic,
    /// The server asked to close the connection after this response (`Connection: close`).
    pub server_closed: bool,
    /// The name slot of the request sent (`Workload::slot`; 0 for the one fixed request).
    pub request: u16,
    /// The connection slot that carried it (0-based over the run's connections; a slot keeps
    /// its number when it reconnects).
    pub connection: u32,
    /// Its trace context, when the run sends one (`--trace-context`).
    pub trace: Option<trace::TraceId>,
    /// Where its bytes lay on its TCP connection (port 0: not known).
    pub wire: Wire,
}

#[cfg(test)]
impl Sample {
    /// A unit test's sample of a complete response with `stamps`: status 200, 100 bytes read,
    /// 40 written, no traffic figures, the connection kept, the one fixed request. A test
    /// changes what it needs with struct update syntax (`Sample { bytes_read: 120,
    /// ..Sample::ok(stamps) }`); `tests/common`'s `ok_sample` is the same for the integration
    /// tests.
    pub(crate) fn ok(stamps: Timestamps) -> Sample {
        Sample {
            stamps,
            status: Some(200),
            error: None,
            bytes_read: 100,
            bytes_written: 40,
            traffic: Traffic::default(),
            server_closed: false,
            request: 0,
            connection: 0,
            trace: None,
            wire: Wire::default(),
        }
    }

    /// This sample failed with `kind`: no status, nothing read.
    pub(crate) fn failed(self, kind: ErrorKind) -> Sample {
        Sample {
            status: None,
            error: Some(kind),
            bytes_read: 0,
            ..self
        }
    }
}

/// What a response's bytes were made of (h2load's traffic line): header bytes as received
/// (HTTP/2: HPACK-compressed HEADERS and CONTINUATION payloads; HTTP/1.1: the head) and as
/// decoded (HTTP/2: the length of every field's name and value, h2load's measure; HTTP/1.1:
/// the head again), body bytes as received (content, without chunk framing) and as decoded
/// (with `--compressed`; else the same).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Header bytes as sent on the wire (HTTP/2: HPACK-compressed; HTTP/1.1: the head).
    pub header: u64,
    /// Header bytes as decoded (HTTP/2: every field's name and value; HTTP/1.1: the head).
    pub header_decoded: u64,
    /// Body bytes as received, without chunk framing.
    pub body: u64,
    /// Body bytes after decoding (`--compressed`); else the same as `body`.
    pub body_decoded: u64,
}

impl Traffic {
    /// Adds another response's traffic.
    pub fn add(&mut self, o: &Traffic) {
        self.header += o.header;
        self.header_decoded += o.header_decoded;
        self.body += o.body;
        self.body_decoded += o.body_decoded;
    }
}

/// When a run stops sending.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StopRule {
    /// After this much recorded time (warm-up not included).
    Duration(Duration),
    /// After this many recorded requests.
    Requests(u64),
}

/// One stage of an open-loop schedule: the rate goes linearly from `from_rps` to `to_rps`
/// over `duration` (a hold when they are equal).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateStage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// The rate at the stage's start, in requests per second.
    pub from_rps: f64,
    /// The rate at the stage's end, in requests per second.
    pub to_rps: f64,
}

/// When requests are due in an open loop (the maths is in `load::pacer`).
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// A fixed rate in requests per second, across all connections and threads.
    Constant {
        /// Requests per second, greater than 0.
        rate: f64,
    },
    /// Stages of ramps and holds, one after another.
    Stages(Vec<RateStage>),
}

/// One stage of a closed loop with a varying number of connections: from `from` to `to`
/// connections, linearly over `duration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnStage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// Active connections at the stage's start.
    pub from: usize,
    /// Active connections at the stage's end.
    pub to: usize,
}

/// Arrival process of an open loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// Evenly spaced at the schedule's due times.
    Constant,
    /// Exponential gaps with the schedule's mean rate.
    Poisson,
}

impl Arrival {
    /// The name in records and reports (`constant`, `poisson`).
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

/// The shape of the load.
#[derive(Debug, Clone, PartialEq)]
pub enum LoadModel {
    /// Each connection sends its next request as soon as the previous one is answered.
    Closed {
        /// The number of connections, each with one request in flight.
        connections: usize,
    },
    /// Requests are due on a schedule whether or not earlier ones were answered; a request
    /// due while all `connections` are busy waits for one, and its wait counts (`queue`).
    Open {
        /// When requests are due.
        schedule: Schedule,
        /// How due times are spaced around the schedule's rate (evenly, or Poisson).
        arrival: Arrival,
        /// The connections that send the due requests.
        connections: usize,
    },
    /// A closed loop whose number of active connections follows stages (ramps and holds).
    ClosedStages(Vec<ConnStage>),
    /// Fire `size` requests at once, wait for all the answers, pause `interval`, repeat
    /// (`bursts` times, or until the duration ends).
    Burst {
        /// Requests per burst, all sent at once.
        size: usize,
        /// The pause after a burst's last answer before the next burst.
        interval: Duration,
        /// How many bursts to send; `None`: until the duration ends.
        bursts: Option<u64>,
    },
}

impl LoadModel {
    /// Its kind, as records and reports name it.
    pub fn kind(&self) -> LoadKind {
        match self {
            LoadModel::Closed { .. } | LoadModel::ClosedStages(_) => LoadKind::Closed,
            LoadModel::Open { .. } => LoadKind::Open,
            LoadModel::Burst { .. } => LoadKind::Burst,
        }
    }
}

/// The kind of a run's load, as a RunRecord's `config.load_model` names it: what reports ask
/// of a record (is the queue phase the scheduler's? are there due times?) without its details.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadKind {
    /// A closed loop (with or without connection stages).
    Closed,
    /// An open loop: requests due on a schedule.
    Open,
    /// Bursts of requests fired at once.
    Burst,
}

impl LoadKind {
    /// Every kind.
    pub const ALL: [LoadKind; 3] = [LoadKind::Closed, LoadKind::Open, LoadKind::Burst];

    /// The name in records and reports: `closed`, `open` or `burst`.
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Closed => "closed",
            LoadKind::Open => "open",
            LoadKind::Burst => "burst",
        }
    }

    /// The kind named `name`, if any.
    pub fn from_name(name: &str) -> Option<LoadKind> {
        LoadKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

by_name!(LoadKind, "load model");

/// This process's share of a plan run by several generators (`--segment i/n`): request `k` of
/// the whole plan (its k-th due time, its k-th sequence number) belongs to segment `k mod n`,
/// so the segments interleave and together follow the whole plan exactly; a count `N` (of
/// connections or requests) splits as `N/n`, plus one for the first `N mod n` segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// 0-based.
    pub index: u64,
    /// The number of segments the plan is split into (`n`, at least 1).
    pub count: u64,
}

impl Segment {
    /// Parses `--segment i/n`: this process's part `i` (1-based) of `n`.
    pub fn parse(input: &str) -> Result<Segment, ModelError> {
        let bad = |why: &str| {
            ModelError::Segment(format!(
                "invalid segment '{input}': {why}; expected i/n with 1 <= i <= n (e.g. 2/3)"
            ))
        };
        let (i, n) = input.trim().split_once('/').ok_or_else(|| bad("no '/'"))?;
        let i: u64 = i
            .trim()
            .parse()
            .map_err(|_| bad("i is not a whole number"))?;
        let n: u64 = n
            .trim()
            .parse()
            .map_err(|_| bad("n is not a whole number"))?;
        if n == 0 || i == 0 || i > n {
            return Err(bad("i must be from 1 to n"));
        }
        Ok(Segment {
            index: i - 1,
            count: n,
        })
    }

    /// The whole plan: one segment.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    /// This segment's share of `total` items (they add up to `total` over the segments).
    pub fn share(&self, total: u64) -> u64 {
        total / self.count + u64::from(self.index < total % self.count)
    }

    /// The whole plan's number of this segment's `k`-th item (0-based).
    pub fn global(&self, k: u64) -> u64 {
        k * self.count + self.index
    }
}

#[cfg(test)]
pub(crate) mod tests;
