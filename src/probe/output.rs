//! bpftrace's output read line by line (`-f json`: one JSON object a line) into what the
//! script ([`super::script`]) printed: each tick's events (its event map, printed whole:
//! `{"@e0": {"NS,TID": [KIND, a, b, c, d, e], ...}}`, read by hand and put in time order),
//! the probes' readiness and clock, and at the end each probe's hits. A `printf` line is read
//! without a JSON parser (the script's lines hold no quotes), the event maps by a scanner of
//! their one shape, anything else with a JSON parser.

pub(super) use crate::recorder::join::fields::event;
use crate::recorder::join::KernelEvent;

/// What one line of output was.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// BEGIN ran.
    Ready,
    /// The calibration's first uprobe fired: every probe is attached.
    Probed,
    /// A kernel event (or the probes' clock).
    Event(KernelEvent),
    /// A tick's kernel events, in time order.
    Events(Vec<KernelEvent>),
    /// The probes' clock at a tick that left event map `left` (0 to 2) to be read: the
    /// events before it are in that map, or printed before this line.
    Turn {
        /// The clock.
        ns: u64,
        /// The map the tick left.
        left: usize,
    },
    /// A calibration probe's hit.
    Calibration,
    /// The end's hit counts: (probe index, hits).
    Hits(Vec<(usize, u64)>),
    /// The end's count of events on connections not the client's.
    Others(u64),
    /// The kernel dropped this many events.
    Lost(u64),
    /// The end.
    End,
}

const PRINTF: &str = "{\"type\": \"printf\", \"data\": \"";

/// Reads one line of output.
pub fn line(line: &str) -> Option<Line> {
    let line = line.trim_end();
    if let Some(rest) = line.strip_prefix(PRINTF) {
        let text = rest.strip_suffix("\"}")?;
        return printed(text.strip_suffix("\\n").unwrap_or(text));
    }
    if !line.starts_with('{') {
        return None;
    }
    for map in ["\"@e0\": {", "\"@e1\": {", "\"@e2\": {"] {
        if let Some(at) = line.find(map) {
            return Some(Line::Events(events(&line[at + map.len()..])));
        }
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    match v["type"].as_str()? {
        "map" => {
            let data = v["data"].as_object()?;
            if let Some(n) = data.get("@n") {
                let hits = n
                    .as_object()?
                    .iter()
                    .filter_map(|(k, c)| Some((k.trim().parse().ok()?, c.as_u64()?)))
                    .collect();
                return Some(Line::Hits(hits));
            }
            data.get("@other")?.as_u64().map(Line::Others)
        }
        "lost_events" => v["data"]["events"].as_u64().map(Line::Lost),
        _ => None,
    }
}

/// A `printf` line of the script.
fn printed(text: &str) -> Option<Line> {
    let mut f = text.split_ascii_whitespace();
    match f.next()? {
        "B" => Some(Line::Ready),
        "U" => Some(Line::Probed),
        "K" => Some(Line::Calibration),
        "Z" => Some(Line::End),
        "T" => {
            let ns = f.next()?.parse().ok()?;
            match f.next() {
                None => Some(Line::Event(KernelEvent::Tick { ns })),
                Some(ep) => {
                    // The map in turn now: the tick left the one before it.
                    let ep: usize = ep.parse().ok().filter(|&e| e < 3)?;
                    Some(Line::Turn {
                        ns,
                        left: (ep + 2) % 3,
                    })
                }
            }
        }
        _ => None,
    }
}

/// The entries of an event map, `"NS,TID": [KIND, a, b, c, d, e], ...}`, as events in time
/// order (an entry of another shape is skipped).
fn events(mut s: &str) -> Vec<KernelEvent> {
    let mut out: Vec<(u64, KernelEvent)> = Vec::new();
    while let Some(open) = s.find('"') {
        s = &s[open + 1..];
        let Some(close) = s.find('"') else { break };
        let key = &s[..close];
        s = &s[close + 1..];
        let (Some(a), Some(b)) = (s.find('['), s.find(']')) else {
            break;
        };
        if a > b {
            break;
        }
        let fields: Vec<u64> = s[a + 1..b]
            .split(',')
            .filter_map(|v| v.trim().parse().ok())
            .collect();
        s = &s[b + 1..];
        let ns = key.split(',').next().and_then(|n| n.trim().parse().ok());
        if let (Some(ns), Ok(f)) = (ns, <[u64; 6]>::try_from(fields)) {
            out.extend(event(ns, f).map(|e| (ns, e)));
        }
    }
    out.sort_by_key(|(ns, _)| *ns);
    out.into_iter().map(|(_, e)| e).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        format!("{PRINTF}{s}\\n\"}}")
    }

    #[test]
    fn events_and_the_end_are_read() {
        assert_eq!(line(&p("B")), Some(Line::Ready));
        assert_eq!(
            line(&p("T 77")),
            Some(Line::Event(KernelEvent::Tick { ns: 77 }))
        );
        // A tick that moved the map in turn to 0: it left map 2.
        assert_eq!(line(&p("T 78 0")), Some(Line::Turn { ns: 78, left: 2 }));
        assert_eq!(line(&p("T 79 2")), Some(Line::Turn { ns: 79, left: 1 }));
        // A tick's map, its entries in any order: the events in time order.
        let map = "{\"type\": \"map\", \"data\": {\"@e1\": {\"140,7\": [3,40000,0,153,77,0], \"123,9\": [1,40000,0,80,0,0], \"130,7\": [2,40000,0,80,77,78], \"135,7\": [5,1,0,0,77,78], \"150,2\": [4,40000,0,153,0,0], \"99,1\": [0,40000,0,0,0,0]}}}";
        assert_eq!(
            line(map),
            Some(Line::Events(vec![
                KernelEvent::Opened {
                    port: 40000,
                    ns: 99
                },
                KernelEvent::Arrived {
                    port: 40000,
                    prev: 0,
                    off: 80,
                    ns: 123
                },
                KernelEvent::Read {
                    port: 40000,
                    start: 0,
                    off: 80,
                    ns: 130,
                    pid: 77,
                    key: 78
                },
                KernelEvent::Function {
                    index: 1,
                    key: 78,
                    ns: 135
                },
                KernelEvent::Wrote {
                    port: 40000,
                    start: 0,
                    end: 153,
                    ns: 140,
                    pid: 77
                },
                KernelEvent::Delivered {
                    port: 40000,
                    prev: 0,
                    off: 153,
                    ns: 150
                },
            ]))
        );
        assert_eq!(
            line("{\"type\": \"map\", \"data\": {\"@n\": {\"0\": 5, \"3\": 7}}}"),
            Some(Line::Hits(vec![(0, 5), (3, 7)]))
        );
        assert_eq!(
            line("{\"type\": \"map\", \"data\": {\"@other\": 12}}"),
            Some(Line::Others(12))
        );
        assert_eq!(
            line("{\"type\": \"lost_events\", \"data\": {\"events\": 9}}"),
            Some(Line::Lost(9))
        );
        assert_eq!(line(&p("Z")), Some(Line::End));
    }

    #[test]
    fn stray_lines_are_ignored() {
        for l in [
            "",
            "Attaching 9 probes...",
            "{\"type\": \"attached_probes\", \"data\": {\"probes\": 9}}",
            &p("R 1 2"),
            &p("Q 1 2 3"),
            &p("T x"),
            &p("T 5 3"),
            "{\"type\": \"printf\", \"data\": \"A 1 2",
        ] {
            assert_eq!(line(l), None, "{l}");
        }
    }
}
