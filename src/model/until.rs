//! `--until`: how precise a run must become before it stops (its `-d`/`-n` the cap). One target
//! is a printed percentile of a phase and the largest half-width of its 95% interval, as a share
//! of the percentile (`p99:5%`, `wait.p99.9:10%`); a run stops once every target is met.

use super::Phase;

/// The percentiles that have intervals (the printed ones), by name, with their quantiles.
pub const PERCENTILES: [(&str, f64); 5] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p99", 0.99),
    ("p99.9", 0.999),
    ("p99.99", 0.9999),
];

/// One target of `--until`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Until {
    /// The phase whose percentile is meant (`total` unless named).
    pub phase: Phase,
    /// The percentile's name (`p99`), one of [`PERCENTILES`].
    pub percentile: &'static str,
    /// Its quantile (0.99).
    pub quantile: f64,
    /// The largest half-width of the interval, a share of the percentile (0.05 for 5%).
    pub share: f64,
}

impl Until {
    /// Reads `[PHASE.]pNN:SHARE%`; what is wrong, in words, when it is not one.
    pub fn parse(text: &str) -> Result<Until, String> {
        let expect = "expected [PHASE.]PERCENTILE:SHARE%, e.g. p99:5% or wait.p99.9:10%";
        let Some((figure, share)) = text.trim().split_once(':') else {
            return Err(format!("'{text}' has no ':SHARE%': {expect}"));
        };
        let (phase, percentile) = match figure.split_once('.') {
            Some((phase, rest)) if phase.starts_with('p') && phase[1..].parse::<u8>().is_ok() => {
                (Phase::Total, format!("{phase}.{rest}"))
            }
            Some((phase, rest)) => (phase_named(phase)?, rest.to_string()),
            None => (Phase::Total, figure.to_string()),
        };
        let Some(&(percentile, quantile)) = PERCENTILES.iter().find(|(n, _)| *n == percentile)
        else {
            let names: Vec<&str> = PERCENTILES.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "'{percentile}' is not a percentile with an interval: {} are",
                names.join(", ")
            ));
        };
        let share = share_of(share.trim())?;
        Ok(Until {
            phase,
            percentile,
            quantile,
            share,
        })
    }
}

/// A phase with times by its name (not `events`, a count per response).
fn phase_named(name: &str) -> Result<Phase, String> {
    match Phase::from_name(name) {
        Some(p) if p != Phase::Events => Ok(p),
        _ => Err(format!(
            "'{name}' is not a phase with times: total, wait, connect, lag and the others `reqlife run --help` lists under phases are"
        )),
    }
}

/// `5%` as 0.05: more than 0 and less than 100%.
fn share_of(text: &str) -> Result<f64, String> {
    let Some(number) = text.strip_suffix('%') else {
        return Err(format!(
            "the share '{text}' needs a % sign: the interval's half-width as a share of the percentile, e.g. 5%"
        ));
    };
    match number.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v < 100.0 => Ok(v / 100.0),
        _ => Err(format!(
            "the share '{text}' must be more than 0% and less than 100% (e.g. 5%)"
        )),
    }
}

impl std::fmt::Display for Until {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.phase != Phase::Total {
            write!(f, "{}.", self.phase.name())?;
        }
        write!(f, "{}:{}%", self.percentile, self.share * 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_back_as_written() {
        for text in [
            "p99:5%",
            "p99.9:10%",
            "wait.p99:2.5%",
            "connect.p50:1%",
            "p99.99:50%",
        ] {
            let u = Until::parse(text).unwrap();
            assert_eq!(u.to_string(), text);
        }
        let u = Until::parse("wait.p99.9:10%").unwrap();
        assert_eq!((u.phase, u.quantile, u.share), (Phase::Wait, 0.999, 0.1));
    }

    #[test]
    fn what_is_not_a_target_is_named() {
        for (text, says) in [
            ("p99", "no ':SHARE%'"),
            ("p98:5%", "'p98' is not a percentile"),
            ("p100:5%", "'p100' is not a percentile"),
            ("bogus.p99:5%", "'bogus' is not a phase"),
            ("events.p99:5%", "'events' is not a phase"),
            ("p99:0%", "more than 0%"),
            ("p99:100%", "less than 100%"),
            ("p99:5", "needs a % sign"),
            ("p99:x%", "more than 0%"),
        ] {
            let e = Until::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
