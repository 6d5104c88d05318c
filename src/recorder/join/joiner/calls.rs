//! The server's calls upstream (`--server-upstream`): each kept on its connection by the
//! bytes of the write that carried its reply, and timed for the request whose response's
//! first write that was, when it lies inside the request's read → that write.

use super::super::conn::Call;
use super::{Joiner, KernelEvent};

impl Joiner {
    /// A call upstream (`--server-upstream`), or the upstream's own stamps of one.
    pub(super) fn call(&mut self, e: KernelEvent) {
        match e {
            KernelEvent::Upstream {
                port,
                start,
                end,
                sent_ns,
                arrived_ns,
            } => {
                self.counts.upstream_events += 1;
                self.conn(port, arrived_ns).calls.push_back(Call {
                    start,
                    end,
                    sent_ns,
                    arrived_ns,
                    backend: None,
                });
            }
            KernelEvent::Backend {
                port,
                start,
                arrived_ns,
                read_ns,
                wrote_ns,
            } => self
                .conn(port, arrived_ns)
                .backend(start, [arrived_ns, read_ns, wrote_ns]),
            _ => {}
        }
    }
}

/// The phases of `call` (`--server-upstream`) into `probed` (the call's, the upstream's
/// socket and handle), when it lies inside the request's read (`read_ns`) → the response's
/// first write (`write_ns`): `Some(true)`; else (another request's) `Some(false)`; `None`
/// without a call.
pub(super) fn timed_call(
    call: Option<Call>,
    read_ns: u64,
    write_ns: u64,
    probed: &mut [Option<u64>],
) -> Option<bool> {
    let call = call?;
    if !(read_ns <= call.sent_ns && call.sent_ns <= call.arrived_ns && call.arrived_ns <= write_ns)
    {
        return Some(false);
    }
    probed[0] = Some(call.arrived_ns - call.sent_ns);
    // The upstream's own, its stamps in the call's order.
    if let Some([a, r, w]) = call.backend {
        if call.sent_ns <= a && a <= r && r <= w && w <= call.arrived_ns {
            probed[1] = Some(r - a);
            probed[2] = Some(w - r);
        }
    }
    Some(true)
}
