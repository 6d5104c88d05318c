//! The template parser, and printing a parsed template back: parse, print, parse gives the
//! same template.
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::workload::template::Template;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(t) = Template::parse(text) {
        let printed = t.to_string();
        let again = Template::parse(&printed).expect("a printed template parses");
        assert_eq!(again.to_string(), printed);
    }
});
