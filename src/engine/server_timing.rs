//! The W3C `Server-Timing` header, parsed without allocating:
//!
//! ```text
//! Server-Timing = #server-timing-metric
//! server-timing-metric = metric-name *( OWS ";" OWS server-timing-param )
//! server-timing-param = param-name OWS "=" OWS ( token / quoted-string )
//! ```
//!
//! `dur` is in milliseconds (decimals allowed), `desc` a token or a quoted string; a metric may
//! have neither; unknown parameters are ignored, and of a repeated parameter the first counts.
//! A malformed metric (a bad name, an unterminated quote, a `dur` that is not a number) is
//! skipped up to the next comma and reported, never fatal: the caller counts it.

/// One metric of a `Server-Timing` header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric<'a> {
    pub name: &'a str,
    /// Duration in milliseconds, if given.
    pub dur_ms: Option<f64>,
    /// The description: a token, or the inside of a quoted string (escapes left as sent).
    pub desc: Option<&'a [u8]>,
}

/// RFC 9110 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn skip_ows(s: &[u8], mut i: usize) -> usize {
    while i < s.len() && (s[i] == b' ' || s[i] == b'\t') {
        i += 1;
    }
    i
}

fn token(s: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < s.len() && is_tchar(s[i]) {
        i += 1;
    }
    i
}

/// Reads a quoted string starting at `s[start] == '"'`; returns (inside, index after the
/// closing quote), or `None` if it is not closed.
fn quoted(s: &[u8], start: usize) -> Option<(&[u8], usize)> {
    let mut i = start + 1;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return Some((&s[start + 1..i], i + 1)),
            _ => i += 1,
        }
    }
    None
}

/// Skips to just after the next comma outside a quoted string (or to the end).
fn skip_metric(s: &[u8], mut i: usize) -> usize {
    while i < s.len() {
        match s[i] {
            b',' => return i + 1,
            b'"' => match quoted(s, i) {
                Some((_, next)) => i = next,
                None => return s.len(),
            },
            _ => i += 1,
        }
    }
    i
}

/// Parses one metric at `i`; returns it (or `None` when malformed) and where the next
/// metric starts.
fn metric(s: &[u8], i: usize) -> (Option<Metric<'_>>, usize) {
    let start = i;
    let end = token(s, start);
    if end == start {
        return (None, skip_metric(s, i));
    }
    // Token characters are ASCII: this cannot fail.
    let name = std::str::from_utf8(&s[start..end]).unwrap_or("");
    let mut m = Metric {
        name,
        dur_ms: None,
        desc: None,
    };
    let mut seen_dur = false;
    let mut seen_desc = false;
    let mut i = skip_ows(s, end);
    loop {
        if i >= s.len() {
            return (Some(m), i);
        }
        match s[i] {
            b',' => return (Some(m), i + 1),
            b';' => {}
            _ => return (None, skip_metric(s, i)),
        }
        i = skip_ows(s, i + 1);
        let pstart = i;
        let pend = token(s, pstart);
        if pend == pstart {
            return (None, skip_metric(s, i));
        }
        let pname = &s[pstart..pend];
        i = skip_ows(s, pend);
        let value: Option<&[u8]> = if i < s.len() && s[i] == b'=' {
            i = skip_ows(s, i + 1);
            if i < s.len() && s[i] == b'"' {
                match quoted(s, i) {
                    Some((inside, next)) => {
                        i = next;
                        Some(inside)
                    }
                    None => return (None, s.len()),
                }
            } else {
                let vend = token(s, i);
                let v = &s[i..vend];
                i = vend;
                Some(v)
            }
        } else {
            // A parameter without a value (allowed by the grammar's leniency): ignored.
            None
        };
        i = skip_ows(s, i);
        if pname.eq_ignore_ascii_case(b"dur") && !seen_dur {
            seen_dur = true;
            let parsed = value
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v >= 0.0);
            match parsed {
                Some(d) => m.dur_ms = Some(d),
                None => return (None, skip_metric(s, i)),
            }
        } else if pname.eq_ignore_ascii_case(b"desc") && !seen_desc {
            seen_desc = true;
            m.desc = value;
        }
    }
}

/// Parses a header value, calling `each` for every well-formed metric; returns how many
/// metrics were malformed (and skipped).
pub fn parse<'a>(value: &'a [u8], mut each: impl FnMut(Metric<'a>)) -> u32 {
    let mut invalid = 0;
    let mut i = 0;
    while i < value.len() {
        i = skip_ows(value, i);
        if i >= value.len() {
            break;
        }
        if value[i] == b',' {
            // An empty list element: allowed, skipped.
            i += 1;
            continue;
        }
        let (m, next) = metric(value, i);
        match m {
            Some(m) => each(m),
            None => invalid += 1,
        }
        i = next.max(i + 1);
    }
    invalid
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric as owned values: (name, dur, desc).
    type Owned = (String, Option<f64>, Option<String>);

    fn all(v: &str) -> (Vec<Owned>, u32) {
        let mut out = Vec::new();
        let bad = parse(v.as_bytes(), |m| {
            out.push((
                m.name.to_string(),
                m.dur_ms,
                m.desc.map(|d| String::from_utf8_lossy(d).into_owned()),
            ))
        });
        (out, bad)
    }

    fn m(
        name: &str,
        dur: Option<f64>,
        desc: Option<&str>,
    ) -> (String, Option<f64>, Option<String>) {
        (name.to_string(), dur, desc.map(String::from))
    }

    #[test]
    fn real_world_headers() {
        // (header value, metrics, malformed count)
        let rows = vec![
            (
                "parse;dur=0.003, queue;dur=0.009, handler;dur=0.018, write;dur=0.011, total;dur=0.06",
                vec![
                    m("parse", Some(0.003), None),
                    m("queue", Some(0.009), None),
                    m("handler", Some(0.018), None),
                    m("write", Some(0.011), None),
                    m("total", Some(0.06), None),
                ],
                0,
            ),
            ("miss, db;dur=53, app;dur=47.2", vec![m("miss", None, None), m("db", Some(53.0), None), m("app", Some(47.2), None)], 0),
            ("customView, dc;desc=atl", vec![m("customView", None, None), m("dc", None, Some("atl"))], 0),
            ("cache;desc=\"Cache Read\";dur=23.2", vec![m("cache", Some(23.2), Some("Cache Read"))], 0),
            ("level;desc=\"L1\"", vec![m("level", None, Some("L1"))], 0),
            ("total;dur=123.4", vec![m("total", Some(123.4), None)], 0),
            // OWS everywhere, uppercase parameter names, unknown parameters ignored
            ("  db ; DUR = 1.5 ; foo=bar ;desc= x  ,", vec![m("db", Some(1.5), Some("x"))], 0),
            // the first of a repeated parameter counts
            ("db;dur=1;dur=2;desc=a;desc=b", vec![m("db", Some(1.0), Some("a"))], 0),
            // a comma inside a quoted desc does not split metrics
            ("a;desc=\"x, y\";dur=1, b;dur=2", vec![m("a", Some(1.0), Some("x, y")), m("b", Some(2.0), None)], 0),
            // an escaped quote inside a quoted string
            ("a;desc=\"say \\\"hi\\\"\"", vec![m("a", None, Some("say \\\"hi\\\""))], 0),
            // empty elements and an empty header
            (",,a;dur=1,,", vec![m("a", Some(1.0), None)], 0),
            ("", vec![], 0),
            // a parameter without a value is ignored
            ("a;flag;dur=2", vec![m("a", Some(2.0), None)], 0),
        ];
        for (value, want, bad) in rows {
            assert_eq!(all(value), (want, bad), "{value:?}");
        }
    }

    proptest::proptest! {
        /// Whatever the bytes, parsing ends, never panics, and every metric it yields has a
        /// non-empty token name and a finite, non-negative duration.
        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let mut names = 0;
            parse(&bytes, |m| {
                assert!(!m.name.is_empty() && m.name.bytes().all(is_tchar));
                assert!(m.dur_ms.is_none_or(|d| d.is_finite() && d >= 0.0));
                names += 1;
            });
            proptest::prop_assert!(names <= bytes.len());
        }

        /// Headers made of the grammar's own pieces parse back to what was written.
        #[test]
        fn written_metrics_parse_back(
            metrics in proptest::collection::vec(("[a-z][a-z0-9_-]{0,8}", 0u32..1_000_000, "[A-Za-z0-9 ,;]{0,10}"), 1..6)
        ) {
            let text: Vec<String> = metrics
                .iter()
                .map(|(n, d, desc)| format!("{n};dur={}.{:03};desc=\"{desc}\"", d / 1000, d % 1000))
                .collect();
            let header = text.join(", ");
            let mut got = Vec::new();
            let bad = parse(header.as_bytes(), |m| got.push((m.name.to_string(), m.dur_ms, m.desc.map(|d| d.to_vec()))));
            proptest::prop_assert_eq!(bad, 0);
            proptest::prop_assert_eq!(got.len(), metrics.len());
            for ((n, d, desc), (gn, gd, gdesc)) in metrics.iter().zip(got) {
                proptest::prop_assert_eq!(n, &gn);
                proptest::prop_assert!((gd.unwrap() - *d as f64 / 1000.0).abs() < 1e-9);
                proptest::prop_assert_eq!(desc.as_bytes(), &gdesc.unwrap()[..]);
            }
        }
    }

    #[test]
    fn malformed_metrics_are_counted_and_skipped() {
        // (header value, metrics kept, malformed count)
        let rows = vec![
            ("a;dur=abc, b;dur=1", vec![m("b", Some(1.0), None)], 1), // dur not a number
            ("a;dur=-1, b;dur=1", vec![m("b", Some(1.0), None)], 1),  // negative dur
            ("@bad;dur=1, b;dur=2", vec![m("b", Some(2.0), None)], 1), // bad name
            ("a;desc=\"unterminated, b;dur=1", vec![], 1),            // unterminated quote
            ("a b;dur=1, c", vec![m("c", None, None)], 1),            // junk after the name
            ("a;=1, b", vec![m("b", None, None)], 1),                 // empty parameter name
            ("a;dur=NaN", vec![], 1),
        ];
        for (value, want, bad) in rows {
            assert_eq!(all(value), (want, bad), "{value:?}");
        }
    }
}
