//! A [`Session`]: one connection slot of a worker, applying the connection policy
//! (keep-alive, reconnect after `Connection: close` or an error) and the per-request timeout
//! over its [`Channel`]: the connection state of the one protocol the run speaks, whose
//! methods the session calls without naming the protocol ([`super::protocol`]). Each
//! protocol's exchange gives its own response type, an [`Answer`] to the session, which
//! makes it the protocol-neutral [`Outcome`] the recorder takes.

use super::channel::{Answer, Kept};
use super::events::EventTracker;
use super::extras::{Extras, Tally};
use super::protocol::{each_channel, Channel, Connection};
use super::{arrival, deadline, decode};
use super::{ConnectGate, EngineError, Outcome, Send, SessionConfig};
use crate::model::trace::{TraceHeaders, TraceId};
use crate::model::{ErrorKind, Timestamps, Traffic};
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Pause after a connect failed for want of a local port, so a run that exhausted the
/// ephemeral ports keeps going without spinning on the same error.
const ADDR_NOT_AVAIL_BACKOFF: Duration = Duration::from_millis(10);

/// One connection slot: keeps a connection open across requests and reopens it as needed.
pub struct Session {
    pub(super) config: Rc<SessionConfig>,
    pub(super) gate: Option<Rc<ConnectGate>>,
    pub(super) channel: Channel,
    pub(super) kept: Kept,
    /// The requests' timeout ([`deadline`]): armed once, moved when it fires.
    timer: deadline::Timer,
    /// `--trace-context`: the ids of the next request (set by the load before each send).
    trace: Option<TraceId>,
}

impl Session {
    /// The first session of a new connection slot (HTTP/2 and HTTP/3: with a new link, which
    /// its [`Session::sibling`]s share).
    pub fn new(config: Rc<SessionConfig>, gate: Option<Rc<ConnectGate>>) -> Self {
        let channel = Channel::new(&config.wire, config.max_body_bytes);
        Session::with_channel(config, gate, channel)
    }

    /// The `n` sessions of a new connection slot: over HTTP/2 and HTTP/3, streams of one
    /// connection (the other protocols' slots have one session).
    pub fn slot(
        config: &Rc<SessionConfig>,
        gate: &Option<Rc<ConnectGate>>,
        n: usize,
    ) -> Vec<Session> {
        let first = Session::new(config.clone(), gate.clone());
        let mut sessions = Vec::with_capacity(n.max(1));
        for _ in 1..n {
            sessions.push(first.sibling());
        }
        sessions.insert(0, first);
        sessions
    }

    /// Another session of this one's connection slot: over HTTP/2 and HTTP/3 a stream of the
    /// same connection, else one with its own.
    pub fn sibling(&self) -> Self {
        Session::with_channel(
            self.config.clone(),
            self.gate.clone(),
            self.channel.sibling(self.config.max_body_bytes),
        )
    }

    fn with_channel(
        config: Rc<SessionConfig>,
        gate: Option<Rc<ConnectGate>>,
        channel: Channel,
    ) -> Self {
        Session {
            gate,
            channel,
            kept: Kept {
                timing: Vec::new(),
                decoder: config.decode_max_bytes.map(decode::BodyDecoder::new),
                stream: EventTracker::new(config.stream, config.max_body_bytes),
            },
            timer: None,
            trace: None,
            config,
        }
    }

    /// The trace ids the next request carries (`--trace-context`; `None` sends none).
    #[inline]
    pub fn trace_next(&mut self, id: Option<TraceId>) {
        self.trace = id;
    }

    /// What every session of the run shares.
    pub fn config(&self) -> &SessionConfig {
        &self.config
    }

    /// The fixed request pipelined batches are made of, and whether its method is HEAD:
    /// HTTP/1.1's request, or a WebSocket's message; `None` for the other protocols, which do
    /// not pipeline.
    pub fn pipelined_request(&self) -> Option<(&[u8], bool)> {
        self.channel.pipelined_request()
    }

    /// The `Server-Timing` values of the last complete response (headers and trailers).
    pub fn server_timing(&self) -> &[u8] {
        &self.kept.timing
    }

    /// The gaps between the events of the last response, in nanoseconds (empty unless it was
    /// a tracked stream).
    pub fn event_gaps(&self) -> &[u64] {
        self.kept.stream.gaps()
    }

    /// What the last request's protocol told besides its `outcome` ([`Extras`]): the events
    /// it counted (an HTTP/2 stream's reset code among them; a WebSocket connection's are
    /// taken, told once), a gRPC call's status and a WebSocket connection's pings, borrowed
    /// until the next request. Ask once per outcome.
    pub fn extras(&self, outcome: &Outcome) -> Extras<'_> {
        let mut extras = Extras {
            events: outcome.events,
            ..Extras::default()
        };
        if let Err(EngineError {
            code: Some(code), ..
        }) = &outcome.result
        {
            extras.events.push(Tally::Reset, u64::from(*code));
        }
        self.channel.extras(outcome.result.is_ok(), &mut extras);
        extras
    }

    /// Opens this session's connection ahead of its first request, within the timeout,
    /// stamping connect (and TLS) on `stamps`: an open loop's schedule starts once its
    /// connections are open. The sessions of an HTTP/2 link share its connection: call this on
    /// one of them.
    pub async fn open(&mut self, stamps: &mut Timestamps) -> Result<(), EngineError> {
        if let Some(gate) = &self.gate {
            let now = Instant::now();
            let slot = gate.reserve(now);
            if slot > now {
                tokio::time::sleep_until(slot.into()).await;
            }
        }
        let timeout = self.config.timeout;
        let _awake = arrival::awake::Needed::new();
        let opening = self.channel.open(&self.config, stamps);
        match tokio::time::timeout(timeout, opening).await {
            Ok(r) => r,
            Err(_) => Err(EngineError::new(
                ErrorKind::Timeout,
                format!("no connection within {timeout:?}"),
            )),
        }
    }

    /// Sends one request, opening a connection first if none is open, within the timeout.
    pub async fn request(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        if !self.channel.is_open() {
            if let Some(gate) = &self.gate {
                // Waiting for a connect slot happens before dispatch: it shows as queue.
                let slot = gate.reserve(stamps.dispatched);
                if slot > stamps.dispatched {
                    tokio::time::sleep_until(slot.into()).await;
                    stamps.dispatched = Instant::now();
                }
            }
        }
        let outcome = self.request_now(stamps, send).await;
        // A WebSocket subscription's close handshake, after its stamps: in no request's time.
        self.channel.settle(self.config.timeout).await;
        if !self.config.keepalive {
            self.channel.close();
            // HTTP/2 (one stream per connection then) and HTTP/3: the next request connects
            // anew (an HTTP/3 stream of this connection still in flight finishes on it).
            self.channel.reset_link();
        }
        if let Err(e) = &outcome.result {
            if e.kind == ErrorKind::AddrNotAvail {
                tokio::time::sleep(ADDR_NOT_AVAIL_BACKOFF).await;
            }
        }
        outcome
    }

    async fn request_now(&mut self, stamps: &mut Timestamps, send: Send<'_>) -> Outcome {
        let timeout = self.config.timeout;
        // The deadline is derived from the dispatch stamp: no extra clock read per request.
        let deadline = stamps.dispatched + timeout;
        let _awake = self.needs_thread_awake().then(arrival::awake::Needed::new);
        self.kept.stream.idle();
        let mut timer = self.timer.take();
        let (config, kept) = (&*self.config, &mut self.kept);
        let trace = match (&self.trace, &config.trace) {
            (Some(id), Some(ctx)) => Some(TraceHeaders::new(ctx, id)),
            _ => None,
        };
        // One arm per protocol, each its own exchange within the deadline: no future around
        // the exchange's but the deadline's.
        let result = each_channel!(&mut self.channel, c => {
            let exchange = std::pin::pin!(c.exchange(config, kept, trace, stamps, send));
            deadline::within(&mut timer, deadline, exchange).await
        });
        self.timer = timer;
        // A streamed response's events, also of one cut short by the timeout.
        if let Some((first, events)) = self.kept.stream.stamps() {
            stamps.first_event = first;
            stamps.events = Some(events);
        }
        let error = match result {
            Some(Ok(answer)) => return self.answered(answer),
            Some(Err(e)) => e,
            None => EngineError::new(
                ErrorKind::Timeout,
                format!("no complete response within {timeout:?}"),
            ),
        };
        let (bytes_read, wire_written) = self.channel.read_of_failed();
        self.channel.close();
        Outcome {
            bytes_written: match wire_written {
                Some(n) => n,
                None if stamps.written.is_some() => self.channel.request_bytes(send),
                None => 0,
            },
            result: Err(error),
            bytes_read,
            traffic: Traffic::default(),
            server_closed: false,
            events: Default::default(),
            wire: crate::model::Wire::default(),
        }
    }

    /// The outcome of a complete response.
    fn answered(&mut self, answer: Answer) -> Outcome {
        // With keep-alive off the close is ours, not the server's.
        let server_closed = (!answer.keep_alive && self.config.keepalive) || answer.found_closed;
        if !answer.keep_alive {
            self.channel.close();
        }
        self.channel.answered(answer.status);
        Outcome {
            result: Ok(answer.status),
            bytes_read: answer.bytes_read,
            bytes_written: answer.bytes_written,
            traffic: answer.traffic,
            server_closed,
            events: answer.events,
            wire: answer.wire,
        }
    }

    /// Whether this request's phases are timed by the clock when the thread notices them, so
    /// its thread must not sleep through them: all but an HTTP/1.1 exchange over plain TCP
    /// without `--compressed` or `--stream`, or a `ws://` message alone (no TLS, HTTP/2,
    /// subscription, pings, deflate or batch), whose bytes the kernel stamps ([`arrival`]; its
    /// connect or upgrade, if it opens one, keeps the thread awake by itself).
    pub(super) fn needs_thread_awake(&self) -> bool {
        !self.channel.stamped(&self.config, &self.kept)
    }
}
