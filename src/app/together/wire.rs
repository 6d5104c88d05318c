//! The line protocol between the segments of one plan and their coordinator (segment 1),
//! over one TCP connection each, held for the whole run: lines of text, each at most
//! [`MOST_LINE`] bytes, and a record as a length-prefixed body of at most [`MOST_RECORD`].
//!
//! ```text
//! segment → coordinator              coordinator → segment
//! HELLO reqlife/1 K N                WELCOME | REFUSED <why>
//! PING <t1>                          PONG <t1> <t2> <t3>          (clocks: Unix ns)
//! READY                              START <unix ns> | ABORT <why>
//! RECORD <bytes>\n<the record JSON>  DONE <exit code>
//! ```
//!
//! A connection that closes (its generator gone) is its segment lost: the coordinator names it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest line either side reads.
pub const MOST_LINE: usize = 1024;

/// The largest record a segment may send (its samples and slow requests included).
pub const MOST_RECORD: usize = 512 << 20;

/// The protocol's name and version, in `HELLO`.
pub const VERSION: &str = "reqlife/1";

/// One side of a connection: buffered reads, bounded lines.
pub struct Wire {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Wire {
    /// The connection `stream`, each read waiting at most `timeout` (`None`: for ever).
    pub fn new(stream: TcpStream, timeout: Option<Duration>) -> std::io::Result<Wire> {
        stream.set_read_timeout(timeout)?;
        stream.set_write_timeout(Some(Duration::from_secs(10)))?;
        stream.set_nodelay(true)?;
        Ok(Wire {
            reader: BufReader::new(stream.try_clone()?),
            writer: stream,
        })
    }

    /// Changes how long each read waits (`None`: for ever).
    pub fn timeout(&self, timeout: Option<Duration>) -> std::io::Result<()> {
        self.writer.set_read_timeout(timeout)
    }

    /// Sends one line (its newline added).
    pub fn send(&mut self, line: &str) -> std::io::Result<()> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.writer.write_all(&bytes)
    }

    /// Sends `RECORD <len>` and the record's bytes.
    pub fn send_record(&mut self, json: &str) -> std::io::Result<()> {
        self.send(&format!("RECORD {}", json.len()))?;
        self.writer.write_all(json.as_bytes())
    }

    /// The next line, without its newline: an error at the end of the stream, past a read's
    /// timeout, or for a line longer than [`MOST_LINE`] or not UTF-8.
    pub fn line(&mut self) -> std::io::Result<String> {
        let mut bytes = Vec::new();
        let read = (&mut self.reader)
            .take(MOST_LINE as u64 + 1)
            .read_until(b'\n', &mut bytes)?;
        if read == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if bytes.last() != Some(&b'\n') {
            return Err(invalid(format!("a line longer than {MOST_LINE} bytes")));
        }
        bytes.pop();
        String::from_utf8(bytes).map_err(|_| invalid("a line that is not UTF-8".into()))
    }

    /// The body of a `RECORD <len>` line already read: `len` bytes, at most [`MOST_RECORD`].
    pub fn record_body(&mut self, len: &str) -> std::io::Result<String> {
        let len: usize = len
            .parse()
            .map_err(|_| invalid(format!("RECORD with a length '{len}'")))?;
        if len > MOST_RECORD {
            return Err(invalid(format!(
                "a record of {len} bytes, over the {MOST_RECORD} taken"
            )));
        }
        let mut body = vec![0; len];
        self.reader.read_exact(&mut body)?;
        String::from_utf8(body).map_err(|_| invalid("a record that is not UTF-8".into()))
    }
}

/// An error of the protocol, said in words.
pub fn invalid(what: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what)
}

/// The wall clock now, in ns since the Unix epoch.
pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// The wall-clock time `ns` since the Unix epoch.
pub fn time_of(ns: i128) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(ns.max(0) as u64)
}

/// The words of `line` after `word` (`None` if it is another message).
pub fn after<'a>(line: &'a str, word: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(word)?;
    match rest.strip_prefix(' ') {
        Some(r) => Some(r),
        None if rest.is_empty() => Some(""),
        None => None,
    }
}

/// One clock exchange, in ns of each clock: t1 the segment's send, t2 and t3 the
/// coordinator's receipt and reply, t4 the segment's receipt. The offset is the coordinator's
/// clock minus the segment's (as NTP has it), the delay the round trip less the
/// coordinator's own time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exchange {
    pub t1: i128,
    pub t2: i128,
    pub t3: i128,
    pub t4: i128,
}

impl Exchange {
    /// The coordinator's clock minus the segment's, ns.
    pub fn offset(&self) -> i128 {
        ((self.t2 - self.t1) + (self.t3 - self.t4)) / 2
    }

    /// The round trip, less the coordinator's time between receipt and reply, ns.
    pub fn delay(&self) -> i128 {
        (self.t4 - self.t1) - (self.t3 - self.t2)
    }
}

/// The offset of the exchange with the least delay (its error is within half its delay),
/// and that delay: `None` without exchanges.
pub fn best(exchanges: &[Exchange]) -> Option<(i128, i128)> {
    exchanges
        .iter()
        .min_by_key(|e| e.delay())
        .map(|e| (e.offset(), e.delay()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_ntps_and_the_least_delayed_exchange_wins() {
        // The coordinator 5 ms ahead, 100 µs each way, 20 µs to answer.
        let e = |there: i128, back: i128| Exchange {
            t1: 0,
            t2: there + 5_000_000,
            t3: there + 20_000 + 5_000_000,
            t4: there + 20_000 + back,
        };
        let even = e(100_000, 100_000);
        assert_eq!(even.offset(), 5_000_000);
        assert_eq!(even.delay(), 200_000);
        // A slow way back errs by half of what it adds, and loses to the even one.
        let slow = e(100_000, 900_000);
        assert_eq!(slow.offset(), 5_000_000 - 400_000);
        assert_eq!(best(&[slow, even]), Some((5_000_000, 200_000)));
        assert_eq!(best(&[]), None);
    }

    #[test]
    fn a_message_is_its_word_and_the_rest() {
        assert_eq!(after("START 12", "START"), Some("12"));
        assert_eq!(after("READY", "READY"), Some(""));
        assert_eq!(after("READYX", "READY"), None);
        assert_eq!(after("DONE 0", "START"), None);
    }

    #[test]
    fn lines_and_records_are_bounded() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let writer = std::thread::spawn(move || {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"HELLO reqlife/1 2 3\n").unwrap();
            s.write_all(&vec![b'x'; MOST_LINE + 10]).unwrap();
            s.write_all(b"\n").unwrap();
        });
        let (stream, _) = listener.accept().unwrap();
        let mut w = Wire::new(stream, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(w.line().unwrap(), "HELLO reqlife/1 2 3");
        let long = w.line().unwrap_err();
        assert!(long.to_string().contains("longer than 1024"), "{long}");
        let big = w.record_body(&(MOST_RECORD + 1).to_string()).unwrap_err();
        assert!(big.to_string().contains("over the"), "{big}");
        assert!(w.record_body("ten").is_err());
        writer.join().unwrap();
    }
}
