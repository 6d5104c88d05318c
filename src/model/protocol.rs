//! The protocol a run speaks ([`Protocol`]), named as a RunRecord's `config.protocol` names it,
//! so that reports ask the record what it was instead of reading the name's letters.

/// The protocol of a run's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protocol {
    /// HTTP/1.1 (over TLS with an `https://` URL).
    Http1,
    /// HTTP/2 over TLS (ALPN `h2`).
    H2,
    /// HTTP/2 in the clear (prior knowledge, `h2c`).
    H2c,
    /// HTTP/3 over QUIC.
    H3,
    /// Framed binary messages over TCP (`tcp://HOST:PORT`), no HTTP.
    Tcp,
    /// WebSocket messages (RFC 6455) over TCP (`ws://`).
    Ws,
    /// WebSocket messages over TLS (`wss://`).
    Wss,
    /// WebSocket messages over a stream of HTTP/2 in the clear (`ws://` with `--http2`:
    /// RFC 8441's extended CONNECT, h2c by prior knowledge).
    WsH2c,
    /// WebSocket messages over a stream of HTTP/2 over TLS (`wss://` with `--http2`: ALPN
    /// `h2`, RFC 8441's extended CONNECT).
    WssH2,
}

impl Protocol {
    /// Every protocol.
    pub const ALL: [Protocol; 9] = [
        Protocol::Http1,
        Protocol::H2,
        Protocol::H2c,
        Protocol::H3,
        Protocol::Tcp,
        Protocol::Ws,
        Protocol::Wss,
        Protocol::WsH2c,
        Protocol::WssH2,
    ];

    /// The name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::H2 => "h2",
            Protocol::H2c => "h2c",
            Protocol::H3 => "h3",
            Protocol::Tcp => "tcp",
            Protocol::Ws => "ws",
            Protocol::Wss => "wss",
            Protocol::WsH2c => "ws+h2c",
            Protocol::WssH2 => "wss+h2",
        }
    }

    /// The protocol named `name`, if any.
    pub fn from_name(name: &str) -> Option<Protocol> {
        Protocol::ALL.into_iter().find(|p| p.name() == name)
    }

    /// HTTP/2, over TLS or in the clear: its frames, HPACK and handshake.
    pub fn is_h2(self) -> bool {
        matches!(self, Protocol::H2 | Protocol::H2c)
    }

    /// Over an HTTP/2 connection, whose handshake (the server's SETTINGS) is a phase:
    /// HTTP/2 itself, or WebSocket over one of its streams (RFC 8441).
    pub fn over_h2(self) -> bool {
        self.is_h2() || matches!(self, Protocol::WsH2c | Protocol::WssH2)
    }
}

by_name!(Protocol, "protocol");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protocol_is_written_and_read_as_its_name() {
        // (protocol, its name in records)
        let rows = [
            (Protocol::Http1, "http/1.1"),
            (Protocol::H2, "h2"),
            (Protocol::H2c, "h2c"),
            (Protocol::H3, "h3"),
            (Protocol::Tcp, "tcp"),
            (Protocol::Ws, "ws"),
            (Protocol::Wss, "wss"),
            (Protocol::WsH2c, "ws+h2c"),
            (Protocol::WssH2, "wss+h2"),
        ];
        crate::model::tests::written_and_read_by_name(
            &rows,
            "h4",
            &[
                "unknown protocol 'h4'",
                "http/1.1, h2, h2c, h3, tcp, ws, wss, ws+h2c, wss+h2",
            ],
        );
    }

    #[test]
    fn h2_is_either_http2() {
        let h2: Vec<Protocol> = Protocol::ALL.into_iter().filter(|p| p.is_h2()).collect();
        assert_eq!(h2, [Protocol::H2, Protocol::H2c]);
        let over: Vec<Protocol> = Protocol::ALL.into_iter().filter(|p| p.over_h2()).collect();
        let want = [
            Protocol::H2,
            Protocol::H2c,
            Protocol::WsH2c,
            Protocol::WssH2,
        ];
        assert_eq!(over, want);
    }
}
