//! The flags of the commands that read records: `report`, `merge` and `stats`, and how a
//! report is shown ([`ViewArgs`], `run`'s too).

use clap::Args;
use std::path::PathBuf;

/// Flags of `reqlife merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The RunRecords to merge (`run -o FILE`; - for standard input).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,

    /// Write the merged RunRecord here (- for standard output: the report goes to stderr).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,

    /// How the report is shown.
    #[command(flatten)]
    pub view: ViewArgs,
}

/// Flags of `reqlife stats`.
#[derive(Debug, Clone, Args)]
pub struct StatsArgs {
    /// The file of numbers, or - for standard input.
    pub file: String,

    /// Take this column of each line: its number (from 1) or its name in the header line
    /// (`--column total_ns`). Every row must have the first line's number of fields.
    #[arg(long = "column", value_name = "N|NAME", value_parser = column_arg)]
    pub column: Option<StatsColumn>,

    /// Column delimiter, each one a boundary (`1,,3` is three fields) [default: from the
    /// first line: a comma if it has one, else a tab, else runs of spaces].
    #[arg(long = "delimiter")]
    pub delimiter: Option<String>,

    /// Skip lines that are not numbers instead of stopping at the first (how many were
    /// skipped is said on stderr).
    #[arg(long = "skip-invalid")]
    pub skip_invalid: bool,

    /// Print the statistics as JSON (non-finite values as "Inf", "-Inf", "NaN"; sd null for
    /// one value).
    #[arg(long = "json")]
    pub json: bool,
}

/// `stats --column`: a column by number (from 1) or by its name in the header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatsColumn {
    /// The n-th field, counted from 1.
    Number(usize),
    /// The field under this name in the header line.
    Name(String),
}

/// `--column N` (digits) or `--column NAME`.
fn column_arg(s: &str) -> Result<StatsColumn, String> {
    match s.parse::<usize>() {
        Ok(n) => Ok(StatsColumn::Number(n)),
        Err(_) if s.trim().is_empty() => Err("give a column's number (from 1) or its name".into()),
        Err(_) => Ok(StatsColumn::Name(s.to_string())),
    }
}

/// Flags of `reqlife report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// A RunRecord written by `reqlife run -o FILE` (- for standard input).
    pub file: PathBuf,

    /// How the report is shown.
    #[command(flatten)]
    pub view: ViewArgs,

    /// What to print: the text report, `hgrm` (the percentile distribution of --phase in
    /// HdrHistogram/wrk2's layout, milliseconds), `csv` (the interval series, one row per
    /// interval) or `json` (the whole record).
    #[arg(
        long = "format",
        value_enum,
        default_value = "text",
        conflicts_with = "json"
    )]
    pub format: ReportFormat,

    /// With --format hgrm: the histogram to print (a phase such as `wait`, or
    /// `server_timing.NAME`) [default: total].
    #[arg(long = "phase")]
    pub phase: Option<String>,

    /// Also write the report as one self-contained HTML page (plots as inline SVG) to this
    /// file (- for standard output).
    #[arg(long = "html", value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// `--strict`: exit 6 when the record's load was not valid, as `run --strict` does.
    #[command(flatten)]
    pub verdict: super::run_flags::VerdictArgs,
}

/// `reqlife report --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// The text report (as `run` prints it).
    Text,
    /// HdrHistogram's percentile distribution (.hgrm), as wrk2 prints it.
    Hgrm,
    /// The interval series.
    Csv,
    /// The whole RunRecord.
    Json,
}

/// How a report is shown: the flags `run` and `report` share.
#[derive(Debug, Clone, Args)]
pub struct ViewArgs {
    /// Print the full percentile spectrum of the total latency (wrk2 style).
    #[arg(help_heading = "Output", long = "latency")]
    pub latency: bool,

    /// Print, for every phase and server metric, R's summary(), the quantiles 50-99.99 and
    /// a log2 histogram (bpftrace style).
    #[arg(help_heading = "Output", long = "detail")]
    pub detail: bool,

    /// Print the summary as JSON on stdout instead of the text report.
    #[arg(help_heading = "Output", long = "json")]
    pub json: bool,

    /// A bar the run must meet, checked at the end (repeatable): `p99<5ms`, `wait.p90<2ms`,
    /// `server.db.p99<1ms`, `errors<0.1%`, `rps>10000`. A table shows each: pass or FAIL on
    /// its measured figure, or "no data" (neither: a percentile of a phase that measured
    /// nothing, a share of no requests); a figure the record cannot give fails. One verdict
    /// (`summary.threshold_verdict`) gives the banner, the JSON and the exit code: 99 if any
    /// failed (k6's convention), else 0.
    #[arg(help_heading = "Analysis", long = "threshold", value_parser = crate::analysis::expr::Expr::arg)]
    pub thresholds: Vec<crate::analysis::expr::Expr>,
}

impl ViewArgs {
    /// Checks the `--threshold`s against `record` and keeps the results in it, with their
    /// verdict as a whole.
    pub fn check(&self, record: &mut crate::recorder::record::RunRecord) {
        if self.thresholds.is_empty() {
            return;
        }
        record.summary.thresholds = self
            .thresholds
            .iter()
            .map(|e| {
                let c = e.check(record);
                crate::recorder::record::ThresholdCheck {
                    threshold: e.to_string(),
                    measured: c.measured,
                    shown: c.measured.map(|v| e.show(v)),
                    pass: c.pass,
                    no_data: c.no_data,
                    note: c.note,
                    interval: c.interval,
                    undecided: c.undecided,
                }
            })
            .collect();
        record.summary.threshold_verdict =
            crate::recorder::record::ThresholdVerdict::of(&record.summary.thresholds);
    }

    /// The report these flags ask for.
    pub fn render(&self, record: &crate::recorder::record::RunRecord) -> String {
        self.render_after(record, false)
    }

    /// The report these flags ask for; `header_shown`: the run's header is already on the
    /// terminal the report goes to, and is not repeated.
    pub fn render_after(
        &self,
        record: &crate::recorder::record::RunRecord,
        header_shown: bool,
    ) -> String {
        crate::report::render(
            record,
            self.json,
            crate::report::text::TextOptions {
                latency: self.latency,
                detail: self.detail,
                header_shown,
            },
        )
    }
}
