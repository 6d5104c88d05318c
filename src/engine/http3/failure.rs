//! What HTTP/3's and QUIC's errors mean for a run: a failed stream's error and whether the
//! connection is gone or the request unprocessed ([`of_stream`]), a connection's error by kind
//! ([`of_connection`], [`of_h3_connection`]), and the names of the HTTP/3 error codes
//! ([`code_name`]).

use crate::engine::cause::Cause;
use crate::engine::EngineError;
use crate::model::ErrorKind;

/// What a failed stream means: its error, whether the connection is gone, and whether the
/// server never processed the request (so sending it again is safe).
pub(super) struct Failure {
    /// The stream's error.
    pub(super) error: EngineError,
    /// Whether the connection is gone with it.
    pub(super) connection: bool,
    /// Whether the server never processed the request.
    pub(super) unprocessed: bool,
}

/// HTTP/3 error codes (RFC 9114, section 8.1).
const H3_REQUEST_REJECTED: u64 = 0x10b;

/// The failure of an h3 stream error.
pub(super) fn of_stream(e: &h3::error::StreamError) -> Failure {
    use h3::error::StreamError as S;
    let failure = |error, connection, unprocessed| Failure {
        error,
        connection,
        unprocessed,
    };
    match e {
        S::RemoteTerminate { code, .. } => {
            let code = code.value();
            failure(reset(code), false, code == H3_REQUEST_REJECTED)
        }
        S::ConnectionError { 0: c, .. } => failure(of_h3_connection(c), true, false),
        S::RemoteClosing { .. } => failure(
            EngineError::new(
                ErrorKind::Closed,
                "HTTP/3 stream: the server is closing the connection (GOAWAY)".into(),
            ),
            true,
            true,
        ),
        S::HeaderTooBig {
            actual_size,
            max_size,
            ..
        } => failure(
            EngineError::new(
                ErrorKind::Protocol,
                format!("HTTP/3 stream: a field section of {actual_size} bytes, over the --max-header-list limit of {max_size} (raise it for larger heads)"),
            ),
            false,
            false,
        ),
        S::StreamError { .. } => failure(
            EngineError::new(ErrorKind::Protocol, format!("HTTP/3 stream: {e}")),
            false,
            false,
        ),
        _ => failure(
            EngineError::new(ErrorKind::Read, format!("HTTP/3 stream: {e}")),
            true,
            false,
        ),
    }
}

/// A stream the server reset with `code`: `reset`, counted by code.
pub(super) fn reset(code: u64) -> EngineError {
    let mut e = EngineError::new(
        ErrorKind::Reset,
        format!("HTTP/3 stream: reset by the server ({})", code_name(code)),
    );
    e.code = u32::try_from(code).ok();
    e
}

/// The name of an HTTP/3 error code (RFC 9114, section 8.1), or its hex value.
pub fn code_name(code: u64) -> String {
    const NAMES: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    code.checked_sub(0x100)
        .and_then(|i| NAMES.get(i as usize))
        .map_or_else(|| format!("0x{code:x}"), |n| n.to_string())
}

/// The error of an h3 connection error (the QUIC error under it, where there is one).
pub(super) fn of_h3_connection(e: &h3::error::ConnectionError) -> EngineError {
    use h3::error::ConnectionError as C;
    use h3::quic::ConnectionErrorIncoming as I;
    match e {
        C::Remote {
            0: I::Undefined(inner),
            ..
        } => match inner.downcast_ref::<quinn::ConnectionError>() {
            Some(q) => of_connection(q, false),
            None => EngineError::new(ErrorKind::Read, format!("QUIC: {inner}")),
        },
        C::Remote { 0: I::Timeout, .. } | C::Timeout { .. } => EngineError::new(
            ErrorKind::Timeout,
            "QUIC: idle timeout (the server stopped answering)".into(),
        ),
        C::Remote {
            0: I::ApplicationClose { error_code },
            ..
        } => EngineError::new(
            ErrorKind::Closed,
            format!(
                "HTTP/3: the server closed the connection ({})",
                code_name(*error_code)
            ),
        ),
        _ => EngineError::new(ErrorKind::Protocol, format!("HTTP/3 connection: {e}")),
    }
}

/// The error of a QUIC connection error; `handshake`: it ended the handshake.
pub(super) fn of_connection(e: &quinn::ConnectionError, handshake: bool) -> EngineError {
    use quinn::ConnectionError as C;
    let (kind, detail, cause) = match e {
        C::VersionMismatch => (
            ErrorKind::Protocol,
            "QUIC version negotiation failed: the server offers no version in common (QUIC v1)"
                .to_string(),
            Some(Cause::QuicVersion),
        ),
        C::TimedOut if handshake => (
            ErrorKind::Timeout,
            "QUIC handshake timed out (no answer)".into(),
            None,
        ),
        C::TimedOut => (
            ErrorKind::Timeout,
            "QUIC: idle timeout (the server stopped answering)".into(),
            None,
        ),
        C::Reset => (
            ErrorKind::Closed,
            "QUIC: stateless reset (the server lost the connection's state)".into(),
            None,
        ),
        C::TransportError(t) => {
            return transport(u64::from(t.code), &t.reason, e, handshake);
        }
        C::ConnectionClosed(c) => {
            let reason = String::from_utf8_lossy(&c.reason);
            return transport(u64::from(c.error_code), &reason, e, handshake);
        }
        C::ApplicationClosed(a) => (
            ErrorKind::Closed,
            format!(
                "HTTP/3: the server closed the connection ({})",
                code_name(a.error_code.into_inner())
            ),
            None,
        ),
        C::LocallyClosed | C::CidsExhausted => (ErrorKind::Closed, format!("QUIC: {e}"), None),
    };
    EngineError::new(kind, detail).with_cause(cause)
}

/// QUIC's CRYPTO_ERROR range: 0x100 plus a TLS alert.
const CRYPTO_ERROR: std::ops::RangeInclusive<u64> = 0x100..=0x1ff;
/// TLS's no_application_protocol alert.
const NO_APPLICATION_PROTOCOL: u64 = 120;

/// A connection closed with a transport error `code` (ours or the server's): a TLS alert in
/// the handshake is `tls`, with the cause its reason names; any other is `protocol`
/// (`closed` after the handshake).
pub(super) fn transport(
    code: u64,
    reason: &str,
    e: &quinn::ConnectionError,
    handshake: bool,
) -> EngineError {
    if !CRYPTO_ERROR.contains(&code) {
        let kind = if handshake {
            ErrorKind::Protocol
        } else {
            ErrorKind::Closed
        };
        return EngineError::new(kind, format!("QUIC: {e}"));
    }
    let cause = if code - 0x100 == NO_APPLICATION_PROTOCOL {
        Cause::Alpn
    } else if reason.contains("UnknownIssuer") {
        Cause::CertUntrusted
    } else if reason.contains("NotValidForName") {
        Cause::CertName
    } else if reason.contains("invalid peer certificate") {
        Cause::CertInvalid
    } else {
        Cause::TlsHandshake
    };
    EngineError::new(ErrorKind::Tls, format!("QUIC TLS handshake: {e}")).with_cause(Some(cause))
}
