//! The embedded target's key-value store, behind `/kv/{key}`: `PUT` stores the request body
//! (201 Created for a new key, 204 No Content for a replaced one), `GET` answers the value (200)
//! or 404, `HEAD` the same without the body, `DELETE` removes it (204, or 404). A concurrent
//! in-memory map: 64 shards, each a `RwLock`ed `HashMap`, chosen by a hash of the key, so
//! that writers on different keys rarely wait for each other. One store per embedded target;
//! `--kv-preload N --value-size S` fills keys `1..=N` with `S`-byte values before serving.

use bytes::Bytes;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::RwLock;

/// Longest key accepted, in bytes.
pub const MAX_KEY_BYTES: usize = 1024;
/// Shards of the map.
const SHARDS: usize = 64;

/// What a store operation answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KvAnswer {
    /// A new key was stored.
    Created,
    /// An existing key's value was replaced.
    Replaced,
    /// The value of a key.
    Found(Bytes),
    /// The key's value length (`HEAD`).
    Exists(usize),
    /// A key was removed.
    Deleted,
    /// The key is not stored.
    NotFound,
}

/// The store.
pub struct Kv {
    shards: Vec<RwLock<HashMap<Box<[u8]>, Bytes>>>,
    hasher: std::collections::hash_map::RandomState,
}

impl Default for Kv {
    fn default() -> Self {
        Kv {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            hasher: std::collections::hash_map::RandomState::new(),
        }
    }
}

impl Kv {
    /// A store filled with keys `1..=count` (their decimal text), each a `value_bytes` value.
    pub fn preloaded(count: u64, value_bytes: usize) -> Self {
        let kv = Kv::default();
        let value = Bytes::from(super::compress::text(value_bytes));
        for k in 1..=count {
            kv.put(k.to_string().as_bytes(), value.clone());
        }
        kv
    }

    fn shard(&self, key: &[u8]) -> &RwLock<HashMap<Box<[u8]>, Bytes>> {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    /// Stores `value` under `key`.
    pub fn put(&self, key: &[u8], value: Bytes) -> KvAnswer {
        let mut map = self.shard(key).write().unwrap_or_else(|e| e.into_inner());
        match map.insert(key.into(), value) {
            None => KvAnswer::Created,
            Some(_) => KvAnswer::Replaced,
        }
    }

    /// The value of `key` (a cheap reference-counted copy).
    pub fn get(&self, key: &[u8]) -> KvAnswer {
        let map = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
        match map.get(key) {
            Some(v) => KvAnswer::Found(v.clone()),
            None => KvAnswer::NotFound,
        }
    }

    /// Whether `key` exists, and its value's length.
    pub fn head(&self, key: &[u8]) -> KvAnswer {
        let map = self.shard(key).read().unwrap_or_else(|e| e.into_inner());
        match map.get(key) {
            Some(v) => KvAnswer::Exists(v.len()),
            None => KvAnswer::NotFound,
        }
    }

    /// Removes `key`.
    pub fn delete(&self, key: &[u8]) -> KvAnswer {
        let mut map = self.shard(key).write().unwrap_or_else(|e| e.into_inner());
        match map.remove(key) {
            Some(_) => KvAnswer::Deleted,
            None => KvAnswer::NotFound,
        }
    }

    /// Keys stored.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read().unwrap_or_else(|e| e.into_inner()).len())
            .sum()
    }

    /// Whether no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_head_delete() {
        let kv = Kv::default();
        let v = Bytes::from_static(b"value");
        // (operation, answer): each row runs after the one above.
        let rows: Vec<(Box<dyn Fn() -> KvAnswer>, KvAnswer)> = vec![
            (Box::new(|| kv.get(b"a")), KvAnswer::NotFound), // never put
            (Box::new(|| kv.put(b"a", v.clone())), KvAnswer::Created),
            (Box::new(|| kv.put(b"a", v.clone())), KvAnswer::Replaced),
            (Box::new(|| kv.get(b"a")), KvAnswer::Found(v.clone())),
            (Box::new(|| kv.head(b"a")), KvAnswer::Exists(5)),
            (Box::new(|| kv.delete(b"a")), KvAnswer::Deleted),
            (Box::new(|| kv.delete(b"a")), KvAnswer::NotFound), // already gone
            (Box::new(|| kv.head(b"a")), KvAnswer::NotFound),
        ];
        for (i, (op, want)) in rows.iter().enumerate() {
            assert_eq!(op(), *want, "row {i}");
        }
    }

    #[test]
    fn preload_fills_keys_one_to_n() {
        let kv = Kv::preloaded(1000, 32);
        assert_eq!(kv.len(), 1000);
        assert_eq!(kv.head(b"1"), KvAnswer::Exists(32));
        assert_eq!(kv.head(b"1000"), KvAnswer::Exists(32));
        assert_eq!(kv.head(b"0"), KvAnswer::NotFound);
        assert_eq!(kv.head(b"1001"), KvAnswer::NotFound);
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let kv = std::sync::Arc::new(Kv::default());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let kv = kv.clone();
                std::thread::spawn(move || {
                    for i in 0..5000 {
                        kv.put(format!("{t}-{i}").as_bytes(), Bytes::from_static(b"x"));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(kv.len(), 20_000);
    }
}
