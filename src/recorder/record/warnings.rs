//! The warnings a record's figures call for, in plain words, so that nobody mistakes the
//! client's limit for the server's.

use super::{Interval, RunRecord};
use crate::model::{LoadKind, Phase, StopReason};
use crate::util::units::{counted, human_ns, human_rate};

/// Schedule lag (p99) above which the generator is said to have fallen behind.
pub const LAG_WARN_US: f64 = 1000.0;
/// Thread CPU share above which a worker is said to be saturated.
pub const BUSY_WARN: f64 = 0.95;
/// Thread CPU share above which the generator is said to be near its limit.
pub const BUSY_NEAR: f64 = 0.85;
/// Schedule lag (p99) above which the generator is said to be near its limit.
pub const LAG_NEAR_US: f64 = 500.0;

/// Warnings in plain words, so that nobody mistakes the client's limit for the server's.
pub fn warnings_of(r: &RunRecord) -> Vec<String> {
    warnings_judged(r, Generator::ByRun)
}

/// The warnings of one step of `reqlife knee`: as [`warnings_of`], except that the
/// generator's health is the one the knee judged by its own rule (`analysis::knee::judge`:
/// the lag after the step's start-up at a quantile its samples support, a saturated worker),
/// not the run's rule, which a step of a few hundred requests fails on one late timer.
/// `health`: what the knee found when it blamed the step on the generator; empty when it did
/// not (then nothing is said of the generator: the step's row says the rest).
pub fn step_warnings(r: &RunRecord, health: &[String]) -> Vec<String> {
    warnings_judged(r, Generator::Judged(health))
}

/// Who judges the generator's health in a record's warnings.
#[derive(Clone, Copy)]
enum Generator<'a> {
    /// The run's rule: the lag p99 (of the run, or of some intervals), the busiest worker.
    ByRun,
    /// Judged already (a knee step): what was found, empty when healthy.
    Judged(&'a [String]),
}

fn warnings_judged(r: &RunRecord, generator: Generator) -> Vec<String> {
    let s = &r.summary;
    let mut out = Vec::new();
    if matches!(r.stop_reason, StopReason::FailFast(_)) {
        // Stopped within moments, every connection failing: the figures describe nothing
        // (the busy share of a few milliseconds, connects cut short); the error says why.
        return out;
    }
    // First: the figures after it describe a server that was no longer there.
    out.extend(stopped_answering(r));
    if let Some(p) = &s.server_probes {
        out.extend(p.warnings());
    }
    if s.latency.total.clamped > 0 {
        out.push(format!(
            "{} took an hour or more, beyond the histograms' range: they are counted at one \
             hour, so the highest percentiles and the max are at least that",
            counted(s.latency.total.clamped, "request")
        ));
    }
    let open = r.config.load_model == LoadKind::Open;
    match generator {
        Generator::ByRun => out.extend(generator_warnings(r)),
        Generator::Judged([]) if open => out.extend(queue_warning(r).or_else(|| shortfall(r))),
        Generator::Judged([]) => {}
        Generator::Judged(health) => out.push(format!(
            "the client, not the server, limited this step: {}{}: use more threads (-t) or more \
             generators",
            health.join("; "),
            shortfall(r).map(|f| format!(" ({f})")).unwrap_or_default()
        )),
    }
    let e = &s.end;
    if e.in_flight > 0 {
        // A run stopped early has no drain: --drain would not have helped.
        let (when, fix) = match (&r.stop_reason, r.interrupted) {
            (StopReason::Quit, _) => ("when you stopped the run", ""),
            (_, true) => ("when the run was interrupted", ""),
            _ => (
                "when the drain ended",
                "; give them longer with --drain (or --timeout)",
            ),
        };
        let after = match r.interrupted {
            true => String::new(),
            false => format!(" ({:.2}s after the window)", e.drain_s),
        };
        out.push(format!(
            "{} still in flight {when}{after}: their latency is missing from the figures, and \
             they are likely the slowest{fix}",
            match e.in_flight {
                1 => "1 request was".to_string(),
                n => format!("{n} requests were"),
            }
        ));
    }
    out.extend(http_errors_warning(r));
    let ports = s.errors.get("addr_not_avail").copied().unwrap_or(0);
    if ports > 0 {
        out.push(format!(
            "{} failed with 'Cannot assign requested address': the local ports ran out. \
             Reuse connections (drop --no-keepalive), open fewer per second (--max-connections-per-second), \
             or widen net.ipv4.ip_local_port_range",
            counted(ports, "connection")
        ));
    }
    out
}

/// The generator's health by the run's rule (README, "When the generator cannot keep up"):
/// the open loop's schedule, then the busiest worker thread.
fn generator_warnings(r: &RunRecord) -> Vec<String> {
    let s = &r.summary;
    let mut out = Vec::new();
    if r.config.load_model == LoadKind::Open {
        out.extend(open_loop_warning(r));
    }
    let busiest = s.generator.thread_busy.iter().cloned().fold(0.0, f64::max);
    let busy = FlaggedIntervals::busy(r, BUSY_WARN);
    if busiest > BUSY_WARN {
        out.push(format!(
            "a worker thread was on a CPU {:.0}% of the run: the client may be the bottleneck; \
             figures near this limit describe the generator as much as the server",
            busiest * 100.0
        ));
    } else if busy.count > 0 {
        out.push(format!(
            "a worker thread was on a CPU over {:.0}% of the time{}: the figures of those \
             intervals describe the generator as much as the server; add threads (-t)",
            BUSY_WARN * 100.0,
            busy.named()
        ));
    } else if busiest > BUSY_NEAR {
        out.push(format!(
            "a worker thread was on a CPU {:.0}% of the run: the generator is near its limit; \
             `reqlife calibrate` shows what this machine can generate, or add threads (-t)",
            busiest * 100.0
        ));
    }
    out
}

/// When responses came back but every one had an HTTP error status (not 2xx or 3xx): the
/// statuses, named, and where to look (`every response was 404 Not Found: check the URL's
/// path`).
pub fn http_errors_warning(r: &RunRecord) -> Option<String> {
    let s = &r.summary;
    if s.requests.ok == 0 || s.requests.non_2xx_3xx < s.requests.ok {
        return None;
    }
    let named = |code: &str| {
        let reason = code
            .parse::<u16>()
            .ok()
            .and_then(|c| http::StatusCode::from_u16(c).ok())
            .and_then(|c| c.canonical_reason());
        match reason {
            Some(reason) => format!("{code} {reason}"),
            None => code.to_string(),
        }
    };
    let codes: Vec<(&String, &u64)> = s.status.iter().filter(|(_, n)| **n > 0).collect();
    if let [(code, _)] = codes[..] {
        let hint = match code.as_str() {
            "404" | "410" => "check the URL's path",
            "400" => "check the request: method, headers and body (-m, -H, --body)",
            "401" | "403" => "the server wants credentials: add them with -H 'Authorization: ...'",
            "405" => "check the method (-m)",
            "415" | "422" => "check the body and its Content-Type (--body, -H)",
            "429" => "the server limits the rate: lower -c or -R",
            c if c.starts_with('5') => "the server failed every request: check its logs",
            _ => "check the URL and the request",
        };
        return Some(format!("every response was {}: {hint}", named(code)));
    }
    let list: Vec<String> = codes
        .iter()
        .map(|(code, n)| format!("{} ({n})", named(code)))
        .collect();
    Some(format!(
        "every response was an HTTP error: {}; check the URL and the request",
        list.join(", ")
    ))
}

/// Who limited an open loop, by the run's rule ([`open_loop_limit`]): the one rule behind the
/// report's warning and the validity's `client` check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenLoopLimit {
    /// Requests waited for a free connection, and the connections could not carry the rate
    /// offered (the client's pool: raise -c).
    Pool,
    /// Requests waited for a free connection while the generator kept its schedule: the
    /// server did not keep up.
    Server,
    /// The generator fell behind its schedule: lag p99 beyond the pacer's slack over
    /// [`LAG_WARN_US`].
    Behind,
    /// The generator fell behind in some intervals (their lag p99 over the bound).
    BehindInPart,
    /// The generator is near its limit: lag p99 beyond the slack over [`LAG_NEAR_US`].
    Near,
}

impl OpenLoopLimit {
    /// The client, not the server, limited the run (or part of it).
    pub fn is_client(self) -> bool {
        matches!(
            self,
            OpenLoopLimit::Pool | OpenLoopLimit::Behind | OpenLoopLimit::BehindInPart
        )
    }
}

/// The schedule lag's p99 and max (µs), and the pacer's slack (µs): only the lag beyond the
/// slack is falling behind, the slack being lateness by design.
pub fn lag_beyond_slack(r: &RunRecord) -> (f64, f64, f64) {
    let lag = &r.summary.latency.schedule_lag;
    (
        lag.p99_us.unwrap_or(0.0),
        lag.max_us.unwrap_or(0.0),
        r.config.pacer_slack_s.unwrap_or(0.0) * 1e6,
    )
}

/// Who limited an open loop's schedule, if anyone. Requests can be late for two reasons: the
/// generator released them late (schedule lag: the client's fault), or every connection was
/// busy so they waited in the queue (the server's, or the pool's when the connections cannot
/// carry the rate). When both show, the larger delay decides which it was.
pub fn open_loop_limit(r: &RunRecord) -> Option<OpenLoopLimit> {
    if let Some((pool, _)) = queued(r) {
        return Some(match pool {
            true => OpenLoopLimit::Pool,
            false => OpenLoopLimit::Server,
        });
    }
    let (lag_p99, _, slack_us) = lag_beyond_slack(r);
    if lag_p99 - slack_us > LAG_WARN_US {
        Some(OpenLoopLimit::Behind)
    } else if FlaggedIntervals::lagging(r, LAG_WARN_US + slack_us).count > 0 {
        Some(OpenLoopLimit::BehindInPart)
    } else if lag_p99 - slack_us > LAG_NEAR_US {
        Some(OpenLoopLimit::Near)
    } else {
        None
    }
}

/// The one warning an open loop's schedule calls for, if any ([`open_loop_limit`]), said once
/// (never "the client limited this run" beside "the server did not keep up").
fn open_loop_warning(r: &RunRecord) -> Option<String> {
    let (lag_p99, lag_max, slack_us) = lag_beyond_slack(r);
    let shortfall = shortfall(r);
    let lagging = FlaggedIntervals::lagging(r, LAG_WARN_US + slack_us);
    match open_loop_limit(r) {
        Some(OpenLoopLimit::Pool | OpenLoopLimit::Server) => queue_warning(r),
        Some(OpenLoopLimit::Behind) => {
            let mut w = format!(
                "the generator fell behind its schedule: schedule lag p99 {} (max {}){}; the \
                 client, not the server, limited this run",
                human_ns(lag_p99 * 1e3),
                human_ns(lag_max * 1e3),
                lagging.named()
            );
            if let Some(f) = shortfall {
                w += &format!(" ({f})");
            }
            w += ": use more threads (-t), a lower rate, or more generators";
            Some(w)
        }
        Some(OpenLoopLimit::BehindInPart) => Some(format!(
            "the generator fell behind{}: schedule lag up to {} there; the corrected tail \
             (p99.9, max) includes it",
            lagging.named(),
            human_ns(lagging.max * 1e3)
        )),
        Some(OpenLoopLimit::Near) => Some(format!(
            "the generator is near its limit: schedule lag p99 {} (the bound is {} beyond the \
             pacer's slack of {}); `reqlife calibrate` shows what this machine can generate",
            human_ns(lag_p99 * 1e3),
            human_ns(LAG_WARN_US * 1e3),
            human_ns(slack_us * 1e3)
        )),
        None => shortfall,
    }
}

/// Share of the window without a response, after the last one, from which a server that
/// stopped answering is said to have (5%: 150 ms of a 3 s run).
pub const SILENT_WARN: f64 = 0.05;

/// The server stopped answering: the last response came well before the end of the window,
/// and requests failed after it. When, how long it stayed silent, and what followed (the
/// errors, of which kind mostly, and the reconnects' backoff).
pub fn stopped_answering(r: &RunRecord) -> Option<String> {
    let s = &r.summary;
    let last = s.last_answer.as_ref()?;
    let silent = last.silent_share(s.duration_s);
    if silent < SILENT_WARN {
        return None;
    }
    let (kind, _) = s.errors.iter().max_by_key(|(_, n)| **n)?;
    let first = r.first_errors.get(kind).map_or("", String::as_str);
    let backoff = match kind.as_str() {
        "connect" | "addr_not_avail" => format!(
            "; each connection tried again after a pause doubling from {} to {} while it \
             could not connect",
            human_ns(crate::model::RECONNECT_FIRST.as_nanos() as f64),
            human_ns(crate::model::RECONNECT_MOST.as_nanos() as f64)
        ),
        _ => String::new(),
    };
    Some(format!(
        "the server stopped answering {:.2}s into the {:.2}s window: no response after that \
         ({:.0}% of the window), and the {} requests after it failed, mostly {kind} (first: \
         {first}){backoff}; the figures describe the server until then",
        last.at_s,
        s.duration_s,
        silent * 100.0,
        last.failed_after
    ))
}

/// What `takers` connections (`streams` each) carry at `mean_ns` a request, at most, req/s
/// (Little's law: each one busy the whole time), with the words that say so (`2 connections
/// at 97.00us carry at most ~20.6k req/s`).
pub fn connections_carry(connections: u64, streams: u64, mean_ns: f64) -> (f64, String) {
    let takers = connections * streams.max(1);
    let most = if mean_ns > 0.0 {
        takers as f64 * 1e9 / mean_ns
    } else {
        f64::INFINITY
    };
    let plural = if connections == 1 { "" } else { "s" };
    let streams = match streams {
        0 | 1 => String::new(),
        n => format!(" x {n} streams"),
    };
    let verb = if takers == 1 { "carries" } else { "carry" };
    let words = format!(
        "{connections} connection{plural}{streams} at {} {verb} at most ~{} req/s",
        human_ns(mean_ns),
        human_rate(most)
    );
    (most, words)
}

/// When the requests of an open loop waited for a free connection far longer than the
/// generator was late (queue p99 over 1 ms and over 10 times the lag p99): whether the
/// connections could not carry the rate offered (each busy its latency a request: the pool's
/// limit), and the words that say what they carry.
pub fn queued(r: &RunRecord) -> Option<(bool, String)> {
    let s = &r.summary;
    let lag_p99 = s.latency.schedule_lag.p99_us.unwrap_or(0.0);
    let queue_p99 = s
        .latency
        .phases
        .get(&Phase::Queue)
        .and_then(|q| q.p99_us)
        .unwrap_or(0.0);
    if queue_p99 <= 1000.0 || queue_p99 <= 10.0 * lag_p99.max(1.0) {
        return None;
    }
    let offered = s.generator.offered_rps.unwrap_or(0.0);
    let mean_ns = s.latency.uncorrected.mean_us.unwrap_or(0.0) * 1e3;
    let (most, carry) = connections_carry(r.config.connections, r.config.streams, mean_ns);
    Some((offered > most, carry))
}

/// When the requests of an open loop waited for a free connection far longer than the
/// generator was late ([`queued`]): the connections could not carry the rate (the limit is
/// theirs, raise -c or lower -R), or the server did not keep up (with the rate's shortfall, if
/// any).
fn queue_warning(r: &RunRecord) -> Option<String> {
    let (pool, carry) = queued(r)?;
    let s = &r.summary;
    let lag_p99 = s.latency.schedule_lag.p99_us.unwrap_or(0.0);
    let queue_p99 = s.latency.phases.get(&Phase::Queue).and_then(|q| q.p99_us);
    let queue_p99 = queue_p99.unwrap_or(0.0);
    let offered = s.generator.offered_rps.unwrap_or(0.0);
    let mut w = if pool {
        format!(
            "{carry}, under the {} req/s offered: raise -c or lower -R; requests waited for a \
             free connection (queue p99 {}) and the corrected latency includes that wait",
            human_rate(offered),
            human_ns(queue_p99 * 1e3)
        )
    } else {
        format!(
            "requests waited for a free connection (queue p99 {}) while the generator kept its \
             schedule (lag p99 {}): the server did not keep up with {:.0} req/s on {}; the \
             corrected latency includes that wait",
            human_ns(queue_p99 * 1e3),
            human_ns(lag_p99 * 1e3),
            offered,
            counted(r.config.connections, "connection")
        )
    };
    if let Some(f) = shortfall(r) {
        w += &format!("; {f}");
    }
    Some(w)
}

/// An open loop's sending rate: the requests sent (recorded, or in flight at the end) per
/// second of the window, and their share of those due in it (those sent and those due but
/// never sent): the schedule's own count, which a poisson schedule draws at random around the
/// offered rate × the window (±2% at 200 req/s for 10 s), so that chance is no shortfall.
/// `None` without an offered rate.
pub fn sent_share(r: &RunRecord) -> Option<(f64, f64)> {
    let s = &r.summary;
    s.generator.offered_rps?;
    let sent = s.generator.sent_rps.unwrap_or(s.throughput_rps);
    let never = match s.duration_s > 0.0 {
        true => s.end.not_sent as f64 / s.duration_s,
        false => 0.0,
    };
    let due = sent + never;
    Some((sent, if due > 0.0 { sent / due } else { 1.0 }))
}

/// An open loop whose generator sent under 99% of the requests due in the window (the run's
/// rule, [`sent_share`]), in the words of the report: the rate achieved (`throughput_rps`, the
/// report's and a knee step's one figure), of the offered, and the requests due that were never
/// sent.
pub fn shortfall(r: &RunRecord) -> Option<String> {
    let s = &r.summary;
    let (_, share) = sent_share(r)?;
    let o = s.generator.offered_rps.filter(|_| {
        matches!(r.stop_reason, StopReason::Duration | StopReason::Precise) && share < 0.99
    })?;
    let mut f = format!(
        "achieved {:.1} req/s of the {o:.0} offered ({:.1}%)",
        s.throughput_rps,
        100.0 * s.throughput_rps / o
    );
    if s.end.not_sent > 0 {
        f += &format!(
            ", {} due {} never sent",
            counted(s.end.not_sent, "request"),
            if s.end.not_sent == 1 { "was" } else { "were" }
        );
    }
    Some(f)
}

/// The intervals whose figure (schedule lag p99, a worker's CPU share) passed a bound.
struct FlaggedIntervals {
    count: usize,
    of: usize,
    /// Their time ranges (adjacent ones joined), seconds from the start.
    ranges: Vec<(f64, f64)>,
    /// The largest second figure (the lag max) among them.
    max: f64,
}

impl FlaggedIntervals {
    /// The intervals where `figure` gives (value, max) with the value over `bound`.
    fn of(r: &RunRecord, bound: f64, figure: impl Fn(&Interval) -> Option<(f64, f64)>) -> Self {
        let mut out = FlaggedIntervals {
            count: 0,
            of: r.intervals.len(),
            ranges: Vec::new(),
            max: 0.0,
        };
        for i in &r.intervals {
            let Some((_, max)) = figure(i).filter(|(v, _)| *v > bound) else {
                continue;
            };
            out.count += 1;
            out.max = out.max.max(max);
            let end = i.start_s + i.duration_s;
            match out.ranges.last_mut() {
                Some(last) if (last.1 - i.start_s).abs() < 1e-9 => last.1 = end,
                _ => out.ranges.push((i.start_s, end)),
            }
        }
        out
    }

    /// The intervals whose schedule lag p99 passed `bound_us`.
    fn lagging(r: &RunRecord, bound_us: f64) -> Self {
        FlaggedIntervals::of(r, bound_us, |i| {
            let lag = i.latency.get(&Phase::Lag)?;
            Some((lag.p99_us, lag.max_us))
        })
    }

    /// The intervals in which a worker thread was on a CPU more than `share` of the time.
    fn busy(r: &RunRecord, share: f64) -> Self {
        FlaggedIntervals::of(r, share, |i| {
            let busy = i.generator.as_ref()?.busy_max?;
            Some((busy, busy))
        })
    }

    /// " in 2 of 10 intervals (1.0-2.0s, 5.0-6.0s)", or nothing when none lagged.
    fn named(&self) -> String {
        if self.count == 0 {
            return String::new();
        }
        const SHOWN: usize = 4;
        let mut ranges: Vec<String> = self
            .ranges
            .iter()
            .take(SHOWN)
            .map(|(a, b)| format!("{a:.1}-{b:.1}s"))
            .collect();
        if self.ranges.len() > SHOWN {
            ranges.push("...".into());
        }
        format!(
            " in {} of {} ({})",
            self.count,
            counted(self.of as u64, "interval"),
            ranges.join(", ")
        )
    }
}
