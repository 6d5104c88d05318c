//! How a run ended, typed: [`StopReason`].

/// How a run (or one step of a command) ended. A record writes it as text, the same text as
/// ever (`duration`, `interrupted (SIGINT)`, `fail fast: refused`, …), and reads any text back
/// (one it does not know, from another version, is kept as [`StopReason::Other`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The duration (`-d`) ended.
    Duration,
    /// The request count (`-n`) was reached.
    Requests,
    /// A signal stopped it: SIGINT or SIGTERM (`None`: a command that does not say which).
    Interrupted(Option<i32>),
    /// The user stopped it from the live view (`q`, Esc or Ctrl-C there): their choice, not a
    /// signal.
    Quit,
    /// `--abort-on-fail`: this threshold failed on what was measured so far.
    ThresholdLost(String),
    /// The fail-fast rule: every connection failed with this cause before any request
    /// succeeded.
    FailFast(String),
    /// A knee search's record (its steps each ended by their duration).
    KneeSearch,
    /// `compare --run`'s rounds.
    Interleaved,
    /// `--until`: every percentile named became that precise before the cap.
    Precise,
    /// Text this version does not know.
    Other(String),
}

impl StopReason {
    const THRESHOLD_LOST: &'static str = "threshold lost: ";
    const FAIL_FAST: &'static str = "fail fast: ";
    const QUIT: &'static str = "stopped in the live view";
    const PRECISE: &'static str = "precise (--until)";

    /// The first words of the report's line on a run that did not run its course:
    /// `INTERRUPTED by SIGINT`, `STOPPED in the live view (q)`; `None` for one that did.
    pub fn cut_short(&self) -> Option<String> {
        match self {
            StopReason::Interrupted(Some(libc::SIGINT)) => Some("INTERRUPTED by SIGINT".into()),
            StopReason::Interrupted(Some(libc::SIGTERM)) => Some("INTERRUPTED by SIGTERM".into()),
            StopReason::Interrupted(_) => Some("INTERRUPTED".into()),
            StopReason::Quit => Some("STOPPED in the live view (q)".into()),
            _ => None,
        }
    }

    /// The reason as a record writes it.
    pub fn text(&self) -> String {
        match self {
            StopReason::Duration => "duration".into(),
            StopReason::Requests => "requests".into(),
            StopReason::Interrupted(Some(libc::SIGINT)) => "interrupted (SIGINT)".into(),
            StopReason::Interrupted(Some(libc::SIGTERM)) => "interrupted (SIGTERM)".into(),
            StopReason::Interrupted(_) => "interrupted".into(),
            StopReason::Quit => Self::QUIT.into(),
            StopReason::ThresholdLost(t) => format!("{}{t}", Self::THRESHOLD_LOST),
            StopReason::FailFast(cause) => format!("{}{cause}", Self::FAIL_FAST),
            StopReason::KneeSearch => "knee search".into(),
            StopReason::Interleaved => "compare --run".into(),
            StopReason::Precise => Self::PRECISE.into(),
            StopReason::Other(t) => t.clone(),
        }
    }

    /// The reason a record's text names.
    pub fn parse(text: &str) -> StopReason {
        match text {
            "duration" => StopReason::Duration,
            "requests" => StopReason::Requests,
            "interrupted (SIGINT)" => StopReason::Interrupted(Some(libc::SIGINT)),
            "interrupted (SIGTERM)" => StopReason::Interrupted(Some(libc::SIGTERM)),
            "interrupted" => StopReason::Interrupted(None),
            Self::QUIT => StopReason::Quit,
            "knee search" => StopReason::KneeSearch,
            "compare --run" => StopReason::Interleaved,
            Self::PRECISE => StopReason::Precise,
            t => match (
                t.strip_prefix(Self::THRESHOLD_LOST),
                t.strip_prefix(Self::FAIL_FAST),
            ) {
                (Some(expr), _) => StopReason::ThresholdLost(expr.to_string()),
                (_, Some(cause)) => StopReason::FailFast(cause.to_string()),
                _ => StopReason::Other(t.to_string()),
            },
        }
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl serde::Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text())
    }
}

impl<'de> serde::Deserialize<'de> for StopReason {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(StopReason::parse(&text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_read_back_as_written() {
        for r in [
            StopReason::Duration,
            StopReason::Requests,
            StopReason::Interrupted(Some(libc::SIGINT)),
            StopReason::Interrupted(Some(libc::SIGTERM)),
            StopReason::Interrupted(None),
            StopReason::Quit,
            StopReason::ThresholdLost("p99<1ms".into()),
            StopReason::FailFast("refused".into()),
            StopReason::KneeSearch,
            StopReason::Interleaved,
            StopReason::Precise,
            StopReason::Other("made by a later version".into()),
        ] {
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(
                serde_json::from_str::<StopReason>(&json).unwrap(),
                r,
                "{json}"
            );
        }
        assert_eq!(
            serde_json::to_string(&StopReason::Interrupted(Some(libc::SIGINT))).unwrap(),
            "\"interrupted (SIGINT)\""
        );
    }
}
