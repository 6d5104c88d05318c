//! The agent's ring of the kernel's events, as the agent serves it: fed by the probes from
//! their attach on (its count of events let go afresh for each run), and read by `POST /events?run=ID` (its body
//! read into [`EVENTS_MAX`] bytes at most) for the requests that run keeps or logs.

use super::{param, AgentProbes, Answer, Shared, Slot, EVENTS_MAX};
use crate::recorder::join::remote::Ask;
use http::{Request, StatusCode};
use hyper::body::Incoming;
use std::sync::Arc;

impl<P: AgentProbes> Shared<P> {
    /// Probes attached: their events into the ring.
    pub(super) fn feed(&self, probes: &mut P) {
        let ring = self.ring.clone();
        probes.feed(Arc::new(move |events| {
            ring.lock().unwrap_or_else(|e| e.into_inner()).push(events)
        }));
    }

    /// `POST /events?run=ID`: the events of the requests asked for in `body`, from the ring,
    /// while run ID is open.
    fn events(&self, query: &str, body: &[u8]) -> Answer {
        let bad = |why: String| (StatusCode::BAD_REQUEST, why);
        let Some(id) = param(query, "run") else {
            return bad("run=ID (of /begin)".into());
        };
        match &*self.slot() {
            Slot::Open(_, run) if run.id == id => {}
            Slot::Open(_, run) => {
                let why = format!("run {id} is not the one open here ({})", run.described());
                return (StatusCode::CONFLICT, why);
            }
            _ => return (StatusCode::CONFLICT, format!("run {id} is not open here")),
        }
        let Ok(text) = std::str::from_utf8(body) else {
            return bad("the body is not text: one ask a line".into());
        };
        let asks = match Ask::parse_all(text, EVENTS_MAX / 12) {
            Ok(a) => a,
            Err(why) => return bad(why),
        };
        let pulled = self
            .ring
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answer(&asks);
        (
            StatusCode::OK,
            serde_json::to_string(&pulled).unwrap_or_default(),
        )
    }
}

/// `POST /events?run=ID`: its body read (bounded), then answered.
pub(super) async fn post<P: AgentProbes>(
    req: Request<Incoming>,
    query: &str,
    shared: &Shared<P>,
) -> Answer {
    use http_body_util::BodyExt;
    let limited = http_body_util::Limited::new(req.into_body(), EVENTS_MAX);
    match limited.collect().await {
        Ok(body) => shared.events(query, &body.to_bytes()),
        Err(_) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a body of {EVENTS_MAX} bytes at most: ask for fewer requests at once"),
        ),
    }
}
