//! One hop downstream (`--server-upstream PORT`): the server's calls to the service on PORT
//! while it serves a request, timed per request.
//!
//! The server's connections to PORT (their remote port) are its upstream ones, keyed by
//! their local port `$u`. On each: the first write of an exchange (`@uw`: when its send
//! began) and the first bytes that arrive after it (`@ua`: the reply's arrival). The server's
//! read of the reply hands both to its thread (`@utw`, `@uta`) and ends the exchange; the
//! thread's next write to a client's connection takes them: that write carries the response
//! the upstream's reply was read for, and its event `U` ([`super::EV_UPSTREAM`]) names the
//! client's port and the write's bytes, so that the joiner ties the call to the request by
//! the bytes of its response, like the server's other events.
//!
//! The upstream on this host: its side of the server's connections to it (`@upc`: those a
//! server's process opened, or wrote to; its local port PORT, its peer the server's `$u`) is
//! followed too, the first arrival, read and write of each exchange (`@ba`, `@br`, `@bw`),
//! handed over with the reply and printed as event `V` ([`super::EV_BACKEND`]) beside `U`:
//! the upstream's own socket and read → write. (Not from `@uw`: on loopback the call's bytes
//! arrive there inside the server's send, before the send's own event.)
//!
//! The rule fits servers whose thread reads the upstream's reply and writes the client's
//! response in one go: a proxy's event loop (nginx, HAProxy, Envoy's workers), a thread per
//! request that waits on its call. A server that hands the reply to another thread has no
//! `U` events; one that writes another client's response first gives the joiner a call that
//! began before the request's read, which it refuses (see docs/server-side.md).

use super::record::record;
use super::{ScriptPlan, EV_BACKEND, EV_UPSTREAM};
use crate::probe::bpf::Builder;

impl ScriptPlan {
    /// `--server-upstream`'s port in network order, if asked.
    fn upstream_be(&self) -> Option<u16> {
        self.upstream.map(u16::swap_bytes)
    }

    /// The upstream's maps typed (u64) before any reads them, for BEGIN (their values are
    /// handed from map to map before the text assigns them a stamp).
    pub(super) fn upstream_typed(&self, b: &mut Builder) -> String {
        if self.upstream.is_none() {
            return String::new();
        }
        ["uw", "ua", "ba", "br", "bw", "upc"]
            .map(|m| {
                let m = b.map(m);
                format!(" {m}[0] = (uint64)0; delete({m}[0]);")
            })
            .concat()
    }

    /// At an arrival (`$sk`, `$t`), not on the server's port: the first bytes of an upstream
    /// reply (an `else if` branch, or nothing).
    pub(super) fn upstream_arrival(&self, b: &mut Builder) -> String {
        let Some(up) = self.upstream_be() else {
            return String::new();
        };
        let (uw, ua, ba, upc) = (b.map("uw"), b.map("ua"), b.map("ba"), b.map("upc"));
        format!(
            " else if ($sk->__sk_common.skc_dport == {up}) {{
    $u = (uint64)$sk->__sk_common.skc_num;
    if ({uw}[$u] && {ua}[$u] == 0) {{ {ua}[$u] = $t; }}
  }} else if ($sk->__sk_common.skc_num == {}) {{
    {}
    if ({upc}[$u] && {ba}[$u] == 0) {{ {ba}[$u] = $t; }}
  }}",
            self.upstream.unwrap_or(0),
            Self::PEER_OF_UPSTREAM
        )
    }

    /// The server's port `$u` of the upstream's socket `$sk` (its peer).
    const PEER_OF_UPSTREAM: &'static str =
        "$q = $sk->__sk_common.skc_dport; $u = (uint64)((($q & 255) << 8) | ($q >> 8));";

    /// At a read (`$sk`) of the server's, not on its port: the read of an upstream reply
    /// hands the exchange to the thread (an `else if` branch, or nothing).
    pub(super) fn upstream_read(&self, b: &mut Builder) -> String {
        let Some(up) = self.upstream_be() else {
            return String::new();
        };
        let (uw, ua, utw, uta, srv) = (
            b.map("uw"),
            b.map("ua"),
            b.map("utw"),
            b.map("uta"),
            b.map("srv"),
        );
        let (ba, br, bw, utb, utr, utx) = (
            b.map("ba"),
            b.map("br"),
            b.map("bw"),
            b.map("utb"),
            b.map("utr"),
            b.map("utx"),
        );
        format!(
            " else if ($sk->__sk_common.skc_dport == {up} && {srv}[pid]) {{
    $u = (uint64)$sk->__sk_common.skc_num;
    if ({ua}[$u]) {{
      {utw}[tid] = {uw}[$u]; {uta}[tid] = {ua}[$u]; delete({uw}[$u]); delete({ua}[$u]);
      {utb}[tid] = {ba}[$u]; {utr}[tid] = {br}[$u]; {utx}[tid] = {bw}[$u];
      delete({ba}[$u]); delete({br}[$u]); delete({bw}[$u]);
    }}
  }} else if ($sk->__sk_common.skc_num == {}) {{
    {}
    // The upstream's read of the exchange (its process's writes followed from now on).
    if ({ba}[$u] && {br}[$u] == 0) {{ {br}[$u] = nsecs; {srv}[pid] = 1; }}
  }}",
            self.upstream.unwrap_or(0),
            Self::PEER_OF_UPSTREAM
        )
    }

    /// The upstream's part of the probe of the server's writes: (at any write to a client,
    /// before the check of whose: the thread's last exchange taken, if it has one; inside a followed write
    /// (`$p`, `$e`): its `U` event; a branch for a write upstream (`$w`: its send's start)).
    pub(super) fn upstream_write(&self, b: &mut Builder) -> (String, String, String) {
        let Some(up) = self.upstream_be() else {
            return Default::default();
        };
        let (uw, utw, uta, upc) = (b.map("uw"), b.map("utw"), b.map("uta"), b.map("upc"));
        let (br, bw, utb, utr, utx) = (
            b.map("br"),
            b.map("bw"),
            b.map("utb"),
            b.map("utr"),
            b.map("utx"),
        );
        let event = record(
            b,
            "$vw",
            EV_UPSTREAM,
            ["$p", "$e - (uint64)args->ret", "$e", "$va", "0"],
        );
        let backend = record(
            b,
            "$vb",
            EV_BACKEND,
            ["$p", "$e - (uint64)args->ret", "$vr", "$vx", "0"],
        );
        (
            format!(
                "$vw = {utw}[tid];
    if ($vw) {{
      $va = {uta}[tid]; $vb = {utb}[tid]; $vr = {utr}[tid]; $vx = {utx}[tid];
      delete({utw}[tid]); delete({uta}[tid]); delete({utb}[tid]); delete({utr}[tid]); delete({utx}[tid]);
    }}
    "
            ),
            format!(" if ($vw) {{ {event} if ($vb && $vx) {{ {backend} }} }}"),
            format!(
                " else if ($sk->__sk_common.skc_dport == {up}) {{
    $u = (uint64)$sk->__sk_common.skc_num;
    if ({uw}[$u] == 0) {{ {uw}[$u] = $w; }} {upc}[$u] = 1;
  }} else if ($sk->__sk_common.skc_num == {}) {{
    {}
    if ({br}[$u] && {bw}[$u] == 0) {{ {bw}[$u] = $w; }}
  }}",
                self.upstream.unwrap_or(0),
                Self::PEER_OF_UPSTREAM
            ),
        )
    }

    /// At a state change of an upstream connection (`args`): a closed one's exchange left
    /// unanswered is forgotten. (What the probe's filter adds, what opens its body, what
    /// closes it; nothing without `--server-upstream`.)
    pub(super) fn upstream_closed(&self, b: &mut Builder) -> (String, String, &'static str) {
        let Some(up) = self.upstream else {
            return Default::default();
        };
        let (uw, ua, ba, br, bw) = (
            b.map("uw"),
            b.map("ua"),
            b.map("ba"),
            b.map("br"),
            b.map("bw"),
        );
        let (upc, upk, srv) = (b.map("upc"), b.map("upk"), b.map("srv"));
        (
            format!(" || args->dport == {up}"),
            format!(
                "if (args->dport == {up}) {{
    // Its port is known once established (not yet at SYN_SENT): learnt by the socket.
    $u = (uint64)args->sport;
    if (args->newstate == {} && {srv}[pid]) {{ {upk}[args->skaddr] = 1; }}
    else if (args->newstate == {} && {upk}[args->skaddr]) {{
      delete({upk}[args->skaddr]); {upc}[$u] = 1;
    }} else if (args->newstate == {}) {{
      delete({upk}[args->skaddr]); delete({upc}[$u]); delete({uw}[$u]); delete({ua}[$u]);
      delete({ba}[$u]); delete({br}[$u]); delete({bw}[$u]);
    }}
  }} else {{
  ",
                super::TCP_SYN_SENT,
                super::TCP_ESTABLISHED,
                super::TCP_CLOSE
            ),
            "\n  }",
        )
    }
}
