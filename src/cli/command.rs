//! `reqlife run`'s flags turned, once, into the command `app` runs ([`RunCommand`]): every plan
//! of it (each level's [`RunPlan`], the outputs, the probes, the watchers), checked. In two
//! steps, because the target may have to be started first: [`RunRequest::new`] checks what
//! needs no URL and says where the requests go ([`TargetChoice`]); [`RunRequest::command`]
//! builds the rest at the URL. `app` reads the command, never the flags.

use super::error::PrepareError;
use super::plan::PlanError;
use super::probes::ProbePlan;
use super::reflect::Ask;
use super::run::RunPlans;
use super::{RunArgs, TargetChoice, ViewArgs, WatchPlan};
use crate::analysis::expr::Expr;
use crate::plan::RunPlan;
use crate::util::units::StartAt;
use prost_reflect::DescriptorPool;
use std::path::PathBuf;
use std::time::Duration;

/// Where a command's results go: its files, its report and what it says as it runs.
#[derive(Debug, Clone)]
pub struct OutputPlan {
    /// `-o/--output`: the RunRecord's file (`-`: standard output).
    pub output: Option<PathBuf>,
    /// `--html`: the report's page.
    pub html: Option<PathBuf>,
    /// `--hdr-log`: the HdrHistogram interval log (one level only).
    pub hdr_log: Option<PathBuf>,
    /// One of the files goes to standard output (`-`): the report then goes to stderr.
    pub to_stderr: bool,
    /// `-q/--quiet`.
    pub quiet: bool,
    /// `--every`: a line per interval while running.
    pub every: Option<Duration>,
    /// How the report is shown, and the thresholds checked on the record.
    pub view: ViewArgs,
    /// The thresholds that stop the run as soon as one fails (`--abort-on-fail`); empty
    /// without it.
    pub abort: Vec<Expr>,
    /// `--strict`: a load that was not valid fails the run (exit 6).
    pub strict: bool,
}

/// `reqlife run`, checked and ready to start: the plans of its levels (one, one per level of
/// a sweep or phase, or one per repetition) and everything around them.
#[derive(Debug, Clone)]
pub struct RunCommand {
    /// One per level, or per repetition.
    pub plans: Vec<RunPlan>,
    /// `--repeat`.
    pub repeat: usize,
    /// A scenario's phases are the levels.
    pub phased: bool,
    /// The files and the report.
    pub output: OutputPlan,
    /// `--server-probes` and its kin.
    pub probes: Option<ProbePlan>,
    /// `--live` and `--metrics-addr`.
    pub watch: WatchPlan,
    /// `--start-at`.
    pub start_at: Option<StartAt>,
    /// `--coordinator`: this segment starts with the plan's others and merges with them.
    pub together: Option<Together>,
    /// `--pause`: between the levels and the repetitions.
    pub pause: Duration,
    /// What was sent when not one fixed request: `scenario FILE` or `targets FILE`.
    pub workload: Option<String>,
}

/// The first step of `reqlife run`'s command: the flags that need no URL checked, and where
/// the requests go.
pub struct RunRequest<'a> {
    args: &'a RunArgs,
    target: Option<TargetChoice>,
    to_stderr: bool,
}

impl<'a> RunRequest<'a> {
    /// Checks the outputs (one `-` at most) and the target (`--kv-preload` only for the
    /// embedded one).
    pub fn new(args: &'a RunArgs) -> Result<RunRequest<'a>, PlanError> {
        super::plan::until_cap(args)?;
        let to_stderr = super::output::stdout_taken(&[
            ("-o", args.files.output.as_deref()),
            ("--html", args.files.html.as_deref()),
            ("--hdr-log", args.intervals.hdr_log.as_deref()),
        ])?;
        // A target list without a URL names its own server.
        let target = if args.workload.targets.is_some() && args.url.is_none() {
            None
        } else {
            Some(TargetChoice::of(
                args.url.as_deref(),
                &args.kv,
                args.http.http3,
            )?)
        };
        Ok(RunRequest {
            args,
            target,
            to_stderr,
        })
    }

    /// Where the requests go: the user's URL or the embedded target; `None` for a target
    /// list, whose URLs name the server.
    pub fn target(&self) -> Option<&TargetChoice> {
        self.target.as_ref()
    }

    /// What the server's gRPC reflection must be asked before the command is built at `url`
    /// (a gRPC call's `--data` without `--proto-set`), if anything.
    pub fn reflection(&self, url: Option<&str>) -> Result<Option<Ask>, PlanError> {
        match url {
            Some(u) => super::reflect::ask(self.args, u),
            None => Ok(None),
        }
    }

    /// The command at `url` (the target's; `None` for a target list): every plan built and
    /// checked, a gRPC call's message encoded through `reflected` (the descriptors the
    /// server's reflection gave, when [`RunRequest::reflection`] asked for them).
    pub fn command(
        &self,
        url: Option<&str>,
        reflected: Option<&DescriptorPool>,
    ) -> Result<RunCommand, PrepareError> {
        let args = self.args;
        let RunPlans {
            plans,
            repeat,
            phased,
        } = super::run::plans(args, url, reflected)?;
        let embedded = matches!(self.target, Some(TargetChoice::Embedded(_)));
        let probes = args.probes.plan(&plans, embedded, repeat)?;
        let output = OutputPlan {
            output: args.files.output.clone(),
            html: args.files.html.clone(),
            hdr_log: args.intervals.hdr_log.clone(),
            to_stderr: self.to_stderr,
            quiet: args.files.quiet,
            every: args.intervals.every,
            view: args.view.clone(),
            abort: match args.intervals.abort_on_fail {
                true => args.view.thresholds.clone(),
                false => Vec::new(),
            },
            strict: args.verdict.strict,
        };
        let target = url.unwrap_or("the targets of the list");
        let method = args.request.method.as_deref().unwrap_or("GET");
        let title = format!("{method} {target}");
        Ok(RunCommand {
            plans,
            repeat,
            phased,
            output,
            probes,
            watch: args.watch.plan(title, args.load.segment, args.files.quiet),
            start_at: args.length.start_at,
            together: together(args)?,
            pause: args.load.pause,
            workload: match (&args.workload.scenario, &args.workload.targets) {
                (Some(p), _) => Some(format!("scenario {}", p.display())),
                (None, Some(p)) => Some(format!("targets {}", p.display())),
                (None, None) => None,
            },
        })
    }
}

/// `--segment K/N --coordinator HOST:PORT`, checked.
#[derive(Debug, Clone)]
pub struct Together {
    /// This process's segment.
    pub segment: crate::model::Segment,
    /// Where segment 1 listens, as the others reach it (`HOST:PORT`).
    pub addr: String,
    /// What segment 1 binds: the address if its host is an IP, else every address at the port.
    pub listen: String,
    /// `--coordinator-timeout`.
    pub timeout: Duration,
}

/// `--coordinator`'s plan, its address checked: `None` without it.
fn together(args: &RunArgs) -> Result<Option<Together>, PlanError> {
    let (Some(addr), Some(segment)) = (&args.length.coordinator, args.load.segment) else {
        return Ok(None);
    };
    let bad = |why: &str| {
        PlanError(format!(
            "invalid --coordinator '{addr}': {why}; expected HOST:PORT, e.g. 10.0.0.5:9470 or \
             reqlife-load-0.reqlife-load:9470"
        ))
    };
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| bad("the port is not 1 to 65535"))?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if bare.is_empty() {
        return Err(bad("no host"));
    }
    let listen = match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => std::net::SocketAddr::new(ip, port).to_string(),
        Err(_) => format!("0.0.0.0:{port}"),
    };
    Ok(Some(Together {
        segment,
        addr: addr.clone(),
        listen,
        timeout: args
            .length
            .coordinator_timeout
            .unwrap_or(Duration::from_secs(60)),
    }))
}
