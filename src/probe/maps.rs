//! The script's event maps read by reqlife itself, from the kernel, in binary: found among
//! bpftrace's open files once its `BEGIN` ran, and each tick's map taken whole with
//! `BPF_MAP_LOOKUP_AND_DELETE_BATCH` (a few system calls a tick, whatever the load), instead
//! of bpftrace printing it as JSON and clearing it one key at a time (three system calls and
//! a JSON entry an event, read back by reqlife: at saturation, most of a core). Once the maps
//! are found, reqlife sets the script's `@direct`, the script stops turning and printing them,
//! and reqlife turns them ([`EventMaps::turn`]).
//!
//! An event map's entry is bpftrace's tuple key `(NS, TID)` (16 bytes) and its tuple value
//! `(KIND, a, b, c, d, e)` (six u64s, 48 bytes); a map of another shape is not taken (the
//! script prints its maps then, as before). Kernels before 5.6 (no batch operations) have
//! them taken one key at a time, still without JSON.

use super::output::event;
use crate::recorder::join::KernelEvent;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// The event maps' names, as the kernel has them (bpftrace writes `@` as `AT_`).
const EVENT_MAPS: [&str; 3] = ["AT_e0", "AT_e1", "AT_e2"];
/// The script's switch: 1 once reqlife reads the event maps.
const DIRECT: &str = "AT_direct";
/// The event map in turn (0 to 2), turned by reqlife once it reads them.
const TURN: &str = "AT_ep";
/// An event map's key and value sizes.
const KEY: usize = 16;
const VALUE: usize = 48;
/// Entries taken by one batch call.
const BATCH: usize = 4096;

// The bpf(2) commands used.
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_MAP_DELETE_ELEM: i64 = 3;
const BPF_MAP_GET_NEXT_KEY: i64 = 4;
const BPF_MAP_GET_FD_BY_ID: i64 = 14;
const BPF_OBJ_GET_INFO_BY_FD: i64 = 15;
const BPF_MAP_LOOKUP_AND_DELETE_BATCH: i64 = 25;

/// bpf(2)'s argument: a union whose fields each command reads from its start; larger than
/// any field used, its tail zero (as the kernel requires).
#[repr(C, align(8))]
pub(super) struct Attr(pub(super) [u64; 9]);

/// `bpf(cmd, attr)`: the result, or the error's `errno`.
pub(super) fn bpf(cmd: i64, attr: &mut Attr) -> Result<i64, i32> {
    // SAFETY: `attr` is a valid, writable buffer of the size passed; the pointers it holds
    // point to live buffers of the sizes the command's map (or info) has.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut Attr,
            std::mem::size_of::<Attr>(),
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r as i64)
    }
}

/// Two u32s in one u64 of the union, in memory order.
pub(super) fn pair(lo: u32, hi: u32) -> u64 {
    if cfg!(target_endian = "little") {
        (u64::from(hi) << 32) | u64::from(lo)
    } else {
        (u64::from(lo) << 32) | u64::from(hi)
    }
}

/// A map of the kernel's, opened by id: its fd, name and sizes.
struct MapFd {
    fd: OwnedFd,
    name: String,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
}

impl MapFd {
    fn open(id: u32) -> Option<MapFd> {
        let mut attr = Attr([0; 9]);
        attr.0[0] = u64::from(id);
        let fd = bpf(BPF_MAP_GET_FD_BY_ID, &mut attr).ok()? as i32;
        // SAFETY: the kernel just gave us this fd; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // struct bpf_map_info: type, id, key_size, value_size, max_entries, map_flags (u32
        // each), then name[16].
        let mut info = [0u8; 80];
        let mut attr = Attr([0; 9]);
        attr.0[0] = pair(fd.as_raw_fd() as u32, info.len() as u32);
        attr.0[1] = info.as_mut_ptr() as u64;
        bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).ok()?;
        let u32_at =
            |i: usize| u32::from_ne_bytes([info[i], info[i + 1], info[i + 2], info[i + 3]]);
        let name = &info[24..40];
        let len = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        Some(MapFd {
            name: String::from_utf8_lossy(&name[..len]).into_owned(),
            key_size: u32_at(8),
            value_size: u32_at(12),
            max_entries: u32_at(16),
            fd,
        })
    }

    /// The attr of an element command: the map, the key, the value (or next key), flags.
    fn elem(&self, key: *const u8, value: *mut u8, flags: u64) -> Attr {
        let mut attr = Attr([0; 9]);
        attr.0[0] = u64::from(self.fd.as_raw_fd() as u32);
        attr.0[1] = key as u64;
        attr.0[2] = value as u64;
        attr.0[3] = flags;
        attr
    }
}

/// The script's event maps, opened by reqlife.
pub struct EventMaps {
    maps: [MapFd; 3],
    /// `@ep`: the map in turn.
    turn: MapFd,
    /// Turns made, and when the last was (CLOCK_MONOTONIC ns).
    turns: u64,
    turned_ns: u64,
    /// The end took the three maps: no turn after it.
    pub done: bool,
    /// The batch call is refused (a kernel before 5.6): one key at a time.
    one_by_one: bool,
    /// Maps found full when taken: the probes' stores past that failed, their events lost.
    pub full: u64,
    keys: Vec<u8>,
    values: Vec<u8>,
}

impl EventMaps {
    /// The event maps of the bpftrace process `pid` (found by the ids its open files hold),
    /// with its `@direct` set so that the script no longer prints them; `None` when they are
    /// not all there, of the shape expected, or the switch cannot be set.
    pub fn take_over(pid: u32) -> Option<EventMaps> {
        let mut found: Vec<MapFd> = map_ids(pid).into_iter().filter_map(MapFd::open).collect();
        let mut maps = Vec::with_capacity(3);
        for name in EVENT_MAPS {
            let i = found.iter().position(|m| m.name == name)?;
            let m = found.swap_remove(i);
            if m.key_size as usize != KEY || m.value_size as usize != VALUE {
                return None;
            }
            maps.push(m);
        }
        let maps: [MapFd; 3] = maps.try_into().ok()?;
        let turn = found.swap_remove(found.iter().position(|m| m.name == TURN)?);
        if turn.key_size > 8 || turn.value_size != 8 {
            return None;
        }
        let switch = found.iter().find(|m| m.name == DIRECT)?;
        if switch.key_size > 8 || switch.value_size != 8 {
            return None;
        }
        let key = [0u8; 8];
        let one = 1u64.to_ne_bytes();
        let mut attr = switch.elem(key.as_ptr(), one.as_ptr() as *mut u8, 0);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).ok()?;
        Some(EventMaps {
            maps,
            turn,
            turns: 0,
            turned_ns: super::session::mono_now_ns(),
            done: false,
            one_by_one: false,
            full: 0,
            keys: vec![0; BATCH * KEY],
            values: vec![0; BATCH * VALUE],
        })
    }

    /// Takes event map `i`'s entries (deleting them) into `out` as events, in time order;
    /// `None`: the three maps' (the end).
    pub fn drain(&mut self, i: Option<usize>, out: &mut Vec<KernelEvent>) {
        let mut taken: Vec<(u64, KernelEvent)> = Vec::new();
        for i in i.map_or(0..3, |i| i..i + 1) {
            let before = taken.len();
            if !self.one_by_one && !self.batch(i, &mut taken) {
                self.one_by_one = true;
            }
            if self.one_by_one {
                self.each(i, &mut taken);
            }
            if taken.len() - before >= self.maps[i].max_entries as usize {
                self.full += 1;
            }
        }
        // Unstable: events of one clock reading come from different CPUs, in the maps' hash
        // order either way (a stable sort kept an order that meant nothing, at twice the cost).
        taken.sort_unstable_by_key(|(ns, _)| *ns);
        out.extend(taken.into_iter().map(|(_, e)| e));
    }

    /// A tick: the next map in turn (`@ep`, from reqlife's clock: a timer's program in the
    /// kernel is skipped while another BPF program runs on its CPU, and one CPU's timer,
    /// bpftrace's `interval`, lost a tick in five at saturation, its map then holding two
    /// ticks' events, past its size), and the map left a turn before taken into `out` (no
    /// store can still be on its way to it). Gives the clock the events before which are in:
    /// when that map was left; `None` on the first turn (the map left then holds events from
    /// before the maps were taken over) or when `@ep` cannot be turned.
    pub fn turn(&mut self, out: &mut Vec<KernelEvent>) -> Option<u64> {
        let key = [0u8; 8];
        let mut now = [0u8; 8];
        let mut attr = self.turn.elem(key.as_ptr(), now.as_mut_ptr(), 0);
        // Not there yet: 0 (bpftrace's reading of a map never assigned).
        if bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).is_err() {
            now = [0; 8];
        }
        let next = (u64::from_ne_bytes(now) + 1) % 3;
        let value = next.to_ne_bytes();
        let mut attr = self.turn.elem(key.as_ptr(), value.as_ptr() as *mut u8, 0);
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).ok()?;
        let (left_ns, now_ns) = (self.turned_ns, super::session::mono_now_ns());
        self.turned_ns = now_ns;
        self.turns += 1;
        self.drain(Some(((next + 1) % 3) as usize), out);
        (self.turns >= 2).then_some(left_ns)
    }

    /// By batches; false when the kernel refuses the call (nothing taken then).
    fn batch(&mut self, i: usize, taken: &mut Vec<(u64, KernelEvent)>) -> bool {
        let fd = self.maps[i].fd.as_raw_fd() as u32;
        let mut token = 0u32;
        let mut first = true;
        loop {
            // struct { in_batch, out_batch, keys, values: u64; count, map_fd: u32;
            // elem_flags, flags: u64 }
            let mut attr = Attr([0; 9]);
            attr.0[0] = if first {
                0
            } else {
                &token as *const u32 as u64
            };
            attr.0[1] = &mut token as *mut u32 as u64;
            attr.0[2] = self.keys.as_mut_ptr() as u64;
            attr.0[3] = self.values.as_mut_ptr() as u64;
            attr.0[4] = pair(BATCH as u32, fd);
            let r = bpf(BPF_MAP_LOOKUP_AND_DELETE_BATCH, &mut attr);
            let count = (attr.0[4] & 0xffff_ffff) as usize;
            let count = if cfg!(target_endian = "little") {
                count
            } else {
                (attr.0[4] >> 32) as usize
            };
            match r {
                Ok(_) | Err(libc::ENOENT) => {
                    self.decode(count.min(BATCH), taken);
                    if r.is_err() {
                        return true;
                    }
                }
                Err(_) if first => return false,
                Err(_) => return true,
            }
            first = false;
        }
    }

    /// One key at a time.
    fn each(&mut self, i: usize, taken: &mut Vec<(u64, KernelEvent)>) {
        let map = &self.maps[i];
        let mut key = [0u8; KEY];
        let mut value = [0u8; VALUE];
        loop {
            let mut attr = map.elem(std::ptr::null(), key.as_mut_ptr(), 0);
            if bpf(BPF_MAP_GET_NEXT_KEY, &mut attr).is_err() {
                return;
            }
            let mut attr = map.elem(key.as_ptr(), value.as_mut_ptr(), 0);
            let found = bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).is_ok();
            let mut attr = map.elem(key.as_ptr(), std::ptr::null_mut(), 0);
            if bpf(BPF_MAP_DELETE_ELEM, &mut attr).is_err() {
                return;
            }
            if found {
                taken.extend(entry(&key, &value));
            }
        }
    }

    fn decode(&self, count: usize, taken: &mut Vec<(u64, KernelEvent)>) {
        for j in 0..count {
            let key = &self.keys[j * KEY..(j + 1) * KEY];
            let value = &self.values[j * VALUE..(j + 1) * VALUE];
            taken.extend(entry(key, value));
        }
    }
}

/// One entry's event, with its time.
fn entry(key: &[u8], value: &[u8]) -> Option<(u64, KernelEvent)> {
    let u64_at = |b: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[i * 8..i * 8 + 8]);
        u64::from_ne_bytes(w)
    };
    let ns = u64_at(key, 0);
    let fields = std::array::from_fn(|i| u64_at(value, i));
    event(ns, fields).map(|e| (ns, e))
}

/// The ids of the BPF maps process `pid` holds open (`map_id:` in its fds' fdinfo).
fn map_ids(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|f| std::fs::read_to_string(f.path()).ok())
        .filter_map(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("map_id:"))
                .and_then(|id| id.trim().parse().ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[u64]) -> Vec<u8> {
        w.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn an_entry_is_read_as_bpftrace_lays_it_out() {
        // Key (NS, TID: a u32 padded to 8), value (KIND, a, b, c, d, e).
        let key = words(&[130, 7]);
        let value = words(&[2, 40000, 0, 80, 77, 78]);
        assert_eq!(
            entry(&key, &value),
            Some((
                130,
                KernelEvent::Read {
                    port: 40000,
                    start: 0,
                    off: 80,
                    ns: 130,
                    pid: 77,
                    key: 78
                }
            ))
        );
        // A kind the script does not write: no event.
        assert_eq!(entry(&key, &words(&[99, 1, 2, 3, 4, 5])), None);
    }

    #[test]
    fn two_halves_of_a_word_are_in_memory_order() {
        let w = pair(4096, 7).to_ne_bytes();
        assert_eq!(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]), 4096);
        assert_eq!(u32::from_ne_bytes([w[4], w[5], w[6], w[7]]), 7);
    }

    /// A hash map of this process's, as bpftrace makes them: its fd.
    fn create(name: &str, key: u32, value: u32, max: u32) -> OwnedFd {
        // union bpf_attr for BPF_MAP_CREATE: map_type, key_size, value_size, max_entries,
        // map_flags, inner_map_fd, numa_node (u32 each), then map_name[16].
        let mut attr = Attr([0; 9]);
        attr.0[0] = pair(1, key); // BPF_MAP_TYPE_HASH
        attr.0[1] = pair(value, max);
        // SAFETY: the 72 bytes of `attr`, which this borrow holds alone.
        let bytes = unsafe { std::slice::from_raw_parts_mut(attr.0.as_mut_ptr() as *mut u8, 72) };
        bytes[28..28 + name.len()].copy_from_slice(name.as_bytes());
        let fd = bpf(0, &mut attr).expect("BPF_MAP_CREATE (as root)") as i32;
        // SAFETY: the kernel just gave us this fd.
        unsafe { OwnedFd::from_raw_fd(fd) }
    }

    /// `(key, value)` into the map `fd`.
    fn put(fd: &OwnedFd, key: &[u8], value: &[u8]) {
        let mut attr = Attr([0; 9]);
        attr.0[0] = u64::from(fd.as_raw_fd() as u32);
        attr.0[1] = key.as_ptr() as u64;
        attr.0[2] = value.as_ptr() as u64;
        bpf(BPF_MAP_UPDATE_ELEM, &mut attr).expect("update");
    }

    #[test]
    fn the_maps_are_found_switched_read_whole_and_said_full() {
        // Without maps: nothing found, nothing set.
        if unsafe { libc::geteuid() } != 0 {
            assert!(EventMaps::take_over(std::process::id()).is_none());
            eprintln!("not root: the maps' reading is tested by the probes' suite");
            return;
        }
        let me = std::process::id();
        let _e: Vec<OwnedFd> = ["AT_e0", "AT_e1", "AT_e2"]
            .iter()
            .map(|n| create(n, KEY as u32, VALUE as u32, 4))
            .collect();
        // Not yet the switch: not taken.
        assert!(EventMaps::take_over(me).is_none());
        let direct = create(DIRECT, 8, 8, 1);
        put(&direct, &[0; 8], &0u64.to_ne_bytes());
        // Not yet the map in turn: not taken.
        assert!(EventMaps::take_over(me).is_none());
        let ep = create(TURN, 8, 8, 1);
        // Map 1 filled to its size (4), out of time order; map 2 one event.
        for (ns, tid) in [(40, 1), (10, 2), (30, 1), (20, 3)] {
            put(
                &_e[1],
                &words(&[ns, tid]),
                &words(&[2, 40000, 0, ns, 77, tid]),
            );
        }
        put(&_e[2], &words(&[50, 1]), &words(&[1, 40000, 0, 9, 0, 0]));
        let mut maps = EventMaps::take_over(me).expect("the maps are found");
        // The switch is set: the script no longer prints.
        let mut value = [0u8; 8];
        let mut attr = Attr([0; 9]);
        attr.0[0] = u64::from(direct.as_raw_fd() as u32);
        attr.0[1] = [0u8; 8].as_ptr() as u64;
        attr.0[2] = value.as_mut_ptr() as u64;
        bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).expect("lookup");
        assert_eq!(u64::from_ne_bytes(value), 1);
        let mut out = Vec::new();
        maps.drain(Some(1), &mut out);
        let ns: Vec<u64> = out
            .iter()
            .map(|e| match e {
                KernelEvent::Read { ns, .. } => *ns,
                e => panic!("{e:?}"),
            })
            .collect();
        assert_eq!(ns, [10, 20, 30, 40], "in time order");
        assert_eq!(maps.full, 1, "a map of 4 held 4: full");
        // Taken whole: emptied; the end takes the rest.
        out.clear();
        maps.drain(Some(1), &mut out);
        assert!(out.is_empty());
        assert_eq!(maps.full, 1);
        maps.drain(None, &mut out);
        assert_eq!(out.len(), 1);
        assert!(matches!(
            out[0],
            KernelEvent::Arrived { ns: 50, off: 9, .. }
        ));
        // Taken one key at a time (a kernel without batches): the same.
        put(&_e[0], &words(&[7, 1]), &words(&[3, 40000, 0, 5, 77, 0]));
        maps.one_by_one = true;
        out.clear();
        maps.drain(Some(0), &mut out);
        assert!(matches!(
            out[..],
            [KernelEvent::Wrote { ns: 7, end: 5, .. }]
        ));
        // reqlife's turns: `@ep` (never assigned: 0) moved on, the map left a turn before
        // taken, and the clock given from the second turn on (the first map left holds
        // events from before the take-over).
        let ep_now = || {
            let mut v = [0u8; 8];
            let key = [0u8; 8];
            let mut attr = Attr([0; 9]);
            attr.0[0] = u64::from(ep.as_raw_fd() as u32);
            attr.0[1] = key.as_ptr() as u64;
            attr.0[2] = v.as_mut_ptr() as u64;
            bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).expect("lookup");
            u64::from_ne_bytes(v)
        };
        put(&_e[2], &words(&[60, 1]), &words(&[1, 40000, 0, 9, 0, 0]));
        out.clear();
        let start = maps.turned_ns;
        assert_eq!(maps.turn(&mut out), None);
        assert_eq!(ep_now(), 1);
        assert!(matches!(out[..], [KernelEvent::Arrived { ns: 60, .. }]));
        put(&_e[0], &words(&[70, 1]), &words(&[1, 40000, 9, 20, 0, 0]));
        put(&_e[1], &words(&[80, 1]), &words(&[1, 40000, 20, 30, 0, 0]));
        out.clear();
        let first = maps.turned_ns;
        assert!(first >= start);
        // Turned to 2: map 1 just left (stores may be on their way), map 0 taken.
        assert_eq!(maps.turn(&mut out), Some(first));
        assert_eq!(ep_now(), 2);
        assert!(matches!(out[..], [KernelEvent::Arrived { ns: 70, .. }]));
        out.clear();
        maps.turn(&mut out);
        assert_eq!(ep_now(), 0);
        assert!(matches!(out[..], [KernelEvent::Arrived { ns: 80, .. }]));
    }
}
