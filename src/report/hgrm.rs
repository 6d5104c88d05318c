//! `reqlife report FILE --format hgrm [--phase NAME]`: the percentile distribution of one
//! phase in the exact text layout of HdrHistogram's `hdr_percentiles_print` (CLASSIC), as wrk2
//! prints its "Detailed Percentile spectrum", so that HdrHistogram's plotter and every script
//! written for `.hgrm` files read it. Values in milliseconds (the record's nanoseconds divided
//! by 10⁶, as wrk2 divides its microseconds by 10³), five reporting ticks per half distance:
//!
//! ```text
//!        Value   Percentile   TotalCount 1/(1-Percentile)
//!
//!        0.101     0.000000            1         1.00
//!        …
//!       20.019     1.000000         2940          inf
//! #[Mean    =        0.794, StdDeviation   =        1.992]
//! #[Max     =       20.019, Total count    =         2940]
//! #[Buckets =           32, SubBuckets     =         2048]
//! ```
//!
//! Each row: the highest value equivalent to the value at that percentile (printf `%12.3f`),
//! the percentile as a fraction (`%12f`), the cumulative count up to that value (`%12d`) and
//! 1/(1 − percentile) (`%12.2f`, `inf` on the last row).

use super::ReportError;
use crate::recorder::record::RunRecord;
use hdrhistogram::Histogram;
use std::fmt::Write as _;

/// Nanoseconds per printed unit (milliseconds).
pub const VALUE_SCALE: f64 = 1e6;
/// Reporting ticks per half distance to 100% (wrk2 and HdrHistogram's default).
pub const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The `.hgrm` text of `h` (nanoseconds), values in milliseconds.
pub fn render(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{:>12} {:>12} {:>12} {:>12}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut cumulative = 0u64;
    for v in h.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        cumulative += v.count_since_last_iteration();
        let percentile = v.quantile_iterated_to();
        let _ = writeln!(
            out,
            "{:>12.3} {:>12.6} {:>12} {:>12.2}",
            v.value_iterated_to() as f64 / VALUE_SCALE,
            percentile,
            cumulative,
            1.0 / (1.0 - percentile)
        );
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / VALUE_SCALE,
        h.stdev() / VALUE_SCALE
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        h.max() as f64 / VALUE_SCALE,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_buckets(h.sigfig())
    );
    out
}

/// HdrHistogram's sub-bucket count for `sigfig` significant digits (and a lowest
/// discernible value of 1): 2^⌈log₂(2·10^sigfig)⌉, e.g. 2048 for 3 digits.
fn sub_buckets(sigfig: u8) -> u64 {
    let largest_single_unit = 2 * 10u64.pow(sigfig as u32);
    largest_single_unit.next_power_of_two()
}

/// The `.hgrm` of the record's histogram `phase`, or an error naming the phases it has.
pub fn of_record(record: &RunRecord, phase: &str) -> Result<String, ReportError> {
    match record.histograms.get(phase) {
        // The recorder's reason stays its line (a histogram the record cannot decode).
        Some(_) => Ok(render(
            &record
                .histogram(phase)
                .map_err(|e| ReportError::Record(e.to_string()))?,
        )),
        None => Err(ReportError::Record(format!(
            "unknown phase '{phase}': this record has histograms for {}",
            phases(record).join(", ")
        ))),
    }
}

/// The histogram names `--phase` accepts for `record`.
pub fn phases(record: &RunRecord) -> Vec<String> {
    record.histograms.keys().cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::hist;

    /// A parsed row: value (ms), percentile, total count, 1/(1-p) (None for `inf`).
    type Row = (f64, f64, u64, Option<f64>);

    /// Parses an `.hgrm` text, checking the printf layout of every line on the way: the
    /// header, a blank line, rows of four right-aligned 12-wide fields, and the footer.
    fn parse(text: &str) -> (Vec<Row>, Vec<String>) {
        let lines: Vec<&str> = text.lines().collect();
        // "%12s %12s %12s %12s\n\n": the last heading is wider than its field.
        assert_eq!(
            lines[0],
            "       Value   Percentile   TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        let mut rows = Vec::new();
        let mut footer = Vec::new();
        for line in &lines[2..] {
            if line.starts_with("#[") {
                footer.push(line.to_string());
                continue;
            }
            assert!(footer.is_empty(), "a row after the footer: {line}");
            // "%12.3f %12f %12d %12.2f": 4 fields of 12 characters, one space apart.
            assert_eq!(line.len(), 51, "{line:?}");
            let fields: Vec<&str> = (0..4).map(|i| &line[i * 13..i * 13 + 12]).collect();
            for (i, f) in fields.iter().enumerate() {
                assert!(!f.ends_with(' ') && f.trim() == f.trim_start(), "{line:?}");
                if i > 0 {
                    assert_eq!(&line[i * 13 - 1..i * 13], " ", "{line:?}");
                }
            }
            let decimals = |f: &str| f.trim().split('.').nth(1).map_or(0, str::len);
            assert_eq!(decimals(fields[0]), 3, "{line:?}");
            assert_eq!(decimals(fields[1]), 6, "{line:?}");
            assert_eq!(decimals(fields[2]), 0, "{line:?}");
            let inv = fields[3].trim();
            assert!(inv == "inf" || decimals(inv) == 2, "{line:?}");
            rows.push((
                fields[0].trim().parse().unwrap(),
                fields[1].trim().parse().unwrap(),
                fields[2].trim().parse().unwrap(),
                inv.parse().ok().filter(|v: &f64| v.is_finite()),
            ));
        }
        (rows, footer)
    }

    fn lognormal_hist() -> Histogram<u64> {
        // tests/data/lognorm.txt: lognormal values, taken as µs and recorded in ns.
        let mut h = hist::new_hist();
        for line in include_str!("../../tests/data/lognorm.txt").lines() {
            if let Ok(us) = line.trim().parse::<f64>() {
                hist::record(&mut h, (us * 1000.0) as u64);
            }
        }
        h
    }

    #[test]
    fn layout_is_hdr_percentiles_print_classic() {
        let h = lognormal_hist();
        assert!(h.len() >= 999, "{}", h.len());
        let text = render(&h);
        let (rows, footer) = parse(&text);
        // The first row is the minimum at percentile 0, the last 100% with `inf`.
        assert_eq!(rows[0].1, 0.0);
        assert_eq!(rows[0].2, 1);
        assert_eq!(rows[0].3, Some(1.0));
        let last = rows.last().unwrap();
        assert_eq!((last.1, last.2, last.3), (1.0, h.len(), None));
        assert!(
            rows.windows(2)
                .all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1 && w[0].2 <= w[1].2),
            "values, percentiles and counts rise"
        );
        // "#[Mean    = %12.3f, StdDeviation   = %12.3f]" and the two lines after it.
        assert_eq!(footer.len(), 3, "{footer:?}");
        assert_eq!(
            footer[0],
            format!(
                "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
                h.mean() / 1e6,
                h.stdev() / 1e6
            )
        );
        assert_eq!(
            footer[1],
            format!(
                "#[Max     = {:>12.3}, Total count    = {:>12}]",
                h.max() as f64 / 1e6,
                h.len()
            )
        );
        assert_eq!(footer[2].len(), footer[1].len());
        assert!(footer[2].starts_with("#[Buckets = "));
        assert!(footer[2].ends_with(", SubBuckets     =         2048]"));
    }

    #[test]
    fn values_agree_with_the_record_s_histogram() {
        let record = crate::report::fixture::plain();
        for phase in ["total", "wait", "server_timing.handler"] {
            let h = record.histogram(phase).unwrap();
            let (rows, _) = parse(&of_record(&record, phase).unwrap());
            for (value_ms, p, count, inv) in &rows {
                // Each row is the value at its percentile. The iterator's percentile is a
                // running sum of steps (0.1 + 0.1 + 0.1 > 0.3): at a boundary it may stand for
                // the next request's value, so both sides are candidates.
                let at = |q: f64| h.highest_equivalent(h.value_at_quantile(q.clamp(0.0, 1.0)));
                // Its value in ms to the printed precision, and the count of the requests at
                // or below it.
                let agrees = |ns: u64| {
                    (value_ms - ns as f64 / 1e6).abs() < 0.0005 && *count == h.count_between(0, ns)
                };
                assert!(
                    agrees(at(p - 1e-9)) || agrees(at(p + 1e-9)),
                    "{phase} p={p}: {value_ms} ms, {count} requests; at p: {} ns, {} requests",
                    at(*p),
                    h.count_between(0, at(*p))
                );
                if let Some(inv) = inv {
                    // 1/(1-p) of the unrounded percentile: p is printed to ±5e-7.
                    let (lo, hi) = (1.0 / (1.0 - (p - 5e-7)), 1.0 / (1.0 - (p + 5e-7)));
                    assert!(
                        *inv > lo - 0.006 && *inv < hi + 0.006,
                        "{phase} p={p}: {inv}"
                    );
                }
            }
            assert_eq!(rows.last().unwrap().2, h.len());
        }
    }

    #[test]
    fn an_unknown_phase_names_the_valid_ones() {
        let record = crate::report::fixture::plain();
        let e = of_record(&record, "latency").unwrap_err().to_string();
        assert!(e.starts_with("unknown phase 'latency'"), "{e}");
        for valid in ["total", "wait", "connect", "server_timing.handler"] {
            assert!(e.contains(valid), "{e}");
        }
    }

    #[test]
    fn an_empty_histogram_has_the_header_and_footer_only() {
        let (rows, footer) = parse(&render(&hist::new_hist()));
        assert!(rows.is_empty());
        assert!(
            footer[1].ends_with("Total count    =            0]"),
            "{footer:?}"
        );
    }
}
