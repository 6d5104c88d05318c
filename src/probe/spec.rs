//! What the user asked to probe: `--server-fn`'s list of the server's functions (or USDT
//! probes) in the order a request passes them, read into [`Site`]s.
//!
//! One item of the list is `NAME` (a function's entry), `NAME%return` (its return),
//! `/path/to/lib.so:NAME` (a function of another binary, a shared library say),
//! `usdt:PROVIDER:NAME` or `usdt:/path:PROVIDER:NAME` (a USDT probe). A C++ or Rust name is
//! written as the source spells it (`ns::Class::method`) and found among the binary's symbols
//! through their demangled names. Commas inside parentheses (a C++ signature) do not split.

use super::ProbeError;
use std::path::PathBuf;

/// Most probe sites of `--server-fn` (each hit costs the server a trap).
pub const MAX_SITES: usize = 16;

/// Where a probe attaches.
#[derive(Debug, Clone, PartialEq)]
pub enum Site {
    /// A function's entry, or its return (`ret`), in `binary` (the server's executable when
    /// `None`). `symbol` is the name as the binary has it once resolved, or `0xOFFSET`, its
    /// offset in the file, for a Go function only `.gopclntab` names ([`offset_symbol`]).
    Function {
        /// The binary; `None`: the server's executable.
        binary: Option<PathBuf>,
        /// The function's name.
        symbol: String,
        /// At the function's return, not its entry.
        ret: bool,
    },
    /// A USDT probe of `binary` (the server's executable when `None`).
    Usdt {
        /// The binary; `None`: the server's executable.
        binary: Option<PathBuf>,
        /// The probe's provider.
        provider: String,
        /// The probe's name.
        name: String,
    },
}

/// The symbol of a function found by its offset in the file (a Go function that only the
/// binary's `.gopclntab` names): `0xOFFSET`, bpftrace's `uprobe:BIN:0xOFFSET`.
pub fn offset_symbol(file_offset: u64) -> String {
    format!("{file_offset:#x}")
}

/// Whether bpftrace must run with `--unsafe` to attach `probes`: bpftrace 0.17 attaches at an
/// offset of a binary without a symbol there only then ("Could not resolve address"
/// otherwise). The offset is a function's entry, read from Go's own table.
pub fn needs_unsafe(probes: &[FnProbe]) -> bool {
    probes.iter().any(|p| match &p.site {
        Site::Function { symbol, .. } => symbol.starts_with("0x"),
        Site::Usdt { .. } => false,
    })
}

/// One item of the list: as written, and where it attaches.
#[derive(Debug, Clone, PartialEq)]
pub struct FnProbe {
    /// The item as written (`NAME%return` for a return), the name its figures go by.
    pub label: String,
    /// Where it attaches.
    pub site: Site,
}

/// Reads `--server-fn`'s list. A single function is timed from its entry to its return.
pub fn parse_list(list: &str) -> Result<Vec<FnProbe>, ProbeError> {
    let items = split_top(list);
    if items.iter().any(|s| s.trim().is_empty()) {
        return Err(ProbeError::Input(format!(
            "--server-fn {list:?}: an empty name; give the server's functions in the order a \
             request passes them, comma-separated (e.g. ngx_http_process_request,\
             ngx_http_finalize_request)"
        )));
    }
    let mut out: Vec<FnProbe> = items
        .iter()
        .map(|s| parse_item(s.trim()))
        .collect::<Result<_, _>>()?;
    if let [one] = &out[..] {
        if let Site::Function {
            binary,
            symbol,
            ret: false,
        } = &one.site
        {
            out.push(FnProbe {
                label: format!("{}%return", one.label),
                site: Site::Function {
                    binary: binary.clone(),
                    symbol: symbol.clone(),
                    ret: true,
                },
            });
        } else {
            return Err(ProbeError::Input(format!(
                "--server-fn {list:?}: one probe times nothing; give at least two, in the order \
                 a request passes them (or one function, timed from its entry to its return)"
            )));
        }
    }
    if out.len() > MAX_SITES {
        return Err(ProbeError::Input(format!(
            "--server-fn: {} probes, at most {MAX_SITES} (each hit costs the server a trap): \
             keep the functions whose transitions you want timed",
            out.len()
        )));
    }
    Ok(out)
}

fn parse_item(item: &str) -> Result<FnProbe, ProbeError> {
    let bad = |why: &str| {
        Err(ProbeError::Input(format!(
            "--server-fn: {item:?} {why}; an item is NAME, NAME%return, /path/lib.so:NAME, \
             usdt:PROVIDER:NAME or usdt:/path:PROVIDER:NAME"
        )))
    };
    let label = item.to_string();
    if let Some(rest) = item.strip_prefix("usdt:") {
        let parts: Vec<&str> = rest.split(':').collect();
        let (binary, provider, name) = match parts[..] {
            [p, n] => (None, p, n),
            [b, p, n] if b.starts_with('/') => (Some(PathBuf::from(b)), p, n),
            _ => return bad("is not a USDT probe"),
        };
        if provider.is_empty() || name.is_empty() {
            return bad("names no USDT provider or probe");
        }
        let site = Site::Usdt {
            binary,
            provider: provider.into(),
            name: name.into(),
        };
        return Ok(FnProbe { label, site });
    }
    let (binary, rest) = match item.strip_prefix('/') {
        Some(_) => match item.split_once(':') {
            Some((b, n)) => (Some(PathBuf::from(b)), n),
            None => return bad("names a file but no function"),
        },
        None => (None, item),
    };
    let (symbol, ret) = match rest.strip_suffix("%return") {
        Some(s) => (s, true),
        None => (rest, false),
    };
    if symbol.is_empty() || symbol.contains(char::is_whitespace) && !symbol.contains('(') {
        return bad("is not a function name");
    }
    Ok(FnProbe {
        label,
        site: Site::Function {
            binary,
            symbol: symbol.into(),
            ret,
        },
    })
}

/// `list` split at its commas outside parentheses and angle brackets.
fn split_top(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in list.chars() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(symbol: &str, ret: bool) -> Site {
        Site::Function {
            binary: None,
            symbol: symbol.into(),
            ret,
        }
    }

    #[test]
    fn lists_read_into_sites() {
        let l = parse_list("a,b%return").unwrap();
        assert_eq!(
            (l[0].site.clone(), l[1].site.clone()),
            (f("a", false), f("b", true))
        );
        // One function: its entry to its return.
        let l = parse_list("handle").unwrap();
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].site, f("handle", true));
        assert_eq!(l[1].label, "handle%return");
        // A signature's commas do not split; a library and a USDT probe.
        let l = parse_list("ns::A::f(int, char),/lib/x.so:g,usdt:/bin/pg:postgresql:query__start")
            .unwrap();
        assert_eq!(l[0].site, f("ns::A::f(int, char)", false));
        assert_eq!(
            l[1].site,
            Site::Function {
                binary: Some("/lib/x.so".into()),
                symbol: "g".into(),
                ret: false
            }
        );
        assert_eq!(
            l[2].site,
            Site::Usdt {
                binary: Some("/bin/pg".into()),
                provider: "postgresql".into(),
                name: "query__start".into()
            }
        );
    }

    #[test]
    fn bad_lists_say_what_an_item_is() {
        for bad in [
            "",
            "a,,b",
            "usdt:x",
            "/lib/x.so",
            "a b",
            "usdt:only:one:two:three",
        ] {
            let ProbeError::Input(line) = parse_list(bad).unwrap_err() else {
                panic!("{bad}")
            };
            assert!(line.starts_with("--server-fn"), "{bad}: {line}");
        }
        let many = vec!["f"; MAX_SITES + 1].join(",");
        assert!(parse_list(&many).is_err());
        assert!(
            parse_list("usdt:p:n").is_err(),
            "one USDT probe times nothing"
        );
    }
}
