//! bpftrace's output read line by line (`-f json`: one JSON object a line) into what the
//! script ([`super::script`]) printed: the kernel's events, the probes' readiness, and at
//! the end each probe's hits. A `printf` line is read without a JSON parser (the script's
//! lines hold no quotes), anything else with one.

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
    let kind = f.next()?;
    let mut num = || -> Option<u64> { f.next()?.parse().ok() };
    let event = match kind {
        "B" => return Some(Line::Ready),
        "U" => return Some(Line::Probed),
        "K" => return Some(Line::Calibration),
        "Z" => return Some(Line::End),
        "O" => KernelEvent::Opened {
            port: num()? as u16,
            ns: num()?,
        },
        "A" | "C" => {
            let (port, prev, off, ns) = (num()? as u16, num()?, num()?, num()?);
            if kind == "A" {
                KernelEvent::Arrived {
                    port,
                    prev,
                    off,
                    ns,
                }
            } else {
                KernelEvent::Delivered {
                    port,
                    prev,
                    off,
                    ns,
                }
            }
        }
        "R" => {
            let (port, start, off, ns, pid, key) =
                (num()? as u16, num()?, num()?, num()?, num()? as u32, num()?);
            KernelEvent::Read {
                port,
                start,
                off,
                ns,
                pid,
                key,
            }
        }
        "W" => KernelEvent::Wrote {
            port: num()? as u16,
            start: num()?,
            end: num()?,
            ns: num()?,
            pid: num()? as u32,
        },
        "F" => KernelEvent::Function {
            index: num()? as u16,
            key: num()?,
            ns: num()?,
        },
        "T" => KernelEvent::Tick { ns: num()? },
        _ => return None,
    };
    Some(Line::Event(event))
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
            line(&p("A 40000 0 80 123")),
            Some(Line::Event(KernelEvent::Arrived {
                port: 40000,
                prev: 0,
                off: 80,
                ns: 123
            }))
        );
        assert_eq!(
            line(&p("R 40000 0 80 130 77 78")),
            Some(Line::Event(KernelEvent::Read {
                port: 40000,
                start: 0,
                off: 80,
                ns: 130,
                pid: 77,
                key: 78
            }))
        );
        assert_eq!(
            line(&p("W 40000 0 153 140 77")),
            Some(Line::Event(KernelEvent::Wrote {
                port: 40000,
                start: 0,
                end: 153,
                ns: 140,
                pid: 77
            }))
        );
        assert_eq!(
            line(&p("F 1 78 135")),
            Some(Line::Event(KernelEvent::Function {
                index: 1,
                key: 78,
                ns: 135
            }))
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
            &p("A x 1 2 3"),
            "{\"type\": \"printf\", \"data\": \"A 1 2",
        ] {
            assert_eq!(line(l), None, "{l}");
        }
    }
}
