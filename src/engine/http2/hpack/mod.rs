//! HPACK (RFC 7541), the header compression of HTTP/2: a [`Decoder`] for the header blocks a
//! server sends (static and dynamic tables, raw and Huffman strings, table size updates) and an
//! [`Encoder`] for the requests a load generator repeats (indexing what recurs, never evicting,
//! strings raw). Decoding hands each field to a callback as slices of the block, of the tables
//! or of the decoder's scratch buffer: nothing is allocated per block once warm.

mod huffman;
mod table;
#[cfg(test)]
mod tests;

use huffman::Huffman;
use table::{Dynamic, Inserted, DYNAMIC_START, ENTRY_OVERHEAD, STATIC};

/// What went wrong decoding a header block (the connection then ends with COMPRESSION_ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HpackError {
    /// The block ends inside a field's representation.
    Truncated,
    /// An index of 0, or past the end of the dynamic table.
    BadIndex(usize),
    /// A Huffman string with padding of 8 bits or more, or not of ones.
    BadHuffman,
    /// A Huffman string holding the EOS symbol.
    HuffmanEos,
    /// An integer over 5 continuation bytes, or too large for this machine.
    IntegerOverflow,
    /// A dynamic table size update above the size allowed (our SETTINGS_HEADER_TABLE_SIZE).
    TableSizeUpdate(usize),
    /// A dynamic table size update after a field of the block.
    LateSizeUpdate,
}

impl std::fmt::Display for HpackError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HpackError::Truncated => f.write_str("HPACK: the header block ends inside a field"),
            HpackError::BadIndex(i) => write!(f, "HPACK: index {i} is not in the table"),
            HpackError::BadHuffman => f.write_str("HPACK: a Huffman string with bad padding"),
            HpackError::HuffmanEos => f.write_str("HPACK: a Huffman string holds EOS"),
            HpackError::IntegerOverflow => f.write_str("HPACK: an integer too large"),
            HpackError::TableSizeUpdate(n) => {
                write!(f, "HPACK: a table size update to {n}, above the maximum")
            }
            HpackError::LateSizeUpdate => {
                f.write_str("HPACK: a table size update after the block's first field")
            }
        }
    }
}

impl std::error::Error for HpackError {}

/// The dynamic table size the protocol starts with (SETTINGS_HEADER_TABLE_SIZE's default).
const DEFAULT_TABLE_SIZE: usize = 4096;

/// The most continuation bytes an integer may take (35 bits past its prefix).
const MAX_CONTINUATIONS: u32 = 5;

/// Decodes the header blocks of one connection, keeping its dynamic table.
pub struct Decoder {
    table: Dynamic,
    /// The largest table size an update may ask for.
    max_size: usize,
    /// Huffman-decoded names and values of the field being decoded (its length is the most
    /// a field has needed, not what the current one uses).
    scratch: Vec<u8>,
    huffman: &'static Huffman,
    replay: Replay,
}

/// The last block decoded and its fields, kept to replay: a server repeats its response
/// headers, and nginx, for one, sends each response's fields as literals it adds to the table
/// and never refers to, Huffman-coded. A block that refers to no dynamic entry and updates no
/// table size gives the same fields whatever the table holds, so the same bytes again are
/// replayed: their fields given as kept, the same entries added to the table.
#[derive(Default)]
struct Replay {
    block: Vec<u8>,
    /// The fields' names and values, one after the other.
    bytes: Vec<u8>,
    /// Each field's start, name end and value end in `bytes`, and whether it was added to
    /// the table.
    fields: Vec<(u32, u32, u32, bool)>,
    /// The kept block may be replayed.
    valid: bool,
}

impl Replay {
    fn record(&mut self, name: &[u8], value: &[u8], inserted: bool) {
        let start = self.bytes.len() as u32;
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        let name_end = start + name.len() as u32;
        self.fields
            .push((start, name_end, self.bytes.len() as u32, inserted));
    }
}

/// Where a decoded string lies: a range of the block (raw) or of the scratch buffer (Huffman).
#[derive(Clone, Copy)]
enum Text {
    Block(usize, usize),
    Scratch(usize, usize),
}

impl Text {
    fn slice<'a>(self, block: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            Text::Block(a, b) => &block[a..b],
            Text::Scratch(a, b) => &scratch[a..b],
        }
    }
}

impl Decoder {
    /// A decoder whose dynamic table may hold `max_size` bytes (our SETTINGS_HEADER_TABLE_SIZE; 4096).
    pub fn new(max_size: usize) -> Decoder {
        Decoder {
            table: Dynamic::new(max_size),
            max_size,
            scratch: Vec::new(),
            huffman: huffman::tables(),
            replay: Replay::default(),
        }
    }

    /// Decodes one whole header block (HEADERS plus its CONTINUATIONs, concatenated), giving each
    /// field in order to `field(name, value)`. Dynamic table size updates are applied (an update
    /// above max_size, or one not at the start of the block, is an error).
    pub fn decode(
        &mut self,
        block: &[u8],
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        if self.replay.valid && self.replay.block == block {
            let Decoder { replay, table, .. } = self;
            for &(start, name_end, end, inserted) in &replay.fields {
                let name = &replay.bytes[start as usize..name_end as usize];
                let value = &replay.bytes[name_end as usize..end as usize];
                field(name, value);
                if inserted {
                    let mut bytes = table.buffer();
                    bytes.extend_from_slice(name);
                    bytes.extend_from_slice(value);
                    table.push(bytes, name.len());
                }
            }
            return Ok(());
        }
        let replay = &mut self.replay;
        replay.valid = false;
        replay.block.clear();
        replay.bytes.clear();
        replay.fields.clear();
        let mut replayable = true;
        let mut pos = 0;
        let mut fields = false;
        while let Some(&b) = block.get(pos) {
            if b & 0x80 != 0 {
                let index = integer(block, &mut pos, 7)?;
                replayable &= index < DYNAMIC_START;
                let (name, value) = entry(&self.table, index)?;
                field(name, value);
                self.replay.record(name, value, false);
            } else if b & 0x40 != 0 {
                replayable &= self.literal(block, &mut pos, 6, true, &mut field)?;
            } else if b & 0x20 != 0 {
                if fields {
                    return Err(HpackError::LateSizeUpdate);
                }
                let size = integer(block, &mut pos, 5)?;
                if size > self.max_size {
                    return Err(HpackError::TableSizeUpdate(size));
                }
                self.table.set_capacity(size);
                replayable = false;
                continue;
            } else {
                // Without indexing (0000) or never indexed (0001): the same to a decoder.
                replayable &= self.literal(block, &mut pos, 4, false, &mut field)?;
            }
            fields = true;
        }
        if replayable {
            self.replay.block.extend_from_slice(block);
            self.replay.valid = true;
        }
        Ok(())
    }

    /// The dynamic table's size in bytes (entries plus 32 each, section 4.1).
    pub fn table_size(&self) -> usize {
        self.table.size()
    }

    /// How many entries the dynamic table holds.
    pub fn table_len(&self) -> usize {
        self.table.len()
    }

    /// A literal field at `pos` whose name index has a `prefix`-bit prefix; added to the
    /// dynamic table when `indexing`. Whether its name was not a dynamic entry's (a block of
    /// such fields may be replayed).
    fn literal(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        prefix: u32,
        indexing: bool,
        field: &mut impl FnMut(&[u8], &[u8]),
    ) -> Result<bool, HpackError> {
        let index = integer(block, pos, prefix)?;
        let mut used = 0;
        let name = match index {
            0 => Some(self.string(block, pos, &mut used)?),
            _ => None,
        };
        let value = self.string(block, pos, &mut used)?;
        let mut bytes = indexing.then(|| self.table.buffer());
        let name = match name {
            Some(text) => text.slice(block, &self.scratch),
            None => entry(&self.table, index)?.0,
        };
        let value = value.slice(block, &self.scratch);
        field(name, value);
        self.replay.record(name, value, indexing);
        if let Some(bytes) = &mut bytes {
            bytes.extend_from_slice(name);
            bytes.extend_from_slice(value);
        }
        let name_len = name.len();
        if let Some(bytes) = bytes {
            self.table.push(bytes, name_len);
        }
        Ok(index < DYNAMIC_START)
    }

    /// A string literal at `pos`: where it lies, raw in the block or Huffman-decoded into the
    /// scratch buffer (from `used`, which moves past it).
    fn string(
        &mut self,
        block: &[u8],
        pos: &mut usize,
        used: &mut usize,
    ) -> Result<Text, HpackError> {
        let huffman = block.get(*pos).ok_or(HpackError::Truncated)? & 0x80 != 0;
        let len = integer(block, pos, 7)?;
        let start = *pos;
        let end = start
            .checked_add(len)
            .filter(|&end| end <= block.len())
            .ok_or(HpackError::Truncated)?;
        *pos = end;
        if !huffman {
            return Ok(Text::Block(start, end));
        }
        let from = *used;
        *used = self
            .huffman
            .decode(&block[start..end], &mut self.scratch, from)?;
        Ok(Text::Scratch(from, *used))
    }
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decoder")
            .field("max_size", &self.max_size)
            .field("capacity", &self.table.capacity())
            .field("size", &self.table.size())
            .field("entries", &self.table.len())
            .finish()
    }
}

/// The entry at `index` of the static and `dynamic` tables, as (name, value).
fn entry(dynamic: &Dynamic, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
    match index {
        0 => Err(HpackError::BadIndex(0)),
        i if i < DYNAMIC_START => Ok(STATIC[i - 1]),
        i => dynamic
            .get(i - DYNAMIC_START)
            .ok_or(HpackError::BadIndex(i)),
    }
}

/// The integer at `pos` (which is in the block) with a `prefix`-bit prefix (section 5.1).
#[inline]
fn integer(block: &[u8], pos: &mut usize, prefix: u32) -> Result<usize, HpackError> {
    let mask = (1u8 << prefix) - 1;
    let first = block[*pos] & mask;
    *pos += 1;
    if first < mask {
        return Ok(usize::from(first));
    }
    let mut value = u64::from(mask);
    for i in 0..MAX_CONTINUATIONS {
        let b = *block.get(*pos).ok_or(HpackError::Truncated)?;
        *pos += 1;
        value += u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return usize::try_from(value).map_err(|_| HpackError::IntegerOverflow);
        }
    }
    Err(HpackError::IntegerOverflow)
}

/// Appends `value` with a `prefix`-bit prefix, the bits above it from `flags` (section 5.1).
fn put_integer(out: &mut Vec<u8>, flags: u8, prefix: u32, value: usize) {
    let mask = (1usize << prefix) - 1;
    if value < mask {
        out.push(flags | value as u8);
        return;
    }
    out.push(flags | mask as u8);
    let mut rest = value - mask;
    while rest >= 0x80 {
        out.push(rest as u8 | 0x80);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Appends a raw (not Huffman) string literal.
fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    put_integer(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Encodes the header blocks of one connection: fields equal to an entry of the static table
/// or to one it inserted earlier are indexed; others are literals, inserted into the dynamic
/// table while they fit (never `:path`, which changes per request); nothing is evicted.
pub struct Encoder {
    table: Inserted,
    /// The table size the peer's decoder has from us: the default, or our last update.
    capacity: usize,
    /// Size updates owed at the start of the next block: the lowest size since the last block
    /// and the last.
    update: Option<(usize, usize)>,
    inserted: u64,
}

impl Encoder {
    /// An encoder for a peer whose table holds 4096 bytes (the protocol's default).
    pub fn new() -> Encoder {
        Encoder {
            table: Inserted::default(),
            capacity: DEFAULT_TABLE_SIZE,
            update: None,
            inserted: 0,
        }
    }

    /// The peer's SETTINGS_HEADER_TABLE_SIZE: the encoder never uses more; when it is lower than
    /// what the encoder's table holds, the next block starts with size updates (to 0, then to the
    /// new size) and the encoder's table is emptied.
    ///
    /// The encoder uses at most 4096 bytes; any change to what it uses is announced by an
    /// update at the start of the next block, so a block cached before this call must not be
    /// sent again: the next one comes from [`Encoder::encode`].
    pub fn set_max_table_size(&mut self, size: usize) {
        let capacity = size.min(DEFAULT_TABLE_SIZE);
        if capacity == self.capacity {
            return;
        }
        let lowest = if capacity < self.table.size() {
            self.table.clear();
            0
        } else {
            capacity
        };
        let lowest = self.update.map_or(lowest, |(low, _)| low.min(lowest));
        self.update = Some((lowest, capacity));
        self.capacity = capacity;
    }

    /// Appends the header block of `fields` (name, value; names lowercase, pseudo-fields first as
    /// given) to `out`.
    pub fn encode<'a>(
        &mut self,
        fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
        out: &mut Vec<u8>,
    ) {
        if let Some((lowest, last)) = self.update.take() {
            if lowest < last {
                put_integer(out, 0x20, 5, lowest);
            }
            put_integer(out, 0x20, 5, last);
        }
        for (name, value) in fields {
            self.field(name, value, out);
        }
    }

    /// How many entries the encoder has inserted into its table since it was made (a block
    /// encoded when this did not change is the same bytes for the same fields: callers cache it).
    pub fn inserted(&self) -> u64 {
        self.inserted
    }

    /// Appends a field that changes with every block (a trace id) as a literal without
    /// indexing: it takes no room in either table. Its name is indexed when a table has it.
    pub fn literal(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let name_index = table::find_static(name, value)
            .1
            .or_else(|| self.table.find(name, value).1);
        put_integer(out, 0x00, 4, name_index.unwrap_or(0));
        if name_index.is_none() {
            put_string(out, name);
        }
        put_string(out, value);
    }

    fn field(&mut self, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let (full, static_name) = table::find_static(name, value);
        if let Some(index) = full {
            return put_integer(out, 0x80, 7, index);
        }
        let (full, dynamic_name) = self.table.find(name, value);
        if let Some(index) = full {
            return put_integer(out, 0x80, 7, index);
        }
        let name_index = static_name.or(dynamic_name);
        let size = name.len() + value.len() + ENTRY_OVERHEAD;
        let insert = name != b":path" && self.table.size() + size <= self.capacity;
        let (flags, prefix) = if insert { (0x40, 6) } else { (0x00, 4) };
        put_integer(out, flags, prefix, name_index.unwrap_or(0));
        if name_index.is_none() {
            put_string(out, name);
        }
        put_string(out, value);
        if insert {
            self.table.push(name, value);
            self.inserted += 1;
        }
    }
}

impl Default for Encoder {
    fn default() -> Encoder {
        Encoder::new()
    }
}

impl std::fmt::Debug for Encoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Encoder")
            .field("capacity", &self.capacity)
            .field("size", &self.table.size())
            .field("entries", &self.table.len())
            .field("inserted", &self.inserted)
            .finish()
    }
}

/// Decodes arbitrary bytes, for the fuzz target (`fuzz/`) and the proptests: the first byte
/// sets the decoder's maximum table size (times 16), the rest is blocks, each after a byte
/// giving its length. Each block's fields are also encoded again and decoded by a second pair,
/// which must give them back. Whatever the bytes, this returns; it never panics unless the
/// tables' accounting or the round trip is wrong.
#[doc(hidden)]
pub fn decode_any(data: &[u8]) {
    let Some((&first, mut rest)) = data.split_first() else {
        return;
    };
    let max = usize::from(first) * 16;
    let mut decoder = Decoder::new(max);
    let mut encoder = Encoder::new();
    encoder.set_max_table_size(max);
    let mut again = Decoder::new(max);
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut block = Vec::new();
    while let Some((&len, tail)) = rest.split_first() {
        let (this, tail) = tail.split_at(usize::from(len).min(tail.len()));
        rest = tail;
        fields.clear();
        let ok = decoder
            .decode(this, |n, v| fields.push((n.to_vec(), v.to_vec())))
            .is_ok();
        let table = &decoder.table;
        assert!(table.size() <= table.capacity() && table.capacity() <= max);
        if !ok {
            continue;
        }
        block.clear();
        encoder.encode(
            fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())),
            &mut block,
        );
        let mut i = 0;
        again
            .decode(&block, |n, v| {
                assert_eq!((n, v), (&fields[i].0[..], &fields[i].1[..]));
                i += 1;
            })
            .expect("the encoder's block decodes");
        assert_eq!(i, fields.len());
    }
}
