use super::failure::{reset, transport};
use super::*;

#[test]
fn quic_errors_by_kind_and_cause() {
    use quinn::ConnectionError as C;
    // (error, ended the handshake, kind, cause)
    let rows = [
        (
            C::VersionMismatch,
            true,
            ErrorKind::Protocol,
            Some(Cause::QuicVersion),
        ),
        (C::TimedOut, true, ErrorKind::Timeout, None), // handshake timeout
        (C::TimedOut, false, ErrorKind::Timeout, None), // idle timeout
        (C::Reset, false, ErrorKind::Closed, None),    // stateless reset
        (C::LocallyClosed, false, ErrorKind::Closed, None),
    ];
    for (e, handshake, kind, cause) in rows {
        let got = of_connection(&e, handshake);
        assert_eq!((got.kind, got.cause), (kind, cause), "{e}");
    }
    assert!(of_connection(&C::TimedOut, true)
        .detail
        .contains("handshake"));
    assert!(of_connection(&C::TimedOut, false)
        .detail
        .contains("idle timeout"));
    assert!(of_connection(&C::Reset, false)
        .detail
        .contains("stateless reset"));
    // (code, reason, kind, cause): TLS alerts inside the handshake, and other codes.
    let alert = |a: u8| 0x100 + u64::from(a);
    let rows = [
        (
            alert(48),
            "invalid peer certificate: UnknownIssuer",
            ErrorKind::Tls,
            Some(Cause::CertUntrusted),
        ),
        (
            alert(42),
            "invalid peer certificate: NotValidForName",
            ErrorKind::Tls,
            Some(Cause::CertName),
        ),
        (
            alert(45),
            "invalid peer certificate: Expired",
            ErrorKind::Tls,
            Some(Cause::CertInvalid),
        ),
        (alert(120), "", ErrorKind::Tls, Some(Cause::Alpn)), // no_application_protocol
        (
            alert(40),
            "handshake failure",
            ErrorKind::Tls,
            Some(Cause::TlsHandshake),
        ),
        (0xa, "protocol violation", ErrorKind::Protocol, None), // PROTOCOL_VIOLATION
    ];
    for (code, reason, kind, cause) in rows {
        let got = transport(code, reason, &C::LocallyClosed, true);
        assert_eq!((got.kind, got.cause), (kind, cause), "{code:x} {reason}");
    }
    // After the handshake a transport error closes the connection.
    assert_eq!(
        transport(0xa, "", &C::LocallyClosed, false).kind,
        ErrorKind::Closed
    );
}

#[test]
fn stream_resets_are_counted_by_code() {
    // (code, name)
    let rows = [
        (0x10c, "H3_REQUEST_CANCELLED"),
        (0x102, "H3_INTERNAL_ERROR"),
        (0x110, "H3_VERSION_FALLBACK"),
        (0x111, "0x111"), // past the list
        (0x8, "0x8"),     // an HTTP/2 code is not an HTTP/3 one
    ];
    for (code, name) in rows {
        let e = reset(code);
        assert_eq!(e.kind, ErrorKind::Reset);
        assert_eq!(e.code, Some(code as u32));
        assert!(e.detail.contains(name), "{}", e.detail);
        assert_eq!(code_name(code), name);
    }
    // A grease code past u32 keeps its kind, without a code.
    assert_eq!(reset(0x1f * 0x1_0000_0000 + 0x21).code, None);
}
