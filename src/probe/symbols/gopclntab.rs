//! A Go binary's own function table, `.gopclntab`: the names of its functions and where each
//! begins, kept even when the binary is stripped of its symbol table (`go build -ldflags=-s`,
//! Debian's etcd). Read here from the ELF file itself, for Go 1.16 on (magics `0xfffffffa`:
//! 1.16-1.17, `0xfffffff0`: 1.18-1.19, `0xfffffff1`: 1.20 on), as Go's `runtime/symtab.go`
//! lays it out: a header, the function names (`funcnametab`), and a table of (entry, `_func`)
//! pairs whose `_func` holds the name's offset.
//!
//! From Go 1.18 an entry is an offset from the start of Go's text (`runtime.text`), which is
//! not always where the ELF's `.text` begins (an externally linked binary has C code first:
//! 0x100 bytes in Debian's etcd). The header holds that start in Go 1.19 (etcd); Go 1.26
//! leaves it 0 there ("no longer stored as it requires a relocation"), so it is then read from
//! the module's `moduledata` (found by its pointer to the table, checked by its `minpc` and
//! `maxpc`, which the runtime itself checks against the table). A function's place is given as
//! its offset in the file, what a uprobe attaches to. Go 1.16-1.17's layout is read as
//! `debug/gosym` reads it, though no binary of theirs was at hand to test it on.

use std::path::Path;

/// One Go function: its name and its entry's offset in the file.
#[derive(Debug, Clone, PartialEq)]
pub struct GoFunc {
    /// Its name as Go spells it (`main.main`, `net/http.(*conn).serve`).
    pub name: String,
    /// Its entry's address (as linked).
    pub addr: u64,
    /// Its first instruction's offset in the file (a uprobe's offset).
    pub file_offset: u64,
    /// An ordinary function (`_func.funcID` 0): not a wrapper the compiler made (an ABI
    /// wrapper has the name of the function it wraps) nor one of the runtime's special ones.
    pub normal: bool,
}

/// The function named `name` in `funcs`: the ordinary one where the name has several (a
/// function and its ABI wrapper), else the first.
pub fn find<'a>(funcs: &'a [GoFunc], name: &str) -> Option<&'a GoFunc> {
    let mut named = funcs.iter().filter(|f| f.name == name);
    let first = named.next()?;
    Some(if first.normal {
        first
    } else {
        named.find(|f| f.normal).unwrap_or(first)
    })
}

/// An ELF section, as much of it as is needed here.
struct Section {
    name: String,
    kind: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
}

const SHT_NOBITS: u32 = 8;
const SHT_RELA: u32 = 4;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const SHF_EXECINSTR: u64 = 4;

/// The ELF file's bytes and how to read its words.
struct Elf<'a> {
    data: &'a [u8],
    little: bool,
    wide: bool,
    sections: Vec<Section>,
    /// (address, addend) of the dynamic relocations: a position-independent binary's pointers
    /// are 0 in the file and their values are these addends.
    relocs: Vec<(u64, u64)>,
}

impl<'a> Elf<'a> {
    fn parse(data: &'a [u8]) -> Result<Elf<'a>, String> {
        if data.len() < 52 || &data[..4] != b"\x7fELF" {
            return Err("not an ELF file".into());
        }
        let wide = match data[4] {
            1 => false,
            2 => true,
            c => return Err(format!("ELF class {c} is neither 32 nor 64 bits")),
        };
        let mut elf = Elf {
            data,
            little: data[5] == 1,
            wide,
            sections: Vec::new(),
            relocs: Vec::new(),
        };
        let (shoff, entsize, count, strndx) = if wide {
            (
                elf.u64(0x28)?,
                elf.u16(0x3a)?,
                elf.u16(0x3c)?,
                elf.u16(0x3e)?,
            )
        } else {
            let shoff = u64::from(elf.u32(0x20)?);
            (shoff, elf.u16(0x2e)?, elf.u16(0x30)?, elf.u16(0x32)?)
        };
        let mut raw = Vec::new();
        for i in 0..u64::from(count) {
            let at = shoff.saturating_add(i * u64::from(entsize));
            raw.push(elf.section_at(at)?);
        }
        let names = raw.get(usize::from(strndx)).map(|(_, s)| s.offset);
        for (name_off, mut s) in raw {
            if let Some(base) = names {
                s.name = elf.cstr(base.saturating_add(u64::from(name_off)))?;
            }
            elf.sections.push(s);
        }
        elf.relocs = elf.read_relocs()?;
        Ok(elf)
    }

    /// A section header at `at`: its name's offset and the section.
    fn section_at(&self, at: u64) -> Result<(u32, Section), String> {
        let name = self.u32(at)?;
        let kind = self.u32(at + 4)?;
        let s = if self.wide {
            Section {
                name: String::new(),
                kind,
                flags: self.u64(at + 8)?,
                addr: self.u64(at + 16)?,
                offset: self.u64(at + 24)?,
                size: self.u64(at + 32)?,
            }
        } else {
            Section {
                name: String::new(),
                kind,
                flags: u64::from(self.u32(at + 8)?),
                addr: u64::from(self.u32(at + 12)?),
                offset: u64::from(self.u32(at + 16)?),
                size: u64::from(self.u32(at + 20)?),
            }
        };
        Ok((name, s))
    }

    fn read_relocs(&self) -> Result<Vec<(u64, u64)>, String> {
        let mut out = Vec::new();
        let step = if self.wide { 24 } else { 12 };
        for s in self.sections.iter().filter(|s| s.kind == SHT_RELA) {
            let mut at = s.offset;
            while at.saturating_add(step) <= s.offset.saturating_add(s.size) {
                let (addr, addend) = if self.wide {
                    (self.u64(at)?, self.u64(at + 16)?)
                } else {
                    (u64::from(self.u32(at)?), u64::from(self.u32(at + 8)?))
                };
                out.push((addr, addend));
                at += step;
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    fn bytes(&self, at: u64, n: u64) -> Result<&'a [u8], String> {
        let end = at.checked_add(n).filter(|&e| e <= self.data.len() as u64);
        match end {
            Some(end) => Ok(&self.data[at as usize..end as usize]),
            None => Err(format!("truncated (a read at {at:#x} is past its end)")),
        }
    }

    fn u16(&self, at: u64) -> Result<u16, String> {
        let b: [u8; 2] = self.bytes(at, 2)?.try_into().expect("2 bytes");
        Ok(if self.little {
            u16::from_le_bytes(b)
        } else {
            u16::from_be_bytes(b)
        })
    }

    fn u32(&self, at: u64) -> Result<u32, String> {
        let b: [u8; 4] = self.bytes(at, 4)?.try_into().expect("4 bytes");
        Ok(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    fn u64(&self, at: u64) -> Result<u64, String> {
        let b: [u8; 8] = self.bytes(at, 8)?.try_into().expect("8 bytes");
        Ok(if self.little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    }

    /// A pointer-sized word at file offset `at`.
    fn word(&self, at: u64, ptr: u64) -> Result<u64, String> {
        if ptr == 8 {
            self.u64(at)
        } else {
            self.u32(at).map(u64::from)
        }
    }

    /// The NUL-terminated string at `at`.
    fn cstr(&self, at: u64) -> Result<String, String> {
        let rest = self.bytes(at, 0).map(|_| &self.data[at as usize..])?;
        let end = rest
            .iter()
            .position(|&b| b == 0)
            .ok_or("an unterminated name")?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }

    /// The file offset of address `addr` in a section with bytes in the file.
    fn offset_of(&self, addr: u64, need: u64) -> Option<u64> {
        self.sections
            .iter()
            .find(|s| {
                s.kind != SHT_NOBITS
                    && s.flags & need == need
                    && s.addr != 0
                    && (s.addr..s.addr.saturating_add(s.size)).contains(&addr)
            })
            .map(|s| (addr - s.addr).saturating_add(s.offset))
    }

    /// The pointer-sized word at address `addr` once loaded (its relocation's addend where the
    /// file holds 0).
    fn word_at_addr(&self, addr: u64, ptr: u64) -> Result<u64, String> {
        let off = self
            .offset_of(addr, 0)
            .ok_or("an address outside the file")?;
        let v = self.word(off, ptr)?;
        if v != 0 {
            return Ok(v);
        }
        Ok(match self.relocs.binary_search_by_key(&addr, |r| r.0) {
            Ok(i) => self.relocs[i].1,
            Err(_) => 0,
        })
    }
}

/// The Go functions of the ELF binary at `path`: `Ok(None)` when it has no `.gopclntab` (not
/// a Go binary, or one whose table is not in a section of its own); `Err` with the reason when
/// its table cannot be read.
pub fn read(path: &Path) -> Result<Option<Vec<GoFunc>>, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let elf = Elf::parse(&data)?;
    let Some(tab) = elf
        .section(".gopclntab")
        .or_else(|| elf.section(".data.rel.ro.gopclntab"))
    else {
        return Ok(None);
    };
    functions(&elf, tab).map(Some)
}

/// Whether the ELF binary at `path` has a `.gopclntab` (a Go program).
pub fn has_table(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|data| {
        Elf::parse(&data).is_ok_and(|e| {
            e.section(".gopclntab").is_some() || e.section(".data.rel.ro.gopclntab").is_some()
        })
    })
}

/// The table's functions, their entries placed in the file.
fn functions(elf: &Elf, tab: &Section) -> Result<Vec<GoFunc>, String> {
    let at = tab.offset;
    let magic = elf.u32(at)?;
    let head = elf.bytes(at + 4, 4)?;
    let (quantum, ptr) = (head[2], u64::from(head[3]));
    if head[..2] != [0, 0] || ![1, 2, 4].contains(&quantum) || ![4, 8].contains(&ptr) {
        return Err(format!("its .gopclntab header is not Go's ({head:02x?})"));
    }
    // Version 1.18 on: entries are 32-bit offsets from the text's start; 1.16-1.17: addresses.
    let offsets = match magic {
        0xffff_fff0 | 0xffff_fff1 => true,
        0xffff_fffa => false,
        0xffff_fffb => return Err("Go 1.2-1.15's table (magic 0xfffffffb) is not read".into()),
        m => {
            return Err(format!(
                "an unknown .gopclntab magic {m:#x} (Go 1.16 on is read)"
            ))
        }
    };
    let word = |i: u64| elf.word(at.saturating_add(8 + i * ptr), ptr);
    let nfunc = word(0)?;
    let (names, table) = if offsets {
        (word(3)?, word(7)?)
    } else {
        (word(2)?, word(6)?)
    };
    let field = if offsets { 4 } else { ptr };
    if nfunc.saturating_mul(2 * field) > tab.size {
        return Err(format!(
            "its .gopclntab counts {nfunc} functions, more than it holds"
        ));
    }
    // 1.16-1.17's addresses are relocations in a position-independent binary: read as loaded.
    let entry = |i: u64| -> Result<u64, String> {
        let within = table.saturating_add(2 * i * field);
        if offsets {
            elf.u32(at.saturating_add(within)).map(u64::from)
        } else {
            elf.word_at_addr(tab.addr.saturating_add(within), ptr)
        }
    };
    let text = if offsets {
        text_start(elf, tab, ptr, entry(0)?, entry(nfunc)?)?
    } else {
        0
    };
    let mut out = Vec::with_capacity(nfunc as usize);
    for i in 0..nfunc {
        let func = at.saturating_add(table).saturating_add((2 * i + 1) * field);
        let func = if offsets {
            u64::from(elf.u32(func)?)
        } else {
            elf.word(func, ptr)?
        };
        // `_func`: the entry (4 bytes from 1.18, a pointer before), the name's offset, seven
        // 32-bit fields (eight from 1.20: startLine), the funcID byte.
        let func = at.saturating_add(table).saturating_add(func);
        let name_off = elf.u32(func.saturating_add(field))?;
        let id_at = field + 4 * if magic == 0xffff_fff1 { 9 } else { 8 };
        let normal = elf.bytes(func.saturating_add(id_at), 1)?[0] == 0;
        let name = elf.cstr(at.saturating_add(names).saturating_add(u64::from(name_off)))?;
        let addr = text.wrapping_add(entry(i)?);
        let Some(file_offset) = elf.offset_of(addr, SHF_EXECINSTR) else {
            return Err(format!(
                "{name}'s entry {addr:#x} is outside the file's code"
            ));
        };
        out.push(GoFunc {
            name,
            addr,
            file_offset,
            normal,
        });
    }
    Ok(out)
}

/// The address Go's entry offsets count from (`runtime.text`): the header's when it holds
/// one, else the module's `moduledata.text`, checked as the runtime checks it (`minpc` is the
/// text plus the first entry's offset, `maxpc` the text plus the last's).
fn text_start(elf: &Elf, tab: &Section, ptr: u64, first: u64, last: u64) -> Result<u64, String> {
    let in_header = elf.word_at_addr(tab.addr.saturating_add(8 + 2 * ptr), ptr)?;
    if in_header != 0 {
        return Ok(in_header);
    }
    // moduledata: pcHeader, then six slices (pointer, length, capacity), findfunctab, minpc,
    // maxpc, text: Go 1.18 to 1.26.
    let (minpc_at, maxpc_at) = (20 * ptr, 21 * ptr);
    let data = SHF_WRITE | SHF_ALLOC;
    for s in elf
        .sections
        .iter()
        .filter(|s| s.flags & data == data && s.kind != SHT_NOBITS && s.addr != 0)
    {
        let Some(mut addr) = s.addr.checked_next_multiple_of(ptr) else {
            continue;
        };
        let word = |a: u64| elf.word_at_addr(a, ptr).ok();
        while addr.saturating_add(maxpc_at + ptr) <= s.addr.saturating_add(s.size) {
            if word(addr) == Some(tab.addr) {
                let (minpc, maxpc) = (word(addr + minpc_at), word(addr + maxpc_at));
                if let (Some(minpc), Some(maxpc)) = (minpc, maxpc) {
                    if minpc >= first && maxpc.wrapping_sub(minpc) == last.wrapping_sub(first) {
                        return Ok(minpc - first);
                    }
                }
            }
            addr += ptr;
        }
    }
    Err("the start of its Go text is neither in its .gopclntab header nor in a moduledata".into())
}

#[cfg(test)]
mod tests;
