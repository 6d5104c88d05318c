//! The head of an HTTP/1.x request read from a socket by the small servers of the tool's own
//! (the metrics endpoint, the probes' agent): up to the blank line, at most 4 KiB.

use std::io::Read;

/// The request's head, as text (lossy), read up to its blank line, the end of the input or
/// 4 KiB, whichever comes first.
pub fn read(socket: &mut impl Read) -> std::io::Result<String> {
    let mut buf = [0u8; 4096];
    let mut len = 0;
    while !buf[..len].windows(4).any(|w| w == b"\r\n\r\n") && len < buf.len() {
        let n = socket.read(&mut buf[len..])?;
        if n == 0 {
            break;
        }
        len += n;
    }
    Ok(String::from_utf8_lossy(&buf[..len]).into_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_head_is_read_to_its_blank_line_or_the_end() {
        let mut s: &[u8] = b"GET /clock HTTP/1.1\r\nHost: x\r\n\r\n";
        assert!(super::read(&mut s).unwrap().starts_with("GET /clock "));
        let mut cut: &[u8] = b"GET /x";
        assert_eq!(super::read(&mut cut).unwrap(), "GET /x");
    }
}
