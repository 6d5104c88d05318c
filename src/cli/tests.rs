//! Unit tests of `cli`.

use super::*;

#[test]
fn addresses_and_bare_ports() {
    let a = |s: &str| addr_arg(s).map(|a| a.to_string());
    assert_eq!(a("8080"), Ok("127.0.0.1:8080".into()));
    assert_eq!(a(" 0 "), Ok("127.0.0.1:0".into()));
    assert_eq!(a("0.0.0.0:9000"), Ok("0.0.0.0:9000".into()));
    assert_eq!(a("[::1]:8080"), Ok("[::1]:8080".into()));
    for bad in ["localhost", "70000", "127.0.0.1", ""] {
        let e = addr_arg(bad).unwrap_err();
        assert!(e.contains("or a port (8080)"), "{bad}: {e}");
    }
}
