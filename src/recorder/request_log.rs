//! The per-request log (`--log-requests FILE`): one CSV row per recorded request, streamed to
//! disk as the run goes and never held in memory. Each worker formats its rows into a buffer
//! of its own (no lock, no allocation once the buffers exist); a full buffer goes to the
//! log's writer thread over a bounded queue and an empty one comes back. A worker never waits
//! for the disk: when the queue is full, the buffer's rows are dropped and counted. When a
//! write fails (a full disk), the writer cuts the file at its last whole buffer but one (so
//! the note fits), writes a line saying where and why, and drops the rest; the run goes on and
//! its record says so.
//!
//! CSV with a header, because every data tool reads it directly (Python's `csv`, pandas,
//! DuckDB, SQLite's `.import`, a spreadsheet) and it streams: Parquet needs a row group in
//! memory and a footer written at the end (lost on a crash), SQLite a lock per insert batch
//! and a dependency of ~2 MB.

use super::Durations;
use crate::model::{Phase, Sample};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A worker's buffer is handed over at this size.
const BUFFER: usize = 64 * 1024;
/// Full buffers that may wait for the writer, per worker thread.
const QUEUED_PER_WORKER: usize = 8;

/// The columns, in order: the header line.
pub fn header() -> String {
    header_with(&[])
}

/// The columns with the server's probed phases `probed` after the others
/// (`--server-probes`: `server_NAME_ns` each).
pub fn header_with(probed: &[String]) -> String {
    let mut h = String::from("due_ns,start_ns");
    for p in Phase::ALL {
        h.push(',');
        h.push_str(p.name());
        h.push_str("_ns");
    }
    h.push_str(",status,error,bytes_read,bytes_written,connection,trace_id,span_id,sampled,request,interval");
    // Where the request's bytes lay on its TCP connection (`model::Wire`).
    h.push_str(",port,tx_end,rx_first,rx_end");
    for name in probed {
        h.push_str(",server_");
        h.push_str(name);
        h.push_str("_ns");
    }
    h.push('\n');
    h
}

/// What the log became.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOutcome {
    /// Rows written to the file.
    pub rows: u64,
    /// Rows dropped: the writer fell behind (the disk was slower than the run), or the file
    /// was cut.
    pub dropped: u64,
    /// Why and where the file was cut, when a write failed.
    pub cut: Option<String>,
}

/// Shared by the workers and the writer.
struct Shared {
    spares: Mutex<Vec<Vec<u8>>>,
    dropped: AtomicU64,
}

/// The log's writer thread and what the workers need to reach it.
pub struct RequestLog {
    tx: SyncSender<(Vec<u8>, u64)>,
    shared: Arc<Shared>,
    handle: std::thread::JoinHandle<LogOutcome>,
    every: u64,
    names: Arc<[String]>,
}

impl RequestLog {
    /// Starts the writer of `file` (its header written first) for `workers` threads, logging
    /// one request of every `every` per worker; `names`: the workload's request names.
    pub fn start(
        file: Arc<File>,
        every: u64,
        workers: usize,
        names: Arc<[String]>,
        probed: &[String],
    ) -> std::io::Result<RequestLog> {
        // A sweep's levels (a knee's steps, repetitions) follow one another in one file, under
        // one header, each timed from its own start.
        let start = match file.metadata()?.len() {
            0 => {
                let header = header_with(probed);
                (&*file).write_all(header.as_bytes())?;
                header.len() as u64
            }
            len => len,
        };
        let (tx, rx) = mpsc::sync_channel(QUEUED_PER_WORKER * workers.max(1));
        let shared = Arc::new(Shared {
            spares: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        });
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("reqlife-log".into())
            .spawn(move || write_all(&file, start, rx, &s))?;
        Ok(RequestLog {
            tx,
            shared,
            handle,
            every: every.max(1),
            names,
        })
    }

    /// A worker's end.
    pub fn worker(&self) -> LogWorker {
        LogWorker {
            tx: self.tx.clone(),
            shared: self.shared.clone(),
            buf: Vec::with_capacity(BUFFER + 1024),
            rows: 0,
            every: self.every,
            countdown: 1,
            names: self.names.clone(),
        }
    }

    /// Waits for the writer (every worker's end must be dropped first) and says what the log
    /// became.
    pub fn finish(self) -> LogOutcome {
        drop(self.tx);
        let mut out = self.handle.join().unwrap_or_else(|_| LogOutcome {
            cut: Some("the log's writer failed".into()),
            ..LogOutcome::default()
        });
        out.dropped += self.shared.dropped.load(Ordering::Relaxed);
        out
    }
}

/// The writer: each buffer appended in turn; at the first failure, the cut.
fn write_all(file: &File, start: u64, rx: Receiver<(Vec<u8>, u64)>, shared: &Shared) -> LogOutcome {
    let mut out = LogOutcome::default();
    // (the file's length, its rows) before the last whole buffer, and now.
    let (mut before, mut now) = ((start, 0u64), (start, 0u64));
    for (mut buf, rows) in rx.iter() {
        if out.cut.is_none() {
            match (&*file).write_all(&buf) {
                Ok(()) => {
                    before = now;
                    now = (now.0 + buf.len() as u64, now.1 + rows);
                }
                Err(e) => {
                    out.cut = Some(cut(file, before, &e));
                    out.dropped += now.1 - before.1;
                    now = before;
                }
            }
        }
        if out.cut.is_some() {
            out.dropped += rows;
        }
        buf.clear();
        if let Ok(mut spares) = shared.spares.lock() {
            spares.push(buf);
        }
    }
    out.rows = now.1;
    out
}

/// Cuts the file at `at` (length, rows) after a write failed with `e`, and says so in it; the
/// words for the record.
fn cut(mut file: &File, at: (u64, u64), e: &std::io::Error) -> String {
    let why = format!(
        "cut after {} rows at byte {}: a write failed ({e})",
        at.1, at.0
    );
    let _ = file.set_len(at.0);
    let _ = file.seek(SeekFrom::Start(at.0));
    let _ = file.write_all(format!("# reqlife: the log was {why}; the run went on\n").as_bytes());
    why
}

/// One row's fields: a sample's, or a request the joiner had (with its server phases).
struct Row<'a> {
    due_ns: u64,
    start_ns: u64,
    d: &'a Durations,
    status: Option<u16>,
    error: Option<crate::model::ErrorKind>,
    bytes_read: u64,
    bytes_written: u64,
    connection: u32,
    trace: Option<crate::model::trace::TraceId>,
    request: u16,
    interval: u64,
    wire: crate::model::Wire,
    probed: &'a [Option<u64>],
}

/// A worker's end of the log: rows formatted into its buffer.
pub struct LogWorker {
    tx: SyncSender<(Vec<u8>, u64)>,
    shared: Arc<Shared>,
    buf: Vec<u8>,
    rows: u64,
    every: u64,
    countdown: u64,
    names: Arc<[String]>,
}

/// Appends `n` in decimal.
#[inline]
fn put_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `v` as a CSV field (quoted when it holds a comma, a quote or a line break).
fn put_field(out: &mut Vec<u8>, v: &str) {
    if v.contains([',', '"', '\n', '\r']) {
        out.push(b'"');
        out.extend_from_slice(v.replace('"', "\"\"").as_bytes());
        out.push(b'"');
    } else {
        out.extend_from_slice(v.as_bytes());
    }
}

impl LogWorker {
    /// Logs request `s` (phases `d`, in interval `interval`) when its turn comes.
    #[inline]
    pub fn row(&mut self, s: &Sample, d: &Durations, interval: u64, from: Instant) {
        self.countdown -= 1;
        if self.countdown > 0 {
            return;
        }
        self.countdown = self.every;
        self.write_row(s, d, interval, from);
        self.rows += 1;
        if self.buf.len() >= BUFFER {
            self.hand_over();
        }
    }

    fn write_row(&mut self, s: &Sample, d: &Durations, interval: u64, from: Instant) {
        let since = |t: Instant| t.saturating_duration_since(from).as_nanos() as u64;
        self.put_row(&Row {
            due_ns: since(s.stamps.intended),
            start_ns: since(s.stamps.dispatched),
            d,
            status: s.status,
            error: s.error,
            bytes_read: s.bytes_read,
            bytes_written: s.bytes_written,
            connection: s.connection,
            trace: s.trace,
            request: s.request,
            interval,
            wire: s.wire,
            probed: &[],
        });
    }

    /// Where the log's turn stands: the requests to come before the next logged one (1: the
    /// next is), and one in how many is logged.
    pub fn turn(&self) -> (u64, u64) {
        (self.countdown, self.every)
    }

    /// Logs request `t` (the joiner's, its server phases `probed`) when its turn comes.
    pub fn trail_row(&mut self, t: &super::join::Trail, probed: &[Option<u64>]) {
        self.countdown -= 1;
        if self.countdown > 0 {
            return;
        }
        self.countdown = self.every;
        let e = &t.kept;
        self.put_row(&Row {
            due_ns: e.due_ns,
            start_ns: t.start_ns,
            d: &e.phases,
            status: e.status,
            error: e.error,
            bytes_read: t.bytes_read,
            bytes_written: t.bytes_written,
            connection: e.connection,
            trace: e.trace,
            request: e.request,
            interval: t.interval,
            wire: t.wire,
            probed,
        });
        self.rows += 1;
        if self.buf.len() >= BUFFER {
            self.hand_over();
        }
    }

    fn put_row(&mut self, r: &Row) {
        let b = &mut self.buf;
        put_u64(b, r.due_ns);
        b.push(b',');
        put_u64(b, r.start_ns);
        for ns in r.d {
            b.push(b',');
            if let Some(ns) = ns {
                put_u64(b, *ns);
            }
        }
        b.push(b',');
        if let Some(code) = r.status {
            put_u64(b, code as u64);
        }
        b.push(b',');
        if let Some(e) = r.error {
            b.extend_from_slice(e.name().as_bytes());
        }
        b.push(b',');
        put_u64(b, r.bytes_read);
        b.push(b',');
        put_u64(b, r.bytes_written);
        b.push(b',');
        put_u64(b, r.connection as u64);
        b.push(b',');
        if let Some(t) = r.trace {
            let tp = t.traceparent();
            b.extend_from_slice(&tp[3..35]);
            b.push(b',');
            b.extend_from_slice(&tp[36..52]);
            b.push(b',');
            b.push(if t.sampled { b'1' } else { b'0' });
        } else {
            b.extend_from_slice(b",,");
        }
        b.push(b',');
        if let Some(name) = self.names.get(r.request as usize) {
            put_field(b, name);
        }
        b.push(b',');
        put_u64(b, r.interval);
        let w = &r.wire;
        if w.is_known() {
            for n in [u64::from(w.port), w.tx_end, w.rx_first, w.rx_end] {
                b.push(b',');
                put_u64(b, n);
            }
        } else {
            b.extend_from_slice(b",,,,");
        }
        for ns in r.probed {
            b.push(b',');
            if let Some(ns) = ns {
                put_u64(b, *ns);
            }
        }
        b.push(b'\n');
    }

    /// Gives the full buffer to the writer and takes an empty one; when the writer is behind,
    /// the buffer's rows are dropped (counted) instead of waiting.
    fn hand_over(&mut self) {
        let spare = self
            .shared
            .spares
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_else(|| Vec::with_capacity(BUFFER + 1024));
        let full = std::mem::replace(&mut self.buf, spare);
        let rows = std::mem::take(&mut self.rows);
        match self.tx.try_send((full, rows)) {
            Ok(()) => {}
            Err(TrySendError::Full((mut full, rows))) => {
                self.shared.dropped.fetch_add(rows, Ordering::Relaxed);
                full.clear();
                self.buf = full;
            }
            Err(TrySendError::Disconnected(_)) => {
                self.shared.dropped.fetch_add(rows, Ordering::Relaxed);
            }
        }
    }
}

impl Drop for LogWorker {
    /// The last rows go to the writer (waiting for room: the run is over).
    fn drop(&mut self) {
        if self.rows > 0 {
            let full = std::mem::take(&mut self.buf);
            let _ = self.tx.send((full, self.rows));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamps;
    use std::io::Read;
    use std::time::Duration;

    fn sample(base: Instant, us: u64) -> (Sample, Durations) {
        let mut stamps = Timestamps::new(base, base);
        stamps.written = Some(base);
        stamps.first_byte = Some(base + Duration::from_micros(us));
        stamps.done = stamps.first_byte;
        let s = Sample {
            stamps,
            status: Some(200),
            error: None,
            bytes_read: 10,
            bytes_written: 20,
            traffic: Default::default(),
            server_closed: false,
            request: 0,
            connection: 3,
            trace: None,
            wire: Default::default(),
        };
        let d = super::super::durations(&s);
        (s, d)
    }

    #[test]
    fn rows_stream_to_the_file_one_per_request_with_the_header_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        let file = Arc::new(File::create(&path).unwrap());
        let names: Arc<[String]> = vec!["get, one".to_string()].into();
        let log = RequestLog::start(file, 2, 1, names, &[]).unwrap();
        let base = Instant::now();
        {
            let mut w = log.worker();
            for i in 0..50_000u64 {
                let (s, d) = sample(base, 100 + i % 7);
                w.row(&s, &d, i / 10_000, base);
            }
        }
        let out = log.finish();
        // Each kept row written, or counted as dropped where the writer fell behind (a busy
        // machine's writer thread can: 6,640 of 25,000 once, with the other core loaded).
        assert_eq!(out.rows + out.dropped, 25_000, "{out:?}");
        assert!(out.rows >= BUFFER as u64 / 200, "{out:?}");
        assert_eq!(out.cut, None);
        let mut text = String::new();
        File::open(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len() as u64, out.rows + 1);
        assert_eq!(format!("{}\n", lines[0]), header());
        let columns = lines[0].split(',').count();
        // The name with a comma is quoted: one more comma than columns; no connection known,
        // no offsets.
        assert!(lines[1].ends_with(",\"get, one\",0,,,,"), "{}", lines[1]);
        assert_eq!(lines[1].split(',').count(), columns + 1);
    }

    #[test]
    fn a_request_s_place_on_its_connection_ends_the_row() {
        assert!(header().ends_with(",interval,port,tx_end,rx_first,rx_end\n"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.csv");
        let log = RequestLog::start(Arc::new(File::create(&path).unwrap()), 1, 1, [].into(), &[]);
        let log = log.unwrap();
        let base = Instant::now();
        {
            let mut w = log.worker();
            let (s, d) = sample(base, 100);
            let wire = crate::model::Wire {
                port: 40123,
                exact: true,
                tx_end: 178,
                rx_first: 0,
                rx_end: 9_000_000_000,
            };
            w.row(&crate::model::Sample { wire, ..s }, &d, 0, base);
        }
        log.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        let row = text.lines().nth(1).unwrap();
        assert!(row.ends_with(",0,40123,178,0,9000000000"), "{row}");
    }

    #[test]
    fn a_failed_write_cuts_the_log_and_says_where() {
        // /dev/full refuses every write with ENOSPC once the header is in.
        let Ok(file) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
            return;
        };
        let (tx, rx) = mpsc::sync_channel(8);
        let shared = Shared {
            spares: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        };
        tx.send((b"1,2\n".to_vec(), 1)).unwrap();
        tx.send((b"3,4\n".to_vec(), 1)).unwrap();
        drop(tx);
        let out = write_all(&file, 0, rx, &shared);
        assert_eq!(out.rows, 0);
        assert_eq!(out.dropped, 2);
        assert!(out.cut.unwrap().contains("cut after 0 rows"));
    }
}
