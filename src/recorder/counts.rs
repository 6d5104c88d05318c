//! What a run counts of its requests besides their histograms, in one struct ([`Counts`]): the
//! [`Counters`], the responses by status code, the first detail of each error kind and the
//! protocols' [`Tallies`]. A thread's [`Recorder`](super::Recorder) counts into one as it
//! records and hands it over whole in its [`Measured`](super::Measured), where the threads'
//! add up by [`Counts::merge`]: the one merge of them.

use super::codes::Tallies;
use super::Counters;
use crate::model::ErrorKind;

/// Highest status code counted individually; others fall in the last slot.
pub(super) const STATUS_SLOTS: usize = 1000;

/// What one or more threads counted of their requests.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// Counts of requests, errors and bytes.
    pub counters: Counters,
    /// Count per status code (index = code; the last slot holds codes ≥ 999).
    pub status: Vec<u64>,
    /// The detail of the first error of each kind, by [`ErrorKind::index`].
    pub first_errors: [Option<String>; ErrorKind::ALL.len()],
    /// The protocols' tallies of the requests' extras, each folded by its rule.
    pub tallies: Tallies,
}

impl Default for Counts {
    fn default() -> Self {
        Counts {
            counters: Counters::default(),
            status: vec![0; STATUS_SLOTS],
            first_errors: Default::default(),
            tallies: Tallies::default(),
        }
    }
}

impl Counts {
    /// Counts a response's status `code`.
    #[inline]
    pub(super) fn count_status(&mut self, code: u16) {
        self.status[(code as usize).min(STATUS_SLOTS - 1)] += 1;
    }

    /// Keeps `detail` if it is the first of its `kind` (for the report's explanation).
    pub(super) fn note_error(&mut self, kind: ErrorKind, detail: &str) {
        let slot = &mut self.first_errors[kind.index()];
        if slot.is_none() {
            *slot = Some(detail.to_string());
        }
    }

    /// Whether an error of `kind` has its detail kept.
    pub(super) fn has_error(&self, kind: ErrorKind) -> bool {
        self.first_errors[kind.index()].is_some()
    }

    /// Adds another thread's counts: counters, status counts and tallies summed (a tally's
    /// limit at its least), each kind's first error kept unless this one has one.
    pub fn merge(&mut self, o: &Counts) {
        self.counters.merge(&o.counters);
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        for (slot, e) in self.first_errors.iter_mut().zip(o.first_errors.iter()) {
            if slot.is_none() {
                slot.clone_from(e);
            }
        }
        self.tallies.merge(&o.tallies);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::extras::{Event, Tally};

    #[test]
    fn counts_merge_as_one() {
        let mut a = Counts::default();
        a.counters.requests = 3;
        a.count_status(200);
        a.count_status(1234);
        a.note_error(ErrorKind::Timeout, "a's");
        a.tallies.add(Event {
            tally: Tally::MaxStreams,
            value: 100,
        });
        let mut b = Counts::default();
        b.counters.requests = 2;
        b.count_status(200);
        b.count_status(999);
        b.note_error(ErrorKind::Timeout, "b's");
        b.note_error(ErrorKind::Connect, "refused");
        b.tallies.add(Event {
            tally: Tally::MaxStreams,
            value: 10,
        });
        a.merge(&b);
        assert_eq!(a.counters.requests, 5);
        assert_eq!((a.status[200], a.status[STATUS_SLOTS - 1]), (2, 2));
        assert_eq!(
            a.first_errors[ErrorKind::Timeout.index()].as_deref(),
            Some("a's")
        );
        assert_eq!(
            a.first_errors[ErrorKind::Connect.index()].as_deref(),
            Some("refused")
        );
        assert!(a.has_error(ErrorKind::Connect) && !a.has_error(ErrorKind::Read));
        assert_eq!(a.tallies.amount(Tally::MaxStreams), Some(10));
    }
}
