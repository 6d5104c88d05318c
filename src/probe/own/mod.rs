//! reqlife's own BPF programs, in place of bpftrace's, for the default plan: the kernel's
//! tracepoints alone, a client here, every request timed (`--server-probes` with no
//! `--server-fn`, `--server-sample`, `--server-probes-cost` or `--server-upstream`), on a
//! kernel with BTF (the sockets' field offsets, [`btf`]) and ring buffers (5.8 on).
//!
//! Why: at saturation, bpftrace's path cost nginx half its throughput on the 2-core VM, most
//! of it its own (its tracepoints are perf events, a record built per hit; its programs
//! return 1 and its perf events sit on CPU 0, where each hit is handled again; each event is
//! a hash map's insert, taken by batches). These programs are raw tracepoints writing into a
//! ring buffer ([`programs`]); reqlife reads the ring itself ([`sys::Ring`]). The events,
//! and the rules that keep them, are the script's (`--print-probe-script` prints what
//! bpftrace would run: the same), so that the joiner is given the same events either way;
//! `REQLIFE_PROBES_WITH=bpftrace` runs the script instead, to compare the two.
//!
//! The kernel counts the programs' run time while reqlife holds its statistics switch (the
//! probes' cost is then measured, not estimated from a calibration), and the hits it skipped
//! (a program already running on that CPU).

mod asm;
mod btf;
mod programs;
mod sys;

use crate::recorder::join::fields::event;
use crate::recorder::join::KernelEvent;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// The ring buffer's size: at 100k requests a second (five events each, 48 bytes with the
/// header), 0.7 s of events.
const RING: usize = 32 << 20;
/// The ports' entries (one per port).
const PORTS: u32 = 65536;
/// reqlife's connections being opened at once, at most.
const OPENING: u32 = 65536;

/// Whether the default plan's probes may run as reqlife's own programs (not asked for
/// bpftrace's by `REQLIFE_PROBES_WITH=bpftrace`).
pub fn wanted() -> bool {
    // The programs read the ports' word as a little-endian machine lays it out.
    cfg!(target_endian = "little")
        && std::env::var("REQLIFE_PROBES_WITH").map_or(true, |v| v != "bpftrace")
}

/// The offsets the programs read, from this kernel's BTF.
fn fields(btf: &btf::Btf) -> Result<programs::Fields, String> {
    let at = |s: &str, m: &str, size: u32| -> Result<i32, String> {
        match btf.member(s, m) {
            Some(f) if f.size == Some(size) => Ok(f.offset as i32),
            Some(_) => Err(format!("struct {s}'s {m} is not {size} bytes")),
            None => Err(format!("struct {s} has no {m}")),
        }
    };
    let dport = at("sock_common", "skc_dport", 2)?;
    if at("sock_common", "skc_num", 2)? != dport + 2 {
        return Err("skc_num does not follow skc_dport".into());
    }
    if btf.member("sock", "__sk_common").map(|m| m.offset) != Some(0) {
        return Err("struct sock does not begin with its sock_common".into());
    }
    Ok(programs::Fields {
        ports: dport,
        protocol: at("sock", "sk_protocol", 2)?,
        sport: at("inet_sock", "inet_sport", 2)?,
        bytes_received: at("tcp_sock", "bytes_received", 8)?,
        bytes_acked: at("tcp_sock", "bytes_acked", 8)?,
        rcv_nxt: at("tcp_sock", "rcv_nxt", 4)?,
        copied_seq: at("tcp_sock", "copied_seq", 4)?,
        write_seq: at("tcp_sock", "write_seq", 4)?,
        snd_una: at("tcp_sock", "snd_una", 4)?,
    })
}

/// The programs of `plan` loaded (not attached), by their tracepoints' names: a typed one
/// for the kernel's `btf_trace_NAME`.
fn loaded(
    plan: &programs::Plan,
    btf: &btf::Btf,
    send_start: bool,
) -> Result<Vec<(&'static str, OwnedFd)>, String> {
    let mut written: Vec<(&'static str, Vec<u64>)> = vec![
        ("inet_sock_set_state", programs::set_state(plan)),
        ("sk_data_ready", programs::data_ready(plan)),
        ("sock_recv_length", programs::recv(plan)),
        ("sock_send_length", programs::send(plan)),
    ];
    if send_start {
        written.push(("tcp_sendmsg_locked", programs::send_start(plan)));
    }
    let mut progs = Vec::new();
    for (name, code) in &written {
        let id = if plan.typed {
            let id = btf.type_id(8, &format!("btf_trace_{name}"));
            Some(id.ok_or_else(|| format!("the kernel's BTF has no btf_trace_{name}"))?)
        } else {
            None
        };
        progs.push((*name, sys::load(name, code, id)?));
    }
    Ok(progs)
}

/// The programs loaded and attached, their ring mapped: detached when dropped.
pub struct Own {
    ring: sys::Ring,
    counters: OwnedFd,
    _maps: Vec<OwnedFd>,
    /// Each program, by its tracepoint's name.
    progs: Vec<(&'static str, OwnedFd)>,
    /// Their attachments (last: detached first).
    links: Vec<OwnedFd>,
    /// The kernel's statistics switch, held while their run time is counted.
    stats: Option<OwnedFd>,
    /// Why the programs are raw tracepoints, not typed ones (the kernel refused those).
    pub untyped: Option<String>,
}

/// A program's runs, their run time and the hits skipped, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Runs {
    pub count: u64,
    pub ns: u64,
    pub missed: u64,
}

impl Own {
    /// Loads and attaches the programs for the server's `port` and reqlife's process; the
    /// send's start stamped where the kernel has `tcp_sendmsg_locked` (`send_start`). Why
    /// not, in one line, when this kernel lacks what they need.
    pub fn load(port: u16, send_start: bool) -> Result<Own, String> {
        Own::load_as(port, send_start, true)
    }

    /// [`Own::load`], typed programs tried first or not (`typed`).
    fn load_as(port: u16, send_start: bool, typed: bool) -> Result<Own, String> {
        let btf = btf::Btf::read(Path::new("/sys/kernel/btf/vmlinux"))?;
        let fields = fields(&btf)?;
        let ring = sys::Ring::new(RING)?;
        let ports = sys::map(sys::ARRAY, 4, programs::PORT_VALUE, PORTS, "reqlife_ports")?;
        let conn = sys::map(sys::HASH, 8, 8, OPENING, "reqlife_conn")?;
        let counters = sys::map(sys::ARRAY, 4, 8, 2, "reqlife_counts")?;
        let mut plan = programs::Plan {
            typed,
            port,
            client: std::process::id(),
            fields,
            maps: programs::Maps {
                ring: ring.fd().as_raw_fd(),
                ports: ports.as_raw_fd(),
                conn: conn.as_raw_fd(),
                counters: counters.as_raw_fd(),
            },
        };
        // Typed where the kernel takes them all, else raw.
        let (progs, untyped) = match loaded(&plan, &btf, send_start) {
            Ok(progs) if typed => (progs, None),
            Ok(progs) => (progs, Some("raw tracepoints asked for".into())),
            Err(why) if !typed => return Err(why),
            Err(why) => {
                plan.typed = false;
                (loaded(&plan, &btf, send_start)?, Some(why))
            }
        };
        drop(btf);
        let stats = sys::stats();
        let mut own = Own {
            ring,
            counters,
            _maps: vec![ports, conn],
            progs,
            links: Vec::new(),
            stats,
            untyped,
        };
        // The state changes first: no connection is followed before they are watched.
        for (name, prog) in &own.progs {
            own.links.push(sys::attach(name, prog, plan.typed)?);
        }
        Ok(own)
    }

    /// The events written since the last read, with their times, appended to `out`: how
    /// many records were read.
    pub fn read(&mut self, out: &mut Vec<(u64, KernelEvent)>) -> u64 {
        let mut n = 0;
        self.ring.read(|r| {
            n += 1;
            if r.len() < programs::EVENT {
                return;
            }
            let word = |i: usize| {
                let mut w = [0u8; 8];
                w.copy_from_slice(&r[i * 8..i * 8 + 8]);
                u64::from_ne_bytes(w)
            };
            let (ns, kind, pid) = (word(0), word(1), word(4));
            let fields = [
                kind & 0xffff_ffff,
                kind >> 32,
                word(2),
                word(3),
                pid >> 32,
                pid & 0xffff_ffff,
            ];
            out.extend(event(ns, fields).map(|e| (ns, e)));
        });
        n
    }

    /// Counter `index` ([`programs::LOST`], [`programs::OTHERS`]).
    fn counter(&self, index: u32) -> u64 {
        let mut value = [0u8; 8];
        sys::lookup(&self.counters, &index.to_ne_bytes(), &mut value);
        u64::from_ne_bytes(value)
    }

    /// Events the ring had no room for, and hits the kernel skipped of the programs that
    /// write events (a send's start skipped loses no event: its send is stamped at its end).
    pub fn lost(&self) -> u64 {
        let missed: u64 = self
            .progs
            .iter()
            .filter(|(name, _)| *name != "tcp_sendmsg_locked")
            .map(|(_, p)| sys::runs(p).2)
            .sum();
        self.counter(programs::LOST) + missed
    }

    /// Whether the connection of client port `port` is followed now.
    #[cfg(test)]
    fn followed(&self, port: u16) -> bool {
        let mut value = [0u8; programs::PORT_VALUE as usize];
        sys::lookup(&self._maps[0], &u32::from(port).to_ne_bytes(), &mut value);
        value[..8] != [0; 8]
    }

    /// Arrivals on the server's port of connections not followed (another client's).
    pub fn others(&self) -> u64 {
        self.counter(programs::OTHERS)
    }

    /// Whether the kernel counts their run time (reqlife holds its statistics switch).
    pub fn counting(&self) -> bool {
        self.stats.is_some()
    }

    /// The kernel no longer counts their run time (two clock readings a run, which the
    /// server pays too).
    pub fn stop_counting(&mut self) {
        self.stats = None;
    }

    /// The programs' runs so far, summed.
    pub fn runs(&self) -> Runs {
        self.progs.iter().fold(Runs::default(), |acc, (_, p)| {
            let (count, ns, missed) = sys::runs(p);
            Runs {
                count: acc.count + count,
                ns: acc.ns + ns,
                missed: acc.missed + missed,
            }
        })
    }
}

impl Drop for Own {
    fn drop(&mut self) {
        // Detached before anything they use goes.
        while let Some(link) = self.links.pop() {
            drop(link);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Own's programs loaded for a listener of this process, or why not (not root, a kernel
    /// without BTF or ring buffers): skipped then, said.
    fn loaded(port: u16, typed: bool) -> Option<Own> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: reqlife's own programs need root");
            return None;
        }
        match Own::load_as(port, super::super::send_start(), typed) {
            Ok(own) => Some(own),
            Err(why) if std::env::var_os("CI").is_some() => panic!("{why}"),
            Err(why) => {
                eprintln!("skipped: {why}");
                None
            }
        }
    }

    #[test]
    fn a_requests_life_on_its_connection_comes_out_as_the_scripts_events() {
        life(true);
    }

    #[test]
    fn the_raw_programs_give_the_same_life() {
        life(false);
    }

    /// A connection's life through the typed programs or the raw ones (`typed`).
    fn life(typed: bool) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let Some(mut own) = loaded(port, typed) else {
            return;
        };
        // Typed programs wherever these load at all (their tracepoints came with 6.3; typed
        // tracepoints with 5.5, bpf_skc_to_tcp_sock with 5.9).
        assert_eq!(own.untyped.is_none(), typed, "{:?}", own.untyped);
        // This process is the client (it opens the connection) and the server (it reads the
        // request and writes the response): 100 bytes in, then 50 out, twice.
        let mut client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let cport = client.local_addr().unwrap().port();
        let (mut server, _) = listener.accept().unwrap();
        assert!(own.followed(cport));
        let mut buf = [0u8; 100];
        for _ in 0..2 {
            client.write_all(&[7; 100]).unwrap();
            server.read_exact(&mut buf).unwrap();
            server.write_all(&[8; 50]).unwrap();
            client.read_exact(&mut buf[..50]).unwrap();
        }
        let mut events = Vec::new();
        own.read(&mut events);
        // In the ring, a write comes after its delivery to the client (it is written at the
        // send's end, stamped at its start): in time order, as the reader hands them over.
        events.sort_by_key(|(ns, _)| *ns);
        let mine: Vec<KernelEvent> = events
            .into_iter()
            .map(|(_, e)| e)
            .filter(|e| match e {
                KernelEvent::Opened { port, .. }
                | KernelEvent::Arrived { port, .. }
                | KernelEvent::Read { port, .. }
                | KernelEvent::Wrote { port, .. }
                | KernelEvent::Delivered { port, .. } => *port == cport,
                _ => false,
            })
            .collect();
        let pid = std::process::id();
        let shape: Vec<(u8, u64, u64)> = mine
            .iter()
            .map(|e| match *e {
                KernelEvent::Opened { .. } => (0, 0, 0),
                KernelEvent::Arrived { prev, off, .. } => (1, prev, off),
                KernelEvent::Read {
                    start, off, pid: p, ..
                } => {
                    assert_eq!(p, pid, "{e:?}");
                    (2, start, off)
                }
                KernelEvent::Wrote {
                    start, end, pid: p, ..
                } => {
                    assert_eq!(p, pid, "{e:?}");
                    (3, start, end)
                }
                KernelEvent::Delivered { prev, off, .. } => (4, prev, off),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (0, 0, 0),
                (1, 0, 100),
                (2, 0, 100),
                (3, 0, 50),
                (4, 0, 50),
                (1, 100, 200),
                (2, 100, 200),
                (3, 50, 100),
                (4, 50, 100),
            ],
            "{mine:?}"
        );
        // Each written once; the kernel counted the programs' runs.
        assert_eq!(own.lost(), 0);
        assert!(own.runs().count >= 9, "{:?}", own.runs());
        // Closed (the server first, then the client): no longer followed, whatever process
        // takes its port next (at its CLOSE a socket's skc_num is already 0).
        drop(server);
        drop(client);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while own.followed(cport) && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            !own.followed(cport),
            "port {cport} still followed after its close"
        );
    }

    #[test]
    fn arrivals_of_a_connection_not_reqlifes_are_counted_not_followed() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let Some(mut own) = loaded(port, true) else {
            return;
        };
        // Opened by another process (a child's connect): not followed.
        let status = std::process::Command::new("bash")
            .args([
                "-c",
                &format!("exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'hello' >&3"),
            ])
            .status()
            .unwrap();
        assert!(status.success());
        let (mut server, _) = listener.accept().unwrap();
        let mut buf = [0u8; 5];
        server.read_exact(&mut buf).unwrap();
        let mut events = Vec::new();
        own.read(&mut events);
        assert!(events.is_empty(), "{events:?}");
        assert!(own.others() >= 1);
    }
}
