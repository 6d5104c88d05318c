//! The W3C `Server-Timing` header, parsed without allocating:
//!
//! ```text
//! Server-Timing = #server-timing-metric
//! server-timing-metric = metric-name *( OWS ";" OWS server-timing-param )
//! server-timing-param = param-name OWS "=" OWS ( token / quoted-string )
//! ```
//!
//! It reads what a browser reads (the web-platform-tests' `server-timing/` parsing cases, in
//! `tests/server_timing.rs`): `dur` is in milliseconds (a decimal number, sign and exponent
//! allowed, read from the start of the value as HTML's rules for floating-point numbers do:
//! `12ms` is 12), `desc` a token or a quoted string whose `\x` escapes [`Desc::bytes`] undoes;
//! parameter names are case-insensitive, unknown parameters are ignored, and of a repeated
//! parameter the first counts even when its value is bad. Text that does not fit the grammar
//! (after a name, after a value: `desc=d1 d2`, `desc="d1" d2`) is skipped up to the next `;` or
//! `,` and the rest of the metric is still read; an unterminated quoted string is an empty
//! value and ends the header.
//!
//! Where reqlife differs from a browser, on purpose (a browser reports every metric with a
//! `duration`, 0 when there is none):
//! - a metric without `dur`, or whose `dur` is not a number, has no duration ([`Metric::dur_ms`]
//!   is `None`): the recorder counts it as seen and by its `desc` (a label), never as a 0 ms
//!   sample that would drag its percentiles down;
//! - a negative `dur` is parsed (`Some(-1.0)`), but the recorder keeps it out of the histograms
//!   (they hold durations, which are not negative) and counts it as malformed;
//! - a metric that breaks the grammar is still read as far as the browser reads it, and also
//!   counted as malformed (the caller shows the count), so that a server's mistakes are visible;
//!   a metric without a name is skipped up to the next comma (and counted).

/// One metric of a `Server-Timing` header.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric<'a> {
    /// The metric's name.
    pub name: &'a str,
    /// Duration in milliseconds, if given as a number (it may be negative).
    pub dur_ms: Option<f64>,
    /// The description, if the metric has a `desc` parameter (possibly empty).
    pub desc: Option<Desc<'a>>,
}

/// A `desc` value as sent: a token, or the inside of a quoted string with its escapes still
/// in; [`Desc::bytes`] gives the description itself, without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Desc<'a> {
    raw: &'a [u8],
    quoted: bool,
}

impl<'a> Desc<'a> {
    /// The bytes as sent (the inside of the quotes, escapes included).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The description: a quoted string's `\x` pairs (RFC 9110 quoted-pair) read as `x`.
    pub fn bytes(&self) -> impl Iterator<Item = u8> + 'a {
        let quoted = self.quoted;
        let mut it = self.raw.iter().copied();
        std::iter::from_fn(move || match it.next()? {
            b'\\' if quoted => it.next(),
            b => Some(b),
        })
    }

    /// Whether the description is `other`.
    pub fn eq_bytes(&self, other: &[u8]) -> bool {
        self.bytes().eq(other.iter().copied())
    }

    /// Whether the description as sent is empty (`desc=""`).
    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    /// The description, owned.
    pub fn to_vec(&self) -> Vec<u8> {
        self.bytes().collect()
    }
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

/// Skips to the next `stop` byte (or `;` too, with `at_semicolon`) outside a quoted string;
/// returns its index (or the end).
fn skip_to(s: &[u8], mut i: usize, at_semicolon: bool) -> usize {
    while i < s.len() {
        match s[i] {
            b',' => return i,
            b';' if at_semicolon => return i,
            b'"' => match quoted(s, i) {
                Some((_, next)) => i = next,
                None => return s.len(),
            },
            _ => i += 1,
        }
    }
    i
}

/// A `dur` value: the longest prefix that is a decimal number (`[+-]digits[.digits][e[+-]digits]`,
/// as HTML's rules for parsing floating-point numbers read it), finite; `None` if there is none.
fn duration(v: &[u8]) -> Option<f64> {
    let digits = |mut i: usize| {
        while i < v.len() && v[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut i = usize::from(matches!(v.first(), Some(b'+' | b'-')));
    let int_end = digits(i);
    let mut mantissa = int_end - i;
    i = int_end;
    if i < v.len() && v[i] == b'.' {
        let frac_end = digits(i + 1);
        mantissa += frac_end - (i + 1);
        if mantissa > 0 {
            i = frac_end;
        }
    }
    if mantissa == 0 {
        return None;
    }
    if i < v.len() && (v[i] | 0x20) == b'e' {
        let mut k = i + 1;
        if k < v.len() && (v[k] == b'+' || v[k] == b'-') {
            k += 1;
        }
        let exp_end = digits(k);
        if exp_end > k {
            i = exp_end;
        }
    }
    std::str::from_utf8(&v[..i])
        .ok()?
        .parse::<f64>()
        .ok()
        .filter(|d| d.is_finite())
}

/// Parses one metric at `i` (not OWS, not a comma); returns it (`None` without a name),
/// whether it was malformed, and where the next metric starts.
fn metric(s: &[u8], i: usize) -> (Option<Metric<'_>>, bool, usize) {
    let end = token(s, i);
    if end == i {
        return (None, true, (skip_to(s, i, false) + 1).min(s.len()));
    }
    // Token characters are ASCII: this cannot fail.
    let name = std::str::from_utf8(&s[i..end]).unwrap_or("");
    let mut m = Metric {
        name,
        dur_ms: None,
        desc: None,
    };
    let mut bad = false;
    let (mut seen_dur, mut seen_desc) = (false, false);
    // Anything between the name and the first `;` or `,` is not the grammar's: skipped.
    let mut i = skip_ows(s, end);
    let next = skip_to(s, i, true);
    bad |= next != i;
    i = next;
    while i < s.len() && s[i] == b';' {
        i = skip_ows(s, i + 1);
        let pend = token(s, i);
        let pname = &s[i..pend];
        i = skip_ows(s, pend);
        let mut value = Desc {
            raw: b"",
            quoted: false,
        };
        let has_value = i < s.len() && s[i] == b'=';
        if has_value {
            i = skip_ows(s, i + 1);
            if i < s.len() && s[i] == b'"' {
                match quoted(s, i) {
                    Some((inside, next)) => {
                        value = Desc {
                            raw: inside,
                            quoted: true,
                        };
                        i = skip_ows(s, next);
                    }
                    None => {
                        // Unterminated: an empty value, and the rest of the header is in it.
                        bad = true;
                        i = s.len();
                    }
                }
            } else {
                let vend = token(s, i);
                value.raw = &s[i..vend];
                i = skip_ows(s, vend);
            }
        }
        let next = skip_to(s, i, true);
        bad |= next != i;
        i = next;
        if pname.is_empty() {
            // `a;;b` or a trailing `;` is harmless; `;=1` is not.
            bad |= has_value;
            continue;
        }
        if pname.eq_ignore_ascii_case(b"dur") {
            if !seen_dur {
                seen_dur = true;
                // A quoted number (`dur="1.5"`) counts too, as in browsers.
                m.dur_ms = duration(value.raw);
                bad |= m.dur_ms.is_none();
            }
        } else if pname.eq_ignore_ascii_case(b"desc") && !seen_desc {
            seen_desc = true;
            m.desc = Some(value);
        }
    }
    // At a comma (or the end).
    (Some(m), bad, (i + 1).min(s.len()))
}

/// Parses a header value, calling `each` for every metric with a name; returns how many
/// metrics were malformed (skipped, or read only in part).
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
        let (m, bad, next) = metric(value, i);
        invalid += u32::from(bad);
        if let Some(m) = m {
            each(m);
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
                m.desc
                    .map(|d| String::from_utf8_lossy(&d.to_vec()).into_owned()),
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
            // an escaped quote inside a quoted string, unescaped
            ("a;desc=\"say \\\"hi\\\"\"", vec![m("a", None, Some("say \"hi\""))], 0),
            // a negative duration is parsed (the recorder keeps it out of the histograms)
            ("a;dur=-1.5", vec![m("a", Some(-1.5), None)], 0),
            // a number at the start of the value counts, as in browsers; a quoted one too
            ("a;dur=12ms, b;dur=\"2.5\", c;dur=1e3", vec![m("a", Some(12.0), None), m("b", Some(2.5), None), m("c", Some(1000.0), None)], 0),
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
                assert!(m.dur_ms.is_none_or(f64::is_finite));
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
    fn malformed_metrics_are_counted_and_read_as_far_as_a_browser_reads_them() {
        // (header value, metrics kept, malformed count)
        let rows = vec![
            // dur not a number: no duration (not a 0 ms sample), counted
            (
                "a;dur=abc, b;dur=1",
                vec![m("a", None, None), m("b", Some(1.0), None)],
                1,
            ),
            ("a;dur=NaN;desc=x", vec![m("a", None, Some("x"))], 1),
            ("a;dur;desc=x", vec![m("a", None, Some("x"))], 1),
            ("@bad;dur=1, b;dur=2", vec![m("b", Some(2.0), None)], 1), // no name: skipped
            // unterminated quote: an empty desc, and the rest of the header is inside it
            (
                "a;desc=\"unterminated, b;dur=1",
                vec![m("a", None, Some(""))],
                1,
            ),
            (
                "a b;dur=1, c",
                vec![m("a", Some(1.0), None), m("c", None, None)],
                1,
            ), // junk after the name
            ("a;=1, b", vec![m("a", None, None), m("b", None, None)], 1), // empty parameter name
            ("a;desc=d1 d2;dur=3", vec![m("a", Some(3.0), Some("d1"))], 1), // junk after a value
            (
                "a;desc=\"d1\" d2;dur=3",
                vec![m("a", Some(3.0), Some("d1"))],
                1,
            ),
            // a trailing or doubled `;` is harmless
            ("a;;dur=1;", vec![m("a", Some(1.0), None)], 0),
        ];
        for (value, want, bad) in rows {
            assert_eq!(all(value), (want, bad), "{value:?}");
        }
    }
}
