//! A reader of the Linux kernel's BTF (`/sys/kernel/btf/vmlinux`; the format is in the
//! kernel's `include/uapi/linux/btf.h`), enough to find where a struct's member lies: its
//! byte offset and size, by name, among the struct's members or inside its anonymous ones.

use std::path::Path;

/// The magic number BTF starts with, in the machine's byte order.
const MAGIC: u16 = 0xEB9F;
/// The longest chain of type references (typedefs, qualifiers, arrays, anonymous members)
/// followed before giving up, against cycles in bad BTF.
const MAX_DEPTH: u32 = 32;
/// The most members one [`Btf::member`] search visits, against bad BTF that fans out.
const MAX_VISITS: u32 = 1 << 20;

/// A kernel's BTF, read whole.
pub struct Btf {
    /// The type section.
    types: Vec<u8>,
    /// The string section.
    strings: Vec<u8>,
    /// Where each type's record starts in `types`: type id `n` at index `n - 1`.
    starts: Vec<usize>,
}

/// A struct member found: its offset from the struct's start, in bytes, and its size in
/// bytes (resolved through typedefs, const, volatile, restrict, type tags; an array's size
/// is its element size × count); `None` size for a bitfield member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Bytes from the struct's start.
    pub offset: u32,
    /// Bytes it takes; `None` for a bitfield.
    pub size: Option<u32>,
}

/// One type's record: its common fields, and where its kind's own data starts in `types`.
struct Ty {
    name_off: u32,
    kind: u32,
    vlen: usize,
    kind_flag: bool,
    size_or_type: u32,
    body: usize,
}

/// The `u32` at `pos` in `bytes`, in the machine's byte order.
fn u32_at(bytes: &[u8], pos: usize) -> Option<u32> {
    let b = bytes.get(pos..pos.checked_add(4)?)?;
    Some(u32::from_ne_bytes(b.try_into().ok()?))
}

/// The bytes a type of `kind` with `vlen` entries has after its common 12, or `None` for a
/// kind this reader does not know.
fn body_len(kind: u32, vlen: usize) -> Option<usize> {
    Some(match kind {
        2 | 7..=12 | 16 | 18 => 0,
        1 | 14 | 17 => 4,
        3 => 12,
        4 | 5 | 15 | 19 => 12 * vlen,
        6 | 13 => 8 * vlen,
        _ => return None,
    })
}

impl std::fmt::Debug for Btf {
    /// Formats the BTF as its count of types (not its bytes).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Btf {{ {} types }}", self.starts.len())
    }
}

impl Btf {
    /// Reads and parses `path`: an error line naming the file and what is wrong (not BTF, a
    /// truncated section, an unknown kind) on failure.
    pub fn read(path: &Path) -> Result<Btf, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Btf::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses BTF bytes (the same checks).
    pub fn parse(bytes: &[u8]) -> Result<Btf, String> {
        match bytes.get(0..2).map(|b| u16::from_ne_bytes([b[0], b[1]])) {
            Some(MAGIC) => {}
            Some(m) if m == MAGIC.swap_bytes() => {
                return Err("BTF of the other byte order (magic 0x9FEB)".into())
            }
            _ => return Err("not BTF (no 0xEB9F magic)".into()),
        }
        let field = |i: usize| u32_at(bytes, 4 + 4 * i).ok_or("BTF header truncated");
        let hdr_len = field(0)?;
        if hdr_len < 24 {
            return Err(format!("BTF header length {hdr_len} is under 24"));
        }
        let section = |off: u32, len: u32, what: &str| {
            let start = (hdr_len as usize).checked_add(off as usize);
            let range = start.and_then(|s| Some(s..s.checked_add(len as usize)?));
            let found = range.and_then(|r| bytes.get(r)).map(<[u8]>::to_vec);
            found.ok_or_else(|| format!("BTF {what} section truncated ({} bytes)", bytes.len()))
        };
        let types = section(field(1)?, field(2)?, "type")?;
        let strings = section(field(3)?, field(4)?, "string")?;
        let mut starts = Vec::new();
        let mut pos = 0;
        while pos < types.len() {
            let id = starts.len() + 1;
            let info = u32_at(&types, pos + 4).ok_or(format!("BTF type {id} truncated"))?;
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let len =
                body_len(kind, vlen).ok_or(format!("BTF type {id} has unknown kind {kind}"))?;
            let end = pos + 12 + len;
            if end > types.len() {
                return Err(format!("BTF type {id} truncated"));
            }
            starts.push(pos);
            pos = end;
        }
        Ok(Btf {
            types,
            strings,
            starts,
        })
    }

    /// `member` of the struct (or union) named `structure` (the first STRUCT/UNION of that name),
    /// found among its members or inside its anonymous members at any depth; its offset is
    /// from `structure`'s start. `None` when there is no such struct or member, or the member
    /// is a bitfield whose offset is not byte-aligned (or, in bad BTF, its size cannot be
    /// resolved).
    pub fn member(&self, structure: &str, member: &str) -> Option<Member> {
        let top = (1..=self.starts.len())
            .filter_map(|id| self.ty(u32::try_from(id).ok()?))
            .find(|t| matches!(t.kind, 4 | 5) && self.name(t.name_off) == structure.as_bytes())?;
        let mut visits = MAX_VISITS;
        let (bits, size) = self.find(&top, member.as_bytes(), 0, 0, &mut visits)?;
        let offset = u32::try_from(bits / 8).ok()?;
        Some(Member { offset, size })
    }

    /// The id of the first type of `kind` (8: a typedef) named `name`.
    pub fn type_id(&self, kind: u32, name: &str) -> Option<u32> {
        (1..=self.starts.len())
            .filter_map(|id| u32::try_from(id).ok())
            .find(|&id| {
                self.ty(id)
                    .is_some_and(|t| t.kind == kind && self.name(t.name_off) == name.as_bytes())
            })
    }

    /// `name` among the members of struct or union `t` (which starts `base` bits into the
    /// outer struct) or inside its anonymous members: its bit offset from the outer struct's
    /// start, and its size in bytes (`None` for a bitfield).
    fn find(
        &self,
        t: &Ty,
        name: &[u8],
        base: u64,
        depth: u32,
        visits: &mut u32,
    ) -> Option<(u64, Option<u32>)> {
        for i in 0..t.vlen {
            *visits = visits.checked_sub(1)?;
            let pos = t.body + 12 * i;
            let m_name = u32_at(&self.types, pos)?;
            let m_type = u32_at(&self.types, pos + 4)?;
            let m_off = u32_at(&self.types, pos + 8)?;
            let (bit, bitfield) = match t.kind_flag {
                true => (m_off & 0xff_ffff, m_off >> 24 != 0),
                false => (m_off, false),
            };
            let bits = base + u64::from(bit);
            if m_name == 0 && depth < MAX_DEPTH {
                let inner = self.composite(m_type, 0);
                if let Some(found) =
                    inner.and_then(|t| self.find(&t, name, bits, depth + 1, visits))
                {
                    return Some(found);
                }
            } else if m_name != 0 && self.name(m_name) == name && bits & 7 == 0 {
                let size = self.size(m_type, 0).filter(|_| !bitfield);
                return (bitfield || size.is_some()).then_some((bits, size));
            }
        }
        None
    }

    /// Type `id`'s record, or `None` for void or an id past the last type.
    fn ty(&self, id: u32) -> Option<Ty> {
        let pos = *self.starts.get((id as usize).checked_sub(1)?)?;
        let info = u32_at(&self.types, pos + 4)?;
        Some(Ty {
            name_off: u32_at(&self.types, pos)?,
            kind: (info >> 24) & 0x1f,
            vlen: (info & 0xffff) as usize,
            kind_flag: info >> 31 == 1,
            size_or_type: u32_at(&self.types, pos + 8)?,
            body: pos + 12,
        })
    }

    /// The string at `off` in the string section (empty when `off` is past its end).
    fn name(&self, off: u32) -> &[u8] {
        let rest = self.strings.get(off as usize..).unwrap_or_default();
        rest.split(|&b| b == 0).next().unwrap_or_default()
    }

    /// Type `id` through typedefs, qualifiers and type tags, when it is a struct or union.
    fn composite(&self, id: u32, depth: u32) -> Option<Ty> {
        let t = self.ty(id)?;
        match t.kind {
            4 | 5 => Some(t),
            8..=11 | 18 if depth < MAX_DEPTH => self.composite(t.size_or_type, depth + 1),
            _ => None,
        }
    }

    /// Type `id`'s size in bytes through typedefs, qualifiers, type tags and arrays (a pointer
    /// is this machine's: BTF does not record it); `None` for void, a function, a bad id or a
    /// chain longer than [`MAX_DEPTH`].
    fn size(&self, id: u32, depth: u32) -> Option<u32> {
        let t = self.ty(id)?;
        match t.kind {
            1 | 4 | 5 | 6 | 15 | 16 | 19 => Some(t.size_or_type),
            2 => u32::try_from(std::mem::size_of::<usize>()).ok(),
            3 if depth < MAX_DEPTH => {
                let count = u32_at(&self.types, t.body + 8)?;
                self.size(u32_at(&self.types, t.body)?, depth + 1)?
                    .checked_mul(count)
            }
            8..=11 | 18 if depth < MAX_DEPTH => self.size(t.size_or_type, depth + 1),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kind_flag bit of a type's info word.
    const KFLAG: u32 = 1 << 31;

    /// Builds BTF bytes type by type, for tests.
    #[derive(Default)]
    struct Builder {
        types: Vec<u32>,
        strings: Vec<u8>,
        count: u32,
    }

    impl Builder {
        /// Adds `s` to the strings (once the leading empty one is there): its offset.
        fn name(&mut self, s: &str) -> u32 {
            if s.is_empty() {
                return 0;
            }
            if self.strings.is_empty() {
                self.strings.push(0);
            }
            let off = self.strings.len() as u32;
            self.strings.extend(s.as_bytes().iter().chain([&0]));
            off
        }

        /// Adds a type of `kind` (`| KFLAG` for kind_flag) with `body` after its common fields
        /// (a struct's or union's members, three words each): its id.
        fn ty(&mut self, name: &str, kind: u32, st: u32, body: &[u32]) -> u32 {
            let vlen = body.len() as u32 / 3 * u32::from(matches!(kind & 0x1f, 4 | 5));
            let name = self.name(name);
            self.types
                .extend([name, (kind & 0x1f) << 24 | (kind & KFLAG) | vlen, st]);
            self.types.extend(body);
            self.count += 1;
            self.count
        }

        /// The BTF bytes: header, type section, string section.
        fn finish(&self) -> Vec<u8> {
            let type_len = self.types.len() as u32 * 4;
            let mut out = MAGIC.to_ne_bytes().to_vec();
            out.extend([1, 0]);
            let header = [24, 0, type_len, type_len, self.strings.len() as u32];
            for v in header.iter().chain(&self.types) {
                out.extend(v.to_ne_bytes());
            }
            out.extend(&self.strings);
            out
        }
    }

    /// A struct `outer` { u32 head; union { struct { const u32 a; unsigned int b; };
    /// long whole; }; const u32 arr[3]; unsigned int flag:1, odd:3; }, a struct `cyc` whose
    /// member's type is a typedef cycle, and a struct `selfish` that contains itself.
    fn sample() -> Vec<u8> {
        let mut b = Builder::default();
        let uint = b.ty("unsigned int", 1, 4, &[32]);
        let u32t = b.ty("u32", 8, uint, &[]);
        let cu32 = b.ty("", 10, u32t, &[]);
        let long = b.ty("long", 1, 8, &[64]);
        let arr = b.ty("", 3, 0, &[cu32, uint, 3]);
        let [a, bb, whole] = ["a", "b", "whole"].map(|n| b.name(n));
        let inner = b.ty("", 4, 8, &[a, cu32, 0, bb, uint, 32]);
        let un = b.ty("", 5, 8, &[0, inner, 0, whole, long, 0]);
        let [head, arr_n, flag, odd] = ["head", "arr", "flag", "odd"].map(|n| b.name(n));
        let members = [head, u32t, 0, 0, un, 64, arr_n, arr, 128];
        let bits = [flag, uint, 1 << 24 | 224, odd, uint, 3 << 24 | 225];
        b.ty("outer", 4 | KFLAG, 32, &[&members[..], &bits[..]].concat());
        let (next, x) = (b.count + 1, b.name("x"));
        b.ty("loop", 8, next + 1, &[]);
        b.ty("", 10, next, &[]);
        b.ty("cyc", 4, 4, &[x, next, 0]);
        b.ty("selfish", 4, 4, &[0, next + 3, 0]);
        b.finish()
    }

    #[test]
    fn finds_members_in_a_built_blob() {
        let btf = Btf::parse(&sample()).expect("sample parses");
        let m = |offset, size| Some(Member { offset, size });
        assert_eq!(btf.member("outer", "head"), m(0, Some(4)));
        assert_eq!(btf.member("outer", "a"), m(8, Some(4)));
        assert_eq!(btf.member("outer", "b"), m(12, Some(4)));
        assert_eq!(btf.member("outer", "whole"), m(8, Some(8)));
        assert_eq!(btf.member("outer", "arr"), m(16, Some(12)));
        assert_eq!(btf.member("outer", "flag"), m(28, None));
        assert_eq!(btf.member("outer", "odd"), None);
        assert_eq!(btf.member("outer", "missing"), None);
        assert_eq!(btf.member("nope", "a"), None);
        assert_eq!(btf.member("cyc", "x"), None);
        assert_eq!(btf.member("selfish", "x"), None);
    }

    #[test]
    fn bad_bytes_give_errors_never_panics() {
        let good = sample();
        for n in 0..good.len() {
            assert!(Btf::parse(&good[..n]).is_err(), "{n} bytes parsed");
        }
        let swapped = [&[good[1], good[0]][..], &good[2..]].concat();
        assert!(Btf::parse(&swapped).unwrap_err().contains("byte order"));
        assert!(Btf::parse(&[0; 64]).unwrap_err().contains("not BTF"));
        let mut unknown = Builder::default();
        unknown.ty("", 25, 0, &[]);
        let err = Btf::parse(&unknown.finish()).unwrap_err();
        assert!(err.contains("unknown kind 25"), "{err}");
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as usize
        };
        let lookups = [
            ("outer", "b"),
            ("outer", "arr"),
            ("cyc", "x"),
            ("selfish", "q"),
        ];
        for round in 0..20_000 {
            let mut bytes = good.clone();
            for _ in 0..1 + round % 4 {
                let at = 2 + next() % (bytes.len() - 2);
                bytes[at] = next() as u8;
            }
            bytes.truncate(bytes.len() - next() % 3);
            if let Ok(btf) = Btf::parse(&bytes) {
                let _ = lookups.map(|(s, m)| btf.member(s, m));
            }
        }
    }

    #[test]
    fn vmlinux() {
        let path = Path::new("/sys/kernel/btf/vmlinux");
        if !path.exists() {
            return;
        }
        let btf = Btf::read(path).expect("vmlinux BTF parses");
        let get = |s: &str, m: &str| {
            let found = btf.member(s, m);
            println!("{s}.{m}: {found:?}");
            found.unwrap_or_else(|| panic!("{s}.{m} not found"))
        };
        let dport = get("sock_common", "skc_dport");
        assert_eq!(dport.size, Some(2));
        assert_eq!(get("sock_common", "skc_num").offset, dport.offset + 2);
        assert_eq!(get("sock", "__sk_common").offset, 0);
        assert_eq!(get("sock", "sk_protocol").size, Some(2));
        for m in ["bytes_received", "bytes_acked"] {
            assert_eq!(get("tcp_sock", m).size, Some(8));
        }
        for m in ["rcv_nxt", "copied_seq", "write_seq", "snd_una"] {
            assert_eq!(get("tcp_sock", m).size, Some(4));
        }
    }
}
