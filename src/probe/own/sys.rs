//! The bpf(2) calls reqlife's own programs need: maps created, programs loaded (with the
//! verifier's reason when refused), attached to raw tracepoints, their run time counted, and
//! a ring buffer mapped and read.

use super::super::maps::{bpf, pair, Attr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const BPF_MAP_CREATE: i64 = 0;
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_PROG_LOAD: i64 = 5;
const BPF_RAW_TRACEPOINT_OPEN: i64 = 17;
const BPF_ENABLE_STATS: i64 = 32;

/// The map types used.
pub const HASH: u32 = 1;
pub const ARRAY: u32 = 2;
pub const RINGBUF: u32 = 27;
/// `BPF_PROG_TYPE_RAW_TRACEPOINT`.
const RAW_TRACEPOINT: u32 = 17;
/// `BPF_PROG_TYPE_TRACING`, attached as `BPF_TRACE_RAW_TP` (a typed tracepoint, `tp_btf`).
const TRACING: u32 = 26;
const TRACE_RAW_TP: u32 = 23;

/// bpf(2) on an attr longer than [`Attr`] (a program's load reaches `attach_btf_id`, at
/// byte 108).
fn bpf_long(cmd: i64, attr: &mut [u64; 16]) -> Result<i64, i32> {
    // SAFETY: `attr` is a valid, writable buffer of the size passed; the pointers it holds
    // point to live buffers of the sizes given beside them.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), 128usize) };
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(r as i64)
    }
}

/// A fd the kernel just gave.
fn owned(fd: i64) -> OwnedFd {
    // SAFETY: the kernel just returned this descriptor; nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd as i32) }
}

fn errno(e: i32) -> String {
    std::io::Error::from_raw_os_error(e).to_string()
}

/// A map of `kind`, its keys and values of these sizes, named `name` (15 bytes at most).
pub fn map(kind: u32, key: u32, value: u32, entries: u32, name: &str) -> Result<OwnedFd, String> {
    let mut attr = Attr([0; 9]);
    attr.0[0] = pair(kind, key);
    attr.0[1] = pair(value, entries);
    // map_flags, inner_map_fd, numa_node: 0; map_name at byte 28.
    name_at(&mut attr.0, 28, name);
    bpf(BPF_MAP_CREATE, &mut attr)
        .map(owned)
        .map_err(|e| format!("the kernel refused the map {name}: {}", errno(e)))
}

/// `value` = the value of `key` in `map`; false when absent.
pub fn lookup(map: &OwnedFd, key: &[u8], value: &mut [u8]) -> bool {
    let mut attr = Attr([0; 9]);
    attr.0[0] = u64::from(map.as_raw_fd() as u32);
    attr.0[1] = key.as_ptr() as u64;
    attr.0[2] = value.as_mut_ptr() as u64;
    bpf(BPF_MAP_LOOKUP_ELEM, &mut attr).is_ok()
}

/// `name` into the 16 bytes of `words` from byte `at` (15 at most, NUL-ended).
fn name_at(words: &mut [u64], at: usize, name: &str) {
    let len = words.len() * 8;
    // SAFETY: `words` is `len` plain bytes; the caller's `at` + 16 is within them.
    let raw = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr() as *mut u8, len) };
    for (b, c) in raw[at..at + 15].iter_mut().zip(name.bytes()) {
        *b = c;
    }
}

/// Loads a program for the tracepoint `name` (named `reqlife_` and its first letters): a
/// typed one where `btf_id` (of the kernel's `btf_trace_NAME`) is given, else a raw one;
/// refused, the verifier's last lines.
pub fn load(name: &str, code: &[u64], btf_id: Option<u32>) -> Result<OwnedFd, String> {
    let license = b"GPL\0";
    let shown: String = format!("reqlife_{name}")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let attempt = |log: &mut [u8]| {
        let mut attr = [0u64; 16];
        name_at(&mut attr, 48, &shown);
        let kind = if btf_id.is_some() {
            TRACING
        } else {
            RAW_TRACEPOINT
        };
        attr[0] = pair(kind, code.len() as u32);
        attr[1] = code.as_ptr() as u64;
        attr[2] = license.as_ptr() as u64;
        attr[3] = pair(u32::from(!log.is_empty()), log.len() as u32);
        attr[4] = if log.is_empty() {
            0
        } else {
            log.as_mut_ptr() as u64
        };
        if let Some(id) = btf_id {
            // expected_attach_type at byte 68, attach_btf_id at 108.
            attr[8] = pair(0, TRACE_RAW_TP);
            attr[13] = pair(0, id);
        }
        bpf_long(BPF_PROG_LOAD, &mut attr)
    };
    match attempt(&mut []) {
        Ok(fd) => Ok(owned(fd)),
        Err(_) => {
            let mut log = vec![0u8; 1 << 20];
            let e = match attempt(&mut log) {
                Ok(fd) => return Ok(owned(fd)),
                Err(e) => e,
            };
            let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            let last: Vec<&str> = text.lines().rev().take(3).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            Err(format!(
                "the kernel refused reqlife's program on {name} ({}): {}",
                errno(e),
                last.join(" / ")
            ))
        }
    }
}

/// Attaches program `prog` to the tracepoint `name` (a typed program: to the one it was
/// loaded for): attached while the fd lives.
pub fn attach(name: &str, prog: &OwnedFd, typed: bool) -> Result<OwnedFd, String> {
    let tp = std::ffi::CString::new(name).map_err(|_| format!("bad tracepoint name {name}"))?;
    let mut attr = Attr([0; 9]);
    attr.0[0] = if typed { 0 } else { tp.as_ptr() as u64 };
    attr.0[1] = u64::from(prog.as_raw_fd() as u32);
    bpf(BPF_RAW_TRACEPOINT_OPEN, &mut attr)
        .map(owned)
        .map_err(|e| format!("cannot attach to the tracepoint {name}: {}", errno(e)))
}

/// The kernel counts its programs' run time while the fd lives (`BPF_ENABLE_STATS`).
pub fn stats() -> Option<OwnedFd> {
    let mut attr = Attr([0; 9]);
    bpf(BPF_ENABLE_STATS, &mut attr).ok().map(owned)
}

/// A program's runs, their run time (ns, while stats are on) and the hits the kernel skipped
/// (it was running on that CPU already), from its fdinfo.
pub fn runs(prog: &OwnedFd) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", prog.as_raw_fd()))
        .unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (
        field("run_cnt:"),
        field("run_time_ns:"),
        field("recursion_misses:"),
    )
}

/// A BPF ring buffer mapped here: its consumer's page (written), its producer's page and its
/// data, mapped twice in a row (a record that wraps reads whole).
pub struct Ring {
    _map: OwnedFd,
    consumer: *mut u8,
    producer: *mut u8,
    page: usize,
    size: usize,
}

// SAFETY: the mappings are owned by the Ring and only read or written through it.
unsafe impl Send for Ring {}

/// A record's header flags.
const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;

impl Ring {
    /// A ring buffer of `size` bytes (a power of two, pages), mapped.
    pub fn new(size: usize) -> Result<Ring, String> {
        let map = map(RINGBUF, 0, 0, size as u32, "reqlife_ring")?;
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let fd = map.as_raw_fd();
        // SAFETY: mapping the ring's fd as the kernel lays it out (consumer page at 0, read
        // and write; producer page and twice the data from one page on, read only).
        let consumer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if consumer == libc::MAP_FAILED {
            return Err(format!(
                "cannot map the ring buffer: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: as above.
        let producer = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page + 2 * size,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                page as i64,
            )
        };
        if producer == libc::MAP_FAILED {
            // SAFETY: mapped just above, of this length.
            unsafe { libc::munmap(consumer, page) };
            return Err(format!(
                "cannot map the ring buffer: {}",
                std::io::Error::last_os_error()
            ));
        }
        Ok(Ring {
            _map: map,
            consumer: consumer as *mut u8,
            producer: producer as *mut u8,
            page,
            size,
        })
    }

    /// The map's fd (for the programs).
    pub fn fd(&self) -> &OwnedFd {
        &self._map
    }

    /// Each record committed so far given to `f`, then released to the kernel.
    pub fn read(&mut self, mut f: impl FnMut(&[u8])) {
        // SAFETY: the positions are the first u64 of their pages, which the kernel keeps
        // 8-aligned and updates atomically.
        let (cons, prod) = unsafe {
            (
                &*(self.consumer as *const AtomicU64),
                &*(self.producer as *const AtomicU64),
            )
        };
        let mut at = cons.load(Ordering::Acquire);
        let end = prod.load(Ordering::Acquire);
        let data = self.producer.wrapping_add(self.page);
        let mask = self.size as u64 - 1;
        while at < end {
            let offset = (at & mask) as usize;
            // SAFETY: a record's 8-byte header is within the data; its length word is 4-aligned.
            let header = unsafe { &*(data.add(offset) as *const AtomicU32) };
            let len = header.load(Ordering::Acquire);
            if len & BUSY != 0 {
                break;
            }
            let body = (len & !(BUSY | DISCARD)) as usize;
            if len & DISCARD == 0 {
                // SAFETY: the record lies within the data mapped twice, whatever its offset.
                f(unsafe { std::slice::from_raw_parts(data.add(offset + 8), body) });
            }
            at += ((body + 8 + 7) & !7) as u64;
        }
        cons.store(at, Ordering::Release);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: both mapped in `new`, of these lengths, not used after.
        unsafe {
            libc::munmap(self.consumer as *mut libc::c_void, self.page);
            libc::munmap(
                self.producer as *mut libc::c_void,
                self.page + 2 * self.size,
            );
        }
    }
}
