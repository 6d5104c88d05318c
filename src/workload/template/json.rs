//! Templates of JSON text (gRPC's `--data`, a WebSocket's `--data`): JSON's own braces are
//! literal, so the text is written as JSON is. A slot is a brace followed by a letter: inside
//! a string (`{"id": "{uuid}"}`, a string value) or outside one (`{"id": {seq}}`, a number:
//! JSON's braces are never followed by a letter); inside a string a literal brace is `{{`.
//! The text is rewritten into [`Template::parse_in`]'s syntax and parsed as a body.

use super::{Field, Sources, Template, TemplateError};

impl Template {
    /// Parses JSON text with generator slots (see the module's documentation).
    pub fn parse_json(text: &str, sources: &mut Sources) -> Result<Template, TemplateError> {
        Template::parse_in(&escaped(text), Field::Body, sources)
    }
}

/// `text` in [`Template::parse_in`]'s syntax: the braces of JSON outside strings doubled, but
/// those that open a slot (and the slot itself, to its closing brace).
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let (mut in_string, mut backslash, mut in_slot) = (false, false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_slot {
            out.push(c);
            in_slot = c != '}';
            continue;
        }
        match c {
            '{' if !in_string && chars.peek().is_some_and(char::is_ascii_alphabetic) => {
                in_slot = true;
                out.push(c);
            }
            '{' | '}' if !in_string => {
                out.push(c);
                out.push(c);
            }
            '"' if !backslash => {
                in_string = !in_string;
                out.push(c);
            }
            _ => out.push(c),
        }
        backslash = in_string && c == '\\' && !backslash;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::gen::GenState;

    fn first(json: &str) -> Result<String, TemplateError> {
        let t = Template::parse_json(json, &mut Sources::new("."))?;
        let mut out = Vec::new();
        t.render_into(&mut out, &mut GenState::new(1, 0, 1), 7);
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn json_braces_are_literal_and_a_brace_before_a_letter_opens_a_slot() {
        // (the JSON, its rendering with seq 7)
        let rows = [
            (r#"{"text": "hi"}"#, r#"{"text": "hi"}"#),
            (r#"{"id": "{seq}", "v": [1]}"#, r#"{"id": "7", "v": [1]}"#),
            (r#"{"a": {"b": "x\"{seq}"}}"#, r#"{"a": {"b": "x\"7"}}"#),
            (r#"{"t": "{{literal}}"}"#, r#"{"t": "{literal}"}"#),
            // a number: the slot outside any string
            (r#"{"id":{seq},"op":"quote"}"#, r#"{"id":7,"op":"quote"}"#),
            (r#"{"a":{"id":{seq:100:200}}}"#, r#"{"a":{"id":107}}"#),
            (r#"[{seq}, {}]"#, r#"[7, {}]"#),
            // plain text is text, its slots too
            ("get {seq}", "get 7"),
            // a string's escaped backslash ends before its quote
            (r#"{"p": "c:\\", "id": {seq}}"#, r#"{"p": "c:\\", "id": 7}"#),
        ];
        for (json, want) in rows {
            assert_eq!(first(json).unwrap(), want, "{json}");
        }
        assert!(first(r#"{"id": "{nope}"}"#).is_err());
        assert!(first(r#"{"id": {nope}}"#).is_err());
    }
}
