//! An open loop's rate that cannot be reached, said as the run goes, once its first second
//! shows it: under 90% of the requests due by then have ended. Either the connections cannot
//! carry the rate (each is busy its latency a request, so `c` connections carry at most
//! `c / latency`: raise -c or lower -R), or they could and the generator fell behind. The
//! report says it again at the end, with the whole run's figures
//! ([`crate::recorder::record::warnings_of`]).

use crate::load::Progress;
use crate::model::{LoadModel, Schedule};
use crate::plan::RunPlan;
use crate::recorder::record::connections_carry;
use crate::util::units::human_rate;
use std::time::Duration;

/// How much of the window passes before the rate is judged.
const AFTER: Duration = Duration::from_secs(1);

/// Share of the requests due that must have ended by then.
const REACHED: f64 = 0.9;

/// The check of one run: its offered rate, and whether it has been said.
pub(super) struct Reach {
    /// A constant rate's requests per second (this process's share); `None`: nothing to check.
    rate: Option<f64>,
    connections: u64,
    streams: u64,
    done: bool,
}

impl Reach {
    /// The check of a run of `plan`: an open loop at a constant rate is checked.
    pub(super) fn new(plan: &RunPlan) -> Self {
        let rate = match &plan.load {
            LoadModel::Open {
                schedule: Schedule::Constant { rate },
                ..
            } => Some(rate / plan.segment.count as f64),
            _ => None,
        };
        Reach {
            rate,
            connections: plan.connections() as u64,
            streams: plan.streams() as u64,
            done: false,
        }
    }

    /// `elapsed` into the window, with the workers' `progress`: once the first second is
    /// over, the line that says the rate is out of reach (once), if it is.
    pub(super) fn check(&mut self, elapsed: Duration, progress: &Progress) -> Option<String> {
        let rate = self.rate.filter(|_| !self.done && elapsed >= AFTER)?;
        self.done = true;
        let (ended, _) = progress.totals();
        let (answered, answered_ns) = progress.answered();
        self.judge(rate * elapsed.as_secs_f64(), ended, (answered, answered_ns))
    }

    /// The line for `due` requests due so far at `rate` of which `ended` ended, `answered`
    /// of them in `answered_ns` in all from dispatch to response.
    fn judge(&self, due: f64, ended: u64, (answered, answered_ns): (u64, u64)) -> Option<String> {
        let rate = self.rate?;
        if answered == 0 || ended as f64 >= REACHED * due {
            return None;
        }
        let mean_ns = answered_ns as f64 / answered as f64;
        let (most, carry) = connections_carry(self.connections, self.streams, mean_ns);
        let so_far = format!(
            "{ended} of the {:.0} requests due in the first {:.1}s ended",
            due,
            due / rate
        );
        Some(if rate > most {
            format!(
                "reqlife: {carry}, under the {} req/s asked: raise -c or lower -R ({so_far}; \
                 those due and not sent are counted, their latency taken from their due times)",
                human_rate(rate)
            )
        } else {
            format!(
                "reqlife: the generator is behind its schedule at {} req/s ({so_far}, while \
                 the connections could carry ~{} req/s): use more threads (-t), or a lower rate",
                human_rate(rate),
                human_rate(most)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(rate: f64, connections: u64) -> Reach {
        Reach {
            rate: Some(rate),
            connections,
            streams: 1,
            done: false,
        }
    }

    #[test]
    fn a_rate_out_of_reach_names_the_connections_limit_or_the_generator() {
        // 100M req/s on 2 connections answering in 97 us: 20.6k req/s at most.
        let w = reach(1e8, 2).judge(1e8, 20_000, (20_000, 20_000 * 97_000));
        let w = w.expect("out of reach");
        assert!(
            w.contains("2 connections at 97.00us carry at most ~20.6k req/s, under the 100M req/s asked: raise -c or lower -R"),
            "{w}"
        );
        // 20k req/s on 50 connections that could carry 500k: the generator is behind.
        let w = reach(2e4, 50)
            .judge(2e4, 9_000, (9_000, 9_000 * 100_000))
            .unwrap();
        assert!(w.contains("the generator is behind its schedule"), "{w}");
        // Reached (90% or more ended), or nothing answered (the errors say why): no line.
        assert_eq!(
            reach(1e4, 2).judge(1e4, 9_500, (9_500, 9_500 * 97_000)),
            None
        );
        assert_eq!(reach(1e8, 2).judge(1e8, 100, (0, 0)), None);
        // A closed loop has no rate to reach.
        let closed = Reach {
            rate: None,
            ..reach(1.0, 2)
        };
        assert_eq!(closed.judge(10.0, 0, (1, 1)), None);
    }
}
