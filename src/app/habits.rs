//! Habits of other tools' users, answered before clap reads the line (clap's own tips, "use
//! '-- -z'" or "a similar argument exists: '--value-size'", would mislead): `reqlife URL ...`
//! (no subcommand, a URL among the arguments) runs `reqlife run URL ...`; a subcommand typed
//! wrong gets the one meant; oha's, hey's, wrk's, k6's and vegeta's flags (`-q N`, `-z`, `-s`,
//! `--disable-keepalive`, `--no-tui`, `--vus`, `--iterations`, `-body`, `-workers`) get one line
//! naming reqlife's way, and so do vegeta's `attack` subcommand, Go's one-dash long flags
//! (vegeta's `-rate=50`: here `--rate 50`) and a script given as the URL (k6's `run
//! script.js`); a negative value gets a sentence instead of clap's "use '-- -5'".

use super::Failure;
use clap::CommandFactory;
use std::ffi::OsString;

/// The subcommands (clap's own list) and what clap answers on its own, as the first argument.
fn first_words() -> Vec<String> {
    let cli = crate::cli::Cli::command();
    cli.get_subcommands()
        .map(|c| c.get_name().to_string())
        .chain(["help", "-h", "--help", "-V", "--version"].map(String::from))
        .collect()
}

/// Another tool's flag (without its value), what it is there, and reqlife's way (`{v}`: the
/// value given, if the flag takes one).
struct Habit {
    flag: &'static str,
    takes_value: bool,
    answer: &'static str,
}

const HABITS: &[Habit] = &[
    Habit {
        flag: "-z",
        takes_value: true,
        answer: "-z is oha's duration: here it is -d (e.g. -d {v})",
    },
    Habit {
        flag: "-s",
        takes_value: true,
        answer: "-s is wrk's Lua script: reqlife has no scripting; for a method and a body use -m POST --body TEXT (or --body-file FILE), for varied requests --targets FILE (vegeta's list) or --scenario FILE (TOML, weights and templates)",
    },
    Habit {
        flag: "--script",
        takes_value: true,
        answer: "--script is wrk's Lua script: reqlife has no scripting; for a method and a body use -m POST --body TEXT (or --body-file FILE), for varied requests --targets FILE (vegeta's list) or --scenario FILE (TOML, weights and templates)",
    },
    Habit {
        flag: "--disable-keepalive",
        takes_value: false,
        answer: "--disable-keepalive is oha's: here it is --no-keepalive (a new connection for every request)",
    },
    Habit {
        flag: "--no-tui",
        takes_value: false,
        answer: "--no-tui is oha's: reqlife shows no live view unless --live is given; drop it (--quiet hides the progress bar too)",
    },
    Habit {
        flag: "--vus",
        takes_value: true,
        answer: "--vus is k6's virtual users: here a closed loop of -c {v} connections, each sending its next request when the last one ended",
    },
    Habit {
        flag: "-u",
        takes_value: true,
        answer: "-u is k6's virtual users: here a closed loop of -c {v} connections, each sending its next request when the last one ended",
    },
    Habit {
        flag: "--iterations",
        takes_value: true,
        answer: "--iterations is k6's: here it is -n {v} (requests in all, over every connection)",
    },
    // vegeta's flags that reqlife spells otherwise (the others take two dashes: `go_style`).
    Habit {
        flag: "-body",
        takes_value: true,
        answer: "-body is vegeta's body file: here it is --body-file {v} (--body TEXT sends the text itself)",
    },
    Habit {
        flag: "-workers",
        takes_value: true,
        answer: "-workers is vegeta's: here the load runs on -c {v} connections (with -R, an open loop over them)",
    },
    Habit {
        flag: "-max-workers",
        takes_value: true,
        answer: "-max-workers is vegeta's: here the load runs on -c {v} connections (with -R, an open loop over them)",
    },
    Habit {
        flag: "-keepalive",
        takes_value: false,
        answer: "-keepalive is vegeta's: here connections are kept open unless --no-keepalive is given (vegeta's -keepalive=false)",
    },
    Habit {
        flag: "-h2c",
        takes_value: false,
        answer: "-h2c is vegeta's: here it is --http2 with an http:// URL (h2c with prior knowledge)",
    },
    Habit {
        flag: "-format",
        takes_value: true,
        answer: "-format is vegeta's: --targets FILE reads vegeta's http format (METHOD URL lines), the only one here; drop -format",
    },
];

/// vegeta's `attack` subcommand, as the first word.
const ATTACK: &str = "attack is vegeta's subcommand: here it is run, and the report follows it \
(vegeta attack -rate=50/1s -duration=2s -targets=FILE is reqlife run -R 50/1s -d 2s --targets FILE; \
- reads the list from standard input)";

/// The line to parse, or the one-line answer to a habit of another tool.
pub(super) fn habits(mut args: Vec<OsString>) -> Result<Vec<OsString>, Failure> {
    let is_url = |a: &OsString| {
        let a = a.to_string_lossy();
        a.starts_with("http://") || a.starts_with("https://")
    };
    if let Some(first) = args.get(1) {
        let first = first.to_string_lossy().into_owned();
        if first == "attack" {
            return Err(Failure::Usage(ATTACK.into()));
        }
        let words = first_words();
        if !words.contains(&first) {
            let bare = !first.starts_with('-') && !is_url(&args[1]);
            if let Some(meant) = meant_subcommand(&first, &words).filter(|_| bare) {
                return Err(Failure::Usage(format!(
                    "no subcommand '{first}': did you mean '{meant}'? (reqlife {meant} …; reqlife --help lists them)"
                )));
            }
            if args[1..].iter().any(is_url) {
                args.insert(1, "run".into());
            }
        }
    }
    let text: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut is_value = false;
    for (i, a) in text.iter().enumerate().skip(1) {
        if a == "--" {
            break;
        }
        // The value of a flag of reqlife's (`--body -s`) is no flag.
        if std::mem::take(&mut is_value) {
            continue;
        }
        is_value = a.starts_with('-')
            && !a.contains('=')
            && find_arg(&text, a).is_some_and(|arg| {
                arg.get_action().takes_values() && (a.starts_with("--") || a.chars().count() == 2)
            });
        let next = text.get(i + 1).map(String::as_str);
        if let Some(rate) = oha_rate(a, next) {
            return Err(Failure::Usage(format!(
                "-q is --quiet here: for a rate of {rate} req/s (oha's and hey's -q), use -R {rate}"
            )));
        }
        // A script where `run` (or `knee`) takes its URL, or as the first word.
        let url_place = i == 1 || matches!(text[1].as_str(), "run" | "knee");
        let line = other_tools_flag(&text, a, next)
            .or_else(|| script(a).filter(|_| url_place))
            .or_else(|| negative_value(&text, i));
        if let Some(line) = line {
            return Err(Failure::Usage(line));
        }
    }
    Ok(args)
}

/// `-q N` or `-qN` with a rate: oha's and hey's rate flag (here -q is --quiet).
fn oha_rate(a: &str, next: Option<&str>) -> Option<String> {
    let rate = match a.strip_prefix("-q") {
        Some("") => next.map(str::to_string),
        Some(v) if v.starts_with(|c: char| c.is_ascii_digit()) => Some(v.to_string()),
        _ => None,
    };
    rate.filter(|r| crate::util::units::parse_rate(r).is_ok())
}

/// The answer to `a` (with `next` after it) when it is another tool's flag reqlife does not
/// have: `-z 5s`, `-z5s`, `--vus=10`, `--no-tui`, `-body=b.json`, `-rate=50`, ….
fn other_tools_flag(text: &[String], a: &str, next: Option<&str>) -> Option<String> {
    let answer = |h: &Habit, value: &str| h.answer.replace("{v}", value);
    let habits = || HABITS.iter().filter(|h| !defined(text, h.flag));
    // The flag alone, or with `=value`.
    let whole = habits().find_map(|h| {
        let value = match a.strip_prefix(h.flag)? {
            "" if h.takes_value => next.unwrap_or("VALUE"),
            "" => "",
            rest => rest.strip_prefix('=')?,
        };
        Some(answer(h, value))
    });
    // A short flag with its value attached (`-z5s`), unless the word is one of reqlife's long
    // flags with one dash (`-seqid-offset=12`: Go's style, below).
    whole.or_else(|| go_style(text, a, next)).or_else(|| {
        habits().find_map(|h| {
            let rest = a.strip_prefix(h.flag)?;
            let attached = h.flag.len() == 2 && h.takes_value && !rest.is_empty();
            attached.then(|| answer(h, rest))
        })
    })
}

/// `-rate=50`, `-duration 2s`, `-insecure`: one of the subcommand's long flags written with one
/// dash, as Go's flag package (vegeta's) takes them; clap would read `-r -a -t -e` or `-d
/// uration=2s` (or, for `-output=x`, write the record to the file `utput=x`).
fn go_style(text: &[String], a: &str, next: Option<&str>) -> Option<String> {
    let word = a.strip_prefix('-').filter(|w| !w.starts_with('-'))?;
    let (name, value) = match word.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (word, None),
    };
    if name.chars().count() < 2 {
        return None;
    }
    let cmd = crate::cli::Cli::command();
    let sub = cmd.find_subcommand(text.get(1)?)?;
    let arg = sub
        .get_arguments()
        .find(|arg| arg.get_long() == Some(name))?;
    let value = match arg.get_action().takes_values() {
        true => format!(" {}", value.or(next).unwrap_or("VALUE")),
        false if value == Some("false") => {
            return Some(format!(
                "-{name}=false is Go's style (vegeta's): here --{name} is off unless given; drop it"
            ))
        }
        false => String::new(),
    };
    let short = arg
        .get_short()
        .map(|c| format!(" (or -{c}{value})"))
        .unwrap_or_default();
    Some(format!(
        "-{name} is Go's style (vegeta's one dash): reqlife's long flags take two: --{name}{value}{short}"
    ))
}

/// A script given where reqlife takes a URL (k6's `run script.js`, wrk's Lua): reqlife's
/// requests come from flags, a scenario file or a target list.
fn script(a: &str) -> Option<String> {
    if a.starts_with('-') || a.contains("://") {
        return None;
    }
    let ext = a.rsplit_once('.')?.1.to_ascii_lowercase();
    let whose = match ext.as_str() {
        "js" | "mjs" | "cjs" | "ts" => "k6's JavaScript",
        "lua" => "wrk's Lua",
        _ => return None,
    };
    // `example.com/app.js` may be a URL without its scheme (said so later), unless it is a file.
    if a.contains(['/', ':']) && !std::path::Path::new(a).is_file() {
        return None;
    }
    Some(format!(
        "'{a}' is a script ({whose}): reqlife runs no scripts; its requests come from a scenario \
         file, --scenario FILE with a URL (TOML: requests, templates, weights, phases; see \
         examples/kv.toml), or from a target list, --targets FILE (vegeta's)"
    ))
}

/// The argument of the subcommand (`text[1]`) that the flag `flag` (`-x`, `--long`, or with
/// `=value` or an attached value) names, if it has one.
fn find_arg(text: &[String], flag: &str) -> Option<clap::Arg> {
    let cmd = crate::cli::Cli::command();
    let sub = cmd.find_subcommand(text.get(1)?)?;
    let found = sub
        .get_arguments()
        .find(|arg| match flag.strip_prefix("--") {
            Some(long) => arg.get_long() == long.split('=').next(),
            None => {
                flag[1..].chars().next().is_some() && arg.get_short() == flag[1..].chars().next()
            }
        });
    found.cloned()
}

/// Whether the subcommand has the flag `a` itself (then it is not another tool's habit): a
/// long flag, or a short one; reqlife has no long flag with one dash (`-body`).
fn defined(text: &[String], a: &str) -> bool {
    let one_dash_long = !a.starts_with("--") && a.chars().count() > 2;
    !one_dash_long && find_arg(text, a).is_some()
}

/// `-d -5s`: a flag of the subcommand that takes a value, given one that starts with `-` and
/// a digit, which clap would take for a flag (its tip, "use '-- -5'", is wrong here). Flags
/// that read negative numbers themselves (`-R`: its own sentence) are left to them.
fn negative_value(text: &[String], i: usize) -> Option<String> {
    let value = text.get(i + 1)?;
    let negative = value.starts_with('-') && value[1..].starts_with(|c: char| c.is_ascii_digit());
    let flag = text[i].as_str();
    if !negative || !flag.starts_with('-') {
        return None;
    }
    if !flag.starts_with("--") && flag.chars().count() != 2 {
        return None;
    }
    let arg = find_arg(text, flag)?;
    let takes_value = arg.get_action().takes_values();
    if !takes_value || arg.is_allow_negative_numbers_set() || arg.is_allow_hyphen_values_set() {
        return None;
    }
    let positive = &value[1..];
    Some(format!(
        "{flag} takes a positive value, not {value} (e.g. {flag} {positive})"
    ))
}

/// The subcommand `word` was probably meant to be: one within two edits (a swap counts as
/// one) of a subcommand's name.
fn meant_subcommand<'a>(word: &str, words: &'a [String]) -> Option<&'a str> {
    words
        .iter()
        .filter(|w| !w.starts_with('-'))
        .map(|w| (edits(word, w), w.as_str()))
        .filter(|(d, _)| *d <= 2.min(word.len().saturating_sub(1)).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, w)| w)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
/// neighbours.
fn edits(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_subcommands_are_found() {
        let words = first_words();
        let meant = |w| meant_subcommand(w, &words);
        assert_eq!(meant("rnu"), Some("run"));
        assert_eq!(meant("serv"), Some("serve"));
        assert_eq!(meant("reprot"), Some("report"));
        assert_eq!(meant("prob"), Some("probe"));
        assert_eq!(meant("example.com"), None);
        assert_eq!(meant("x"), None);
    }

    #[test]
    fn every_subcommand_is_a_first_word_and_keeps_its_url() {
        // clap's list: a subcommand added later is known here without a second list.
        let words = first_words();
        for name in [
            "run",
            "serve",
            "report",
            "stats",
            "calibrate",
            "merge",
            "knee",
            "compare",
            "probe",
        ] {
            assert!(words.iter().any(|w| w == name), "{name}: {words:?}");
        }
        // `probe` with a URL among its arguments stays `probe` (the hand-kept list lacked it,
        // and such a line became `run probe ...`).
        let line: Vec<OsString> = ["reqlife", "probe", "http://127.0.0.1:1/"]
            .into_iter()
            .map(OsString::from)
            .collect();
        assert_eq!(habits(line.clone()).ok(), Some(line));
    }
}
