//! bpftrace's output read line by line (the format [`script`](super::script) writes): ticks
//! with their counts, and at the end the probes' hits.

/// A tick's counts: (phase, bucket key, count).
pub type Counts = Vec<(usize, u64, u64)>;

/// What a line of output completed, if anything.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// BEGIN ran.
    Ready,
    /// The calibration's first uprobe fired: every probe is attached.
    Probed,
    /// A tick ended at `ns` (CLOCK_MONOTONIC) with these (phase, bucket key, count).
    Tick {
        /// When the tick ended, nanoseconds of CLOCK_MONOTONIC.
        ns: u64,
        /// (phase index, bucket key, count) of the tick's timed requests.
        counts: Vec<(usize, u64, u64)>,
    },
    /// The end, with each probe index's hits.
    End {
        /// (probe index, hits) of every probe.
        hits: Vec<(usize, u64)>,
    },
}

/// The reader's state between lines.
#[derive(Debug, Default)]
pub struct Reader {
    tick: Option<(u64, Counts)>,
    hits: Vec<(usize, u64)>,
}

/// `@name[a, b]: n` (or `@name[a]: n`) as (name, keys, n).
fn map_line(line: &str) -> Option<(&str, Vec<u64>, u64)> {
    let rest = line.strip_prefix('@')?;
    let (name, rest) = rest.split_once('[')?;
    let (keys, value) = rest.split_once("]:")?;
    let keys = keys
        .split(',')
        .map(|k| k.trim().parse().ok())
        .collect::<Option<Vec<u64>>>()?;
    Some((name, keys, value.trim().parse().ok()?))
}

impl Reader {
    /// Reads one line; what it completed.
    pub fn line(&mut self, line: &str) -> Option<Event> {
        let line = line.trim_end();
        if line == "R" {
            return Some(Event::Ready);
        }
        if line == "U" {
            return Some(Event::Probed);
        }
        if let Some(ns) = line.strip_prefix("T ") {
            self.tick = Some((ns.trim().parse().ok()?, Vec::new()));
            return None;
        }
        if line == "E" {
            let (ns, counts) = self.tick.take()?;
            return Some(Event::Tick { ns, counts });
        }
        if line == "Z" {
            return Some(Event::End {
                hits: std::mem::take(&mut self.hits),
            });
        }
        match map_line(line)? {
            ("h0" | "h1", keys, n) if keys.len() == 2 => {
                if let Some((_, counts)) = &mut self.tick {
                    counts.push((keys[0] as usize, keys[1], n));
                }
            }
            ("n", keys, n) if keys.len() == 1 => self.hits.push((keys[0] as usize, n)),
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_hits_are_read() {
        let mut r = Reader::default();
        let out: Vec<Event> = "Attaching 9 probes...\nR\nU\nT 100\n\nE\nT 200\n@h1[0, 402]: 2\n@h1[3, 17]: 40\nE\nT 300\n@h0[1, 5]: 1\n@h1[1, 5]: 2\nE\n\n@n[0]: 44\n@n[3]: 7\nZ\n"
            .lines()
            .filter_map(|l| r.line(l))
            .collect();
        assert_eq!(
            out,
            vec![
                Event::Ready,
                Event::Probed,
                Event::Tick {
                    ns: 100,
                    counts: vec![]
                },
                Event::Tick {
                    ns: 200,
                    counts: vec![(0, 402, 2), (3, 17, 40)]
                },
                Event::Tick {
                    ns: 300,
                    counts: vec![(1, 5, 1), (1, 5, 2)]
                },
                Event::End {
                    hits: vec![(0, 44), (3, 7)]
                },
            ]
        );
    }

    #[test]
    fn stray_lines_are_ignored() {
        let mut r = Reader::default();
        for l in ["@h0[1, 2]: 3", "E", "@x[1]: y", "T abc", "@n[q]: 1"] {
            assert_eq!(r.line(l), None, "{l}");
        }
    }
}
