//! How an event is stored for the tick's reader: [`record`].

use crate::probe::bpf::Builder;

/// The statement that records one event at `ns` (an expression) with its fields, into this
/// tick's map (`@e0`, `@e1` or `@e2` by `@ep`: each tick moves `@ep` on, and a map left is
/// read whole, by reqlife from the kernel, which then turns `@ep` itself ([`crate::probe`]'s
/// `maps`), or printed and cleared by bpftrace where reqlife could not open it, so that no
/// event waits on a print). A map, not a `printf`: a
/// printed line wakes bpftrace's reader from the probed thread's context, which delayed the
/// server's own read by 7 to 15 µs on the 2-core VM. Three maps, not two: bpftrace prints and
/// clears a map in its own process, later than the tick that asked; with two maps, a reader
/// behind by a tick cleared events of the tick after (nginx over HTTP/2, 2-core VM: whole
/// writes of 10 requests missing around the ticks, 4% of the requests); with three, a map is
/// written again two ticks after it was left.
pub(super) fn record(b: &mut Builder, ns: &str, kind: u64, fields: [&str; 5]) -> String {
    let ep = b.map("ep");
    record_at(b, ns, kind, fields, &ep.to_string())
}

/// As [`record`], with the map in turn read already (`ep`: the map, or a variable that holds
/// it), so that a probe that stamps last has only the store after its stamp.
pub(super) fn record_at(
    b: &mut Builder,
    ns: &str,
    kind: u64,
    fields: [&str; 5],
    ep: &str,
) -> String {
    let (e0, e1, e2) = (b.map("e0"), b.map("e1"), b.map("e2"));
    // Every field a u64 (the map's one value type), but one read from a map (`$v`, `$va`,
    // …: a u64 already, whose type bpftrace knows only on a later pass: a cast of it is
    // refused).
    let v: Vec<String> = fields
        .iter()
        .map(|f| match *f {
            f if f.starts_with("$v") => f.to_string(),
            f => format!("(uint64)({f})"),
        })
        .collect();
    let value = format!("((uint64){kind}, {})", v.join(", "));
    format!(
        "if ({ep} == 0) {{ {e0}[{ns}, tid] = {value}; }} else if ({ep} == 1) {{ {e1}[{ns}, tid] = {value}; }} else {{ {e2}[{ns}, tid] = {value}; }}"
    )
}
