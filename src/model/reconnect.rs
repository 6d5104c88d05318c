//! Reconnecting after a connection could not be opened: a connection whose connect failed
//! (refused, reset, unreachable, no local port) waits before its next request, a pause that
//! doubles with each failure in a row, from [`RECONNECT_FIRST`] to at most
//! [`RECONNECT_MOST`], and starts again at none after a connect that works. Without it, a
//! server that died mid-run met every connection retrying in a tight loop, tens of thousands
//! of failed attempts a second that made the run look fast; with it, a connection tries at
//! most ten times a second once the pause has grown (after 7 failures, 127 ms).

use std::time::Duration;

/// The pause after a connection's first failed connect.
pub const RECONNECT_FIRST: Duration = Duration::from_millis(1);
/// The longest pause between two connects of a connection.
pub const RECONNECT_MOST: Duration = Duration::from_millis(100);

/// One connection's pause before its next connect.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconnect {
    /// Connects failed in a row.
    failed: u32,
}

impl Reconnect {
    /// After a request: `failed_connect` when its connection could not be opened. The pause
    /// to take before the next request, if any: none after a connect that worked or a
    /// request on an open connection (whatever its outcome).
    pub fn after(&mut self, failed_connect: bool) -> Option<Duration> {
        if !failed_connect {
            self.failed = 0;
            return None;
        }
        let pause = RECONNECT_FIRST
            .saturating_mul(1u32 << self.failed.min(16))
            .min(RECONNECT_MOST);
        self.failed = self.failed.saturating_add(1);
        Some(pause)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_its_bound_and_a_connect_that_works_ends_it() {
        let ms = Duration::from_millis;
        let mut r = Reconnect::default();
        // (the connect failed?, the pause before the next request)
        let rows = [
            (true, Some(ms(1))),
            (true, Some(ms(2))),
            (true, Some(ms(4))),
            (true, Some(ms(8))),
            (true, Some(ms(16))),
            (true, Some(ms(32))),
            (true, Some(ms(64))),
            (true, Some(ms(100))), // bounded: never more than 100 ms
            (true, Some(ms(100))),
            (false, None), // connected (a response, or any failure after the connect)
            (true, Some(ms(1))), // a new run of failures starts again at 1 ms
        ];
        for (i, (failed, want)) in rows.into_iter().enumerate() {
            assert_eq!(r.after(failed), want, "row {i}");
        }
        for _ in 0..100 {
            r.after(true);
        }
        assert_eq!(
            r.after(true),
            Some(RECONNECT_MOST),
            "no overflow after many"
        );
    }
}
