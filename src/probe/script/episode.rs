//! `--server-sample N`: what the kernel's probes add to follow a connection's events in
//! sampled episodes (drawn at an arrival, over once the server has read what came before and
//! written since).

use super::ScriptPlan;
use crate::probe::bpf::Builder;

/// The parts of the kernel's probes that follow sampled episodes (see [`ScriptPlan`]).
pub(super) struct Episode {
    /// At an arrival: ends the episode and draws the next.
    pub draw: String,
    /// Whether the connection `$p` is in an episode (a condition).
    pub active: String,
    /// At a write and a read: where the episode's last ended.
    pub write_mark: String,
    pub read_mark: String,
}

impl ScriptPlan {
    /// What a probe adds to follow episodes (`--server-sample N`), empty when every request
    /// is followed.
    pub(super) fn episode(&self, b: &mut Builder) -> Episode {
        let sampled = self.sample > 1;
        // The episode of a sampled connection: drawn at an arrival; over at a later arrival
        // once the server has read all that came before it and written in the episode. Not
        // at the client's arrival: on loopback that fires inside the server's send, before the
        // send's own event, which the episode would then miss.
        let (draw, active, write_mark) = if sampled {
            let (act, rend, wend) = (b.map("act"), b.map("rend"), b.map("wend"));
            (
                format!(
                    "if ({act}[$p] && {wend}[$p] && {rend}[$p] >= $v) {{ delete({act}[$p]); }}
      if ({act}[$p] == 0 && rand % {} == 0) {{ {act}[$p] = 1; delete({wend}[$p]); }}
      ",
                    self.sample
                ),
                format!("{act}[$p]"),
                format!("{wend}[$p] = $e; "),
            )
        } else {
            (String::new(), "1".to_string(), String::new())
        };
        let read_mark = if sampled {
            format!("{}[$p] = $o; ", b.map("rend"))
        } else {
            String::new()
        };
        Episode {
            draw,
            active,
            write_mark,
            read_mark,
        }
    }
}
