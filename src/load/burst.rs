//! Bursts (`--burst N`): fire N requests at once, one per connection, wait for every answer,
//! pause, repeat. Every request of a burst is intended at the burst's start. Per burst two
//! figures are recorded: the time to dispatch all N (until the last request was written,
//! connection creation included when connections are new) and the time then blocked waiting
//! for the answers (until the last one ended) — the two halves of an async client's burst.

use super::Progress;
use crate::engine::{Send, Session};
use crate::model::Timestamps;
use crate::recorder::Recorder;
use crate::workload::request::Rendered;
use crate::workload::Renderer;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One connection of a burst run: its session, its buffer for rendered requests, and its
/// number over the whole plan's connections (every thread of every segment).
pub struct BurstSession {
    pub session: Session,
    pub buf: Rendered,
    pub index: u64,
}

/// What one burst run needs.
pub struct BurstRun {
    pub sessions: Vec<BurstSession>,
    /// The whole plan's burst size (requests per burst over every thread and segment).
    pub size: u64,
    pub interval: Duration,
    pub bursts: Option<u64>,
    pub deadline: Option<Instant>,
    pub recorder: Rc<RefCell<Recorder>>,
    pub progress: Arc<Progress>,
    pub fail_fast: Arc<super::FailFast>,
    pub thread: usize,
    /// A workload's renderer; `None`: the fixed request.
    pub renderer: Option<Rc<RefCell<Renderer>>>,
}

impl BurstRun {
    pub async fn run(mut self) {
        let mut done = 0u64;
        while self.bursts.is_none_or(|n| done < n) {
            let t0 = Instant::now();
            if self.deadline.is_some_and(|d| t0 >= d) {
                break;
            }
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..self.sessions.len() {
                self.recorder.borrow_mut().sending();
            }
            for BurstSession {
                mut session,
                mut buf,
                index,
            } in self.sessions.drain(..)
            {
                // Request `index` of burst `done` over the whole plan: every generator and
                // thread numbers its requests apart, so `{seq}` is unique across them.
                let seq = done * self.size + index;
                let (slot, head) = match &self.renderer {
                    Some(r) => r.borrow_mut().render(seq, &mut buf),
                    None => (0, false),
                };
                let rendered = self.renderer.is_some();
                set.spawn_local(async move {
                    let mut stamps = Timestamps::new(t0, t0);
                    let send = match slot {
                        _ if !rendered => Send::Fixed { seq },
                        _ => Send::Rendered {
                            rendered: &buf,
                            head,
                        },
                    };
                    let outcome = session.request(&mut stamps, send).await;
                    (session, buf, index, stamps, outcome, slot)
                });
            }
            let mut last_written = t0;
            let mut last_done = t0;
            while let Some(joined) = set.join_next().await {
                let Ok((session, buf, index, stamps, outcome, slot)) = joined else {
                    continue;
                };
                let ended = stamps.done.unwrap_or_else(Instant::now);
                last_written = last_written.max(stamps.written.unwrap_or(ended));
                last_done = last_done.max(ended);
                super::record_outcome(
                    &self.recorder,
                    &self.progress.0[self.thread],
                    &self.fail_fast,
                    stamps,
                    &outcome,
                    &session,
                    slot,
                );
                self.sessions.push(BurstSession {
                    session,
                    buf,
                    index,
                });
            }
            self.recorder
                .borrow_mut()
                .record_burst(last_written - t0, last_done - last_written);
            done += 1;
            tokio::time::sleep(self.interval).await;
        }
    }
}
