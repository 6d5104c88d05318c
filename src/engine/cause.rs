//! Why a connection attempt failed, when the reason names its own fix: nothing listens, the
//! certificate is not trusted, the server does not speak TLS, ALPN did not agree. The
//! fail-fast rule ([`crate::load::failfast`]) stops a run whose connections all fail with one
//! of these before any request succeeded, and prints the cause's hint.

use crate::plan::RunPlan;
use rustls::{AlertDescription, CertificateError};
use std::io;

/// The cause of a failed connection attempt (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// `ECONNREFUSED`: nothing listens on the port.
    Refused,
    /// `ENETUNREACH`, `EHOSTUNREACH`: no route to the address.
    Unreachable,
    /// `EMFILE`, `ENFILE`: this process (or the system) is out of file descriptors.
    FdLimit,
    /// The certificate's issuer is not trusted (a self-signed certificate, a private CA).
    CertUntrusted,
    /// The certificate does not name the host of the URL.
    CertName,
    /// The certificate was refused for another reason (expired, not yet valid, revoked, …).
    CertInvalid,
    /// The server answered the TLS handshake with something that is not TLS (an HTTP error
    /// page): it speaks plain HTTP on that port.
    NotTls,
    /// A plain HTTP request was answered with a TLS record (an alert): the server speaks
    /// TLS on that port.
    SpeaksTls,
    /// ALPN did not agree on the protocol asked for (h2 with `--http2`, else http/1.1).
    Alpn,
    /// The server answered HTTP/2's connection preface with something else than its SETTINGS
    /// (an HTTP/1.x answer): it does not speak HTTP/2 on that port (h2c, prior knowledge).
    NotH2,
    /// The TLS handshake failed otherwise, as rustls says (an alert from the server, no
    /// common version or cipher suite). A connection closed or reset in the middle of the
    /// handshake has no cause: an overloaded server does that to some connections only.
    TlsHandshake,
    /// HTTP/3: QUIC version negotiation failed (the server offers no version we speak).
    QuicVersion,
    /// WebSocket: the server did not accept the upgrade (no `101 Switching Protocols`, or a
    /// `101` without the headers RFC 6455 asks for; over HTTP/2, no 2xx to the extended
    /// CONNECT).
    NotWebSocket,
    /// WebSocket over HTTP/2 (`--http2`): the server's SETTINGS do not enable the extended
    /// CONNECT of RFC 8441 (SETTINGS_ENABLE_CONNECT_PROTOCOL).
    NoWsOverH2,
    /// WebSocket: the server's `101` agreed to an extension the client did not offer, or to
    /// permessage-deflate with parameters that break RFC 7692.
    WsExtension,
}

impl Cause {
    /// Every cause (for tests and the tracker's table).
    pub const ALL: [Cause; 15] = [
        Cause::Refused,
        Cause::Unreachable,
        Cause::FdLimit,
        Cause::CertUntrusted,
        Cause::CertName,
        Cause::CertInvalid,
        Cause::NotTls,
        Cause::SpeaksTls,
        Cause::Alpn,
        Cause::NotH2,
        Cause::TlsHandshake,
        Cause::QuicVersion,
        Cause::NotWebSocket,
        Cause::NoWsOverH2,
        Cause::WsExtension,
    ];

    /// A short name, for the record's stop reason (`fail fast: connection refused`).
    pub fn name(self) -> &'static str {
        match self {
            Cause::Refused => "connection refused",
            Cause::Unreachable => "unreachable",
            Cause::FdLimit => "too many open files",
            Cause::CertUntrusted => "untrusted certificate",
            Cause::CertName => "certificate name mismatch",
            Cause::CertInvalid => "certificate refused",
            Cause::NotTls => "not TLS",
            Cause::SpeaksTls => "TLS server",
            Cause::Alpn => "ALPN",
            Cause::NotH2 => "not HTTP/2",
            Cause::TlsHandshake => "TLS handshake",
            Cause::QuicVersion => "QUIC version",
            Cause::NotWebSocket => "not WebSocket",
            Cause::NoWsOverH2 => "no WebSocket over HTTP/2",
            Cause::WsExtension => "WebSocket extension",
        }
    }

    /// What went wrong and how to fix it, in one line, for `plan`'s target.
    pub fn hint(self, plan: &RunPlan) -> String {
        let t = &plan.target;
        let host = if t.host.contains(':') {
            format!("[{}]:{}", t.host, t.port)
        } else {
            format!("{}:{}", t.host, t.port)
        };
        let protocol = plan.protocol.settings();
        let quic = protocol.over_quic();
        match self {
            Cause::Refused if quic => format!(
                "nothing listens on UDP port {} of {} (ICMP port unreachable): \
                 is an HTTP/3 server running on {host}?",
                t.port, t.addr.ip()
            ),
            Cause::Refused if t.host.parse::<std::net::IpAddr>().ok() == Some(t.addr.ip()) => {
                format!("connection refused: is the server running on {host}?")
            }
            // A name: the address it resolved to may not be the one the server listens on
            // (localhost as ::1, the server on 127.0.0.1).
            Cause::Refused => format!(
                "connection refused: is the server running on {host} (resolved to {})?",
                t.addr
            ),
            Cause::Unreachable => format!(
                "{host} is unreachable (no route to it): check the address in the URL and the network"
            ),
            Cause::FdLimit => "too many open files: raise the limit (ulimit -n) or use fewer connections (-c)".into(),
            Cause::CertUntrusted
            | Cause::CertName
            | Cause::CertInvalid
            | Cause::NotTls
            | Cause::SpeaksTls => self.tls_hint(&host, plan),
            Cause::Alpn => format!("{host} does not offer {}", protocol.alpn_missing()),
            Cause::QuicVersion => format!(
                "{host} speaks no QUIC version reqlife does (QUIC v1, RFC 9000): drop --http3, \
                 or enable QUIC v1 on the server"
            ),
            Cause::TlsHandshake if quic => quic_handshake_hint(&host, t),
            Cause::NotH2 => protocol.not_h2_hint(&host),
            Cause::NotWebSocket | Cause::NoWsOverH2 | Cause::WsExtension => {
                self.ws_hint(&host, &t.url)
            }
            Cause::TlsHandshake => format!(
                "the TLS handshake with {host} failed: check that the server speaks TLS 1.2 or 1.3 on this port \
                 (http:// if it speaks plain HTTP)"
            ),
        }
    }

    /// The hint of a WebSocket server that did not take the upgrade as asked.
    fn ws_hint(self, host: &str, url: &str) -> String {
        match self {
            Cause::NoWsOverH2 => format!(
                "{host} does not offer WebSocket over HTTP/2 (RFC 8441: its SETTINGS do not enable the extended CONNECT): drop --http2 to upgrade over HTTP/1.1"
            ),
            Cause::WsExtension => format!(
                "{host} answered the WebSocket upgrade of {url} with extensions the client cannot use: reqlife offers permessage-deflate (RFC 7692) with --compressed, and no other extension"
            ),
            // NotWebSocket, the one other cause this is asked for.
            _ => format!(
                "{host} did not accept the WebSocket upgrade of {url}: check the URL's path and that a WebSocket server listens there"
            ),
        }
    }

    /// The hint of a certificate refused, or of TLS on one side only.
    fn tls_hint(self, host: &str, plan: &RunPlan) -> String {
        let t = &plan.target;
        let url = &t.url;
        match self {
            Cause::CertUntrusted => format!(
                "the certificate of {host} is not trusted (its issuer is unknown, e.g. self-signed): \
                 trust it with --cacert FILE (the server's certificate or its CA, PEM), \
                 or skip verification with -k/--insecure"
            ),
            Cause::CertName => format!(
                "the certificate of {host} is not valid for the name '{}': use a host name the certificate names, \
                 or skip verification with -k/--insecure",
                t.host
            ),
            Cause::CertInvalid => format!(
                "the certificate of {host} was refused (expired, not yet valid, or malformed): \
                 fix it on the server, or skip verification with -k/--insecure"
            ),
            Cause::NotTls => format!(
                "{host} does not speak TLS (it answered the handshake with plain text): \
                 use http:// instead of https:// in {url}"
            ),
            Cause::SpeaksTls => format!(
                "{host} speaks TLS (it answered the request with a TLS alert): \
                 use https:// instead of http:// in {url}"
            ),
            _ => unreachable!("not a certificate's or TLS's cause"),
        }
    }
}

/// The cause of a failed TCP connect, if it is one that names its fix.
pub fn of_connect(e: &io::Error) -> Option<Cause> {
    match e.raw_os_error()? {
        libc::ECONNREFUSED => Some(Cause::Refused),
        libc::ENETUNREACH | libc::EHOSTUNREACH => Some(Cause::Unreachable),
        libc::EMFILE | libc::ENFILE => Some(Cause::FdLimit),
        _ => None,
    }
}

/// The cause of a response that is not HTTP: a TLS record (alert or handshake, TLS 1.0 to
/// 1.3 record versions) means the server speaks TLS.
pub fn of_response(bytes: &[u8]) -> Option<Cause> {
    match bytes {
        [0x15 | 0x16, 0x03, 0x00..=0x04, ..] => Some(Cause::SpeaksTls),
        _ => None,
    }
}

/// The cause of a failed TLS handshake (tokio-rustls wraps rustls' error in the I/O error).
pub fn of_tls(e: &io::Error) -> Option<Cause> {
    if let Some(cause) = of_connect(e) {
        return Some(cause);
    }
    // Not rustls' own error: the server closed or reset the connection in the middle of the
    // handshake, which a server at its connection limit does to the connections past it
    // while others succeed; not a cause to stop for.
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match tls {
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer) => Cause::CertUntrusted,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => Cause::CertName,
        rustls::Error::InvalidCertificate(_) => Cause::CertInvalid,
        rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. } => {
            Cause::NotTls
        }
        rustls::Error::NoApplicationProtocol
        | rustls::Error::AlertReceived(AlertDescription::NoApplicationProtocol) => Cause::Alpn,
        _ => Cause::TlsHandshake,
    })
}

/// The hint of a TLS handshake inside QUIC that failed with the server at `host`.
fn quic_handshake_hint(host: &str, t: &crate::model::Target) -> String {
    let mut s = format!(
        "the TLS handshake inside QUIC with {host} failed: check that the server speaks HTTP/3 on UDP port {}",
        t.port
    );
    // No client sends SNI for an IP address: a server that picks its site by name
    // (caddy: TLS alert 80) refuses the handshake.
    if t.host
        .trim_matches(['[', ']'])
        .parse::<std::net::IpAddr>()
        .is_ok()
    {
        s.push_str(&format!(
            ", and that it needs no name: no client sends SNI for an IP address; give the name in the URL and its address with --resolve NAME:{}:{}",
            t.port,
            t.addr.ip()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tls(e: rustls::Error) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, e)
    }

    #[test]
    fn causes_of_connect_and_tls_errors() {
        let os = io::Error::from_raw_os_error;
        // (error, cause)
        let rows = [
            (os(libc::ECONNREFUSED), Some(Cause::Refused)),
            (os(libc::EHOSTUNREACH), Some(Cause::Unreachable)),
            (os(libc::EMFILE), Some(Cause::FdLimit)),
            (os(libc::ETIMEDOUT), None),
            (os(libc::EADDRNOTAVAIL), None),
        ];
        for (e, cause) in rows {
            assert_eq!(of_connect(&e), cause, "{e}");
        }
        let rows = [
            (
                rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer),
                Cause::CertUntrusted,
            ),
            (
                rustls::Error::InvalidCertificate(CertificateError::NotValidForName),
                Cause::CertName,
            ),
            (
                rustls::Error::InvalidCertificate(CertificateError::Expired),
                Cause::CertInvalid,
            ),
            (
                rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType),
                Cause::NotTls,
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::NoApplicationProtocol),
                Cause::Alpn,
            ),
            (
                rustls::Error::AlertReceived(AlertDescription::HandshakeFailure),
                Cause::TlsHandshake,
            ),
        ];
        for (e, cause) in rows {
            assert_eq!(of_tls(&tls(e)), Some(cause));
        }
        assert_eq!(
            of_response(b"\x15\x03\x03\x00\x02\x02\x32"),
            Some(Cause::SpeaksTls)
        );
        assert_eq!(of_response(b"SSH-2.0-OpenSSH_9.2\r\n"), None);
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "tls handshake eof");
        assert_eq!(of_tls(&eof), None);
        assert_eq!(of_tls(&os(libc::ECONNRESET)), None);
    }
}

#[cfg(test)]
mod hint_tests {
    use super::Cause;
    use crate::cli::{plan::build, Cli, Command};
    use clap::Parser;

    fn hint(url: &str) -> String {
        hint_of(Cause::TlsHandshake, url, &["--http3"])
    }

    /// The hint of `cause` for a run of `url` with `flags` (a WebSocket's with a message).
    fn hint_of(cause: Cause, url: &str, flags: &[&str]) -> String {
        let mut argv = vec!["reqlife", "run"];
        argv.extend(flags);
        if url.starts_with("ws") {
            // A WebSocket run sends a message of its own.
            argv.extend(["--data", "hi"]);
        }
        argv.push(url);
        let Command::Run(args) = Cli::try_parse_from(argv).unwrap().command else {
            unreachable!()
        };
        cause.hint(&build(&args, url).unwrap())
    }

    /// Each protocol says what a server's ALPN lacks for it, and what a server that answered
    /// HTTP/2's preface with something else means for it.
    #[test]
    fn each_protocol_words_its_alpn_and_preface_hints() {
        let host = "127.0.0.1:8443";
        let alpn = [
            ("https", &[][..], "HTTP/1.1 in ALPN: try --http2"),
            (
                "https",
                &["--http2"][..],
                "HTTP/2 (h2) in ALPN: drop --http2, or enable h2 on the server",
            ),
            (
                "https",
                &["--http3"][..],
                "HTTP/3 (h3) in ALPN: drop --http3, or enable HTTP/3 on the server",
            ),
            (
                "https",
                &["--grpc", "s.S/M", "--data-file", "/dev/null"][..],
                "HTTP/2 (h2) in ALPN, which gRPC needs: check that a gRPC server listens there",
            ),
            ("wss", &[][..], "HTTP/1.1 in ALPN: try --http2"),
            (
                "wss",
                &["--http2"][..],
                "HTTP/2 (h2) in ALPN: drop --http2 to upgrade over HTTP/1.1",
            ),
        ];
        for (scheme, flags, says) in alpn {
            let url = format!("{scheme}://{host}/");
            assert_eq!(
                hint_of(Cause::Alpn, &url, flags),
                format!("{host} does not offer {says}"),
                "{flags:?}"
            );
        }
        let preface = "does not speak HTTP/2 without TLS (h2c) on this port (it answered the connection preface with something else, HTTP/1.1?): ";
        let not_h2 = [
            ("http", &["--http2"][..], format!("{host} {preface}drop --http2, or use https:// if it offers h2 over TLS")),
            ("ws", &["--http2"][..], format!("{host} {preface}drop --http2 to upgrade over HTTP/1.1, or use wss:// if it offers h2 over TLS")),
            ("http", &["--grpc", "s.S/M", "--data-file", "/dev/null"][..], format!("{host} does not speak HTTP/2 (it answered the connection preface with something else, HTTP/1.1?): gRPC needs a server that speaks h2c (HTTP/2 without TLS) on http://, or h2 on https://; check the port and the scheme")),
        ];
        for (scheme, flags, says) in not_h2 {
            let url = format!("{scheme}://{host}/");
            assert_eq!(hint_of(Cause::NotH2, &url, flags), says, "{flags:?}");
        }
    }

    /// HTTP/3 to an IP address: the server may need a name (issue 37: caddy's alert 80).
    #[test]
    fn a_quic_handshake_refused_for_an_ip_address_suggests_a_name() {
        let h = hint("https://127.0.0.1:8443/");
        assert!(h.contains("speaks HTTP/3 on UDP port 8443"), "{h}");
        assert!(
            h.contains("no client sends SNI for an IP address")
                && h.contains("--resolve NAME:8443:127.0.0.1"),
            "{h}"
        );
        assert!(!hint("https://localhost:8443/").contains("--resolve"));
    }
}
