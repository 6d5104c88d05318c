//! The bpftrace script of a run's probes, written out (`--print-probe-script` prints it).
//!
//! Every probed phase ends in the kernel: its duration's bucket key
//! ([`bucket_key`](crate::recorder::probes::bucket_key), computed here in the script's own
//! arithmetic) is counted in `@h0` or `@h1`, by phase. A tick flips `@ep`, so that the events
//! count into the other map, then prints the one they left and clears it: no event is lost
//! between the print and the clear. The output, line by line:
//!
//! ```text
//! R                  BEGIN ran: every probe is attached
//! U                  (the calibration's script) its first uprobe fired
//! T <nsecs>          a tick (CLOCK_MONOTONIC, ns), then its counts
//! @h0[P, K]: N       phase P, bucket key K, N durations
//! E                  the tick's end
//! @n[I]: N           at the end: probe I fired N times
//! Z                  the end
//! ```
//!
//! The kernel's phases follow a request on the server's sockets (those whose local port is
//! the server's): `sock:sk_data_ready` stamps its bytes' arrival, the server's first read
//! after it (`sock:sock_recv_length`) ends `socket` and starts `handle`, which its next write
//! ends (at the write's syscall entry: `sock:sock_send_length` fires when it returned).
//! `return` runs from there to the response's arrival at the client's socket (on this
//! machine: the socket whose remote port is the server's), whichever of the two the kernel
//! sees first. The function phases are per thread: the first function starts a request, each
//! next one ends a phase, the last ends the request (and `total`, with three or more).

use super::spec::{FnProbe, Site};
use crate::recorder::probes::SUB_BITS;
use std::fmt::Write;
use std::path::PathBuf;

/// The phase index the calibration counts under (no phase of the run has it).
pub const CALIBRATION_PHASE: usize = 99;

/// What the script probes.
#[derive(Debug, Clone)]
pub struct ScriptPlan {
    /// The server's processes.
    pub pids: Vec<u32>,
    /// The port the server's requests arrive on.
    pub port: u16,
    /// The kernel's phases (tracepoints).
    pub kernel: bool,
    /// The functions, resolved (each with its binary).
    pub functions: Vec<FnProbe>,
    /// The server is a Go program: a request's functions are followed by goroutine, not by
    /// thread.
    pub go: bool,
    /// The kernel has `tcp:tcp_sendmsg_locked`: a send's start is stamped (else `handle` ends
    /// when the send returned, and on loopback `return` is not seen: the client's socket has
    /// its bytes by then).
    pub send_start: bool,
    /// One request in this many is timed.
    pub sample: u64,
    /// How often the script prints the counts of a tick, milliseconds.
    pub tick_ms: u64,
    /// reqlife's own pid and its executable, whose two calibration functions the script
    /// probes (see the `calibrate` module).
    pub calibrate: Option<(u32, PathBuf)>,
}

/// A script and what its indices mean.
#[derive(Debug, Clone)]
pub struct Script {
    /// The bpftrace program.
    pub text: String,
    /// By phase index: (name, what).
    pub phases: Vec<(String, String)>,
    /// By probe index: (name, is a uprobe).
    pub probes: Vec<(String, bool)>,
    /// The first probe index of the calibration's (a uprobe, a stepped one, a tracepoint).
    pub calibration: Option<usize>,
}

/// The code that counts the duration `$d` under phase `phase`.
fn count(phase: usize) -> String {
    let mut s = String::from("$v = $d; $e = 0;\n");
    for bits in [32, 16, 8, 4, 2] {
        let _ = writeln!(
            s,
            "  if ($v >= {}) {{ $v = $v >> {bits}; $e = $e + {bits}; }}",
            1u64 << bits
        );
    }
    let _ = writeln!(s, "  if ($v >= 2) {{ $e = $e + 1; }}");
    let _ = writeln!(
        s,
        "  $k = $d; if ($e >= {SUB_BITS}) {{ $k = ($e << {SUB_BITS}) | (($d >> ($e - {SUB_BITS})) & {}); }}",
        (1u64 << SUB_BITS) - 1
    );
    let _ = write!(
        s,
        "  if (@ep & 1) {{ @h1[{phase}, $k] = count(); }} else {{ @h0[{phase}, $k] = count(); }}"
    );
    s
}

/// `cond` when one request in `n` is timed by a draw, else the plain statement.
fn sampled(n: u64, body: &str) -> String {
    if n <= 1 {
        body.to_string()
    } else {
        format!("if (rand % {n} == 0) {{ {body} }}")
    }
}

impl ScriptPlan {
    fn pid_filter(&self) -> String {
        let any: Vec<String> = self.pids.iter().map(|p| format!("pid == {p}")).collect();
        format!("({})", any.join(" || "))
    }

    /// The script, with its phases and probes.
    pub fn write(&self) -> Script {
        let mut t = String::from("BEGIN { printf(\"R\\n\"); }\n");
        let mut phases = Vec::new();
        let mut probes = Vec::new();
        let pids = self.pid_filter();
        if self.kernel {
            self.kernel_probes(&mut t, &pids, &mut phases, &mut probes);
        }
        self.function_probes(&mut t, &pids, &mut phases, &mut probes);
        let calibration = self.calibrate.as_ref().map(|(me, exe)| {
            let at = probes.len();
            probes.push(("calibration:uprobe".to_string(), true));
            probes.push(("calibration:uprobe-stepped".to_string(), true));
            probes.push(("calibration:tracepoint".to_string(), false));
            for (i, probe) in [
                format!("uprobe:{}:reqlife_calibrate_push", exe.display()),
                format!("uprobe:{}:reqlife_calibrate_step", exe.display()),
                "tracepoint:sock:sock_recv_length".to_string(),
            ]
            .iter()
            .enumerate()
            {
                // The first uprobe's first hit says the probes are all attached (bpftrace
                // prints BEGIN's line before its uprobes are; this one is attached last).
                let seen = if i == 0 {
                    "if (@up == 0) { @up = 1; printf(\"U\\n\"); }\n  "
                } else {
                    ""
                };
                // The tracepoint: reqlife's own reads of its UNIX socket pair (AF_UNIX, 1).
                let only = if i == 2 { " && args->family == 1" } else { "" };
                let _ = writeln!(
                    t,
                    "{probe} /pid == {me}{only}/ {{\n  {seen}@n[{}] = count();\n  $d = nsecs - @cal[{i}]; @cal[{i}] = nsecs;\n  {}\n}}",
                    at + i,
                    count(CALIBRATION_PHASE)
                );
            }
            at
        });
        let _ = writeln!(
            t,
            "interval:ms:{} {{\n  @ep = @ep + 1;\n  printf(\"T %llu\\n\", nsecs);\n  if (@ep & 1) {{ print(@h0); clear(@h0); }} else {{ print(@h1); clear(@h1); }}\n  printf(\"E\\n\");\n}}",
            self.tick_ms.max(1)
        );
        // Only the maps the script has: bpftrace refuses to clear an undefined one.
        let mut maps = vec!["@h0", "@h1", "@n", "@ep"];
        if self.kernel {
            maps.extend(["@arr", "@rd", "@ws", "@carr", "@sent"]);
        }
        if self.functions.len() >= 2 {
            maps.extend(["@fp", "@fs", "@fi"]);
        }
        if calibration.is_some() {
            maps.extend(["@cal", "@up"]);
        }
        let clears: Vec<String> = maps.iter().map(|m| format!("clear({m});")).collect();
        let _ = writeln!(
            t,
            "END {{\n  printf(\"T %llu\\n\", nsecs); print(@h0); print(@h1); printf(\"E\\n\");\n  print(@n); printf(\"Z\\n\");\n  {}\n}}",
            clears.join(" ")
        );
        Script {
            text: t,
            phases,
            probes,
            calibration,
        }
    }

    /// The kernel probes' phases and the tracepoints they attach to.
    fn kernel_names(&self, phases: &mut Vec<(String, String)>, probes: &mut Vec<(String, bool)>) {
        phases.push(("socket".into(), "in its socket (arrival → read)".into()));
        phases.push(("handle".into(), "its read → its write".into()));
        phases.push(("return".into(), "its write → the client's socket".into()));
        let mut kernel = vec!["sk_data_ready", "sock_recv_length", "sock_send_length"];
        if self.send_start {
            kernel.push("tcp_sendmsg_locked");
        }
        for name in kernel {
            probes.push((format!("kernel:{name}"), false));
        }
    }

    fn kernel_probes(
        &self,
        t: &mut String,
        pids: &str,
        phases: &mut Vec<(String, String)>,
        probes: &mut Vec<(String, bool)>,
    ) {
        let port = self.port;
        let port_be = port.swap_bytes();
        self.kernel_names(phases, probes);
        let arrive = sampled(self.sample, "@arr[args->skaddr] = nsecs;");
        // Where a send starts: `tcp:tcp_sendmsg_locked` (Linux 6.11 on), the first of a send's
        // on its thread. Not the send syscalls' tracepoints: enabling one puts every system
        // call of the machine on the slow path (nginx lost a third of its requests a second).
        let send_start = if self.send_start {
            format!(
                "tracepoint:tcp:tcp_sendmsg_locked /{pids}/ {{ @n[3] = count(); if (@ws[tid] == 0) {{ @ws[tid] = nsecs; }} }}\n"
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            t,
            "tracepoint:sock:sk_data_ready /args->protocol == 6/ {{
  $sk = (struct sock *)args->skaddr;
  if ($sk->__sk_common.skc_num == {port}) {{
    @n[0] = count();
    if (@arr[args->skaddr] == 0) {{ {arrive} }}
  }} else if ($sk->__sk_common.skc_dport == {port_be}) {{
    $p = $sk->__sk_common.skc_num;
    $w = @sent[$p];
    if ($w) {{
      $d = nsecs - $w;
  {}
      delete(@sent[$p]);
    }} else {{ @carr[$p] = nsecs; }}
  }}
}}
tracepoint:sock:sock_recv_length /{pids} && args->ret > 0 && args->protocol == 6/ {{
  @n[1] = count();
  $a = @arr[args->sk];
  if ($a) {{
    $d = nsecs - $a;
  {}
    delete(@arr[args->sk]); @rd[args->sk] = nsecs;
  }}
}}
{send_start}tracepoint:sock:sock_send_length /{pids} && args->ret > 0 && args->protocol == 6/ {{
  @n[2] = count();
  $r = @rd[args->sk];
  $w = @ws[tid];
  delete(@ws[tid]);
  if ($r) {{
    if ($w < $r) {{ $w = nsecs; }}
    $d = $w - $r;
  {}
    delete(@rd[args->sk]);
    $sk = (struct sock *)args->sk;
    $q = $sk->__sk_common.skc_dport;
    $p = (($q & 255) << 8) | ($q >> 8);
    $c = @carr[$p];
    if ($c >= $w) {{
      $d = $c - $w;
  {}
      delete(@carr[$p]);
    }} else {{ @sent[$p] = $w; }}
  }}
}}",
            count(2),
            count(0),
            count(1),
            count(2)
        );
    }

    fn function_probes(
        &self,
        t: &mut String,
        pids: &str,
        phases: &mut Vec<(String, String)>,
        probes: &mut Vec<(String, bool)>,
    ) {
        let f = &self.functions;
        if f.len() < 2 {
            return;
        }
        let base = phases.len();
        for pair in f.windows(2) {
            phases.push((
                format!("fn:{}->{}", pair[0].label, pair[1].label),
                format!("{} → {}", pair[0].label, pair[1].label),
            ));
        }
        let total = (f.len() > 2).then(|| {
            phases.push((
                format!("fn:{}->{}", f[0].label, f[f.len() - 1].label),
                format!(
                    "{} → {} (the functions' total)",
                    f[0].label,
                    f[f.len() - 1].label
                ),
            ));
            phases.len() - 1
        });
        // A request's functions run on one thread; a Go server's on one goroutine, which
        // may move between threads: keyed by its g (register r14 on x86-64, Go 1.17 on).
        let key = if self.go { "reg(\"r14\")" } else { "tid" };
        // `@fi` is the next function of the chain (1-based): a function pairs only with the
        // one before it, once. A Go function whose goroutine's stack grows at its entry runs
        // its entry again (runtime.morestack restarts it), so its probe fires twice for one
        // call: the second hit found the chain already past it and paired a second time.
        for (i, probe) in f.iter().enumerate() {
            let n = probes.len();
            probes.push((format!("fn:{}", probe.label), true));
            let body = if i == 0 {
                sampled(
                    self.sample,
                    &"@fs[K] = nsecs; @fp[K] = nsecs; @fi[K] = 1;".replace('K', key),
                )
            } else {
                let mut b = format!(
                    "if (@fi[{key}] == {i}) {{\n    $d = nsecs - @fp[{key}];\n  {}\n",
                    count(base + i - 1)
                );
                if i == f.len() - 1 {
                    if let Some(total) = total {
                        let _ = writeln!(b, "    $d = nsecs - @fs[{key}];\n  {}", count(total));
                    }
                    let _ = write!(
                        b,
                        "    delete(@fp[{key}]); delete(@fs[{key}]); delete(@fi[{key}]);\n  }}"
                    );
                } else {
                    let next = i + 1;
                    let _ = write!(b, "    @fp[{key}] = nsecs; @fi[{key}] = {next};\n  }}");
                }
                b
            };
            let _ = writeln!(
                t,
                "{} /{pids}/ {{\n  @n[{n}] = count();\n  {body}\n}}",
                attach_point(&probe.site)
            );
        }
    }
}

/// bpftrace's name of a probe site (its binary resolved).
fn attach_point(site: &Site) -> String {
    match site {
        Site::Function {
            binary,
            symbol,
            ret,
        } => {
            let kind = if *ret { "uretprobe" } else { "uprobe" };
            let bin = binary
                .as_ref()
                .map(|b| b.display().to_string())
                .unwrap_or_default();
            format!("{kind}:{bin}:{symbol}")
        }
        Site::Usdt {
            binary,
            provider,
            name,
        } => {
            let bin = binary
                .as_ref()
                .map(|b| b.display().to_string())
                .unwrap_or_default();
            format!("usdt:{bin}:{provider}:{name}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::spec::parse_list;

    fn plan(functions: &str, sample: u64) -> ScriptPlan {
        let mut functions = if functions.is_empty() {
            Vec::new()
        } else {
            parse_list(functions).unwrap()
        };
        for f in &mut functions {
            if let Site::Function { binary, .. } = &mut f.site {
                *binary = Some("/srv/bin".into());
            }
        }
        ScriptPlan {
            pids: vec![10, 11],
            port: 8080,
            kernel: true,
            functions,
            go: false,
            send_start: true,
            sample,
            tick_ms: 100,
            calibrate: Some((42, "/usr/bin/reqlife".into())),
        }
    }

    #[test]
    fn the_script_names_its_phases_and_probes_in_order() {
        let s = plan("parse,handle,respond", 1).write();
        let names: Vec<&str> = s.phases.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "socket",
                "handle",
                "return",
                "fn:parse->handle",
                "fn:handle->respond",
                "fn:parse->respond"
            ]
        );
        assert_eq!(s.probes.len(), 4 + 3 + 3);
        assert_eq!(s.calibration, Some(7));
        assert!(s
            .text
            .contains("uprobe:/usr/bin/reqlife:reqlife_calibrate_step /pid == 42/"));
        assert!(s
            .text
            .contains("uprobe:/srv/bin:parse /(pid == 10 || pid == 11)/"));
        assert!(s.text.contains("skc_num == 8080"));
        // 8080 = 0x1F90, in network order 0x901F.
        assert!(s.text.contains(&format!("skc_dport == {}", 0x901F)));
        assert!(s.text.contains("interval:ms:100"));
        assert!(!s.text.contains("rand %"));
        // Each function pairs only with the one before it, once (a Go function's entry may
        // fire twice for one call).
        assert!(s.text.contains("@fi[tid] = 1;"), "{}", s.text);
        assert!(s.text.contains("if (@fi[tid] == 1) {"), "{}", s.text);
        assert!(s.text.contains("@fi[tid] = 2;"), "{}", s.text);
        assert!(s.text.contains("if (@fi[tid] == 2) {"), "{}", s.text);
        assert!(s.text.contains("delete(@fi[tid]);"), "{}", s.text);
        // Every phase index is counted somewhere, in both maps.
        for i in 0..s.phases.len() {
            assert!(s.text.contains(&format!("@h1[{i}, $k]")), "phase {i}");
        }
    }

    #[test]
    fn sampling_draws_at_a_request_start_and_two_functions_have_no_total() {
        let s = plan("a,b", 100).write();
        assert_eq!(s.phases.len(), 3 + 1);
        assert_eq!(s.text.matches("rand % 100 == 0").count(), 2, "{}", s.text);
        let s = plan("", 1).write();
        assert_eq!(s.phases.len(), 3);
        assert!(!s.text.contains("uprobe:/srv"));
        // No function: no function map to clear at the end (bpftrace refuses undefined ones).
        assert!(!s.text.contains("@fp"));
    }
}
