//! `--ws-match FIELD`: the value of a field of a JSON message (a top-level name, or a dotted
//! path `a.b` through nested objects), found by a scanner of its own over the message's bytes:
//! nothing is parsed into values, nothing allocated, each byte looked at once at most. The
//! value is a string's contents between its quotes (as written, escapes unresolved) or a
//! number's, `true`'s, `false`'s or `null`'s token, so that a reply's `"id": "17"` and a
//! message's `"id": 17` carry the same value `17`; an object or an array is no value. A message
//! that is not JSON, or that breaks off, has none (such a reply matches nothing).

/// The value of `path` (its names, outermost first) in the JSON object `json`: see the
/// module's documentation; `None` when `json` is not an object holding it.
pub fn value_of<'a, S: AsRef<str>>(json: &'a [u8], path: &[S]) -> Option<&'a [u8]> {
    let mut s = Scanner { b: json, i: 0 };
    for name in path {
        s.member(name.as_ref().as_bytes())?;
    }
    s.ws();
    match s.peek()? {
        b'"' => s.string(),
        b'{' | b'[' => None,
        _ => s.token(),
    }
}

/// A position in a JSON text.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// Skips JSON's whitespace.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// Takes `c` (after whitespace), or fails.
    fn expect(&mut self, c: u8) -> Option<()> {
        self.ws();
        (self.peek()? == c).then(|| self.i += 1)
    }

    /// At an object: moves to the value of its member `name` (its first, if named twice).
    fn member(&mut self, name: &[u8]) -> Option<()> {
        self.expect(b'{')?;
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.expect(b':')?;
            if key == name {
                return Some(());
            }
            self.skip_value()?;
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                _ => return None,
            }
        }
    }

    /// At a string's opening quote: its contents, as written; after its closing quote.
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.i + 1;
        let mut i = start;
        loop {
            match *self.b.get(i)? {
                b'"' => break,
                b'\\' => i += 2,
                _ => i += 1,
            }
        }
        self.i = i + 1;
        Some(&self.b[start..i])
    }

    /// A bare token (a number, `true`, `false`, `null`): up to the next delimiter.
    fn token(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            self.i += 1;
        }
        (self.i > start).then(|| &self.b[start..self.i])
    }

    /// Skips one value, however deeply nested (counted, not recursed).
    fn skip_value(&mut self) -> Option<()> {
        self.ws();
        let mut depth = 0usize;
        loop {
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'{' | b'[' => {
                    depth += 1;
                    self.i += 1;
                }
                b'}' | b']' if depth > 0 => {
                    depth -= 1;
                    self.i += 1;
                }
                b',' | b':' | b' ' | b'\t' | b'\n' | b'\r' if depth > 0 => self.i += 1,
                _ => {
                    self.token()?;
                }
            }
            if depth == 0 {
                return Some(());
            }
        }
    }
}

/// A `--ws-match` path's names (`id`, `a.b`), checked: none empty.
pub fn parse_path(text: &str) -> Option<Vec<String>> {
    let names: Vec<String> = text.split('.').map(str::to_string).collect();
    (!names.iter().any(String::is_empty)).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_found_by_name_or_dotted_path() {
        // (the JSON, the path, the value)
        let rows: [(&str, &str, Option<&str>); 16] = [
            (r#"{"id":17,"op":"quote"}"#, "id", Some("17")),
            (r#"{ "op" : "q" , "id" : "17" }"#, "id", Some("17")),
            // the first member of that name
            (r#"{"id":1,"id":2}"#, "id", Some("1")),
            // skipped values of every kind, nested, with braces in strings
            (
                r#"{"a":{"b":[1,{"c":"}]"}]},"s":"x\"y","n":null,"id":-2.5e3}"#,
                "id",
                Some("-2.5e3"),
            ),
            (r#"{"a":{"b":{"id":"x"}},"id":3}"#, "a.b.id", Some("x")),
            (r#"{"a":{"b":7}}"#, "a.b", Some("7")),
            (r#"{"s":"a\"b"}"#, "s", Some(r#"a\"b"#)),
            (r#"{"t":true}"#, "t", Some("true")),
            (r#"{"id":""}"#, "id", Some("")),
            // no value: absent, an object or array, not an object, broken off, not JSON
            (r#"{"op":"q"}"#, "id", None),
            (r#"{"id":{"x":1}}"#, "id", None),
            (r#"{"id":[1]}"#, "id", None),
            (r#"[{"id":1}]"#, "id", None),
            (r#"{"op":"q","id"#, "id", None),
            ("hello", "id", None),
            (r#"{"a":1}"#, "a.b", None),
        ];
        for (json, path, want) in rows {
            let path = parse_path(path).unwrap();
            let got = value_of(json.as_bytes(), &path);
            assert_eq!(got, want.map(str::as_bytes), "{json} {path:?}");
        }
    }

    #[test]
    fn a_path_names_each_level() {
        assert_eq!(parse_path("id").unwrap(), ["id"]);
        assert_eq!(parse_path("a.b").unwrap(), ["a", "b"]);
        for bad in ["", ".", "a.", ".a", "a..b"] {
            assert!(parse_path(bad).is_none(), "{bad}");
        }
    }
}
