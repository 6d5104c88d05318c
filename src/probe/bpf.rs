//! A small typed builder of bpftrace scripts, so that a script is right by construction in
//! every variant (each kernel's branch, each probe kind, sampling on or off): maps are
//! declared once and spelled through their handle, each probe's hit counter gets its index
//! from the builder, the `clear()` list at the end is derived from the maps the script
//! assigns, attach points are quoted, and [`Builder::finish`] refuses a script that reads a
//! map nothing assigns (bpftrace refuses it too, but only on the machine that runs it: a
//! `tcp:tcp_sendmsg_locked` left out on an older kernel once left `@ws` read and never
//! written) or spells a map it never declared.

use std::fmt;
use std::fmt::Write as _;

/// A map of the script, spelled `@name` where it is written into the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Map(&'static str);

impl fmt::Display for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}", self.0)
    }
}

/// What a probe attaches to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attach {
    /// `BEGIN` or `END`.
    Special(&'static str),
    /// `tracepoint:CATEGORY:NAME`.
    Tracepoint(&'static str, &'static str),
    /// `interval:ms:N`.
    IntervalMs(u64),
    /// A function of a binary (`uprobe`, or `uretprobe` for its return): the binary's path
    /// and the symbol or address (`0x…`).
    Uprobe {
        /// The binary (a path through `/proc/PID/root` for a server in a container).
        binary: String,
        /// The symbol, or an address `0x…`.
        symbol: String,
        /// Its return.
        ret: bool,
    },
    /// A USDT probe of a binary.
    Usdt {
        /// The binary.
        binary: String,
        /// The provider.
        provider: String,
        /// The probe's name.
        name: String,
    },
}

/// Quotes a binary's path for an attach point when it holds anything but the characters
/// bpftrace reads unquoted.
fn quoted(path: &str) -> String {
    let plain = path
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c));
    if plain {
        path.to_string()
    } else {
        format!("\"{}\"", path.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

impl fmt::Display for Attach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attach::Special(s) => f.write_str(s),
            Attach::Tracepoint(c, n) => write!(f, "tracepoint:{c}:{n}"),
            Attach::IntervalMs(ms) => write!(f, "interval:ms:{}", ms.max(&1)),
            Attach::Uprobe {
                binary,
                symbol,
                ret,
            } => {
                let kind = if *ret { "uretprobe" } else { "uprobe" };
                write!(f, "{kind}:{}:{symbol}", quoted(binary))
            }
            Attach::Usdt {
                binary,
                provider,
                name,
            } => write!(f, "usdt:{}:{provider}:{name}", quoted(binary)),
        }
    }
}

/// The register that holds the running goroutine in a Go function (Go 1.17 on: its
/// register ABI), by architecture.
pub fn go_g_register() -> Option<&'static str> {
    if cfg!(target_arch = "x86_64") {
        Some("r14")
    } else if cfg!(target_arch = "aarch64") {
        Some("r28")
    } else {
        None
    }
}

/// A script being written.
#[derive(Debug, Default)]
pub struct Builder {
    text: String,
    maps: Vec<&'static str>,
    /// Each probe's hit counter: (name, is a uprobe).
    counters: Vec<(String, bool)>,
    end: Vec<String>,
    /// Maps the END probe leaves as they are (the script's own END statements clear them).
    kept: Vec<&'static str>,
}

/// A script written and checked.
#[derive(Debug, Clone)]
pub struct Built {
    /// The program.
    pub text: String,
    /// By hit counter index: (name, is a uprobe).
    pub counters: Vec<(String, bool)>,
}

impl Builder {
    /// An empty script.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// Declares map `name` (once).
    pub fn map(&mut self, name: &'static str) -> Map {
        if !self.maps.contains(&name) {
            self.maps.push(name);
        }
        Map(name)
    }

    /// A hit counter for a probe named `name` (a uprobe's or not): its index in `@n`.
    pub fn counter(&mut self, name: impl Into<String>, uprobe: bool) -> usize {
        self.counters.push((name.into(), uprobe));
        self.counters.len() - 1
    }

    /// A probe on `at`, when `predicate` holds (none: always), running `body`.
    pub fn probe(&mut self, at: &Attach, predicate: Option<&str>, body: &str) {
        let _ = write!(self.text, "{at} ");
        if let Some(p) = predicate {
            let _ = write!(self.text, "/{p}/ ");
        }
        let _ = writeln!(self.text, "{{\n{}\n}}", body.trim_end());
    }

    /// Whether the script so far assigns map `name`.
    pub fn assigns(&self, name: &str) -> bool {
        is_assigned(&self.text, name)
    }

    /// A statement of the END probe, before the maps are cleared.
    pub fn at_end(&mut self, statement: impl Into<String>) {
        self.end.push(statement.into());
    }

    /// Map `name` is not cleared by the END probe: the script's END statements say when.
    pub fn keep_at_end(&mut self, name: &'static str) {
        self.kept.push(name);
    }

    /// The script: the END probe written (its statements, then every assigned map cleared:
    /// bpftrace would print them all otherwise, but those kept), and checked.
    pub fn finish(mut self) -> Result<Built, String> {
        let assigned: Vec<&'static str> = self
            .maps
            .iter()
            .copied()
            .filter(|m| is_assigned(&self.text, m))
            .collect();
        let mut end = self.end.join("\n  ");
        for m in assigned.iter().filter(|m| !self.kept.contains(m)) {
            let _ = write!(end, "\n  clear(@{m});");
        }
        let _ = writeln!(self.text, "END {{\n  {}\n}}", end.trim_start());
        check(&self.text, &self.maps, &assigned)?;
        Ok(Built {
            text: self.text,
            counters: self.counters,
        })
    }
}

/// Whether `text` assigns map `name` (`@name[..] = ...`, `@name = ...`, `@name[..]++`).
fn is_assigned(text: &str, name: &str) -> bool {
    uses(text, name).any(|rest| {
        let rest = skip_key(rest).trim_start();
        (rest.starts_with('=') && !rest.starts_with("==")) || rest.starts_with("++")
    })
}

/// The text after each `@name` (whole word) in `text`.
fn uses<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    text.match_indices('@')
        .map(move |(i, _)| &text[i + 1..])
        .filter_map(move |rest| rest.strip_prefix(name))
        .filter(|rest| {
            !rest
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// `rest` past a `[...]` key, if it opens with one.
fn skip_key(rest: &str) -> &str {
    if !rest.starts_with('[') {
        return rest;
    }
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[i + 1..];
                }
            }
            _ => {}
        }
    }
    ""
}

/// Every map spelled in `text` is declared, and every declared map read is assigned.
fn check(text: &str, declared: &[&str], assigned: &[&str]) -> Result<(), String> {
    for (i, _) in text.match_indices('@') {
        let name: String = text[i + 1..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !declared.contains(&name.as_str()) {
            return Err(format!(
                "the script spells @{name}, which it never declared"
            ));
        }
    }
    for m in declared {
        if uses(text, m).next().is_some() && !assigned.contains(m) {
            return Err(format!(
                "the script reads @{m}, which nothing assigns (bpftrace refuses it: undefined map)"
            ));
        }
    }
    Ok(())
}

/// bpftrace's own word on a script, for the tests: its dry run (`-d`: parsed and compiled for
/// this kernel, not attached), where bpftrace and root are here.
#[cfg(test)]
pub(crate) mod dry_run {
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Output, Stdio};

    /// bpftrace here, and root (its dry run reads the kernel's BTF); `None` prints the line
    /// that the dry runs are skipped (CI has both).
    pub fn bpftrace() -> Option<PathBuf> {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let found = root.then(|| super::super::in_path("bpftrace")).flatten();
        if found.is_none() {
            eprintln!("bpftrace or root missing here: the dry runs are skipped (CI has both)");
        }
        found
    }

    /// Starts the dry run of `text`.
    pub fn start(bpftrace: &Path, text: &str) -> Child {
        Command::new(bpftrace)
            .args(["-d", "-e", text])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// What a finished dry run said of its script: `Err` with bpftrace's errors and warnings
    /// where it refused the script or warned.
    pub fn verdict(out: &Output) -> Result<(), String> {
        let err = String::from_utf8_lossy(&out.stderr);
        // bpftrace says these of its memory lock and of tracefs, not of the script.
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("ERROR") || l.contains("WARNING"))
            .filter(|l| !l.contains("RLIMIT_MEMLOCK"))
            .collect();
        if out.status.success() && said.is_empty() {
            Ok(())
        } else {
            Err(err.into_owned())
        }
    }

    /// The dry run of one script, where bpftrace and root are here.
    pub fn check(text: &str) -> Option<Result<(), String>> {
        let out = start(&bpftrace()?, text).wait_with_output().unwrap();
        Some(verdict(&out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_read_but_never_assigned_are_refused() {
        let mut b = Builder::new();
        let ws = b.map("ws");
        let n = b.map("n");
        b.probe(
            &Attach::Tracepoint("sock", "sock_send_length"),
            None,
            &format!("  $w = {ws}[tid]; delete({ws}[tid]); {n}[0] = count();"),
        );
        let text = b.text.clone();
        let err = b.finish().unwrap_err();
        assert!(err.contains("@ws"), "{err}");
        // bpftrace refuses it too.
        if let Some(said) = dry_run::check(&text) {
            assert!(said.unwrap_err().contains("Undefined map: @ws"), "{text}");
        }
        // Assigned: accepted, and cleared at the end (the counter too).
        let mut b = Builder::new();
        let ws = b.map("ws");
        b.probe(
            &Attach::Tracepoint("tcp", "tcp_sendmsg_locked"),
            None,
            &format!("  {ws}[tid] = nsecs;"),
        );
        b.probe(
            &Attach::Tracepoint("sock", "sock_send_length"),
            Some("args->ret > 0"),
            &format!("  $w = {ws}[tid]; if ($w == 0) {{ $w = nsecs; }}"),
        );
        let s = b.finish().unwrap();
        assert!(s.text.contains("clear(@ws);"), "{}", s.text);
        assert!(s.text.contains("/args->ret > 0/"), "{}", s.text);
        if let Some(said) = dry_run::check(&s.text) {
            said.unwrap_or_else(|e| panic!("bpftrace -d refused it:\n{e}\n{}", s.text));
        }
    }

    #[test]
    fn an_undeclared_map_is_refused_and_a_comparison_is_no_assignment() {
        let mut b = Builder::new();
        b.probe(&Attach::Special("BEGIN"), None, "  @x = 1;");
        assert!(b.finish().unwrap_err().contains("@x"));
        let mut b = Builder::new();
        let a = b.map("a");
        b.probe(
            &Attach::Special("BEGIN"),
            None,
            &format!("  if ({a}[1] == 2) {{ printf(\"x\\n\"); }}"),
        );
        assert!(b.finish().is_err());
        let mut b = Builder::new();
        let a = b.map("a");
        b.probe(&Attach::Special("BEGIN"), None, &format!("  {a}[1, 2]++;"));
        let s = b.finish().unwrap();
        if let Some(said) = dry_run::check(&s.text) {
            said.unwrap_or_else(|e| panic!("bpftrace -d refused it:\n{e}\n{}", s.text));
        }
    }

    #[test]
    fn attach_points_quote_odd_paths() {
        let at = Attach::Uprobe {
            binary: "/proc/42/root/opt/my app/srv".into(),
            symbol: "handle".into(),
            ret: false,
        };
        assert_eq!(
            at.to_string(),
            "uprobe:\"/proc/42/root/opt/my app/srv\":handle"
        );
        let at = Attach::Uprobe {
            binary: "/usr/sbin/nginx".into(),
            symbol: "0x4a10".into(),
            ret: true,
        };
        assert_eq!(at.to_string(), "uretprobe:/usr/sbin/nginx:0x4a10");
        assert_eq!(
            Attach::Usdt {
                binary: "/usr/bin/node".into(),
                provider: "node".into(),
                name: "http__server__request".into()
            }
            .to_string(),
            "usdt:/usr/bin/node:node:http__server__request"
        );
        // bpftrace reads the quoted ones (a space, a quote in the path), which it refuses
        // unquoted. The binaries: links to this test binary.
        let dir = tempfile::tempdir().unwrap();
        let mut b = Builder::new();
        let x = b.map("x");
        for odd in ["my app", "a\"b"] {
            let binary = dir.path().join(odd).join("srv");
            std::fs::create_dir(binary.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(std::fs::read_link("/proc/self/exe").unwrap(), &binary)
                .unwrap();
            let at = Attach::Uprobe {
                binary: binary.display().to_string(),
                symbol: "reqlife_calibrate_step".into(),
                ret: false,
            };
            b.probe(&at, None, &format!("  {x} = 1;"));
        }
        let s = b.finish().unwrap();
        if let Some(said) = dry_run::check(&s.text) {
            said.unwrap_or_else(|e| panic!("bpftrace -d refused it:\n{e}\n{}", s.text));
        }
    }
}
