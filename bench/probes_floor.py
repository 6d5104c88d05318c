#!/usr/bin/env python3
"""What the kernel's probes would cost nginx with programs of reqlife's own (issue 49, point 2):
raw tracepoints and a ring buffer, against bpftrace's tracepoints and hash maps.

An experiment toward the next step, not reqlife's code path: this script loads, with bpf(2)
itself, one small program on each of the four tracepoints `--server-probes` hits per request
(sock:sk_data_ready, sock:sock_recv_length, sock:sock_send_length, tcp:tcp_sendmsg_locked),
attached as raw tracepoints (no perf record built per hit, no perf event on the path). Each
checks the socket's port, reads its byte count, stamps and writes a 48-byte event into a BPF
ring buffer, which a thread of this script empties (discarding: what reading them would cost
reqlife's side is not here). With `work` the programs also do the map work the join needs: the
client's port looked up in a port-indexed array (its connection followed?), its previous
offset read and written in another, the server's pid looked up in a hash map (set when
absent). The field offsets come from this kernel's BTF (`bpftool btf dump`).

nginx (one worker) is pinned to --server-cpu (0), reqlife to --client-cpu (1); in turns,
--rounds times, a closed loop of -c --connections for --seconds: without probes; with the
programs (`own`); with them and the map work (`own+work`); and `reqlife --server-probes`
(bpftrace's programs, reqlife's reading and joining). Each run's CPU a request: nginx's
workers', reqlife's threads' (bench/probes_cost.py's ThreadCpu); and the events the programs
wrote a request (5 expected: an arrival, a read, a send's start, a send, the client's
arrival). Prints each run and the medians, with nginx's capacity alone (1 / its CPU a request)
against without probes. Needs root, bpftool, nginx. It measures; it does not judge.

    sudo python3 bench/probes_floor.py [--rounds 5] [--seconds 5] [--connections 100]
"""

import argparse
import ctypes
import json
import mmap
import os
import re
import statistics
import struct
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no bench/__pycache__ churn from a run
from client_cpu import against_nginx  # noqa: E402
from probes_cost import ThreadCpu  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBC = ctypes.CDLL(None, use_errno=True)
SYS_BPF = 321  # x86-64
# bpf(2) commands, map and program types, helpers used.
MAP_CREATE, MAP_UPDATE_ELEM, PROG_LOAD, RAW_TRACEPOINT_OPEN = 0, 2, 5, 17
HASH, ARRAY, RINGBUF = 1, 2, 27
PROG_RAW_TRACEPOINT = 17
LOOKUP, UPDATE, KTIME, PID_TGID, PROBE_READ_KERNEL, RINGBUF_OUTPUT = 1, 2, 5, 14, 113, 130
EVENT = 48  # bytes: ns, kind, ports, offset, ret, pid_tgid
TRACEPOINTS = ["sk_data_ready", "sock_recv_length", "sock_send_length", "tcp_sendmsg_locked"]


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = LIBC.syscall(SYS_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), f"bpf({cmd})")
    return r


def offsets():
    """Byte offsets from this kernel's BTF: the ports in struct sock_common (skc_dport, then
    skc_num, in an anonymous struct of an anonymous union), tcp_sock's bytes_received and
    bytes_acked."""
    raw = subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format",
                          "raw"], capture_output=True, text=True, check=True).stdout
    types, cur = {}, None
    for line in raw.splitlines():
        m = re.match(r"\[(\d+)\] (\w+) '([^']*)'", line)
        if m:
            cur = types.setdefault(int(m[1]), (m[2], m[3], []))
            continue
        m = re.match(r"\s+'([^']*)' type_id=(\d+) bits_offset=(\d+)", line)
        if m and cur is not None:
            cur[2].append((m[1], int(m[2]), int(m[3])))

    def struct_named(name):
        return next(t for t in types.values() if t[0] == "STRUCT" and t[1] == name)

    def member(t, name):
        return next(bits // 8 for n, _, bits in t[2] if n == name)

    pair = next(i for i, t in types.items()
                if t[0] == "STRUCT" and [m[0] for m in t[2]] == ["skc_dport", "skc_num"])
    union = next(i for i, t in types.items()
                 if t[0] == "UNION" and any(m[1] == pair for m in t[2]))
    common = struct_named("sock_common")
    ports = next(bits // 8 for _, tid, bits in common[2] if tid == union)
    if member(struct_named("sock"), "__sk_common") != 0:
        raise SystemExit("struct sock does not begin with its sock_common")
    if member(types[pair], "skc_num") != 2:
        raise SystemExit("skc_num is not 2 bytes after skc_dport")
    tcp = struct_named("tcp_sock")
    return ports, member(tcp, "bytes_received"), member(tcp, "bytes_acked")


def ins(code, dst=0, src=0, off=0, imm=0):
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


class Program:
    """A BPF program's instructions, with forward jumps to its end patched when it is done."""

    def __init__(self):
        self.code, self.to_end = [], []

    def add(self, *words):
        for w in words:
            self.code.extend(w[i:i + 8] for i in range(0, len(w), 8))

    def here(self):
        return len(self.code)

    def jump_to_end(self, code, dst, imm):
        """A conditional jump (`code`, register `dst`, immediate `imm`) to the end."""
        self.to_end.append((self.here(), code, dst, imm))
        self.code.append(None)

    def skip(self, code, dst, imm):
        """A conditional jump over what follows, to where `land` is called: its index."""
        self.code.append(None)
        return self.here() - 1, code, dst, imm

    def land(self, jump):
        at, code, dst, imm = jump
        self.code[at] = ins(code, dst, 0, self.here() - at - 1, imm)

    def finish(self):
        end = self.here()
        self.add(mov_imm(0, 0), ins(0x95))
        for at, code, dst, imm in self.to_end:
            self.code[at] = ins(code, dst, 0, end - at - 1, imm)
        return b"".join(self.code)


def mov(d, s):
    return ins(0xbf, d, s)


def mov_imm(d, k):
    return ins(0xb7, d, 0, 0, k)


def add_imm(d, k):
    return ins(0x07, d, 0, 0, k)


def call(h):
    return ins(0x85, 0, 0, 0, h)


def ld_map(d, fd):
    return ins(0x18, d, 1, 0, fd) + ins(0, 0, 0, 0, 0)


JNE, JEQ, JSLE32 = 0x55, 0x15, 0xd6


def stack(reg, off):
    """`reg` = the frame pointer + `off`."""
    return mov(reg, 10) + add_imm(reg, off)


def read_kernel(p, at, size, sk_off):
    """bpf_probe_read_kernel(fp+at, size, sk + sk_off) (the socket in r8)."""
    p.add(stack(1, at), mov_imm(2, size), mov(3, 8), add_imm(3, sk_off), call(PROBE_READ_KERNEL))


def lookup(p, fd, key_at):
    p.add(ld_map(1, fd), stack(2, key_at), call(LOOKUP))


def map_work(p, maps, client_key_is_peer):
    """The join's map work: the client's port (fp-12) looked up in `ours` (1: followed), its
    previous offset read and rewritten in `prev`, the server's pid looked up in `srv` (set
    when absent)."""
    p.add(ins(0x61, 1, 10, -8))  # r1 = the ports word (dport | num << 16)
    if client_key_is_peer:  # the server's socket: the client's port is its peer's, swapped
        p.add(ins(0x57, 1, 0, 0, 0xffff), mov(2, 1), ins(0x57, 2, 0, 0, 0xff),
              ins(0x67, 2, 0, 0, 8), ins(0x77, 1, 0, 0, 8), ins(0x4f, 2, 1))
    else:  # the client's socket: its own port
        p.add(mov(2, 1), ins(0x77, 2, 0, 0, 16))
    p.add(ins(0x63, 10, 2, -12))
    lookup(p, maps["ours"], -12)
    p.jump_to_end(JEQ, 0, 0)
    p.add(ins(0x79, 1, 0, 0))
    p.jump_to_end(JEQ, 1, 0)
    lookup(p, maps["prev"], -12)
    p.jump_to_end(JEQ, 0, 0)
    p.add(ins(0x79, 1, 0, 0), ins(0x7b, 10, 1, -72), ins(0x7b, 0, 1, 0))
    p.add(call(PID_TGID), ins(0x77, 0, 0, 0, 32), ins(0x63, 10, 0, -16))
    lookup(p, maps["srv"], -16)
    unset = p.skip(JNE, 0, 0)
    p.add(ins(0x7a, 10, 0, -24, 1), ld_map(1, maps["srv"]), stack(2, -16), stack(3, -24),
          mov_imm(4, 0), call(UPDATE))
    p.land(unset)


def emit(p, maps, kind, field, has_ret, work):
    """The event (fp-64: ns, kind, ports, offset, ret, pid_tgid) into the ring buffer."""
    if work and kind != 5:
        map_work(p, maps, client_key_is_peer=kind != 4)
    if field is None:
        p.add(ins(0x7a, 10, 0, -40, 0))
    else:
        read_kernel(p, -40, 8, field)
    p.add(call(PID_TGID), ins(0x7b, 10, 0, -24))
    p.add(ins(0x7b, 10, 7, -32) if has_ret else ins(0x7a, 10, 0, -32, 0))
    p.add(ins(0x61, 1, 10, -8), ins(0x7b, 10, 1, -48), ins(0x7a, 10, 0, -56, kind))
    p.add(call(KTIME), ins(0x7b, 10, 0, -64))
    p.add(ld_map(1, maps["ring"]), stack(2, -64), mov_imm(3, EVENT), mov_imm(4, 0),
          call(RINGBUF_OUTPUT))


def program(name, port, offs, maps, work):
    ports, received, acked = offs
    peer_be = ((port & 0xff) << 8) | (port >> 8)  # skc_dport as read little-endian
    p = Program()
    has_ret = name in ("sock_recv_length", "sock_send_length")
    p.add(mov(6, 1))
    if has_ret:  # (sk, ret, flags): only what moved bytes
        p.add(ins(0x79, 7, 6, 8))
        p.jump_to_end(JSLE32, 7, 0)
    p.add(ins(0x79, 8, 6, 0))  # the socket
    read_kernel(p, -8, 4, ports)
    p.add(ins(0x61, 1, 10, -8), mov(2, 1), ins(0x77, 2, 0, 0, 16))  # r2 = skc_num
    if name == "sk_data_ready":  # the server's socket (arrival), else the client's
        client = p.skip(JNE, 2, port)
        emit(p, maps, 1, received, False, work)
        p.jump_to_end(0x05, 0, 0)  # always
        p.land(client)
        p.add(ins(0x57, 1, 0, 0, 0xffff))
        p.jump_to_end(JNE, 1, peer_be)
        emit(p, maps, 4, received, False, work)
    else:
        p.jump_to_end(JNE, 2, port)
        kind, field = {"sock_recv_length": (2, received), "sock_send_length": (3, acked),
                       "tcp_sendmsg_locked": (5, None)}[name]
        emit(p, maps, kind, field, has_ret, work)
    return p.finish()


class Own:
    """The programs on the four tracepoints (raw), their ring buffer emptied by a thread;
    detached when closed (their descriptors are this process's)."""

    RING = 1 << 22

    def __init__(self, port, offs, work):
        self.fds = []
        maps = {"ring": self.map(RINGBUF, 0, 0, self.RING)}
        if work:
            maps["ours"] = self.map(ARRAY, 4, 8, 65536)
            maps["prev"] = self.map(ARRAY, 4, 8, 65536)
            maps["srv"] = self.map(HASH, 4, 8, 1024)
            # Every port followed: the only connections to nginx's port are the client's.
            one, key = ctypes.create_string_buffer(struct.pack("<Q", 1)), ctypes.create_string_buffer(4)
            for p in range(65536):
                struct.pack_into("<I", key, 0, p)
                bpf(MAP_UPDATE_ELEM, struct.pack("<IIQQQ", maps["ours"], 0, ctypes.addressof(key),
                                                 ctypes.addressof(one), 0))
        lic, log = ctypes.create_string_buffer(b"GPL"), ctypes.create_string_buffer(1 << 20)
        for name in TRACEPOINTS:
            code = ctypes.create_string_buffer(program(name, port, offs, maps, work))
            n = (len(code) - 1) // 8
            attr = struct.pack("<IIQQIIQI", PROG_RAW_TRACEPOINT, n, ctypes.addressof(code),
                               ctypes.addressof(lic), 1, len(log), ctypes.addressof(log), 0)
            try:
                fd = bpf(PROG_LOAD, attr)
            except OSError as e:
                raise SystemExit(f"{name}: the verifier refused it ({e}): "
                                 f"{log.value.decode()[-2000:]}")
            self.fds.append(fd)
            tp = ctypes.create_string_buffer(name.encode())
            self.fds.append(bpf(RAW_TRACEPOINT_OPEN, struct.pack("<QI", ctypes.addressof(tp), fd)))
        page = os.sysconf("SC_PAGE_SIZE")
        self.consumer = mmap.mmap(maps["ring"], page, mmap.MAP_SHARED,
                                  mmap.PROT_READ | mmap.PROT_WRITE, offset=0)
        self.producer = mmap.mmap(maps["ring"], page, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        self.events, self.stop = 0, threading.Event()
        self.thread = threading.Thread(target=self.empty, daemon=True)
        self.thread.start()

    def map(self, kind, key, value, entries):
        fd = bpf(MAP_CREATE, struct.pack("<IIII", kind, key, value, entries))
        self.fds.append(fd)
        return fd

    def empty(self):
        """Moves the consumer's position to the producer's every 5 ms: the events counted
        (each a 8-byte header and 48 bytes), not read."""
        while not self.stop.is_set():
            head = struct.unpack_from("<Q", self.producer, 0)[0]
            tail = struct.unpack_from("<Q", self.consumer, 0)[0]
            self.events += (head - tail) // (8 + EVENT)
            struct.pack_into("<Q", self.consumer, 0, head)
            time.sleep(0.005)

    def close(self):
        self.stop.set()
        self.thread.join()
        self.consumer.close()
        self.producer.close()
        for fd in reversed(self.fds):
            os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--connections", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reqlife", default=os.path.join(ROOT, "target", "release", "reqlife"))
    ap.add_argument("--server-cpu", default="0")
    ap.add_argument("--client-cpu", default="1")
    a = ap.parse_args()
    if not os.access(a.reqlife, os.X_OK):
        print(f"{a.reqlife} not found: build it first (cargo build --release)", file=sys.stderr)
        return 2
    try:
        offs = offsets()
    except (OSError, subprocess.CalledProcessError, StopIteration) as e:
        print(f"no offsets from this kernel's BTF (bpftool, /sys/kernel/btf/vmlinux): {e}",
              file=sys.stderr)
        return 2
    print(f"offsets: the ports at {offs[0]}, bytes_received at {offs[1]}, bytes_acked at "
          f"{offs[2]}", flush=True)
    out = os.path.join("/tmp", f"reqlife-probes-floor-{os.getpid()}.json")

    def measure(port):
        url = f"http://127.0.0.1:{port}/"
        kinds = ["none", "own", "own+work", "--server-probes"]
        rows = {k: [] for k in kinds}
        for r in range(a.rounds):
            for k in kinds:
                own = Own(port, offs, work=k == "own+work") if k.startswith("own") else None
                cpu = ThreadCpu()
                extra = ["--server-probes"] if k == "--server-probes" else []
                cmd = ["taskset", "-c", a.client_cpu, a.reqlife, "run", "-t", "1", "-c",
                       str(a.connections), "-d", f"{a.seconds}s", "--quiet", "-o", out, *extra, url]
                p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                cpu.follow(p.pid)
                _, err = p.communicate()
                cpu.end()
                if own is not None:
                    own.close()
                if p.returncode != 0:
                    raise SystemExit(f"reqlife failed ({p.returncode}): {err.strip()}")
                with open(out) as f:
                    s = json.load(f)["summary"]
                n = s["requests"]["total"]
                row = cpu.per_request(n)
                row["rps"] = s["throughput_rps"]
                if own is not None:
                    row["events"] = own.events / n
                rows[k].append(row)
                print(f"round {r + 1} {k}: {row['rps']:.0f} req/s; CPU a request: " + ", ".join(
                    f"{name} {us:.2f} us" for name, us in sorted(row.items())
                    if name not in ("rps", "events") and us >= 0.01)
                    + (f"; {row['events']:.2f} events a request" if "events" in row else ""),
                    flush=True)
        os.unlink(out)

        def med(k, name):
            return statistics.median(x.get(name, 0.0) for x in rows[k])

        base, srv0 = med("none", "rps"), med("none", "nginx")
        for k in kinds:
            srv = med(k, "nginx")
            mine = ", ".join(f"{n} {med(k, n):.2f} us" for n in ("worker", "join", "turns")
                             if med(k, n) >= 0.01)
            print(f"median, {k}: {med(k, 'rps'):.0f} req/s ({med(k, 'rps') / base - 1:+.1%}); "
                  f"nginx {srv:.2f} us a request (alone saturated: {srv0 / srv - 1:+.1%}); "
                  f"reqlife {mine}", flush=True)
        return 0

    return against_nginx(a.server_cpu, measure)


if __name__ == "__main__":
    sys.exit(main())
