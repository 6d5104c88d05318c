//! How a WebSocket connection ends, as the record counts it (`ws_closes`): by the server's close
//! frame (its status code; RFC 6455's 1005 when it had none), without a close frame (an EOF or a
//! reset: 1006, RFC 6455's "abnormal closure"), or by the client's own close handshake at a
//! subscription's end (answered by the server's close frame, or not within `--timeout`). A
//! server's close frame is answered with one echoing its code before the connection is dropped.

use super::frame::{self, Step};
use super::WsConn;
use crate::engine::EngineError;
use crate::model::ErrorKind;
use std::time::Duration;

/// A close frame without a status code (RFC 6455, 7.4.1: "No Status Rcvd").
pub const NO_CODE: u32 = 1005;
/// The connection ended without a close frame: an EOF or a reset (RFC 6455's 1006).
pub const ABNORMAL: u32 = 1006;
/// Our close handshake (a subscription's end), answered by the server's close frame.
pub const CLIENT: u32 = 0x1_0000;
/// Our close handshake, not answered by a close frame within `--timeout`.
pub const CLIENT_UNANSWERED: u32 = 0x1_0001;

/// The record's name of a close kind: the server's status code (`1000`, `4001`), `no_code`,
/// `abnormal`, `client` or `client_unanswered`.
pub fn name(kind: u32) -> String {
    match kind {
        NO_CODE => "no_code".into(),
        ABNORMAL => "abnormal".into(),
        CLIENT => "client".into(),
        CLIENT_UNANSWERED => "client_unanswered".into(),
        code => code.to_string(),
    }
}

/// What a close kind's record name means, for the text report (`1001 (going away)`).
pub fn meaning(name: &str) -> Option<&'static str> {
    Some(match name {
        "1000" => "normal",
        "1001" => "going away",
        "1002" => "protocol error",
        "1003" => "unsupported data",
        "1007" => "invalid data",
        "1008" => "policy violation",
        "1009" => "message too big",
        "1011" => "server error",
        "1012" => "service restart",
        "1013" => "try again later",
        "no_code" => "a close frame without a code",
        "abnormal" => "no close frame",
        "client" => "the client's close, answered",
        "client_unanswered" => "the client's close, not answered",
        _ => return None,
    })
}

impl WsConn {
    /// The server's close frame `step` came `when` (e.g. "before the reply message"): the
    /// error it is, its code noted, the close answered (at best: an error writing is ignored,
    /// the connection is dropped anyway).
    pub(super) async fn closed_by_server(&mut self, step: Step, when: &str) -> EngineError {
        let code = match step {
            Step::Close(code) => code,
            _ => None,
        };
        self.ended = Some(code.map_or(NO_CODE, u32::from));
        let payload = code.map(u16::to_be_bytes);
        let _ = self
            .send_control(frame::CLOSE, payload.as_ref().map_or(&[][..], |p| &p[..]))
            .await;
        let code = code.map_or("no code".to_string(), |c| format!("code {c}"));
        EngineError::new(
            ErrorKind::Closed,
            format!("the server closed the WebSocket ({code}) {when}"),
        )
    }

    /// Starts our close handshake (code 1000): the frame goes now, the server's answer is
    /// awaited by [`WsConn::finish_close`].
    pub(super) async fn start_close(&mut self) -> Result<(), EngineError> {
        self.send_control(frame::CLOSE, &1000u16.to_be_bytes())
            .await?;
        self.closing = true;
        Ok(())
    }

    /// Ends our close handshake, if one was started: reads (and drops) what the server still
    /// sends until its close frame, within `bound`, then drops the connection; the kind
    /// ([`CLIENT`], [`CLIENT_UNANSWERED`]) noted.
    pub async fn finish_close(&mut self, bound: Duration) {
        if !std::mem::take(&mut self.closing) || self.stream.is_none() {
            return;
        }
        let answered = tokio::time::timeout(bound, self.await_close())
            .await
            .unwrap_or(false);
        self.ended = Some(if answered { CLIENT } else { CLIENT_UNANSWERED });
        self.stream = None;
    }

    /// Reads until the server's close frame (`true`), or the end of the connection or a
    /// broken frame (`false`).
    async fn await_close(&mut self) -> bool {
        use tokio::io::AsyncReadExt;
        let Some(socket) = self.stream.as_mut() else {
            return false;
        };
        loop {
            if self.at == self.end {
                match socket.read(&mut self.buf).await {
                    Ok(0) | Err(_) => return false,
                    Ok(n) => (self.at, self.end) = (0, n),
                }
            }
            let (used, step) = self.reader.feed(&self.buf[self.at..self.end]);
            self.at += used;
            match step {
                Ok(Step::Close(_)) => return true,
                Ok(_) => {}
                Err(_) => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_kinds_have_names_and_meanings() {
        for (kind, want, meaning_part) in [
            (1000, "1000", "normal"),
            (1001, "1001", "going away"),
            (NO_CODE, "no_code", "without a code"),
            (ABNORMAL, "abnormal", "no close frame"),
            (CLIENT, "client", "answered"),
            (CLIENT_UNANSWERED, "client_unanswered", "not answered"),
        ] {
            assert_eq!(name(kind), want);
            assert!(meaning(want).unwrap().contains(meaning_part), "{want}");
        }
        assert_eq!(name(4001), "4001");
        assert_eq!(meaning("4001"), None);
    }
}
