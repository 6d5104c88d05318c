//! The flags of what watches a run while it goes (the live view and the metrics endpoint),
//! and their [`WatchPlan`].

use super::{addr_arg, duration_arg};
use clap::Args;
use std::net::SocketAddr;
use std::time::Duration;

/// What watches a run while it goes (`run`, `knee`, `calibrate`): the live terminal view and
/// the Prometheus exporter, both fed from the collector's intervals, never the workers.
#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Serve the run's figures for Prometheus (OpenMetrics text, GET /metrics) on this
    /// address while it runs: HOST:PORT, or a bare PORT (on 127.0.0.1); e.g. 9464.
    #[arg(help_heading = "Output", long = "metrics-addr", value_parser = addr_arg)]
    pub metrics_addr: Option<SocketAddr>,

    /// Keep serving --metrics-addr this long after the run (so that a last scrape sees the
    /// end: at least the scrape interval).
    #[arg(help_heading = "Output", long = "metrics-linger", default_value = "0s", value_parser = duration_arg, requires = "metrics_addr")]
    pub metrics_linger: Duration,

    /// A live terminal view while the run goes on (throughput, errors, latency per interval,
    /// phases, schedule lag, CPU, status codes, time left; a knee search's or a calibration's
    /// steps, the current stage): q stops the run as Ctrl-C does, p pauses the display. Needs
    /// a terminal on stdout; the report prints after it closes.
    #[arg(help_heading = "Output", long = "live")]
    pub live: bool,
}

/// What watches a command's runs, checked: the flags of [`WatchArgs`], the title of the live
/// view and the segment that labels the exporter's series.
#[derive(Debug, Clone)]
pub struct WatchPlan {
    /// `--live`: the terminal view, headed by `title`.
    pub live: bool,
    /// `--metrics-addr`.
    pub metrics_addr: Option<SocketAddr>,
    /// `--metrics-linger`.
    pub metrics_linger: Duration,
    /// The live view's title (the command, the method and the target).
    pub title: String,
    /// `--segment`: the exporter labels its series with it.
    pub segment: Option<crate::model::Segment>,
    /// `-q/--quiet`: no line saying where the exporter listens.
    pub quiet: bool,
}

impl WatchArgs {
    /// The plan of these flags for a command titled `title`.
    pub fn plan(
        &self,
        title: String,
        segment: Option<crate::model::Segment>,
        quiet: bool,
    ) -> WatchPlan {
        WatchPlan {
            live: self.live,
            metrics_addr: self.metrics_addr,
            metrics_linger: self.metrics_linger,
            title,
            segment,
            quiet,
        }
    }
}
