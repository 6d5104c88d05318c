//! Where a long run's interval histograms wait on disk: an unnamed temporary file (created in
//! the temporary folder and unlinked at once, so nothing is left behind, even after a crash)
//! that compressed histograms are appended to and read back from by offset. The series keeps
//! in memory only what locates them, so its memory does not grow with the run.

use crate::model::Phase;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// An interval's compressed histograms: per phase, and per `Server-Timing` metric.
pub type Blobs = (Vec<(Phase, Vec<u8>)>, Vec<(String, Vec<u8>)>);

/// The spill file, shared by the copies of a series.
#[derive(Debug)]
pub struct SpillFile {
    file: File,
    /// Bytes written so far (where the next blob goes).
    len: Mutex<u64>,
}

impl SpillFile {
    /// A new unnamed temporary file; `None` if the temporary folder refuses one.
    pub fn create() -> Option<SpillFile> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "reqlife-series-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .ok()?;
        let _ = std::fs::remove_file(&path);
        Some(SpillFile {
            file,
            len: Mutex::new(0),
        })
    }

    /// Appends `blobs`; where they are (offset, length), or `None` if writing failed.
    pub fn write(&self, blobs: &Blobs) -> Option<(u64, u32)> {
        let bytes = encode(blobs);
        let len = u32::try_from(bytes.len()).ok()?;
        let mut end = self.len.lock().ok()?;
        self.file.write_all_at(&bytes, *end).ok()?;
        let at = *end;
        *end += u64::from(len);
        Some((at, len))
    }

    /// The blobs written at `at`; `None` if they cannot be read back.
    pub fn read(&self, (at, len): (u64, u32)) -> Option<Blobs> {
        let mut bytes = vec![0u8; len as usize];
        self.file.read_exact_at(&mut bytes, at).ok()?;
        decode(&bytes)
    }
}

/// `[count u32] ([phase u8] [len u32] bytes)*  [count u32] ([len u32] name [len u32] bytes)*`,
/// little-endian.
fn encode((hists, server): &Blobs) -> Vec<u8> {
    let mut out = Vec::new();
    let put = |out: &mut Vec<u8>, b: &[u8]| {
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(b);
    };
    out.extend_from_slice(&(hists.len() as u32).to_le_bytes());
    for (phase, b) in hists {
        out.push(phase.index() as u8);
        put(&mut out, b);
    }
    out.extend_from_slice(&(server.len() as u32).to_le_bytes());
    for (name, b) in server {
        put(&mut out, name.as_bytes());
        put(&mut out, b);
    }
    out
}

/// Reads what [`encode`] wrote; `None` on anything malformed.
fn decode(mut bytes: &[u8]) -> Option<Blobs> {
    fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = bytes.split_at_checked(n)?;
        *bytes = rest;
        Some(head)
    }
    fn count(bytes: &mut &[u8]) -> Option<usize> {
        let b = take(bytes, 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    fn blob(bytes: &mut &[u8]) -> Option<Vec<u8>> {
        let n = count(bytes)?;
        Some(take(bytes, n)?.to_vec())
    }
    let mut hists = Vec::new();
    for _ in 0..count(&mut bytes)? {
        let phase = *Phase::ALL.get(*take(&mut bytes, 1)?.first()? as usize)?;
        hists.push((phase, blob(&mut bytes)?));
    }
    let mut server = Vec::new();
    for _ in 0..count(&mut bytes)? {
        let name = String::from_utf8(blob(&mut bytes)?).ok()?;
        server.push((name, blob(&mut bytes)?));
    }
    Some((hists, server))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_come_back_as_written() {
        let f = SpillFile::create().unwrap();
        let a: Blobs = (
            vec![(Phase::Total, vec![1, 2, 3]), (Phase::Wait, vec![])],
            vec![("db".into(), vec![9; 10])],
        );
        let b: Blobs = (vec![(Phase::Lag, vec![7; 300])], vec![]);
        let at_a = f.write(&a).unwrap();
        let at_b = f.write(&b).unwrap();
        assert_eq!(f.read(at_b), Some(b));
        assert_eq!(f.read(at_a), Some(a));
        // Malformed or out of the file: nothing, no panic.
        assert_eq!(decode(&[5, 0, 0, 0, 200]), None);
        assert_eq!(f.read((1 << 40, 10)), None);
    }
}
