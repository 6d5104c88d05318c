//! The known-truth server of tests/probes.rs in Rust (built by the test with rustc): one
//! connection at a time, keep-alive; each request passes `work::parse` (50 µs), `work::handle`
//! (200 µs), `work::respond` (50 µs), each a busy wait, and `work::finish`. Prints its port.

use std::io::{Read, Write};
use std::net::TcpListener;

mod work {
    use std::time::{Duration, Instant};

    fn spin(us: u64) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_micros(us) {}
    }

    #[inline(never)]
    pub fn parse() {
        spin(50)
    }

    #[inline(never)]
    pub fn handle() {
        spin(200)
    }

    #[inline(never)]
    pub fn respond() {
        // Not the same body as parse's: the compiler would fold the two into one symbol.
        spin(50);
        std::hint::black_box(3u8);
    }

    #[inline(never)]
    pub fn finish() {
        std::hint::black_box(());
    }
}

fn main() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    println!("{}", l.local_addr().unwrap().port());
    for c in l.incoming() {
        let Ok(mut c) = c else { continue };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = match c.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            buf.extend_from_slice(&chunk[..n]);
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                work::parse();
                work::handle();
                work::respond();
                work::finish();
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                buf.drain(..end + 4);
            }
        }
    }
}
