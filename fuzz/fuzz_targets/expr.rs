//! The threshold and SLO expression parser: parse, print, parse gives the same expression.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::analysis::expr::Expr;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(e) = Expr::parse(text) {
        let again = Expr::parse(&e.to_string()).expect("a printed expression parses");
        assert_eq!(again, e);
    }
});
