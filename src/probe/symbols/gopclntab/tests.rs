//! The Go function table read from real and made-up binaries.

use super::*;
use std::collections::HashMap;
use std::process::Command;

/// tests/data/probe_server.go built with `flags` into `dir`; `None` without Go.
fn go_build(dir: &Path, name: &str, flags: &[&str]) -> Option<std::path::PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/probe_server.go");
    let bin = dir.join(name);
    let status = Command::new("go")
        .arg("build")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .current_dir(dir)
        .status();
    match status {
        Ok(s) => {
            assert!(s.success(), "go build {flags:?}");
            Some(bin)
        }
        Err(_) => {
            eprintln!("skipped: no go");
            None
        }
    }
}

/// The functions' addresses as `go tool nm` reads them from the symbol table.
fn nm(bin: &Path) -> HashMap<String, u64> {
    let out = Command::new("go")
        .args(["tool", "nm"])
        .arg(bin)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (addr, kind, name) = (f.next()?, f.next()?, f.next()?);
            let addr = u64::from_str_radix(addr, 16).ok()?;
            ["T", "t"].contains(&kind).then(|| (name.to_string(), addr))
        })
        .collect()
}

#[test]
fn every_go_function_is_where_the_symbol_table_says() {
    let dir = tempfile::tempdir().unwrap();
    // Internal linking (Go's text starts .text), external (C code first: the entries
    // count from runtime.text, 0x100 bytes in), and a position-independent one (its
    // moduledata's pointers are relocations).
    for (name, flags) in [
        ("internal", vec![]),
        ("external", vec!["-ldflags=-linkmode=external"]),
        ("pie", vec!["-buildmode=pie"]),
    ] {
        let Some(bin) = go_build(dir.path(), name, &flags) else {
            return;
        };
        let truth = nm(&bin);
        let funcs = read(&bin).unwrap().expect("a Go binary has .gopclntab");
        // A function and its ABI wrapper share a name here; the symbol table says which
        // is which (`NAME`, `NAME.abi0`).
        let mut same = 0;
        for f in &funcs {
            let addrs: Vec<u64> = [f.name.clone(), format!("{}.abi0", f.name)]
                .iter()
                .filter_map(|n| truth.get(n).copied())
                .collect();
            if !addrs.is_empty() {
                assert!(addrs.contains(&f.addr), "{name}: {} {addrs:x?}", f.name);
                same += 1;
            }
        }
        assert!(same > 1000, "{name}: {same} of {} in both", funcs.len());
        // The function itself, not its wrapper.
        let generic = "internal/bytealg.countGeneric";
        assert!(truth.contains_key(&format!("{generic}.abi0")), "{name}");
        assert_eq!(
            find(&funcs, generic).map(|f| f.addr),
            truth.get(generic).copied()
        );
        for want in ["main.parse", "main.handle", "runtime.goexit"] {
            assert!(funcs.iter().any(|f| f.name == want), "{name}: {want}");
        }
        assert!(has_table(&bin));
    }
}

#[test]
fn etcds_table_matches_its_dynamic_symbols() {
    let etcd = Path::new("/usr/bin/etcd");
    if !etcd.exists() {
        eprintln!("skipped: no /usr/bin/etcd (apt-get install etcd-server)");
        return;
    }
    let funcs = read(etcd).unwrap().expect("etcd is Go");
    assert!(funcs.len() > 20_000, "{}", funcs.len());
    // Its only symbols: the few cgo exports of .dynsym, Go functions too.
    let out = Command::new("readelf")
        .args(["--dyn-syms", "-W"])
        .arg(etcd)
        .output()
        .unwrap();
    let mut checked = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || f[3] != "FUNC" || f[6] == "UND" {
            continue;
        }
        let addr = u64::from_str_radix(f[1], 16).unwrap();
        if let Some(g) = funcs.iter().find(|g| g.name == f[7]) {
            assert_eq!(g.addr, addr, "{}", f[7]);
            checked += 1;
        }
    }
    assert!(checked >= 2, "crosscall2, _cgo_panic: {checked}");
    assert!(funcs.iter().any(|f| f.name == "main.main"));
}

#[test]
fn bad_files_are_told_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let not_elf = dir.path().join("text");
    std::fs::write(&not_elf, "hello").unwrap();
    assert_eq!(read(&not_elf).unwrap_err(), "not an ELF file");
    // A Rust binary: no Go table.
    let me = std::env::current_exe().unwrap();
    assert_eq!(read(&me).unwrap(), None);
    assert!(!has_table(&me));
    let Some(bin) = go_build(dir.path(), "go", &["-ldflags=-s -w"]) else {
        return;
    };
    let data = std::fs::read(&bin).unwrap();
    let tab = Elf::parse(&data)
        .unwrap()
        .section(".gopclntab")
        .unwrap()
        .offset as usize;
    // An unknown magic, a count past the table, and a file cut short.
    let mut bad = data.clone();
    bad[tab..tab + 4].copy_from_slice(&0xffff_ff00u32.to_le_bytes());
    let err = functions_of(&bad).unwrap_err();
    assert!(err.contains("unknown .gopclntab magic 0xffffff00"), "{err}");
    let mut bad = data.clone();
    bad[tab + 8..tab + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(functions_of(&bad)
        .unwrap_err()
        .contains("more than it holds"));
    assert!(Elf::parse(&data[..data.len() / 2]).is_err());
    // Each byte of the header and some of the table changed: an answer, never a panic.
    let mut bad = data.clone();
    for at in (tab..tab + 72).chain((tab + 72..tab + 65_536).step_by(997)) {
        bad[at] ^= 0xa5;
        let _ = functions_of(&bad);
        bad[at] ^= 0xa5;
    }
}

fn functions_of(data: &[u8]) -> Result<Vec<GoFunc>, String> {
    let elf = Elf::parse(data)?;
    let tab = elf.section(".gopclntab").ok_or("no table")?;
    functions(&elf, tab)
}
