//! Where a request's bytes lay on its TCP connection ([`Wire`]): the connection's client port
//! and the offsets, in the TCP payload bytes the client wrote and read on it from its first,
//! of the request's end and of the response's first and last bytes. The server's probes see
//! the kernel's TCP counters of the same connection; these offsets are what joins the two,
//! whatever the order of events, the thread or the process that served them.

/// Where a request's bytes lay on its TCP connection: what the server's probes join it by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Wire {
    /// The connection's local (client) TCP port; 0: unknown or not TCP (HTTP/3, a request
    /// that never had a connection).
    pub port: u16,
    /// The offsets are exact (a plain TCP connection); false: `rx_first` is only a lower
    /// bound (TLS: see below).
    pub exact: bool,
    /// TCP payload bytes the client had written on the connection when this request's last
    /// byte was written (everything from the connection's first byte: TLS handshake,
    /// WebSocket upgrade, HTTP/2 preface and SETTINGS included): the end of the request in
    /// the connection's outgoing stream.
    pub tx_end: u64,
    /// The offset, in the TCP payload bytes the client received on the connection, of the
    /// response's first byte (exact), or a lower bound (TLS: the TCP bytes read before the
    /// request was written).
    pub rx_first: u64,
    /// The offset just past the response's last byte (TLS: the TCP bytes read when the
    /// response was complete).
    pub rx_end: u64,
}

impl Wire {
    /// Whether the request had a TCP connection whose port is known (the offsets mean
    /// something).
    pub fn is_known(&self) -> bool {
        self.port != 0
    }
}
