//! The Huffman code of HPACK string literals (RFC 7541, section 5.2 and Appendix B): the 257
//! code lengths, the canonical codes derived from them, and a table-driven decoder that reads
//! up to two symbols per lookup of the next 12 bits.

use super::HpackError;
use std::sync::OnceLock;

/// The code length of each symbol, 0 to 255 and EOS (256), from RFC 7541 Appendix B. The code
/// is canonical: codes of one length are consecutive in symbol order, and each length's first
/// code is the one after the previous length's last, shifted left ([`CODES`]).
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0-15
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16-31
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // 32-47
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // 48-63
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // 64-79
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 80-95
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // 96-111
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 112-127
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128-143
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144-159
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160-175
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176-191
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192-207
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208-223
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224-239
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240-255
    30, // EOS
];

/// The end-of-string symbol; it never appears in a valid string.
const EOS: u16 = 256;

/// Each symbol's code, right-aligned in `LENGTHS[symbol]` bits.
pub(super) const CODES: [u32; 257] = canonical_codes();

const fn canonical_codes() -> [u32; 257] {
    let mut codes = [0u32; 257];
    let mut code = 0u32;
    let mut len = 5;
    while len <= 30 {
        let mut sym = 0;
        while sym < 257 {
            if LENGTHS[sym] == len {
                codes[sym] = code;
                code += 1;
            }
            sym += 1;
        }
        code <<= 1;
        len += 1;
    }
    codes
}

/// How many leading bits the fast table is indexed by.
const FAST_BITS: u32 = 12;

/// What the fast table says of the next [`FAST_BITS`] bits: the symbols whose codes they hold
/// whole (one or two), the first code's length and both codes' length; the lengths are
/// [`NONE`] when the bits hold no whole code, and equal when they hold one.
#[derive(Clone, Copy, Default)]
struct Fast {
    sym: [u8; 2],
    first: u8,
    both: u8,
}

/// A fast-table entry's lengths when its bits start a code longer than [`FAST_BITS`].
const NONE: u8 = 127;

/// The decoding tables, built once from [`CODES`].
pub(super) struct Huffman {
    /// Indexed by the next [`FAST_BITS`] bits, complemented (see [`Huffman::decode`]).
    fast: Box<[Fast; 1 << FAST_BITS]>,
    /// The code tree, root first: each node's two children, a node index or a leaf
    /// (`LEAF | symbol`).
    tree: Vec<[u16; 2]>,
}

const LEAF: u16 = 0x8000;

static TABLES: OnceLock<Huffman> = OnceLock::new();

/// The shared decoding tables (built at the first call).
pub(super) fn tables() -> &'static Huffman {
    TABLES.get_or_init(Huffman::build)
}

impl Huffman {
    fn build() -> Huffman {
        let mut tree = vec![[0u16; 2]];
        for (sym, &code) in CODES.iter().enumerate() {
            let len = u32::from(LENGTHS[sym]);
            let mut node = 0;
            for i in (0..len).rev() {
                let bit = ((code >> i) & 1) as usize;
                if i == 0 {
                    tree[node][bit] = LEAF | sym as u16;
                } else {
                    if tree[node][bit] == 0 {
                        tree.push([0, 0]);
                        tree[node][bit] = (tree.len() - 1) as u16;
                    }
                    node = usize::from(tree[node][bit]);
                }
            }
        }
        let mut huffman = Huffman {
            fast: Box::new([Fast::default(); 1 << FAST_BITS]),
            tree,
        };
        let mask = (1 << FAST_BITS) - 1;
        for peek in 0..1u32 << FAST_BITS {
            let bits = u64::from(peek) << (64 - FAST_BITS);
            let none = Fast {
                sym: [0, 0],
                first: NONE,
                both: NONE,
            };
            let entry = match huffman.walk(bits, FAST_BITS) {
                Some((s0, l0)) if s0 != EOS => {
                    let next = huffman.walk(bits << l0, FAST_BITS - l0);
                    let (s1, l1) = next.filter(|n| n.0 != EOS).unwrap_or((0, 0));
                    Fast {
                        sym: [s0 as u8, s1 as u8],
                        first: l0 as u8,
                        both: (l0 + l1) as u8,
                    }
                }
                _ => none,
            };
            huffman.fast[(!peek & mask) as usize] = entry;
        }
        huffman
    }

    /// The symbol whose code starts `bits` (left-aligned) and its length, if the code is at
    /// most `max` bits long.
    fn walk(&self, bits: u64, max: u32) -> Option<(u16, u32)> {
        let mut node = 0usize;
        for i in 0..max {
            let child = self.tree[node][(bits >> (63 - i)) as usize & 1];
            if child & LEAF != 0 {
                return Some((child & !LEAF, i + 1));
            }
            node = usize::from(child);
        }
        None
    }

    /// Writes the decoding of `src` into `out` from `at` (lengthening `out` when it is too
    /// short for the longest possible decoding) and returns where it ends.
    pub(super) fn decode(
        &self,
        src: &[u8],
        out: &mut Vec<u8>,
        at: usize,
    ) -> Result<usize, HpackError> {
        // At most one symbol per 5 bits, and a pair's second byte may be written one past.
        let need = at + src.len() * 8 / 5 + 2;
        if out.len() < need {
            out.resize(need, 0);
        }
        let buf = &mut out[at..need];
        let mut w = 0;
        // The unread bits, complemented and left-aligned, `have` of them (at most 63); below
        // them, zeros or the input's next bits. Complemented, the zeros shifted in are the ones
        // an encoder pads with (EOS's leading bits), and the fast table is indexed directly.
        let mut acc = 0u64;
        let mut have = 0u32;
        let mut pos = 0;
        loop {
            if have < 30 {
                if let Some(word) = src.get(pos..pos + 8) {
                    acc |= !u64::from_be_bytes(word.try_into().unwrap()) >> have;
                    let take = (63 - have) / 8;
                    pos += take as usize;
                    have += take * 8;
                } else {
                    while have <= 55 && pos < src.len() {
                        acc |= u64::from(!src[pos]) << (56 - have);
                        have += 8;
                        pos += 1;
                    }
                }
            }
            // After a refill, `have` is at least 30 unless the input is all read.
            let entry = self.fast[(acc >> (64 - FAST_BITS)) as usize];
            let both = u32::from(entry.both);
            if both <= have {
                buf[w] = entry.sym[0];
                buf[w + 1] = entry.sym[1];
                w += 1 + usize::from(entry.both != entry.first);
                acc <<= both;
                have -= both;
                continue;
            }
            let first = u32::from(entry.first);
            if first <= have {
                buf[w] = entry.sym[0];
                w += 1;
                acc <<= first;
                have -= first;
                continue;
            }
            if pos == src.len() && have < 8 {
                // The rest is padding: fewer than 8 bits, all ones (zeros here).
                if acc == 0 {
                    break;
                }
                return Err(HpackError::BadHuffman);
            }
            match self.walk(!acc, 30) {
                Some((sym, len)) if len <= have => {
                    if sym == EOS {
                        return Err(HpackError::HuffmanEos);
                    }
                    buf[w] = sym as u8;
                    w += 1;
                    acc <<= len;
                    have -= len;
                }
                // A code cut by the end, or padding of 8 bits or more.
                _ => return Err(HpackError::BadHuffman),
            }
        }
        Ok(at + w)
    }
}

/// Appends the Huffman coding of `src` to `out`, padded with ones (for tests).
#[cfg(test)]
pub(super) fn encode(src: &[u8], out: &mut Vec<u8>) {
    let mut acc = 0u64;
    let mut have = 0u32;
    for &b in src {
        let len = u32::from(LENGTHS[usize::from(b)]);
        acc = acc << len | u64::from(CODES[usize::from(b)]);
        have += len;
        while have >= 8 {
            have -= 8;
            out.push((acc >> have) as u8);
        }
    }
    if have > 0 {
        out.push((acc << (8 - have)) as u8 | 0xff >> have);
    }
}

/// The code's lengths, for tests.
#[cfg(test)]
pub(super) fn length(sym: usize) -> u32 {
    u32::from(LENGTHS[sym])
}
