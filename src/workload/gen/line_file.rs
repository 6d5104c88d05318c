//! The [`LineFile`] behind `{line:FILE}`: a data file's lines, read once into one buffer and
//! the offsets of their ends, and the line of a sequence number (cycling).

use std::path::{Path, PathBuf};

/// The lines of a data file for `{line:FILE}`, read once: blank lines are skipped and a
/// trailing `\r` is dropped. Stored as one buffer and the offsets of the lines (8 bytes a
/// line), so a file of 10⁷ keys costs its size plus 80 MB, not 10⁷ strings.
#[derive(Debug)]
pub struct LineFile {
    /// The path as written in the template (shown when the template is printed).
    pub(crate) written: String,
    data: Vec<u8>,
    /// Line i is `data[ends[i-1]..ends[i]]` (from 0 for the first).
    ends: Vec<usize>,
}

impl PartialEq for LineFile {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written && self.ends == other.ends && self.data == other.data
    }
}

impl LineFile {
    /// Reads `path` (shown as `written` in messages and when printed). An unreadable file or one
    /// with no line is an error naming the path.
    pub fn read(path: &Path, written: &str) -> Result<LineFile, String> {
        let raw = std::fs::read(path).map_err(|e| {
            format!(
                "cannot read data file '{}': {}",
                path.display(),
                crate::model::io_reason(&e)
            )
        })?;
        let file = LineFile::from_bytes(written, &raw);
        if file.is_empty() {
            return Err(format!(
                "data file '{}' has no line: {{line:FILE}} needs at least one non-blank line",
                path.display()
            ));
        }
        Ok(file)
    }

    /// The lines of `raw` (blank lines skipped, `\r\n` endings accepted).
    pub fn from_bytes(written: &str, raw: &[u8]) -> LineFile {
        let mut data = Vec::with_capacity(raw.len());
        let mut ends = Vec::new();
        for line in raw.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            data.extend_from_slice(line);
            ends.push(data.len());
        }
        data.shrink_to_fit();
        LineFile {
            written: written.to_string(),
            data,
            ends,
        }
    }

    /// The number of lines.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there is no line.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Line `i` (0-based, `i < len`).
    pub fn line(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.data[start..self.ends[i]]
    }

    /// Line `seq mod len`: the line of sequence number `seq`, cycling.
    pub fn line_of(&self, seq: u64) -> &[u8] {
        self.line((seq % self.ends.len() as u64) as usize)
    }

    /// The path as written in the template.
    pub fn written(&self) -> &str {
        &self.written
    }

    /// Resolves the path of `{line:PATH}`: absolute paths as they are, relative ones from
    /// `base_dir`.
    pub fn resolve(base_dir: &Path, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base_dir.join(p)
        }
    }
}
