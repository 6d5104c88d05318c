//! The bpftrace script of a run's probes, written out (`--print-probe-script` prints it)
//! with the typed [`Builder`]: each event on one of the client's connections is printed
//! with the connection's client port and a byte offset read from the socket's TCP state,
//! and the joiner ([`crate::recorder::join`]) ties it to a request by those bytes.
//!
//! Which connections: the client's own ([`Follow::Client`]): the probes see reqlife connect
//! to the server's port (`sock:inet_sock_set_state` from SYN_SENT, in reqlife's process) and
//! follow that connection's sockets on both ends, in whichever process reads and writes
//! them (workers that never held the listening socket, children born during the run,
//! `SO_REUSEPORT`); the server's other connections on the port (to itself, to others) are
//! only counted (`@other`). With the client on another host ([`Follow::All`], the probe
//! agent) every connection to the port is followed.
//!
//! The events, one line each (bpftrace's `-f json` wraps each `printf` in a JSON line):
//!
//! ```text
//! B                          BEGIN ran: every probe is attached
//! O PORT NS                  a connection of the client's was established
//! A PORT PREV OFF NS         bytes arrived in the server's socket: they held PREV, now OFF
//! R PORT START END NS PID K  the server read START..END (K: its thread, or goroutine)
//! W PORT START END NS PID    the server wrote START..END (NS: the send's start)
//! C PORT PREV OFF NS         bytes arrived in the client's socket
//! F I K NS                   function I of --server-fn's list hit on thread (goroutine) K
//! U PORT START END NS AT     the write START..END carried the reply of a call upstream
//!                            (--server-upstream) sent at NS, arrived at AT
//! V PORT START NS RD WR      the upstream here: that call arrived at NS, was read at RD,
//!                            answered from WR
//! T NS EP                    the probes' clock at a tick, the event map now in turn
//! T NS                       the probes' clock at the end
//! @n, @other (maps)          at the end: the functions' hits (counted in the kernel), the
//!                            other connections' events; the kernel's probes count none there:
//!                            their hits are their events, counted by reqlife
//!                            ([`Script::counted`])
//! Z                          the end
//! ```
//!
//! The offsets count the connection's TCP payload bytes from its first, from the kernel's
//! counters: `bytes_received` (the end of what arrived), `copied_seq` behind `rcv_nxt` (what
//! the reader has not taken), `bytes_acked` and `write_seq` ahead of `snd_una` (the end of
//! what was written). Where a send starts: `tcp:tcp_sendmsg_locked` (Linux 6.11 on), on the
//! sending thread; on older kernels the write is stamped when its send returned. Not the send
//! syscalls' tracepoints: enabling one puts every system call of the machine on the slow path.
//!
//! `--server-sample N`: a connection's events are followed from an arrival drawn one in N
//! until a later arrival finds that the server has read all that came before it and written
//! since the draw (an episode); the offsets every event carries keep the join exact at the
//! episode's edges.

use super::bpf::{go_g_register, Attach, Builder};
use super::spec::{FnProbe, Site};
use episode::Episode;
use record::{record, record_at};
use std::path::PathBuf;

/// Whose connections the probes follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Those the client's process (this pid) opens to the server's port: reqlife's own.
    Client(u32),
    /// Every connection to the server's port (the client is on another host).
    All,
}

/// What the script probes.
#[derive(Debug, Clone)]
pub struct ScriptPlan {
    /// The port the server's requests arrive on.
    pub port: u16,
    /// Whose connections.
    pub follow: Follow,
    /// The functions, resolved (each with its binary).
    pub functions: Vec<FnProbe>,
    /// The server is a Go program: its functions are keyed by goroutine, not by thread.
    pub go: bool,
    /// The kernel has `tcp:tcp_sendmsg_locked`: a send's start is stamped (else a write is
    /// stamped when its send returned).
    pub send_start: bool,
    /// One request in this many is followed (drawn in the kernel).
    pub sample: u64,
    /// `--server-probes-cost`: half followed ([`crate::recorder::join::halves::traced`]).
    pub split: bool,
    /// How often the probes' clock ticks, milliseconds.
    pub tick_ms: u64,
    /// `--server-upstream`: the port of the service the server calls (see the `upstream` module).
    pub upstream: Option<u16>,
}

/// A script and what its indices mean.
#[derive(Debug, Clone)]
pub struct Script {
    /// The bpftrace program.
    pub text: String,
    /// By probe (hit counter) index: (name, is a uprobe).
    pub probes: Vec<(String, bool)>,
    /// The functions' labels, by `F` event index.
    pub functions: Vec<String>,
    /// The first probe index of the calibration's (a uprobe, a stepped one, a tracepoint).
    pub calibration: Option<usize>,
    /// The probes whose hits are their events, counted by reqlife as it reads them: no count
    /// in the kernel, where each would cost the server a map update a hit.
    pub counted: Vec<(usize, Counted)>,
}

/// What a probe's hits are counted from ([`Script::counted`]): its events of this kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// `A`: arrivals in the server's socket (`sk_data_ready`).
    Arrived,
    /// `R`: the server's reads (`sock_recv_length`).
    Read,
    /// `W`: the server's writes (`sock_send_length`, and the send's start stamped by
    /// `tcp_sendmsg_locked`, once a write).
    Wrote,
}

impl Counted {
    /// Adds to `hits` (by probe) the events of `batch` of each probe counted by its events:
    /// one pass over the batch (this runs on reqlife's reader of the events, at their rate).
    pub fn count(
        counted: &[(usize, Counted)],
        batch: &[crate::recorder::join::KernelEvent],
        hits: &mut [(String, u64)],
    ) {
        if counted.is_empty() {
            return;
        }
        let mut by_kind = [0u64; 3];
        for e in batch {
            if let Some(kind) = Counted::of(e) {
                by_kind[kind as usize] += 1;
            }
        }
        for &(probe, kind) in counted {
            if let Some(h) = hits.get_mut(probe) {
                h.1 += by_kind[kind as usize];
            }
        }
    }

    /// The kind of `event`, if it is one of the counted ones.
    fn of(event: &crate::recorder::join::KernelEvent) -> Option<Counted> {
        use crate::recorder::join::KernelEvent as E;
        match event {
            E::Arrived { .. } => Some(Counted::Arrived),
            E::Read { .. } => Some(Counted::Read),
            E::Wrote { .. } => Some(Counted::Wrote),
            _ => None,
        }
    }
}

pub use crate::recorder::join::fields::{
    EV_ARRIVED, EV_BACKEND, EV_DELIVERED, EV_FUNCTION, EV_OPENED, EV_READ, EV_UPSTREAM, EV_WROTE,
};

/// [`crate::recorder::join::halves::traced`] in bpftrace, of the client port `$p`: 1 for a
/// followed connection (the others are known, so not counted as others', and left untraced).
const TRACED_BPF: &str = "((((uint64)$p * 40503) >> 15) & 1)";

/// Linux's TCP states, as `sock:inet_sock_set_state` gives them.
const TCP_ESTABLISHED: u8 = 1;
const TCP_SYN_SENT: u8 = 2;
const TCP_CLOSE: u8 = 7;
/// `MSG_PEEK`: a read that takes nothing.
const MSG_PEEK: u32 = 2;

impl ScriptPlan {
    /// The thread's key: its goroutine for a Go server (read from the register that holds it
    /// in Go code, `uprobe`s only), else its thread id.
    fn fn_key(&self) -> String {
        match (self.go, go_g_register()) {
            (true, Some(r)) => format!("reg(\"{r}\")"),
            _ => "tid".into(),
        }
    }

    /// The same key where a read is seen (a tracepoint, in the kernel): a Go thread's
    /// goroutine is in its thread-local storage (the word before the TLS base on x86-64).
    fn read_key(&self) -> &'static str {
        if self.go && cfg!(target_arch = "x86_64") {
            "*(uint64 *)uptr(curtask->thread.fsbase - 8)"
        } else {
            "tid"
        }
    }

    /// The script.
    pub fn write(&self) -> Script {
        self.try_write()
            .unwrap_or_else(|e| panic!("the probes' script is wrong: {e}"))
    }

    /// The script, or what is wrong with it (a variant that reads a map it never assigns).
    pub fn try_write(&self) -> Result<Script, String> {
        let mut b = Builder::new();
        let mut counted = Vec::new();
        let n = b.map("n");
        // The offsets' maps typed first (u64): the events' map takes values read from them,
        // and bpftrace knows a map's type on its first assignment in the text.
        let (ain, cin) = (b.map("ain"), b.map("cin"));
        let typed = self.upstream_typed(&mut b);
        // 1 once reqlife reads the event maps itself (`super::maps`): not printed then.
        let direct = b.map("direct");
        b.probe(
            &Attach::Special("BEGIN"),
            None,
            &format!(
                "  {ain}[0] = (uint64)0; {cin}[0] = (uint64)0; delete({ain}[0]); delete({cin}[0]);{typed}\n  {direct} = (uint64)0;\n  printf(\"B\\n\");"
            ),
        );
        self.connections(&mut b);
        self.kernel(&mut b, &mut counted);
        let labels = self.function_probes(&mut b);
        let (ep, e0, e1, e2) = (b.map("ep"), b.map("e0"), b.map("e1"), b.map("e2"));
        // bpftrace turns the maps until reqlife reads them itself (`@direct`): reqlife turns
        // them then (`super::maps::EventMaps::turn`), its timer never skipped.
        b.probe(
            &Attach::IntervalMs(self.tick_ms),
            Some(&format!("{direct} == 0")),
            &format!(
                "  if ({ep} == 2) {{ {ep} = 0; }} else {{ {ep} = {ep} + 1; }}\n  $now = nsecs;\n  if ({ep} == 0) {{ print({e2}); clear({e2}); }} else if ({ep} == 1) {{ print({e0}); clear({e0}); }} else {{ print({e1}); clear({e1}); }}\n  printf(\"T %llu %llu\\n\", $now, {ep});"
            ),
        );
        let other = b.map("other");
        // Read by reqlife: left for it (the three maps, at the end's `T`), not cleared.
        for m in ["e0", "e1", "e2"] {
            b.keep_at_end(m);
        }
        b.at_end(format!(
            "$now = nsecs; if ({direct} == 0) {{ print({e0}); print({e1}); print({e2}); clear({e0}); clear({e1}); clear({e2}); }} printf(\"T %llu\\n\", $now);"
        ));
        // The hits counted in the kernel (the functions'), if any probe counts there.
        if b.assigns("n") {
            b.at_end(format!("print({n});"));
        }
        if matches!(self.follow, Follow::Client(_)) {
            b.at_end(format!("print({other});"));
        }
        b.at_end("printf(\"Z\\n\");");
        let built = b.finish()?;
        Ok(Script {
            text: built.text,
            probes: built.counters,
            functions: labels,
            calibration: None,
            counted,
        })
    }

    /// The client's connections, learnt as they open; forgotten when they close.
    fn connections(&self, b: &mut Builder) {
        let Follow::Client(me) = self.follow else {
            return;
        };
        let (conn, ours) = (b.map("conn"), b.map("ours"));
        let opened = record(b, "nsecs", EV_OPENED, ["$p", "0", "0", "0", "0"]);
        let sampled = self.sample > 1;
        let forget_sampled = if sampled {
            let (act, ain, cin, rend, wend) = (
                b.map("act"),
                b.map("ain"),
                b.map("cin"),
                b.map("rend"),
                b.map("wend"),
            );
            format!(
                " delete({act}[$p]); delete({ain}[$p]); delete({cin}[$p]); delete({rend}[$p]); delete({wend}[$p]);"
            )
        } else {
            let (ain, cin) = (b.map("ain"), b.map("cin"));
            format!(" delete({ain}[$p]); delete({cin}[$p]);")
        };
        let (untraced, untraced_end) = if self.split {
            (
                format!(" if ({TRACED_BPF} == 0) {{ {ours}[$p] = 2; }} else {{"),
                " }",
            )
        } else {
            (String::new(), "")
        };
        let (up_filter, up_open, up_close) = self.upstream_closed(b);
        b.probe(
            &Attach::Tracepoint("sock", "inet_sock_set_state"),
            Some(&format!(
                "args->protocol == 6 && (args->dport == {}{up_filter})",
                self.port
            )),
            &format!(
                "  {up_open}$p = args->sport;
  if (args->newstate == {TCP_SYN_SENT} && pid == {me}) {{ {conn}[args->skaddr] = 1; }}
  else if (args->newstate == {TCP_ESTABLISHED} && {conn}[args->skaddr]) {{
    delete({conn}[args->skaddr]);{untraced} {ours}[$p] = 1;
    {opened}{untraced_end}
  }} else if (args->newstate == {TCP_CLOSE}) {{
    delete({conn}[args->skaddr]); delete({ours}[$p]);{forget_sampled}
  }}{up_close}"
            ),
        );
    }

    /// Whether the connection `$p` is one the script follows (a condition).
    fn ours(&self, b: &mut Builder) -> String {
        match self.follow {
            Follow::Client(_) if self.split => format!("{}[$p] == 1", b.map("ours")),
            Follow::Client(_) => format!("{}[$p]", b.map("ours")),
            Follow::All => "1".into(),
        }
    }

    /// The client port `$p` of a server's socket `$sk`.
    const PEER_PORT: &'static str =
        "$q = $sk->__sk_common.skc_dport; $p = (($q & 255) << 8) | ($q >> 8);";

    /// The kernel's events: arrivals, reads, writes, the client's arrivals. Their hits are
    /// their events, counted by reqlife (`counted`).
    fn kernel(&self, b: &mut Builder, counted: &mut Vec<(usize, Counted)>) {
        for (name, kind) in [
            ("kernel:sk_data_ready", Counted::Arrived),
            ("kernel:sock_recv_length", Counted::Read),
            ("kernel:sock_send_length", Counted::Wrote),
        ] {
            counted.push((b.counter(name, false), kind));
        }
        let ep = self.episode(b);
        self.arrivals(b, &ep);
        self.reads(b, &ep);
        self.writes(b, &ep, counted);
    }

    /// Arrivals in the server's socket (and in the client's, on this host).
    fn arrivals(&self, b: &mut Builder, ep: &Episode) {
        let (port, port_be) = (self.port, self.port.swap_bytes());
        let ours = self.ours(b);
        let (ain, cin) = (b.map("ain"), b.map("cin"));
        let Episode { draw, active, .. } = ep;
        // Not others': the listening socket's (no peer: port 0), the untraced half's.
        let other = match self.follow {
            Follow::Client(_) if self.split => format!(
                " else if ($p != 0 && {}[$p] != 2) {{ {} = count(); }}",
                b.map("ours"),
                b.map("other")
            ),
            Follow::Client(_) => format!(" else if ($p != 0) {{ {} = count(); }}", b.map("other")),
            Follow::All => String::new(),
        };
        let delivered = record(b, "$t", EV_DELIVERED, ["$p", "$v", "$o", "0", "0"]);
        let client_side = match self.follow {
            Follow::Client(_) => format!(
                " else if ($sk->__sk_common.skc_dport == {port_be}) {{
    $p = $sk->__sk_common.skc_num;
    if ({ours}) {{
      $tp = (struct tcp_sock *)args->skaddr;
      $o = $tp->bytes_received; $v = {cin}[$p]; {cin}[$p] = $o;
      if ({active}) {{
        {delivered}
      }}
    }}
  }}"
            ),
            Follow::All => String::new(),
        };
        let arrived = record(b, "$t", EV_ARRIVED, ["$p", "$v", "$o", "0", "0"]);
        let upstream = self.upstream_arrival(b);
        b.probe(
            &Attach::Tracepoint("sock", "sk_data_ready"),
            Some("args->protocol == 6"),
            &format!(
                "  // Stamped first: the arrival is the kernel's, before the program's own work.
  $t = nsecs;
  $sk = (struct sock *)args->skaddr;
  if ($sk->__sk_common.skc_num == {port}) {{
    {}
    if ({ours}) {{
      $tp = (struct tcp_sock *)args->skaddr;
      $o = $tp->bytes_received; $v = {ain}[$p]; {ain}[$p] = $o;
      {draw}if ({active}) {{
        {arrived}
      }}
    }}{other}
  }}{client_side}{upstream}",
                Self::PEER_PORT
            ),
        );
    }

    /// The server's reads of a followed connection.
    fn reads(&self, b: &mut Builder, ep: &Episode) {
        let (port, sampled) = (self.port, self.sample > 1);
        let ours = self.ours(b);
        let Episode {
            active, read_mark, ..
        } = ep;
        // A read: where it ended is what arrived less what is still unread.
        let srv = b.map("srv");
        let functions = self.functions.len() >= 2;
        let mark_fn = if functions {
            let fk = b.map("fk");
            if sampled {
                format!(" if ({active}) {{ {fk}[$k] = 1; }} else {{ delete({fk}[$k]); }}")
            } else {
                format!(" {fk}[$k] = 1;")
            }
        } else {
            String::new()
        };
        let ep = b.map("ep");
        let read = record_at(
            b,
            "$t",
            EV_READ,
            ["$p", "$o - (uint64)args->ret", "$o", "pid", "$k"],
            "$turn",
        );
        let upstream = self.upstream_read(b);
        b.probe(
            &Attach::Tracepoint("sock", "sock_recv_length"),
            Some(&format!(
                "args->ret > 0 && args->protocol == 6 && (args->flags & {MSG_PEEK}) == 0"
            )),
            &format!(
                "  $sk = (struct sock *)args->sk;
  if ($sk->__sk_common.skc_num == {port}) {{
    {}
    if ({ours}) {{
      if ({srv}[pid] == 0) {{ {srv}[pid] = 1; }}
      $tp = (struct tcp_sock *)args->sk;
      $o = $tp->bytes_received - (($tp->rcv_nxt - $tp->copied_seq) & 0xffffffff);
      $k = {};{mark_fn}
      {read_mark}if ({active}) {{
        $turn = {ep};
        // Stamped last: the program's own work before it is not the server's (after it,
        // only the event's store).
        $t = nsecs;
        {read}
      }}
    }}
  }}{upstream}",
                Self::PEER_PORT,
                self.read_key()
            ),
        );
    }

    /// The server's writes to a followed connection, each from the start of its send.
    fn writes(&self, b: &mut Builder, ep: &Episode, counted: &mut Vec<(usize, Counted)>) {
        let port = self.port;
        let (ours, srv) = (self.ours(b), b.map("srv"));
        let Episode {
            active, write_mark, ..
        } = ep;
        // A write: where it ended is what was acknowledged plus what is queued.
        let start = if self.send_start {
            let ws = b.map("ws");
            // Its hits: the writes it stamped (one a write, however many calls it took).
            counted.push((
                b.counter("kernel:tcp_sendmsg_locked", false),
                Counted::Wrote,
            ));
            // Stamped first, before even the check of whose send it is: the program's work
            // before the stamp would be counted as the server's.
            b.probe(
                &Attach::Tracepoint("tcp", "tcp_sendmsg_locked"),
                None,
                &format!(
                    "  $t = nsecs;\n  if ({srv}[pid]) {{ if ({ws}[tid] == 0) {{ {ws}[tid] = $t; }} }}"
                ),
            );
            format!("$w = {ws}[tid]; delete({ws}[tid]); if ($w == 0) {{ $w = nsecs; }}")
        } else {
            "$w = nsecs;".to_string()
        };
        let wrote = record(
            b,
            "$w",
            EV_WROTE,
            ["$p", "$e - (uint64)args->ret", "$e", "pid", "0"],
        );
        let (take, upstream, upstream_write) = self.upstream_write(b);
        b.probe(
            &Attach::Tracepoint("sock", "sock_send_length"),
            Some(&format!(
                "args->ret > 0 && args->protocol == 6 && {srv}[pid]"
            )),
            &format!(
                "  {start}
  $sk = (struct sock *)args->sk;
  if ($sk->__sk_common.skc_num == {port}) {{
    {}
    {take}if ({ours}) {{
      $tp = (struct tcp_sock *)args->sk;
      $e = $tp->bytes_acked + (($tp->write_seq - $tp->snd_una) & 0xffffffff);
      if ({active}) {{
        {write_mark}{wrote}{upstream}
      }}
    }}
  }}{upstream_write}",
                Self::PEER_PORT
            ),
        );
    }

    /// The functions: each hit on a thread (goroutine) whose last read was of a followed
    /// connection. Gives the labels by `F` index.
    fn function_probes(&self, b: &mut Builder) -> Vec<String> {
        if self.functions.len() < 2 {
            return Vec::new();
        }
        let n = b.map("n");
        let fk = b.map("fk");
        let key = self.fn_key();
        let mut labels = Vec::new();
        for (i, probe) in self.functions.iter().enumerate() {
            let c = b.counter(format!("fn:{}", probe.label), true);
            labels.push(probe.label.clone());
            let hit = record(
                b,
                "nsecs",
                EV_FUNCTION,
                [&i.to_string(), "0", "0", "pid", &key],
            );
            b.probe(
                &attach_point(&probe.site),
                Some(&format!("{fk}[{key}]")),
                &format!("  {n}[{c}] = count(); {hit}"),
            );
        }
        labels
    }
}

/// bpftrace's attach point of a probe site (its binary resolved).
fn attach_point(site: &Site) -> Attach {
    let bin = |b: &Option<PathBuf>| {
        b.as_ref()
            .map(|b| b.display().to_string())
            .unwrap_or_default()
    };
    match site {
        Site::Function {
            binary,
            symbol,
            ret,
        } => Attach::Uprobe {
            binary: bin(binary),
            symbol: symbol.clone(),
            ret: *ret,
        },
        Site::Usdt {
            binary,
            provider,
            name,
        } => Attach::Usdt {
            binary: bin(binary),
            provider: provider.clone(),
            name: name.clone(),
        },
    }
}

mod calibration;
mod episode;
mod record;
#[cfg(test)]
mod tests;
mod upstream;

pub use calibration::calibration;
