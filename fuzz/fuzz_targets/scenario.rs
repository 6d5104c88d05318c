//! The scenario file parser over arbitrary text (files and variables from an empty folder).
#![no_main]
use libfuzzer_sys::fuzz_target;
use reqlife::workload::{scenario, template::Sources};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = std::env::temp_dir().join("reqlife-fuzz-empty");
    let _ = std::fs::create_dir_all(&dir);
    let mut sources = Sources::new(&dir).with_env(Vec::<(String, String)>::new());
    let _ = scenario::parse(text, std::path::Path::new("fuzz.toml"), &mut sources);
});
