//! Keeps the two functions `--server-probes` calibrates on (src/probe/calibrate.rs) in the
//! executable's dynamic symbol table, which `strip` leaves: bpftrace then finds them by name
//! in the stripped release binary (by address, bpftrace versions disagree on what the number
//! means, and a probe placed amiss could land inside another instruction).
fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if os == "linux" && arch == "x86_64" {
        for f in ["reqlife_calibrate_push", "reqlife_calibrate_step"] {
            println!("cargo:rustc-link-arg-bins=-Wl,--export-dynamic-symbol={f}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
