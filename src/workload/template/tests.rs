//! Unit tests of `template`.

use super::*;
use proptest::prelude::*;

fn render(t: &Template, seed: u64, seq: u64) -> String {
    let mut out = Vec::new();
    t.render_into(&mut out, &mut GenState::new(seed, 0, 1), seq);
    String::from_utf8_lossy(&out).into_owned()
}

fn sources() -> Sources {
    Sources::new(".").with_env([("TOKEN", "abc123"), ("BAD", "a\r\nb"), ("SP", "a b")])
}

#[test]
fn valid_templates_render() {
    // (template, sequence number, rendering)
    let rows: &[(&str, u64, &str)] = &[
        ("/plain", 0, "/plain"),                    // no slot: static
        ("/kv/{seq}", 41, "/kv/41"),                // the sequence number
        ("{seq:10:12}", 0, "10"),                   // a range starts at FROM
        ("{seq:10:12}", 4, "11"),                   // and cycles: 10 + 4 mod 3
        ("{seq:0:1k}", 1001, "0"),                  // units in counts: 0..=1000
        ("{{literal}} {seq}", 3, "{literal} 3"),    // escaped braces
        ("a}}b{{c", 0, "a}b{c"),                    // escapes alone
        ("Bearer {env:TOKEN}", 0, "Bearer abc123"), // env read at parse
        ("{uniform:5:5}", 0, "5"),                  // a one-value range
        ("{uniform:-2:-2}", 0, "-2"),               // negatives
        ("{choice:only}", 0, "only"),               // a single option
        ("{seq:0:18446744073709551615}", 7, "7"),   // the full range does not overflow
        ("", 0, ""),                                // empty
    ];
    for &(text, seq, want) in rows {
        let t = Template::parse_in(text, Field::Body, &mut sources())
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(render(&t, 1, seq), want, "{text}");
    }
    assert!(Template::parse("/a/{{b}}").unwrap().is_static());
    assert_eq!(
        Template::parse_in("x{env:TOKEN}y", Field::Header, &mut sources())
            .unwrap()
            .static_bytes(),
        Some(&b"xabc123y"[..]),
        "env makes text, merged with its neighbours"
    );
    assert!(!Template::parse("{uuid}").unwrap().is_static());
}

#[test]
fn generated_values_have_their_shapes() {
    let mut state = GenState::new(5, 0, 1);
    // (template, check of one rendering)
    type Check = fn(&str) -> bool;
    let rows: &[(&str, Check)] = &[
        ("{uniform:1:6}", |s| {
            (1..=6).contains(&s.parse::<i64>().unwrap())
        }),
        ("{zipf:10:1.1}", |s| {
            (1..=10).contains(&s.parse::<u64>().unwrap())
        }),
        ("{pareto:10:1}", |s| {
            (1..=10).contains(&s.parse::<u64>().unwrap())
        }),
        ("{choice:a|bb|ccc}", |s| ["a", "bb", "ccc"].contains(&s)),
        ("{random_text:12}", |s| {
            s.len() == 12 && s.bytes().all(|b| b.is_ascii_alphanumeric())
        }),
        ("{uuid}", |s| s.len() == 36 && s.as_bytes()[14] == b'4'),
    ];
    for &(text, ok) in rows {
        let t = Template::parse(text).unwrap();
        for seq in 0..200 {
            let mut out = Vec::new();
            t.render_into(&mut out, &mut state, seq);
            let s = String::from_utf8(out).unwrap();
            assert!(ok(&s), "{text} gave {s}");
        }
    }
    let mut out = Vec::new();
    Template::parse("{random_bytes:33}")
        .unwrap()
        .render_into(&mut out, &mut state, 0);
    assert_eq!(out.len(), 33);
}

#[test]
fn invalid_templates_name_the_problem() {
    // (template, field, offset of the error, words the message must hold)
    let rows: &[(&str, Field, usize, &[&str])] = &[
        (
            "/a/{seqq}",
            Field::Path,
            3,
            &["unknown generator 'seqq'", "{zipf:N:S}"],
        ),
        ("{}", Field::Body, 0, &["empty slot", "{{}}"]),
        ("/a/{seq", Field::Path, 3, &["never closed", "{{"]),
        ("a}b", Field::Body, 1, &["closes no slot", "}}"]),
        ("{seq{x}}", Field::Body, 4, &["do not nest"]),
        ("{seq:5:1}", Field::Body, 0, &["FROM 5 is above TO 1"]),
        ("{seq:1}", Field::Body, 0, &["{seq:FROM:TO}"]),
        (
            "{seq:a:b}",
            Field::Body,
            0,
            &["FROM 'a' is not a whole number"],
        ),
        ("x{uniform:3}", Field::Body, 1, &["{uniform:A:B}"]),
        ("{uniform:9:1}", Field::Body, 0, &["A 9 is above B 1"]),
        (
            "{uniform:1.5:3}",
            Field::Body,
            0,
            &["'1.5' is not an integer"],
        ),
        (
            "{zipf:0:1.1}",
            Field::Body,
            0,
            &["N must be from 1", "{zipf:N:S}"],
        ),
        (
            "{zipf:10:0}",
            Field::Body,
            0,
            &["S '0' is not a number > 0"],
        ),
        ("{zipf:10:-1}", Field::Body, 0, &["S '-1'"]),
        (
            "{pareto:10:x}",
            Field::Body,
            0,
            &["SHAPE 'x'", "{pareto:N:SHAPE}"],
        ),
        ("{choice:}", Field::Body, 0, &["{choice:A|B|C}"]),
        (
            "/{choice:a b|c}",
            Field::Path,
            1,
            &["option 'a b'", "space"],
        ),
        ("{random_text:0}", Field::Body, 0, &["from 1 to 64M"]),
        ("{random_text:100M}", Field::Body, 0, &["from 1 to 64M"]),
        (
            "/{random_bytes:8}",
            Field::Path,
            1,
            &["raw bytes", "a path", "{random_text:8}"],
        ),
        ("{random_bytes:8}", Field::Header, 0, &["a header value"]),
        ("{uuid:4}", Field::Body, 0, &["takes no argument"]),
        ("{line:}", Field::Body, 0, &["{line:FILE}"]),
        (
            "{line:/nonexistent/k.txt}",
            Field::Body,
            0,
            &["cannot read data file", "/nonexistent/k.txt"],
        ),
        (
            "{env:NOPE_NOT_SET}",
            Field::Body,
            0,
            &["NOPE_NOT_SET is not set"],
        ),
        (
            "{env:BAD}",
            Field::Header,
            0,
            &["value of BAD", "line break"],
        ),
        ("/{env:SP}", Field::Path, 1, &["value of SP", "space"]),
        ("/a b", Field::Path, 2, &["a space", "%20"]),
        ("/é", Field::Path, 1, &["not visible ASCII"]),
        ("a\nb", Field::Header, 1, &["line break"]),
    ];
    for &(text, field, offset, words) in rows {
        let e = Template::parse_in(text, field, &mut sources()).unwrap_err();
        assert_eq!(e.offset, offset, "{text}: {e}");
        for w in words {
            assert!(e.message.contains(w), "{text}: '{e}' lacks '{w}'");
        }
    }
    // a body takes anything a path refuses
    assert!(Template::parse_in("a b\r\n\u{e9}", Field::Body, &mut sources()).is_ok());
}

#[test]
fn line_files_are_read_once_checked_and_shared() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("keys.txt"), "k1\nk2\n\nk3\n").unwrap();
    std::fs::write(dir.path().join("spaced.txt"), "ok\nnot ok\n").unwrap();
    let mut src = Sources::new(dir.path());
    let t = Template::parse_in("/kv/{line:keys.txt}", Field::Path, &mut src).unwrap();
    // (sequence number, rendering): blank lines skipped, cycling
    for (seq, want) in [(0, "/kv/k1"), (2, "/kv/k3"), (3, "/kv/k1")] {
        assert_eq!(render(&t, 0, seq), want);
    }
    let again = Template::parse_in("{line:keys.txt}", Field::Body, &mut src).unwrap();
    let (Part::Gen(Gen::Line(a)), Part::Gen(Gen::Line(b))) = (&t.parts[1], &again.parts[0]) else {
        panic!("{t:?} {again:?}")
    };
    assert!(Arc::ptr_eq(a, b), "one read for both templates");
    let e = Template::parse_in("/{line:spaced.txt}", Field::Path, &mut src).unwrap_err();
    assert!(
        e.message.contains("line 2 of data file 'spaced.txt'"),
        "{e}"
    );
    assert!(Template::parse_in("{line:spaced.txt}", Field::Body, &mut src).is_ok());
}

#[test]
fn fixed_lengths() {
    // (template, fixed length)
    let rows: &[(&str, Option<usize>)] = &[
        ("abc", Some(3)),                 // literal
        ("{random_text:100}", Some(100)), // known length
        ("id={uuid}", Some(39)),          // literal + uuid
        ("{choice:ab|cd}", Some(2)),      // options of one length
        ("{choice:a|cd}", None),          // options of two lengths
        ("{seq}", None),                  // digits vary
        ("", Some(0)),                    // empty
    ];
    for &(text, want) in rows {
        assert_eq!(Template::parse(text).unwrap().fixed_len(), want, "{text}");
    }
}

#[test]
fn same_seed_same_renderings() {
    let t = Template::parse("{uniform:0:1000000}-{random_text:8}-{zipf:1000:1.2}-{uuid}").unwrap();
    let run = |seed| (0..50).map(|i| render(&t, seed, i)).collect::<Vec<_>>();
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}

#[test]
fn display_prints_the_canonical_form() {
    // (template, printed)
    let rows: &[(&str, &str)] = &[
        ("{seq:0:1k}", "{seq:0:1000}"),
        ("{{x}}{zipf:1M:1.10}", "{{x}}{zipf:1000000:1.1}"),
        ("{env:TOKEN}/{choice:a|b}", "abc123/{choice:a|b}"),
        (
            "{pareto:10:2}{uuid}{random_text:3}",
            "{pareto:10:2}{uuid}{random_text:3}",
        ),
    ];
    for &(text, want) in rows {
        let t = Template::parse_in(text, Field::Body, &mut sources()).unwrap();
        assert_eq!(t.to_string(), want);
    }
}

/// Pieces that make both valid and invalid templates.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("{seq}".to_string()),
        Just("{seq:3:9}".to_string()),
        Just("{uniform:-5:5}".to_string()),
        Just("{zipf:100:1.1}".to_string()),
        Just("{pareto:50:0.7}".to_string()),
        Just("{choice:a|b|}".to_string()),
        Just("{random_text:4}".to_string()),
        Just("{random_bytes:4}".to_string()),
        Just("{uuid}".to_string()),
        Just("{env:TOKEN}".to_string()),
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just(":".to_string()),
        Just("|".to_string()),
        "[a-z0-9/?=&. -]{0,6}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn parsing_never_panics(text in proptest::collection::vec(piece(), 0..8)) {
        let text = text.concat();
        for field in [Field::Path, Field::Header, Field::Body] {
            let _ = Template::parse_in(&text, field, &mut sources());
        }
    }

    #[test]
    fn print_then_parse_is_stable(text in proptest::collection::vec(piece(), 0..8)) {
        let text = text.concat();
        if let Ok(t) = Template::parse_in(&text, Field::Body, &mut sources()) {
            let printed = t.to_string();
            let again = Template::parse_in(&printed, Field::Body, &mut sources())
                .map_err(|e| TestCaseError::fail(format!("{printed}: {e}")))?;
            prop_assert_eq!(&again, &t);
            prop_assert_eq!(again.to_string(), printed);
        }
    }
}
