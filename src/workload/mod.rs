//! What is sent: request templates. The bytes of an HTTP/1.1 request are prepared once per
//! template, when the run starts, so that sending a request on the hot path is one write of a
//! ready buffer.
//!
//! Workloads (`--scenario`, `--targets`) build on the submodules: [`template`] (text with
//! generator slots, rendered per request), [`gen`] (the generators and their per-worker
//! state), [`request`] (a whole HTTP/1.1 request of templates, with the head rules shared with
//! [`RequestTemplate::http1`](crate::engine::request::RequestTemplate::http1)), [`mix`] (which request to send next), [`scenario`] (the TOML
//! scenario file) and [`targets`] (vegeta's target lists).

pub mod gen;
pub mod mix;
pub mod request;
pub mod scenario;
pub mod targets;
pub mod template;

use crate::model::Target;
use crate::util::exit::{ExitCode, EXIT_USAGE};

/// A workload file that cannot be used (`--scenario`, `--targets`, or a template in one):
/// each names the file, where, and what is valid. All are bad input: exit 2.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// A scenario file (`--scenario`).
    #[error(transparent)]
    Scenario(#[from] scenario::ScenarioError),
    /// A target list (`--targets`).
    #[error(transparent)]
    Targets(#[from] targets::TargetsError),
    /// A request template.
    #[error(transparent)]
    Template(#[from] template::TemplateError),
}

impl ExitCode for WorkloadError {
    fn exit_code(&self) -> i32 {
        match self {
            WorkloadError::Scenario(_) | WorkloadError::Targets(_) | WorkloadError::Template(_) => {
                EXIT_USAGE
            }
        }
    }
}

/// Most distinct request names whose figures are kept apart (`by_request`): a targets file of
/// thousands of URLs is reported as a whole.
pub const MAX_NAMED: usize = 100;

/// What a run sends when it is not one fixed request: prepared requests (indexed by their
/// id), the mix that picks one per send, and each request's name slot for the per-name
/// figures. Read-only and shared by every worker; each worker renders with its own
/// [`gen::GenState`].
#[derive(Debug)]
pub struct Workload {
    /// The prepared requests, indexed by their id.
    pub requests: Vec<request::PreparedRequest>,
    /// Picks the request of each send.
    pub mix: mix::Mix,
    /// The distinct names, in first-seen order (empty when there are more than
    /// [`MAX_NAMED`]).
    pub names: Vec<String>,
    /// Request id → index into `names` (or [`Workload::UNNAMED`]).
    pub slot: Vec<u16>,
    /// Render requests as their parts (HTTP/2, gRPC), not as HTTP/1.1 bytes.
    pub parts: bool,
}

impl Workload {
    /// The slot of a request whose figures are not kept apart.
    pub const UNNAMED: u16 = u16::MAX;

    /// A workload of `specs` (named by their `name`, prepared for `target`, with connections
    /// kept alive or not, asking for compressed bodies or not) picked by `mix`.
    pub fn new(
        specs: &[request::RequestSpec],
        mix: mix::Mix,
        target: &Target,
        keepalive: bool,
        compressed: bool,
    ) -> Self {
        let mut names: Vec<String> = Vec::new();
        let mut slot = Vec::with_capacity(specs.len());
        for s in specs {
            let i = match names.iter().position(|n| *n == s.name) {
                Some(i) => i,
                None => {
                    names.push(s.name.clone());
                    names.len() - 1
                }
            };
            slot.push(i as u16);
        }
        if names.len() > MAX_NAMED {
            names.clear();
            slot.iter_mut().for_each(|s| *s = Self::UNNAMED);
        }
        Workload {
            requests: specs
                .iter()
                .map(|s| s.prepare_with(target, keepalive, compressed))
                .collect(),
            mix,
            names,
            slot,
            parts: false,
        }
    }
}

/// One worker thread's renderer of a workload: its generator state, shared by the thread's
/// connections (a render never awaits, so a `RefCell` borrow is brief).
#[derive(Debug)]
pub struct Renderer {
    workload: std::sync::Arc<Workload>,
    state: gen::GenState,
}

impl Renderer {
    /// The renderer of worker `worker` of `workers` (over every thread of every segment).
    pub fn new(
        workload: std::sync::Arc<Workload>,
        seed: u64,
        worker: usize,
        workers: usize,
    ) -> Self {
        Renderer {
            workload,
            state: gen::GenState::new(seed, worker, workers),
        }
    }

    /// Whether requests are rendered as their parts ([`Workload::parts`]), not HTTP/1.1 bytes.
    pub fn parts(&self) -> bool {
        self.workload.parts
    }

    /// Picks the next request and renders it into `out` with the sequence number `seq` (the
    /// plan-wide ticket number: each number once over the whole run, so a fill phase covers
    /// its keys exactly): as HTTP/1.1 bytes (cleared first), or as its parts when the
    /// workload says so. Returns the request's name slot and whether its method is HEAD.
    pub fn render(&mut self, seq: u64, out: &mut request::Rendered) -> (u16, bool) {
        let mix = &self.workload.mix;
        // In turn by the plan-wide number: exact shares whatever the threads' speeds.
        let id = if mix.is_round_robin() {
            (seq % self.workload.requests.len().max(1) as u64) as usize
        } else {
            mix.pick(&mut self.state)
        };
        let request = &self.workload.requests[id];
        if self.workload.parts {
            request.render_parts(&mut out.parts, &mut self.state, seq);
        } else {
            out.bytes.clear();
            request.render_at(&mut out.bytes, &mut self.state, seq);
        }
        (self.workload.slot[id], request.is_head())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_bad_scenario_target_list_or_template_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "[[request]]\npath = 7\n").unwrap();
        let scenario = WorkloadError::from(scenario::load(&file).unwrap_err());
        assert!(scenario
            .to_string()
            .starts_with(&file.display().to_string()));
        let list = targets::parse("GET ftp://x/\n", Path::new("t.txt"), dir.path());
        let list = WorkloadError::from(list.unwrap_err());
        assert!(list.to_string().starts_with("t.txt:1: "), "{list}");
        let mut sources = template::Sources::new(".");
        let slot = template::Template::parse_in("/{nope}", template::Field::Path, &mut sources);
        let slot = WorkloadError::from(slot.unwrap_err());
        for e in [scenario, list, slot] {
            assert_eq!(e.exit_code(), EXIT_USAGE, "{e}");
        }
    }
}
