//! Bursts (`--burst N`): fire N requests at once, one per connection, wait for every answer,
//! pause, repeat. Every request of a burst is intended at the burst's start. Per burst two
//! figures are recorded: the time to dispatch all N (until the last request was written,
//! connection creation included when connections are new) and the time then blocked waiting
//! for the answers (until the last one ended) — the two halves of an async client's burst.

use super::Progress;
use crate::engine::Session;
use crate::model::Timestamps;
use crate::recorder::Recorder;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one burst run needs.
pub struct BurstRun {
    pub sessions: Vec<Session>,
    pub interval: Duration,
    pub bursts: Option<u64>,
    pub deadline: Option<Instant>,
    pub recorder: Rc<RefCell<Recorder>>,
    pub progress: Arc<Progress>,
    pub thread: usize,
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
            for mut session in self.sessions.drain(..) {
                set.spawn_local(async move {
                    let mut stamps = Timestamps::new(t0, t0);
                    let outcome = session.request(&mut stamps).await;
                    (session, stamps, outcome)
                });
            }
            let mut last_written = t0;
            let mut last_done = t0;
            while let Some(joined) = set.join_next().await {
                let Ok((session, stamps, outcome)) = joined else {
                    continue;
                };
                let ended = stamps.done.unwrap_or_else(Instant::now);
                last_written = last_written.max(stamps.written.unwrap_or(ended));
                last_done = last_done.max(ended);
                super::record_outcome(
                    &self.recorder,
                    &self.progress.0[self.thread],
                    stamps,
                    &outcome,
                    &session,
                );
                self.sessions.push(session);
            }
            self.recorder
                .borrow_mut()
                .record_burst(last_written - t0, last_done - last_written);
            done += 1;
            tokio::time::sleep(self.interval).await;
        }
    }
}
