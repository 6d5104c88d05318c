//! The one load builder: what the user asked for, from the command line's flags or from a
//! scenario's phase, as a [`LoadSpec`] (each value with where it was given), checked by one
//! set of rules into a [`Load`] (the load model and the stop rule). The two sources differ
//! only in the names of their values (`-c/--connections` or `connections`, see [`Names`]) and
//! in what happens when no length is given: the command line falls back to its defaults (10
//! seconds; 10 bursts), a scenario's phase must say how long it lasts ([`LoadSpec::fallback`]).

use super::{Arrival, ConnStage, LoadKind, LoadModel, RateStage, Schedule, StopRule};
use crate::util::limits::MAX_CONNECTIONS;
use crate::util::units::StagesSpec;
use std::time::Duration;

/// Connections when none are given.
pub const DEFAULT_CONNECTIONS: u64 = 50;
/// The pause between bursts when none is given.
pub const DEFAULT_BURST_INTERVAL: Duration = Duration::from_millis(10);

/// A value as the user gave it, with where (a byte offset in a scenario file; `None` on the
/// command line) for the error's line and column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Given<T> {
    /// The value.
    pub value: T,
    /// Its byte offset in the scenario file; `None` for a flag on the command line.
    pub at: Option<usize>,
}

impl<T> Given<T> {
    /// A value from the command line.
    pub fn flag(value: T) -> Self {
        Given { value, at: None }
    }
}

/// What a source calls each value, for the messages.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// The name of the connection count (`-c/--connections` or `connections`).
    pub connections: &'static str,
    /// The name of the open loop's rate.
    pub rate: &'static str,
    /// The name of the stages of ramps and holds.
    pub stages: &'static str,
    /// The name of the arrival process.
    pub arrival: &'static str,
    /// The name of the request count.
    pub count: &'static str,
    /// The name of the run's duration.
    pub duration: &'static str,
    /// The name of the burst size.
    pub burst: &'static str,
    /// The name of the pause between bursts.
    pub burst_interval: &'static str,
    /// The name of the number of bursts.
    pub bursts: &'static str,
    /// An example of a rate as written there.
    pub rate_example: &'static str,
}

/// The command line's names.
pub const FLAGS: Names = Names {
    connections: "-c/--connections",
    rate: "-R/--rate",
    stages: "--stages",
    arrival: "--arrival",
    count: "-n/--requests",
    duration: "-d/--duration",
    burst: "--burst",
    burst_interval: "--burst-interval",
    bursts: "--bursts",
    rate_example: "-R 1000",
};

/// A scenario phase's keys.
pub const SCENARIO: Names = Names {
    connections: "connections",
    rate: "rate",
    stages: "stages",
    arrival: "arrival",
    count: "count",
    duration: "duration",
    burst: "burst",
    burst_interval: "burst_interval",
    bursts: "bursts",
    rate_example: "rate = \"1k\"",
};

/// The length of a run that gives none.
#[derive(Debug, Clone, Copy)]
pub struct Fallback {
    /// The duration of a run that gives neither a count nor a duration.
    pub duration: Duration,
    /// The number of bursts of a burst run that gives no length.
    pub bursts: u64,
}

/// What the user asked for; `None`: not given.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// What the source calls each value, for the messages.
    pub names: Names,
    /// Connections (a closed loop's, or the open loop's pool).
    pub connections: Option<Given<u64>>,
    /// An open loop's fixed rate, in requests per second.
    pub rate: Option<Given<f64>>,
    /// An open loop's stages of ramps and holds (rates), or a closed loop's (connections).
    pub stages: Option<Given<StagesSpec>>,
    /// An arrival process the user chose (the command line passes only a non-default one).
    pub arrival: Option<Given<Arrival>>,
    /// Stop after this many requests.
    pub count: Option<Given<u64>>,
    /// Stop after this long.
    pub duration: Option<Given<Duration>>,
    /// A burst run's requests per burst.
    pub burst: Option<Given<u64>>,
    /// The pause between bursts.
    pub burst_interval: Option<Given<Duration>>,
    /// The number of bursts.
    pub bursts: Option<Given<u64>>,
    /// The length when none is given; `None`: giving none is an error.
    pub fallback: Option<Fallback>,
}

/// A checked load: the model and when the run stops.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The shape of the load.
    pub model: LoadModel,
    /// When the run stops.
    pub stop: StopRule,
}

/// Bad input: the message names the values as the user wrote them; `at` is where. A usage
/// error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LoadError {
    /// What is wrong, naming the values as the user wrote them.
    pub message: String,
    /// The byte offset in the scenario file where the bad value is; `None` on the command line.
    pub at: Option<usize>,
}

crate::util::exit::exit_code!(crate::util::exit::EXIT_USAGE => LoadError);

impl LoadSpec {
    /// An empty spec (nothing given) with a source's names and fallback.
    pub fn new(names: Names, fallback: Option<Fallback>) -> Self {
        LoadSpec {
            names,
            connections: None,
            rate: None,
            stages: None,
            arrival: None,
            count: None,
            duration: None,
            burst: None,
            burst_interval: None,
            bursts: None,
            fallback,
        }
    }

    /// Checks the spec into a load, by the one set of rules.
    pub fn build(&self) -> Result<Load, LoadError> {
        let n = &self.names;
        let connections = self.connections()?;
        let stop = self.stop_rule()?;
        if self.burst.is_none() {
            if let Some(at) = at_of(&self.burst_interval).or(at_of(&self.bursts)) {
                let key = if self.burst_interval.is_some() {
                    n.burst_interval
                } else {
                    n.bursts
                };
                return fail(at, format!("{key} applies to bursts: give {} too", n.burst));
            }
        }
        let arrival = self.arrival.map_or(Arrival::Constant, |a| a.value);
        let load = if let Some(stages) = &self.stages {
            self.staged(stages, arrival)?
        } else if let Some(burst) = self.burst {
            self.bursts(burst, stop)?
        } else {
            let stop = match (stop, self.fallback) {
                (Some(stop), _) => stop,
                (None, Some(f)) => StopRule::Duration(f.duration),
                (None, None) => return self.no_stop(),
            };
            let model = match self.rate {
                Some(r) if r.value <= 0.0 || !r.value.is_finite() => {
                    return fail(
                        r.at,
                        format!(
                            "{} must be more than 0 requests per second (e.g. {})",
                            n.rate, n.rate_example
                        ),
                    )
                }
                Some(r) if r.value > 1e9 => {
                    return fail(r.at, format!("{} is too high: at most 1G/s", n.rate))
                }
                Some(r) => LoadModel::Open {
                    schedule: Schedule::Constant { rate: r.value },
                    arrival,
                    connections,
                },
                None => LoadModel::Closed { connections },
            };
            Load { model, stop }
        };
        if let Some(a) = self.arrival.filter(|_| load.model.kind() != LoadKind::Open) {
            return fail(
                a.at,
                format!(
                    "{} applies to an open loop: give {} or rate {} too",
                    n.arrival, n.rate, n.stages
                ),
            );
        }
        Ok(load)
    }

    fn connections(&self) -> Result<usize, LoadError> {
        let n = &self.names;
        match self.connections {
            None => Ok(DEFAULT_CONNECTIONS as usize),
            Some(c) if c.value == 0 => fail(c.at, format!("{} must be at least 1", n.connections)),
            Some(c) if c.value > MAX_CONNECTIONS => fail(
                c.at,
                format!(
                    "{} {} is too many: at most {MAX_CONNECTIONS}",
                    n.connections, c.value
                ),
            ),
            Some(c) => Ok(c.value as usize),
        }
    }

    /// The stop rule given (a count or a duration), if any.
    fn stop_rule(&self) -> Result<Option<StopRule>, LoadError> {
        let n = &self.names;
        match (self.count, self.duration) {
            (Some(_), Some(d)) => fail(
                d.at,
                format!("{} and {} conflict: give one of them", n.count, n.duration),
            ),
            (Some(c), None) if c.value == 0 => {
                fail(c.at, format!("{} must be at least 1", n.count))
            }
            (Some(c), None) => Ok(Some(StopRule::Requests(c.value))),
            (None, Some(d)) if d.value.is_zero() => {
                fail(d.at, format!("{} must be more than 0", n.duration))
            }
            (None, Some(d)) => Ok(Some(StopRule::Duration(d.value))),
            (None, None) => Ok(None),
        }
    }

    /// Rate stages (an open loop) or connection stages (a closed loop); they set the length.
    fn staged(&self, stages: &Given<StagesSpec>, arrival: Arrival) -> Result<Load, LoadError> {
        let n = &self.names;
        for (key, at) in [
            (n.rate, at_of(&self.rate)),
            (n.count, at_of(&self.count)),
            (n.duration, at_of(&self.duration)),
            (n.burst, at_of(&self.burst)),
        ] {
            if let Some(at) = at {
                return fail(
                    at,
                    format!(
                        "{} and {key} conflict: the stages set the load and the length",
                        n.stages
                    ),
                );
            }
        }
        match &stages.value {
            StagesSpec::Rates(st) => {
                let stages: Vec<RateStage> = st
                    .iter()
                    .map(|&(duration, from_rps, to_rps)| RateStage {
                        duration,
                        from_rps,
                        to_rps,
                    })
                    .collect();
                let total = stages.iter().map(|s| s.duration).sum();
                Ok(Load {
                    model: LoadModel::Open {
                        schedule: Schedule::Stages(stages),
                        arrival,
                        connections: self.connections()?,
                    },
                    stop: StopRule::Duration(total),
                })
            }
            StagesSpec::Connections(st) => {
                if let Some(at) = at_of(&self.connections) {
                    return fail(
                        at,
                        format!(
                            "connection stages set the connections: drop {}",
                            n.connections
                        ),
                    );
                }
                if st.iter().all(|&(_, a, b)| a.max(b) == 0) {
                    return fail(
                        stages.at,
                        format!(
                            "{} must reach at least 1 connection (e.g. '10s:1->50c')",
                            n.stages
                        ),
                    );
                }
                let stages: Vec<ConnStage> = st
                    .iter()
                    .map(|&(duration, from, to)| ConnStage {
                        duration,
                        from: from as usize,
                        to: to as usize,
                    })
                    .collect();
                let total = stages.iter().map(|s| s.duration).sum();
                Ok(Load {
                    model: LoadModel::ClosedStages(stages),
                    stop: StopRule::Duration(total),
                })
            }
        }
    }

    /// Bursts of `size` requests; they run for the duration given, else for their count.
    fn bursts(&self, size: Given<u64>, stop: Option<StopRule>) -> Result<Load, LoadError> {
        let n = &self.names;
        for (key, at) in [(n.rate, at_of(&self.rate)), (n.count, at_of(&self.count))] {
            if let Some(at) = at {
                return fail(
                    at,
                    format!(
                        "{} and {key} conflict: bursts set their own pace (use {} for a count)",
                        n.burst, n.bursts
                    ),
                );
            }
        }
        if size.value == 0 {
            return fail(size.at, format!("{} must be at least 1 request", n.burst));
        }
        let given = match self.bursts {
            Some(b) if b.value == 0 => {
                return fail(b.at, format!("{} must be at least 1", n.bursts))
            }
            other => other.map(|b| b.value),
        };
        let (bursts, stop) = match (stop, given, self.fallback) {
            (Some(stop), bursts, _) => (bursts, stop),
            (None, Some(b), _) => (Some(b), StopRule::Requests(b.saturating_mul(size.value))),
            (None, None, Some(f)) => (
                Some(f.bursts),
                StopRule::Requests(f.bursts.saturating_mul(size.value)),
            ),
            (None, None, None) => return self.no_stop(),
        };
        Ok(Load {
            model: LoadModel::Burst {
                size: size.value as usize,
                interval: self
                    .burst_interval
                    .map_or(DEFAULT_BURST_INTERVAL, |i| i.value),
                bursts,
            },
            stop,
        })
    }

    fn no_stop<T>(&self) -> Result<T, LoadError> {
        let n = &self.names;
        fail(
            None,
            format!(
                "no stop rule: give {} = N, {} = \"30s\", {} = \"...\" or (with {}) {} = N",
                n.count, n.duration, n.stages, n.burst, n.bursts
            ),
        )
    }
}

impl LoadModel {
    /// The most connections the load holds at any time.
    pub fn connections(&self) -> usize {
        match self {
            LoadModel::Closed { connections } | LoadModel::Open { connections, .. } => *connections,
            LoadModel::Burst { size, .. } => *size,
            LoadModel::ClosedStages(stages) => {
                stages.iter().map(|s| s.from.max(s.to)).max().unwrap_or(1)
            }
        }
    }
}

/// Where a given value was given (`None` when not given).
fn at_of<T>(v: &Option<Given<T>>) -> Option<Option<usize>> {
    v.as_ref().map(|g| g.at)
}

fn fail<T>(at: Option<usize>, message: String) -> Result<T, LoadError> {
    Err(LoadError { message, at })
}

#[cfg(test)]
mod tests;
