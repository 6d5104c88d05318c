//! The static table (RFC 7541, Appendix A) and its lookup by name; the decoder's dynamic table
//! (with eviction) and the encoder's (without).

use std::collections::VecDeque;

/// The static table's entries, index 1 first.
pub(super) const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// A field's place in the static table: the index of the entry equal to it, if any, and the
/// first index with its name, if any.
pub(super) fn find_static(name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
    let Some((first, count)) = static_name(name) else {
        return (None, None);
    };
    let full = (first..first + count).find(|&i| STATIC[i - 1].1 == value);
    (full, Some(first))
}

/// The static table's names by length: each with its first index and how many entries have it.
const BY_LENGTH: [&[(&[u8], usize, usize)]; 28] = [
    &[],
    &[],
    &[],
    &[(b"age", 21, 1), (b"via", 60, 1)],
    &[
        (b"date", 33, 1),
        (b"etag", 34, 1),
        (b"from", 37, 1),
        (b"host", 38, 1),
        (b"link", 45, 1),
        (b"vary", 59, 1),
    ],
    &[(b":path", 4, 2), (b"allow", 22, 1), (b"range", 50, 1)],
    &[
        (b"accept", 19, 1),
        (b"cookie", 32, 1),
        (b"expect", 35, 1),
        (b"server", 54, 1),
    ],
    &[
        (b":method", 2, 2),
        (b":scheme", 6, 2),
        (b":status", 8, 7),
        (b"expires", 36, 1),
        (b"referer", 51, 1),
        (b"refresh", 52, 1),
    ],
    &[
        (b"if-match", 39, 1),
        (b"if-range", 42, 1),
        (b"location", 46, 1),
    ],
    &[],
    &[
        (b":authority", 1, 1),
        (b"set-cookie", 55, 1),
        (b"user-agent", 58, 1),
    ],
    &[(b"retry-after", 53, 1)],
    &[(b"content-type", 31, 1), (b"max-forwards", 47, 1)],
    &[
        (b"accept-ranges", 18, 1),
        (b"authorization", 23, 1),
        (b"cache-control", 24, 1),
        (b"content-range", 30, 1),
        (b"if-none-match", 41, 1),
        (b"last-modified", 44, 1),
    ],
    &[(b"accept-charset", 15, 1), (b"content-length", 28, 1)],
    &[(b"accept-encoding", 16, 1), (b"accept-language", 17, 1)],
    &[
        (b"content-encoding", 26, 1),
        (b"content-language", 27, 1),
        (b"content-location", 29, 1),
        (b"www-authenticate", 61, 1),
    ],
    &[(b"if-modified-since", 40, 1), (b"transfer-encoding", 57, 1)],
    &[(b"proxy-authenticate", 48, 1)],
    &[
        (b"content-disposition", 25, 1),
        (b"if-unmodified-since", 43, 1),
        (b"proxy-authorization", 49, 1),
    ],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[(b"strict-transport-security", 56, 1)],
    &[],
    &[(b"access-control-allow-origin", 20, 1)],
];

/// The first static index with this name, and how many entries have it (found among the
/// names of its length: six at most).
fn static_name(name: &[u8]) -> Option<(usize, usize)> {
    let names = BY_LENGTH.get(name.len())?;
    names
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, first, count)| (first, count))
}

/// The first index of the dynamic table.
pub(super) const DYNAMIC_START: usize = STATIC.len() + 1;

/// What an entry counts for in a table's size besides its name and value (section 4.1).
pub(super) const ENTRY_OVERHEAD: usize = 32;

/// The decoder's dynamic table: entries newest first, each one buffer (name, then value),
/// evicted oldest first to fit its capacity. Evicted buffers are kept for later entries.
pub(super) struct Dynamic {
    entries: VecDeque<Entry>,
    spare: Vec<Vec<u8>>,
    size: usize,
    capacity: usize,
}

struct Entry {
    bytes: Vec<u8>,
    name_len: usize,
}

impl Dynamic {
    pub(super) fn new(capacity: usize) -> Dynamic {
        Dynamic {
            entries: VecDeque::new(),
            spare: Vec::new(),
            size: 0,
            capacity,
        }
    }

    /// The entry at `i` (0: the newest) as (name, value).
    pub(super) fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        self.entries.get(i).map(|e| e.bytes.split_at(e.name_len))
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries' size (section 4.1).
    pub(super) fn size(&self) -> usize {
        self.size
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Sets the capacity, evicting what no longer fits.
    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.evict_to(capacity);
    }

    /// An empty buffer for an entry's name and value (a kept one when there is one).
    pub(super) fn buffer(&mut self) -> Vec<u8> {
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes
    }

    /// Adds an entry (`bytes`: its name, `name_len` long, then its value), evicting old ones
    /// to make room; one larger than the capacity empties the table and is not added.
    pub(super) fn push(&mut self, bytes: Vec<u8>, name_len: usize) {
        let size = bytes.len() + ENTRY_OVERHEAD;
        if size > self.capacity {
            self.evict_to(0);
            self.spare.push(bytes);
            return;
        }
        self.evict_to(self.capacity - size);
        self.size += size;
        self.entries.push_front(Entry { bytes, name_len });
    }

    fn evict_to(&mut self, room: usize) {
        while self.size > room {
            let Some(old) = self.entries.pop_back() else {
                break;
            };
            self.size -= old.bytes.len() + ENTRY_OVERHEAD;
            self.spare.push(old.bytes);
        }
    }
}

/// The encoder's dynamic table: entries in the order inserted, never evicted, names and values
/// in one buffer.
#[derive(Default)]
pub(super) struct Inserted {
    bytes: Vec<u8>,
    /// Each entry's name start, name end (its value's start) and value end in `bytes`.
    entries: Vec<(usize, usize, usize)>,
    size: usize,
}

impl Inserted {
    /// The entries' size (section 4.1).
    pub(super) fn size(&self) -> usize {
        self.size
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
        self.size = 0;
    }

    pub(super) fn push(&mut self, name: &[u8], value: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries
            .push((start, start + name.len(), self.bytes.len()));
        self.size += name.len() + value.len() + ENTRY_OVERHEAD;
    }

    /// A field's indices in the dynamic table (numbered from [`DYNAMIC_START`], newest first):
    /// of the entry equal to it, and of the newest entry with its name.
    pub(super) fn find(&self, name: &[u8], value: &[u8]) -> (Option<usize>, Option<usize>) {
        let mut name_index = None;
        for (age, &(start, mid, end)) in self.entries.iter().rev().enumerate() {
            if &self.bytes[start..mid] == name {
                let index = DYNAMIC_START + age;
                if &self.bytes[mid..end] == value {
                    return (Some(index), Some(index));
                }
                name_index.get_or_insert(index);
            }
        }
        (None, name_index)
    }
}
