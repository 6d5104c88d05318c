//! The protocols' [`Tallies`]: each [`Tally`] of a request's extras folded by its rule, codes
//! counted by code with the message of each code's first occurrence (gRPC's `grpc-message`),
//! amounts summed, limits at their least. A handful of codes at most: a short list, searched
//! in place.

use crate::engine::extras::{Event, Rule, Status, Tally};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A record's gRPC statuses (in its summary, flattened): calls by status code name, and the
/// first `grpc-message` of each code. Both absent from runs that made no gRPC call.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct GrpcStatuses {
    /// Calls by status code name (`OK`, `UNAVAILABLE`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_status: BTreeMap<String, u64>,
    /// The first `grpc-message` of each status code name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_messages: BTreeMap<String, String>,
}

impl GrpcStatuses {
    /// The statuses counted in `tallies`.
    pub fn of(tallies: &Tallies) -> Self {
        GrpcStatuses {
            grpc_status: tallies.by_name(Tally::Grpc),
            grpc_messages: tallies.messages(Tally::Grpc),
        }
    }

    /// The statuses of several summaries together (the first message of a code wins).
    pub fn sum<'a>(parts: impl Iterator<Item = &'a GrpcStatuses>) -> Self {
        let mut out = GrpcStatuses::default();
        for p in parts {
            for (code, n) in &p.grpc_status {
                *out.grpc_status.entry(code.clone()).or_default() += n;
            }
            for (code, m) in &p.grpc_messages {
                out.grpc_messages
                    .entry(code.clone())
                    .or_insert_with(|| m.clone());
            }
        }
        out
    }
}

/// Counts per code and the first message of each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeCounts {
    counts: Vec<(u32, u64)>,
    first: Vec<(u32, String)>,
}

impl CodeCounts {
    /// Counts one `code`.
    pub fn count(&mut self, code: u32) {
        match self.counts.iter_mut().find(|(c, _)| *c == code) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((code, 1)),
        }
    }

    /// Counts one `code`, keeping `message` if it is the code's first.
    pub fn count_with(&mut self, code: u32, message: &str) {
        self.count(code);
        if !self.first.iter().any(|(c, _)| *c == code) {
            self.first.push((code, message.to_string()));
        }
    }

    /// Adds another thread's counts (a message already kept stays).
    pub fn merge(&mut self, o: &CodeCounts) {
        for &(code, n) in &o.counts {
            match self.counts.iter_mut().find(|(c, _)| *c == code) {
                Some((_, m)) => *m += n,
                None => self.counts.push((code, n)),
            }
        }
        for (code, m) in &o.first {
            if !self.first.iter().any(|(c, _)| c == code) {
                self.first.push((*code, m.clone()));
            }
        }
    }

    /// The counts by the codes' names.
    pub fn by_name<N: ToString>(&self, name: impl Fn(u32) -> N) -> BTreeMap<String, u64> {
        self.counts
            .iter()
            .map(|&(c, n)| (name(c).to_string(), n))
            .collect()
    }

    /// The first non-empty message of each code, by the codes' names.
    pub fn messages<N: ToString>(&self, name: impl Fn(u32) -> N) -> BTreeMap<String, String> {
        self.first
            .iter()
            .filter(|(_, m)| !m.is_empty())
            .map(|(c, m)| (name(*c).to_string(), m.clone()))
            .collect()
    }
}

/// The protocols' tallies of a thread's or a run's requests, by [`Tally::index`]: what their
/// extras counted, folded by each tally's [`Rule`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tallies {
    /// The counts by code of the tallies that count codes.
    codes: [CodeCounts; Tally::ALL.len()],
    /// The sums and least values of the others (`None`: no event).
    amounts: [Option<u64>; Tally::ALL.len()],
}

impl Tallies {
    /// Folds in one event by its tally's rule.
    #[inline]
    pub fn add(&mut self, e: Event) {
        self.add_value(e.tally, e.value.into());
    }

    /// Folds `value` into `tally` by its rule (a code for a tally that counts codes).
    fn add_value(&mut self, tally: Tally, value: u64) {
        let i = tally.index();
        self.amounts[i] = match tally.rule() {
            Rule::ByCode => {
                self.codes[i].count(value as u32);
                return;
            }
            Rule::Sum => Some(self.amounts[i].unwrap_or(0) + value),
            Rule::Least => Some(self.amounts[i].map_or(value, |m| m.min(value))),
        };
    }

    /// Counts a status's code in its tally, keeping its message if it is the code's first.
    pub fn add_status(&mut self, s: &Status) {
        self.codes[s.tally.index()].count_with(s.code, s.message);
    }

    /// Adds another thread's tallies (a message already kept stays).
    pub fn merge(&mut self, o: &Tallies) {
        for t in Tally::ALL {
            let i = t.index();
            self.codes[i].merge(&o.codes[i]);
            if let Some(v) = o.amounts[i] {
                self.add_value(t, v);
            }
        }
    }

    /// A tally's counts by the names of its codes (empty: none counted).
    pub fn by_name(&self, t: Tally) -> BTreeMap<String, u64> {
        self.codes[t.index()].by_name(|c| t.code_name(c))
    }

    /// A tally's first non-empty message of each code, by the codes' names.
    pub fn messages(&self, t: Tally) -> BTreeMap<String, String> {
        self.codes[t.index()].messages(|c| t.code_name(c))
    }

    /// A tally's sum or least value (`None`: no event).
    pub fn amount(&self, t: Tally) -> Option<u64> {
        self.amounts[t.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_merge_and_keep_the_first_message() {
        let mut a = CodeCounts::default();
        a.count_with(14, "down");
        a.count_with(14, "still down");
        a.count_with(0, "");
        let mut b = CodeCounts::default();
        b.count_with(14, "other thread");
        b.count_with(4, "late");
        b.count(8);
        a.merge(&b);
        let name = |c: u32| format!("c{c}");
        let counts = a.by_name(name);
        assert_eq!(
            counts.into_iter().collect::<Vec<_>>(),
            [
                ("c0".to_string(), 1),
                ("c14".to_string(), 3),
                ("c4".to_string(), 1),
                ("c8".to_string(), 1)
            ]
        );
        let messages = a.messages(name);
        // the empty message of OK is not kept; a's message of 14 came first
        assert_eq!(messages.len(), 2);
        assert_eq!(messages["c14"], "down");
        assert_eq!(messages["c4"], "late");
    }

    #[test]
    fn tallies_fold_and_merge_each_by_its_rule() {
        let ev = |tally, value| Event { tally, value };
        let mut a = Tallies::default();
        a.add(ev(Tally::WsClose, 1006));
        a.add(ev(Tally::WsUnmatched, 2));
        a.add(ev(Tally::MaxStreams, 100));
        a.add(ev(Tally::MaxStreams, 250));
        let mut b = Tallies::default();
        b.add(ev(Tally::WsClose, 1006));
        b.add(ev(Tally::WsClose, 1000));
        b.add(ev(Tally::WsUnmatched, 3));
        b.add(ev(Tally::MaxStreams, 50));
        b.add_status(&Status {
            tally: Tally::Grpc,
            code: 14,
            message: "down",
            failed: None,
        });
        a.merge(&b);
        let closes: Vec<_> = a.by_name(Tally::WsClose).into_iter().collect();
        assert_eq!(closes, [("1000".into(), 1), ("abnormal".into(), 2)]);
        assert_eq!(a.amount(Tally::WsUnmatched), Some(5), "summed");
        assert_eq!(a.amount(Tally::MaxStreams), Some(50), "the least");
        assert_eq!(a.amount(Tally::WsClose), None, "counted by code, no amount");
        assert_eq!(a.amount(Tally::Reset), None);
        assert!(a.by_name(Tally::Reset).is_empty());
        let grpc = GrpcStatuses::of(&a);
        assert_eq!(grpc.grpc_status["UNAVAILABLE"], 1);
        assert_eq!(grpc.grpc_messages["UNAVAILABLE"], "down");
    }
}
