//! SIGINT and SIGTERM for a whole command. The first stops the run: the report and the `-o`
//! record are written with what was measured. GNU `timeout` signals its child and then its
//! process group, and a terminal's Ctrl-C reaches the whole foreground group, so one interrupt
//! may come twice within moments: a second signal is taken as the same interrupt (the run is
//! already stopping, with no drain), and the record is still written. Only a further one, at
//! least [`GRACE`] after the first, exits at once without them (as SIGKILL would).

use super::failure::Failure;
use crate::load::StopSignal;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long after the first signal none exits at once.
pub(crate) const GRACE: Duration = Duration::from_secs(1);

/// What a signal does, by what came before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Taken {
    /// The first: the run stops; its report and record are written.
    Stop,
    /// Another, while the run is stopping: it changes nothing (the record is still written).
    /// `said`: whether to tell the user so (a signal of their own, [`GRACE`] or more after
    /// the first, and the first such one).
    Again { said: bool },
    /// A third or later, [`GRACE`] or more after the first: exit at once.
    Exit,
}

/// The signals a command got: the first one's number and when it came, and how many.
#[derive(Debug, Default)]
pub(crate) struct Interrupts {
    first: Option<(i32, Instant)>,
    count: u32,
}

impl Interrupts {
    /// Takes `signal`, come at `now`.
    pub fn take(&mut self, signal: i32, now: Instant) -> Taken {
        self.count += 1;
        let Some((_, at)) = self.first else {
            self.first = Some((signal, now));
            return Taken::Stop;
        };
        let late = now.saturating_duration_since(at) >= GRACE;
        match self.count {
            _ if !late => Taken::Again { said: false },
            2 => Taken::Again { said: true },
            _ => Taken::Exit,
        }
    }

    /// The first signal's number, or 0.
    pub fn signal(&self) -> i32 {
        self.first.map_or(0, |(s, _)| s)
    }
}

/// The interrupts of a command, shared by the signal watcher and the control thread.
#[derive(Clone, Default)]
pub(crate) struct Shared(Arc<Mutex<Interrupts>>);

impl Shared {
    /// Takes `signal` now.
    pub fn take(&self, signal: i32) -> Taken {
        self.lock().take(signal, Instant::now())
    }

    /// The first signal's number, or 0.
    pub fn signal(&self) -> i32 {
        self.lock().signal()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Interrupts> {
        // Nothing panics while holding it; a poisoned one is still the count.
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Installs SIGINT/SIGTERM handlers for the rest of the command (on the current runtime): each
/// signal is taken by `interrupts`; the first stops `stop`.
pub(crate) async fn watch_signals(stop: StopSignal, interrupts: Shared) -> Result<(), Failure> {
    use tokio::signal::unix::{signal as unix_signal, SignalKind};
    let cannot =
        |name: &str, e: std::io::Error| Failure::Failed(format!("cannot handle {name}: {e}"));
    let mut int = unix_signal(SignalKind::interrupt()).map_err(|e| cannot("SIGINT", e))?;
    let mut term = unix_signal(SignalKind::terminate()).map_err(|e| cannot("SIGTERM", e))?;
    tokio::spawn(async move {
        loop {
            let got = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
            };
            match interrupts.take(got) {
                Taken::Stop => stop.stop(),
                Taken::Again { said } => {
                    stop.stop();
                    if said {
                        eprintln!(
                            "reqlife: signalled again: the run is ending, its report and record are being written (signal once more to exit at once without them)"
                        );
                    }
                }
                Taken::Exit => {
                    crate::watch::tui::restore();
                    eprintln!("reqlife: signalled again, exiting at once (no report, no record)");
                    std::process::exit(128 + got);
                }
            }
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn signals_within_the_grace_are_one_interrupt() {
        let t0 = Instant::now();
        let mut i = Interrupts::default();
        assert_eq!(i.signal(), 0);
        assert_eq!(i.take(libc::SIGINT, t0), Taken::Stop);
        // GNU timeout's second copy (to the group), a terminal's, and any more at once.
        for d in [0, 1, 50, 999] {
            assert_eq!(
                i.take(libc::SIGINT, t0 + ms(d)),
                Taken::Again { said: false },
                "{d} ms"
            );
        }
        assert_eq!(i.signal(), libc::SIGINT);
    }

    #[test]
    fn a_second_signal_never_exits_a_third_after_the_grace_does() {
        let t0 = Instant::now();
        let mut i = Interrupts::default();
        assert_eq!(i.take(libc::SIGTERM, t0), Taken::Stop);
        // The second, however late: the record is still written; the user is told.
        assert_eq!(
            i.take(libc::SIGINT, t0 + ms(5000)),
            Taken::Again { said: true }
        );
        assert_eq!(i.take(libc::SIGINT, t0 + ms(5001)), Taken::Exit);
        // The first one's number stays (the exit code and the record say it).
        assert_eq!(i.signal(), libc::SIGTERM);
        // Three at once, then one after the grace.
        let mut i = Interrupts::default();
        i.take(libc::SIGINT, t0);
        i.take(libc::SIGINT, t0 + ms(1));
        assert_eq!(
            i.take(libc::SIGINT, t0 + ms(2)),
            Taken::Again { said: false }
        );
        assert_eq!(i.take(libc::SIGINT, t0 + GRACE), Taken::Exit);
    }
}
