//! reqlife's own programs on the kernel's tracepoints, the default plan's (`--server-probes`
//! with a client here): the same events, kept by the same rules, as the bpftrace script
//! [`crate::probe::script`] writes for it, written as BPF instructions for raw tracepoints
//! (no record of the tracepoint built per hit, no perf event on the path) into a ring buffer
//! (no hash map per event, no batch taken from one).
//!
//! - `inet_sock_set_state`: a connection of reqlife's process to the server's port is learnt
//!   at its `SYN_SENT` (by its socket) and followed from its `ESTABLISHED` (by the client's
//!   port: an `Opened` event), forgotten at its `CLOSE`.
//! - `sk_data_ready`: bytes arrived in the server's socket of a followed connection
//!   (`Arrived`: the bytes received before and now), or in the client's (`Delivered`); an
//!   arrival on the server's port of a connection not followed is counted (another client's).
//! - `sock_recv_length`: the server read bytes (`Read`: where its read began, from the bytes
//!   received less those not yet read, and where it ended), stamped last.
//! - `tcp_sendmsg_locked` (6.11 on): a send's start on a followed connection, kept in the
//!   connection's entry until the send's end takes it.
//! - `sock_send_length`: the server wrote bytes (`Wrote`: where its bytes begin and end in the
//!   stream, from the bytes acknowledged and those still unacknowledged), stamped at the
//!   send's start where known.
//!
//! The state of a followed connection lies in an array indexed by the client's port: whether
//! it is followed, the bytes received at the last arrival on each side, the send's start.

use super::asm::{Asm, Cond, Label, Reg, Size, FP};

/// Byte offsets (and the protocol's field size) from this kernel's BTF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    /// `sock_common`'s `skc_dport` (big-endian), then `skc_num` (host order), as one u32.
    pub ports: i32,
    /// `sock`'s `sk_protocol` (a u16).
    pub protocol: i32,
    /// `inet_sock`'s `inet_sport` (big-endian): a socket's own port, still there at its
    /// `CLOSE`, where `skc_num` is already 0 (its port was put back first).
    pub sport: i32,
    /// `tcp_sock`'s u64s.
    pub bytes_received: i32,
    pub bytes_acked: i32,
    /// `tcp_sock`'s u32 sequence numbers.
    pub rcv_nxt: i32,
    pub copied_seq: i32,
    pub write_seq: i32,
    pub snd_una: i32,
}

/// The maps the programs use (their fds).
#[derive(Debug, Clone, Copy)]
pub struct Maps {
    /// The events.
    pub ring: i32,
    /// Per client port, a [`PORT_VALUE`]-byte entry: followed, the server's and the client's
    /// bytes received at their last arrival, the send's start.
    pub ports: i32,
    /// reqlife's connections between `SYN_SENT` and `ESTABLISHED`, by socket.
    pub conn: i32,
    /// [`LOST`] and [`OTHERS`].
    pub counters: i32,
}

/// What the programs are written for.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Typed programs (`tp_btf`, Linux 5.5 on): the socket's fields loaded directly, checked
    /// by the verifier against the kernel's BTF (a TCP socket found by
    /// `bpf_skc_to_tcp_sock`, 5.9). Else raw tracepoints, each field read by
    /// `bpf_probe_read_kernel`, a helper's call each (the fallback).
    pub typed: bool,
    /// The server's port.
    pub port: u16,
    /// reqlife's process.
    pub client: u32,
    pub fields: Fields,
    pub maps: Maps,
}

/// A port's entry: its fields' offsets, and its size.
const OURS: i16 = 0;
const AIN: i16 = 8;
const CIN: i16 = 16;
const WS: i16 = 24;
pub const PORT_VALUE: u32 = 32;
/// The counters' indices: events the ring had no room for; arrivals of other clients.
pub const LOST: u32 = 0;
pub const OTHERS: u32 = 1;
/// An event's size: its time, its kind and port, two offsets, the pid and tid.
pub const EVENT: usize = 40;

// The stack: the stamp, the ports word, the protocol, the event (5 words), keys, scratch.
const T: i16 = -8;
const PORTS: i16 = -16;
const PROTO: i16 = -24;
const EV: i16 = -64;
const EV_KIND: i16 = -56;
const EV_A: i16 = -48;
const EV_B: i16 = -40;
const EV_PID: i16 = -32;
const KEY: i16 = -72;
const SK: i16 = -80;
const ONE: i16 = -88;
const SEQ_A: i16 = -96;
const SEQ_B: i16 = -104;
const RET: i16 = -112;

// The helpers called.
const LOOKUP: i32 = 1;
const UPDATE: i32 = 2;
const DELETE: i32 = 3;
const KTIME: i32 = 5;
const PID_TGID: i32 = 14;
const READ_KERNEL: i32 = 113;
const RINGBUF_OUTPUT: i32 = 130;
const SKC_TO_TCP_SOCK: i32 = 137;

/// The registers kept across calls: the tracepoint's arguments, the port's entry, the
/// socket, the client's port.
const CTX: Reg = 6;
const ENTRY: Reg = 7;
const SOCK: Reg = 8;
const CLIENT: Reg = 9;

/// A program being written for `plan`, its common end.
struct W<'a> {
    a: Asm,
    plan: &'a Plan,
    out: Label,
}

impl<'a> W<'a> {
    fn new(plan: &'a Plan) -> W<'a> {
        let mut a = Asm::default();
        let out = a.label();
        a.mov(CTX, 1);
        W { a, plan, out }
    }

    fn done(mut self) -> Vec<u64> {
        let out = self.out;
        self.a.place(out);
        self.a.exit0();
        self.a
            .finish()
            .expect("every label placed, every jump in reach")
    }

    /// The socket's field at `field` (`size` bytes) into the stack at `at`: loaded directly
    /// (typed), else `bpf_probe_read_kernel(fp + at, size, socket + field)`.
    fn read(&mut self, at: i16, size: i32, field: i32) {
        if self.plan.typed {
            let sz = match size {
                2 => Size::H,
                4 => Size::W,
                _ => Size::DW,
            };
            let off = i16::try_from(field).expect("a socket's field within 32 KiB");
            self.a.load(sz, 1, SOCK, off);
            self.a.store(sz, FP, at, 1);
            return;
        }
        self.a.stack(1, at);
        self.a.mov_imm(2, size);
        self.a.mov(3, SOCK);
        self.a.add_imm(3, field);
        self.a.call(READ_KERNEL);
    }

    /// The socket (argument 0; on to the end if none), its ports word into r1 (skc_dport,
    /// big-endian, in the low half; skc_num in the high half), skc_num into r2.
    fn ports(&mut self) {
        self.a.load(Size::DW, SOCK, CTX, 0);
        self.a.jump_imm(Cond::Eq, SOCK, 0, self.out);
        self.read(PORTS, 4, self.plan.fields.ports);
        self.a.load(Size::W, 1, FP, PORTS);
        self.a.mov(2, 1);
        self.a.rsh_imm(2, 16);
    }

    /// CLIENT = the peer's port of the server's socket (r1's low half, swapped).
    fn peer_port(&mut self) {
        self.a.and_imm(1, 0xffff);
        self.a.mov(CLIENT, 1);
        self.a.rsh_imm(CLIENT, 8);
        self.a.and_imm(1, 0xff);
        self.a.lsh_imm(1, 8);
        self.a.or(CLIENT, 1);
    }

    /// On to the end unless the socket is TCP's (typed: a full TCP socket, SOCK then typed
    /// as one).
    fn tcp(&mut self) {
        if self.plan.typed {
            self.a.mov(1, SOCK);
            self.a.call(SKC_TO_TCP_SOCK);
            self.a.jump_imm(Cond::Eq, 0, 0, self.out);
            self.a.mov(SOCK, 0);
            return;
        }
        self.read(PROTO, 2, self.plan.fields.protocol);
        self.a.load(Size::H, 1, FP, PROTO);
        self.a.jump_imm(Cond::Ne, 1, 6, self.out);
    }

    /// ENTRY = the client port's entry (on to the end if none).
    fn entry(&mut self) {
        self.a.store(Size::W, FP, KEY, CLIENT);
        self.a.map(1, self.plan.maps.ports);
        self.a.stack(2, KEY);
        self.a.call(LOOKUP);
        self.a.jump_imm(Cond::Eq, 0, 0, self.out);
        self.a.mov(ENTRY, 0);
    }

    /// The arguments of a call on the opening connections' map, keyed by the socket: r1 the
    /// map, r2 the key (the socket's address, on the stack).
    fn conn_key(&mut self) {
        self.a.store(Size::DW, FP, SK, SOCK);
        self.a.map(1, self.plan.maps.conn);
        self.a.stack(2, SK);
    }

    /// On to the end unless the connection is followed.
    fn followed(&mut self) {
        self.a.load(Size::DW, 1, ENTRY, OURS);
        self.a.jump_imm(Cond::Eq, 1, 0, self.out);
    }

    /// Counter `index` += 1.
    fn count(&mut self, index: u32) {
        self.a.store_imm(Size::W, FP, KEY, index as i32);
        self.a.map(1, self.plan.maps.counters);
        self.a.stack(2, KEY);
        self.a.call(LOOKUP);
        self.a.jump_imm(Cond::Eq, 0, 0, self.out);
        self.a.mov_imm(1, 1);
        self.a.atomic_add(0, 0, 1);
    }

    /// The event (its time, offsets and pid already on the stack) of `kind` for CLIENT into
    /// the ring; counted lost when it has no room.
    fn emit(&mut self, kind: i32) {
        self.a.mov(1, CLIENT);
        self.a.lsh_imm(1, 32);
        self.a.add_imm(1, kind);
        self.a.store(Size::DW, FP, EV_KIND, 1);
        self.a.map(1, self.plan.maps.ring);
        self.a.stack(2, EV);
        self.a.mov_imm(3, EVENT as i32);
        self.a.mov_imm(4, 0);
        self.a.call(RINGBUF_OUTPUT);
        self.a.jump_imm(Cond::Sge, 0, 0, self.out);
        self.count(LOST);
    }

    /// The current process and thread into the event.
    fn pid(&mut self) {
        self.a.call(PID_TGID);
        self.a.store(Size::DW, FP, EV_PID, 0);
    }

    /// r1 = `a` − `b`, two u32 sequence numbers read into the stack, modulo 2^32.
    fn seq_diff(&mut self, a: i32, b: i32) {
        self.read(SEQ_A, 4, a);
        self.read(SEQ_B, 4, b);
        self.a.load(Size::W, 1, FP, SEQ_A);
        self.a.load(Size::W, 2, FP, SEQ_B);
        self.a.sub(1, 2);
        self.a.lsh_imm(1, 32);
        self.a.rsh_imm(1, 32);
    }

    /// The bytes the call moved in the stream: they end (EV_B) at the u64 `total` plus or
    /// less (`plus`) the two sequence numbers' difference `seq`, and begin (EV_A) the call's
    /// return value before.
    fn span(&mut self, total: i32, seq: (i32, i32), plus: bool) {
        self.read(EV_B, 8, total);
        self.seq_diff(seq.0, seq.1);
        self.a.load(Size::DW, 2, FP, EV_B);
        if plus {
            self.a.add(2, 1);
        } else {
            self.a.sub(2, 1);
        }
        self.a.store(Size::DW, FP, EV_B, 2);
        self.a.load(Size::DW, 1, FP, RET);
        self.a.sub(2, 1);
        self.a.store(Size::DW, FP, EV_A, 2);
    }

    /// The return value (argument 1) kept, on to the end unless positive.
    fn moved_bytes(&mut self) {
        self.a.load(Size::DW, 1, CTX, 8);
        self.a.jump32_imm(Cond::Sle, 1, 0, self.out);
        self.a.lsh_imm(1, 32);
        self.a.rsh_imm(1, 32);
        self.a.store(Size::DW, FP, RET, 1);
    }

    /// An arrival (`kind`) with the bytes received before (the entry's `slot`) and now.
    fn arrival(&mut self, kind: i32, slot: i16) {
        self.read(EV_B, 8, self.plan.fields.bytes_received);
        self.a.load(Size::DW, 1, ENTRY, slot);
        self.a.store(Size::DW, FP, EV_A, 1);
        self.a.load(Size::DW, 1, FP, EV_B);
        self.a.store(Size::DW, ENTRY, slot, 1);
        self.a.load(Size::DW, 1, FP, T);
        self.a.store(Size::DW, FP, EV, 1);
        self.a.store_imm(Size::DW, FP, EV_PID, 0);
        self.emit(kind);
    }

    /// The four words of the entry set: followed or not, nothing received or sent yet.
    fn reset(&mut self, ours: i32) {
        self.a.store_imm(Size::DW, ENTRY, OURS, ours);
        for slot in [AIN, CIN, WS] {
            self.a.store_imm(Size::DW, ENTRY, slot, 0);
        }
    }
}

/// The kernel's event kinds, as [`crate::probe::output::event`] reads them.
const OPENED: i32 = 0;
const ARRIVED: i32 = 1;
const READ: i32 = 2;
const WROTE: i32 = 3;
const DELIVERED: i32 = 4;

/// `inet_sock_set_state(sk, oldstate, newstate)`: the client's port from `inet_sport`, as
/// the tracepoint's `sport` (at `CLOSE`, `skc_num` is 0).
pub fn set_state(plan: &Plan) -> Vec<u64> {
    let mut w = W::new(plan);
    let (syn, established, close) = (w.a.label(), w.a.label(), w.a.label());
    w.ports();
    w.a.and_imm(1, 0xffff);
    w.a.jump_imm(Cond::Ne, 1, i32::from(plan.port.swap_bytes()), w.out);
    w.tcp();
    // CLIENT = inet_sport, swapped (as a peer's port is).
    w.read(SEQ_A, 2, plan.fields.sport);
    w.a.load(Size::H, 1, FP, SEQ_A);
    w.peer_port();
    w.a.load(Size::DW, 1, CTX, 16);
    w.a.jump32_imm(Cond::Eq, 1, 2, syn);
    w.a.jump32_imm(Cond::Eq, 1, 1, established);
    w.a.jump32_imm(Cond::Eq, 1, 7, close);
    w.a.goto(w.out);
    // SYN_SENT by reqlife: its socket remembered.
    w.a.place(syn);
    w.a.call(PID_TGID);
    w.a.rsh_imm(0, 32);
    w.a.jump_imm(Cond::Ne, 0, plan.client as i32, w.out);
    w.a.store_imm(Size::DW, FP, ONE, 1);
    w.conn_key();
    w.a.stack(3, ONE);
    w.a.mov_imm(4, 0);
    w.a.call(UPDATE);
    w.a.goto(w.out);
    // ESTABLISHED, remembered: followed by its port from now on.
    w.a.place(established);
    w.conn_key();
    w.a.call(LOOKUP);
    w.a.jump_imm(Cond::Eq, 0, 0, w.out);
    w.conn_key();
    w.a.call(DELETE);
    w.entry();
    w.reset(1);
    w.a.call(KTIME);
    w.a.store(Size::DW, FP, EV, 0);
    for slot in [EV_A, EV_B, EV_PID] {
        w.a.store_imm(Size::DW, FP, slot, 0);
    }
    w.emit(OPENED);
    w.a.goto(w.out);
    // CLOSE: forgotten.
    w.a.place(close);
    w.conn_key();
    w.a.call(DELETE);
    w.entry();
    w.reset(0);
    w.done()
}

/// `sk_data_ready(sk)`: stamped first (the arrival is the kernel's, before the program's work).
pub fn data_ready(plan: &Plan) -> Vec<u64> {
    let mut w = W::new(plan);
    let (client, ours) = (w.a.label(), w.a.label());
    w.a.call(KTIME);
    w.a.store(Size::DW, FP, T, 0);
    w.ports();
    w.a.jump_imm(Cond::Ne, 2, i32::from(plan.port), client);
    // The server's socket: the client's port is its peer's.
    w.peer_port();
    w.tcp();
    w.entry();
    w.a.load(Size::DW, 1, ENTRY, OURS);
    w.a.jump_imm(Cond::Ne, 1, 0, ours);
    w.a.jump_imm(Cond::Eq, CLIENT, 0, w.out);
    w.count(OTHERS);
    w.a.goto(w.out);
    w.a.place(ours);
    w.arrival(ARRIVED, AIN);
    w.a.goto(w.out);
    // The client's socket: its own port.
    w.a.place(client);
    w.a.and_imm(1, 0xffff);
    w.a.jump_imm(Cond::Ne, 1, i32::from(plan.port.swap_bytes()), w.out);
    w.a.mov(CLIENT, 2);
    w.tcp();
    w.entry();
    w.followed();
    w.arrival(DELIVERED, CIN);
    w.done()
}

/// The server's socket of a followed connection (ENTRY, CLIENT set), else on to the end.
fn server_socket(w: &mut W) {
    w.ports();
    w.a.jump_imm(Cond::Ne, 2, i32::from(w.plan.port), w.out);
    w.peer_port();
    w.tcp();
    w.entry();
    w.followed();
}

/// `sock_recv_length(sk, ret, flags)`: bytes read (not peeked); stamped last (the program's
/// own work before it is not the server's).
pub fn recv(plan: &Plan) -> Vec<u64> {
    let mut w = W::new(plan);
    w.moved_bytes();
    w.a.load(Size::DW, 1, CTX, 16);
    w.a.and_imm(1, 2);
    w.a.jump_imm(Cond::Ne, 1, 0, w.out);
    server_socket(&mut w);
    let f = plan.fields;
    // What the server has read: the bytes received less those not yet read.
    w.span(f.bytes_received, (f.rcv_nxt, f.copied_seq), false);
    w.pid();
    w.a.call(KTIME);
    w.a.store(Size::DW, FP, EV, 0);
    w.emit(READ);
    w.done()
}

/// `tcp_sendmsg_locked(sk, msg, skb, size_goal)`: a send's start on a followed connection,
/// unless one is already waiting for its send's end.
pub fn send_start(plan: &Plan) -> Vec<u64> {
    let mut w = W::new(plan);
    w.a.call(KTIME);
    w.a.store(Size::DW, FP, T, 0);
    server_socket(&mut w);
    w.a.load(Size::DW, 1, ENTRY, WS);
    w.a.jump_imm(Cond::Ne, 1, 0, w.out);
    w.a.load(Size::DW, 1, FP, T);
    w.a.store(Size::DW, ENTRY, WS, 1);
    w.done()
}

/// `sock_send_length(sk, ret, flags)`: bytes sent, stamped at their send's start (else at
/// the program's start).
pub fn send(plan: &Plan) -> Vec<u64> {
    let mut w = W::new(plan);
    let stamped = w.a.label();
    w.moved_bytes();
    w.a.call(KTIME);
    w.a.store(Size::DW, FP, T, 0);
    server_socket(&mut w);
    w.a.load(Size::DW, 1, ENTRY, WS);
    w.a.store_imm(Size::DW, ENTRY, WS, 0);
    w.a.jump_imm(Cond::Ne, 1, 0, stamped);
    w.a.load(Size::DW, 1, FP, T);
    w.a.place(stamped);
    w.a.store(Size::DW, FP, EV, 1);
    let f = plan.fields;
    // What the server has sent: the bytes acknowledged and those in flight.
    w.span(f.bytes_acked, (f.write_seq, f.snd_una), true);
    w.pid();
    w.emit(WROTE);
    w.done()
}
