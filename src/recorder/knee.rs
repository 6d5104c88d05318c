//! What a knee search (`reqlife knee`, see `analysis::knee`) leaves in its record: each step's
//! figures and verdict, and the answer. Data only: the search and its rules live in
//! `analysis::knee`, above the record in the layers.

use serde::{Deserialize, Serialize};

/// How one step went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    /// An SLO failed, or the server did not answer at the offered rate.
    Fail,
    /// The generator could not keep its schedule: the client, not the server, is the limit.
    Client,
}

/// One step's figures and verdict, as the record keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeStep {
    pub offered_rps: f64,
    pub achieved_rps: f64,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub mean_us: Option<f64>,
    pub errors: u64,
    pub verdict: Verdict,
    /// Why it did not pass (the SLOs that failed, the rate not achieved, the generator).
    pub reasons: Vec<String>,
    /// This step repeated the answer to confirm it.
    pub confirmation: bool,
    /// The schedule lag the generator's health was judged on (after the start-up), µs, and
    /// its quantile (`p99`, `p90`, `p50`) and sample count; `None` with too few samples.
    #[serde(default)]
    pub lag_us: Option<f64>,
    #[serde(default)]
    pub lag_quantile: Option<String>,
    #[serde(default)]
    pub lag_samples: u64,
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KneeResult {
    pub slos: Vec<String>,
    pub precision: f64,
    /// The highest rate that met every SLO (and held when repeated), req/s.
    pub answer_rps: Option<f64>,
    pub confirmed: bool,
    /// `server` (a step above the answer failed its SLOs), `client` (the generator could not
    /// go higher), or `max` (the search reached --max-rate).
    pub limited_by: String,
    pub steps: Vec<KneeStep>,
    /// The answer in plain words.
    pub summary: String,
}
