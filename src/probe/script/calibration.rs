//! The calibration's own script: what a probe's hit costs on this machine, measured before
//! the run (see [`crate::probe::calibrate`]).

use super::Script;
use crate::probe::bpf::{Attach, Builder};

/// The calibration's script (see the `calibrate` module): reqlife's two calibration
/// functions (`me`'s executable `exe`) and its reads of a UNIX socket pair, each doing what
/// an event of the run's script does (a count, and an entry of the events' map).
pub fn calibration(me: u32, exe: &std::path::Path) -> Script {
    let mut b = Builder::new();
    let (n, up, k) = (b.map("n"), b.map("up"), b.map("k"));
    b.probe(&Attach::Special("BEGIN"), None, "  printf(\"B\\n\");");
    let exe = exe.display().to_string();
    let sites = [
        (
            "calibration:uprobe",
            true,
            Attach::Uprobe {
                binary: exe.clone(),
                symbol: "reqlife_calibrate_push".into(),
                ret: false,
            },
        ),
        (
            "calibration:uprobe-stepped",
            true,
            Attach::Uprobe {
                binary: exe,
                symbol: "reqlife_calibrate_step".into(),
                ret: false,
            },
        ),
        (
            "calibration:tracepoint",
            false,
            Attach::Tracepoint("sock", "sock_recv_length"),
        ),
    ];
    let mut first = None;
    for (i, (name, uprobe, at)) in sites.into_iter().enumerate() {
        let c = b.counter(name, uprobe);
        first.get_or_insert(c);
        // The first uprobe's first hit says the probes are all attached (bpftrace prints
        // BEGIN's line before its uprobes are; this one is attached last).
        let seen = if i == 0 {
            format!("if ({up} == 0) {{ {up} = 1; printf(\"U\\n\"); }}\n  ")
        } else {
            String::new()
        };
        // The tracepoint: reqlife's own reads of its UNIX socket pair (AF_UNIX, 1).
        let only = if i == 2 { " && args->family == 1" } else { "" };
        b.probe(
            &at,
            Some(&format!("pid == {me}{only}")),
            &format!(
                "  {seen}{n}[{c}] = count(); {k}[nsecs, tid] = ((uint64){i}, (uint64)tid, (uint64)pid, (uint64)0, (uint64)0, (uint64)0);"
            ),
        );
    }
    // The events' map emptied as the run's is each tick, unprinted.
    b.probe(&Attach::IntervalMs(10), None, &format!("  clear({k});"));
    b.at_end(format!("print({n});"));
    b.at_end("printf(\"Z\\n\");");
    let built = b
        .finish()
        .unwrap_or_else(|e| panic!("the calibration's script is wrong: {e}"));
    Script {
        text: built.text,
        probes: built.counters,
        functions: Vec::new(),
        calibration: first,
        counted: Vec::new(),
    }
}
