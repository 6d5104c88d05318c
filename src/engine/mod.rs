//! Sending requests: [`connect`] opens TCP and TLS connections with timestamps, [`http1`]
//! drives HTTP/1.1 exchanges over them, and a [`Session`] is one connection slot of a worker
//! applying the connection policy (keep-alive, reconnect after `Connection: close` or an
//! error) and the per-request timeout. Errors come back as values with a kind, never panics.

pub mod connect;
pub mod http1;

use crate::model::{ErrorKind, RunPlan, Timestamps};
use crate::target::RequestTemplate;
use connect::Connector;
use http1::Http1Conn;
use std::rc::Rc;
use std::time::Duration;

/// A failed request: its kind (for counting) and a human detail (for the first of a kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineError {
    pub kind: ErrorKind,
    pub detail: String,
}

impl EngineError {
    pub fn new(kind: ErrorKind, detail: String) -> Self {
        EngineError { kind, detail }
    }

    /// An I/O error during `what`; resets and broken pipes keep their OS wording.
    pub fn io(kind: ErrorKind, what: String, e: &std::io::Error) -> Self {
        let text = e.to_string();
        let text = match text.find(" (os error") {
            Some(i) => &text[..i],
            None => &text,
        };
        EngineError {
            kind,
            detail: format!("{what}: {text}"),
        }
    }
}

/// What one request gave.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub result: Result<u16, EngineError>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// The server closed the connection after a complete response.
    pub server_closed: bool,
}

/// What every session of a run shares.
#[derive(Clone)]
pub struct SessionConfig {
    pub connector: Connector,
    pub template: RequestTemplate,
    pub timeout: Duration,
    pub max_header_bytes: usize,
}

impl SessionConfig {
    /// The shared settings of `plan`'s HTTP/1.1 sessions.
    pub fn http1(plan: &RunPlan) -> Result<Self, String> {
        Ok(SessionConfig {
            connector: Connector::new(plan, &[b"http/1.1"])?,
            template: RequestTemplate::http1(plan),
            timeout: plan.timeout,
            max_header_bytes: plan.max_header_bytes,
        })
    }
}

/// One connection slot: keeps a connection open across requests and reopens it as needed.
pub struct Session {
    config: Rc<SessionConfig>,
    conn: Option<Http1Conn>,
}

impl Session {
    pub fn new(config: Rc<SessionConfig>) -> Self {
        Session { config, conn: None }
    }

    /// Sends one request, opening a connection first if none is open, within the timeout.
    pub async fn request(&mut self, stamps: &mut Timestamps) -> Outcome {
        let timeout = self.config.timeout;
        // The deadline is derived from the dispatch stamp: no extra clock read per request.
        let deadline = stamps.dispatched + timeout;
        let result = tokio::time::timeout_at(deadline.into(), self.exchange(stamps)).await;
        let request_bytes = self.config.template.bytes().len() as u64;
        match result {
            Ok(Ok(response)) => {
                let server_closed = !response.keep_alive;
                if server_closed {
                    self.conn = None;
                }
                Outcome {
                    result: Ok(response.status),
                    bytes_read: response.bytes_read,
                    bytes_written: request_bytes,
                    server_closed,
                }
            }
            Ok(Err(e)) => {
                self.conn = None;
                Outcome {
                    bytes_written: if stamps.written.is_some() {
                        request_bytes
                    } else {
                        0
                    },
                    result: Err(e),
                    bytes_read: 0,
                    server_closed: false,
                }
            }
            Err(_) => {
                self.conn = None;
                Outcome {
                    bytes_written: if stamps.written.is_some() {
                        request_bytes
                    } else {
                        0
                    },
                    result: Err(EngineError::new(
                        ErrorKind::Timeout,
                        format!("no complete response within {timeout:?}"),
                    )),
                    bytes_read: 0,
                    server_closed: false,
                }
            }
        }
    }

    async fn exchange(&mut self, stamps: &mut Timestamps) -> Result<http1::Response, EngineError> {
        let config = &*self.config;
        if self.conn.is_none() {
            let stream = config.connector.connect(stamps).await?;
            self.conn = Some(Http1Conn::new(stream));
        }
        let conn = self.conn.as_mut().expect("connection opened above");
        conn.exchange(
            config.template.bytes(),
            config.template.head,
            config.max_header_bytes,
            stamps,
        )
        .await
    }
}
