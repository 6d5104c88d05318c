//! A kernel event as six numbers and its time: the probes' event maps hold it so (`KIND, a, b,
//! c, d, e` by the time `NS`), and the probe agent sends it so to a run on another host
//! ([`super::remote`]). One layout, read and written here.

use super::KernelEvent;

/// The kinds of event, as the event maps' first field has them.
pub const EV_OPENED: u64 = 0;
/// Bytes arrived in the server's socket.
pub const EV_ARRIVED: u64 = 1;
/// The server read.
pub const EV_READ: u64 = 2;
/// The server wrote.
pub const EV_WROTE: u64 = 3;
/// Bytes arrived in the client's socket.
pub const EV_DELIVERED: u64 = 4;
/// A function was hit.
pub const EV_FUNCTION: u64 = 5;
/// A response's write carried the reply of a call upstream (`--server-upstream`).
pub const EV_UPSTREAM: u64 = 6;
/// The upstream on this host: its own arrival, read and write of that call.
pub const EV_BACKEND: u64 = 7;

/// One event map entry: at `ns`, (kind, and five fields by kind).
pub fn event(ns: u64, [kind, a, b, c, d, e]: [u64; 6]) -> Option<KernelEvent> {
    let port = a as u16;
    Some(match kind {
        EV_OPENED => KernelEvent::Opened { port, ns },
        EV_ARRIVED => KernelEvent::Arrived {
            port,
            prev: b,
            off: c,
            ns,
        },
        EV_READ => KernelEvent::Read {
            port,
            start: b,
            off: c,
            ns,
            pid: d as u32,
            key: e,
        },
        EV_WROTE => KernelEvent::Wrote {
            port,
            start: b,
            end: c,
            ns,
            pid: d as u32,
        },
        EV_DELIVERED => KernelEvent::Delivered {
            port,
            prev: b,
            off: c,
            ns,
        },
        EV_UPSTREAM => KernelEvent::Upstream {
            port,
            start: b,
            end: c,
            sent_ns: ns,
            arrived_ns: d,
        },
        EV_BACKEND => KernelEvent::Backend {
            port,
            start: b,
            arrived_ns: ns,
            read_ns: c,
            wrote_ns: d,
        },
        EV_FUNCTION => KernelEvent::Function {
            index: a as u16,
            key: e,
            ns,
        },
        _ => return None,
    })
}

/// An event's time and six numbers, as [`event`] reads them; `None` for the clock's tick and
/// lost events (not the probes' own).
pub fn fields(e: &KernelEvent) -> Option<(u64, [u64; 6])> {
    use KernelEvent as K;
    let p = |port: u16| u64::from(port);
    Some(match *e {
        K::Opened { port, ns } => (ns, [EV_OPENED, p(port), 0, 0, 0, 0]),
        K::Arrived {
            port,
            prev,
            off,
            ns,
        } => (ns, [EV_ARRIVED, p(port), prev, off, 0, 0]),
        K::Read {
            port,
            start,
            off,
            ns,
            pid,
            key,
        } => (ns, [EV_READ, p(port), start, off, u64::from(pid), key]),
        K::Wrote {
            port,
            start,
            end,
            ns,
            pid,
        } => (ns, [EV_WROTE, p(port), start, end, u64::from(pid), 0]),
        K::Delivered {
            port,
            prev,
            off,
            ns,
        } => (ns, [EV_DELIVERED, p(port), prev, off, 0, 0]),
        K::Function { index, key, ns } => (ns, [EV_FUNCTION, u64::from(index), 0, 0, 0, key]),
        K::Upstream {
            port,
            start,
            end,
            sent_ns,
            arrived_ns,
        } => (sent_ns, [EV_UPSTREAM, p(port), start, end, arrived_ns, 0]),
        K::Backend {
            port,
            start,
            arrived_ns,
            read_ns,
            wrote_ns,
        } => (
            arrived_ns,
            [EV_BACKEND, p(port), start, read_ns, wrote_ns, 0],
        ),
        K::Tick { .. } | K::Lost { .. } => return None,
    })
}
