//! What a knee search (`reqlife knee`, see `analysis::knee`) leaves in its record: each step's
//! figures and verdict, and the answer. Data only: the search and its rules live in
//! `analysis::knee`, above the record in the layers.

use serde::{Deserialize, Serialize};

/// How one step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every SLO met at the offered rate.
    Pass,
    /// An SLO failed, or the server did not answer at the offered rate.
    Fail,
    /// The generator could not keep its schedule: the client, not the server, is the limit.
    Client,
}

/// One step's figures and verdict, as the record keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeStep {
    /// The rate the step asked for, req/s.
    pub offered_rps: f64,
    /// The rate the server answered, req/s.
    pub achieved_rps: f64,
    /// The step's median total latency, µs; `None` with no response.
    pub p50_us: Option<f64>,
    /// The step's 90th percentile total latency, µs.
    pub p90_us: Option<f64>,
    /// The step's 99th percentile total latency, µs.
    pub p99_us: Option<f64>,
    /// The step's mean total latency, µs.
    pub mean_us: Option<f64>,
    /// Requests that failed during the step.
    pub errors: u64,
    /// How the step went.
    pub verdict: Verdict,
    /// Why it did not pass (the SLOs that failed, the rate not achieved, the generator).
    pub reasons: Vec<String>,
    /// This step repeated the answer to confirm it.
    pub confirmation: bool,
    /// The schedule lag the generator's health was judged on (after the start-up), µs, and
    /// its quantile (`p99`, `p90`, `p50`) and sample count; `None` with too few samples.
    #[serde(default)]
    pub lag_us: Option<f64>,
    /// The quantile of the lag that was judged (`p99`, `p90` or `p50`); `None` with too few
    /// samples.
    #[serde(default)]
    pub lag_quantile: Option<String>,
    /// The lag samples the judgement rests on.
    #[serde(default)]
    pub lag_samples: u64,
    /// The runs of this rate the verdict rests on, their measurements combined: more than 1
    /// when the first one's verdict was undecided (`undecided`) and the step was re-measured.
    #[serde(default = "one")]
    pub measurements: u64,
    /// The SLOs the verdict rests on whose 95% interval held their limit at the last
    /// measurement (with that interval): the step could not tell pass from fail there, and is
    /// judged by the measured figures. Empty when the verdict is decided.
    #[serde(default)]
    pub undecided: Vec<String>,
}

/// A step of an older record was measured once.
fn one() -> u64 {
    1
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeResult {
    /// The SLOs every step was judged by, as given (`p99<50ms`).
    pub slos: Vec<String>,
    /// The search's precision: it stops when the bounds are this close, as a fraction of the rate.
    pub precision: f64,
    /// The highest rate that met every SLO (and held when repeated), req/s.
    pub answer_rps: Option<f64>,
    /// The answer held when its step was repeated.
    pub confirmed: bool,
    /// `server` (a step above the answer failed its SLOs), `client` (the generator could not
    /// go higher), or `max` (the search reached --max-rate).
    pub limited_by: String,
    /// Every step, in the order the search ran them.
    pub steps: Vec<KneeStep>,
    /// The answer in plain words.
    pub summary: String,
}
