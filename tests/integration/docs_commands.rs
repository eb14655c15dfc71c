//! Every `baton …` command shown in a shell block of README.md or docs/*.md parses on today's
//! command line: the real binary is run with the command's own arguments and `--help` after
//! them, so clap checks the subcommand, every flag and every choice of value before it prints
//! help and exits 0. A renamed flag or subcommand fails here, not in a user's terminal.

use crate::common;

use std::path::{Path, PathBuf};

use common::*;

/// The markdown files whose commands are checked.
fn documents() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// Lines of fenced blocks that hold shell (no language, `sh`, `bash`, `console`, `shell`),
/// with `\` continuations joined, each with its line number.
fn shell_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_shell = None;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            in_shell = match in_shell {
                Some(_) => None,
                None => Some(matches!(
                    lang.trim(),
                    "" | "sh" | "bash" | "console" | "shell"
                )),
            };
            continue;
        }
        if in_shell != Some(true) {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((i + 1, String::new()));
        match t.strip_suffix('\\') {
            Some(head) => {
                joined.push_str(head);
                joined.push(' ');
                pending = Some((start, joined));
            }
            None => {
                joined.push_str(t);
                out.push((start, joined));
            }
        }
    }
    out
}

/// A word of a shell line, and whether any of it was quoted.
struct Word {
    text: String,
    quoted: bool,
}

/// Shell words, up to an unquoted `#` comment.
fn words(line: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut cur: Option<Word> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    cur.get_or_insert_with(empty).text.push(n);
                }
            }
            (Some(_), c) => cur.get_or_insert_with(empty).text.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                cur.get_or_insert_with(empty).quoted = true;
            }
            (None, c) if c.is_whitespace() => out.extend(cur.take()),
            (None, '#') if cur.is_none() => break,
            (None, c) => cur.get_or_insert_with(empty).text.push(c),
        }
    }
    out.extend(cur);
    out
}

fn empty() -> Word {
    Word {
        text: String::new(),
        quoted: false,
    }
}

/// The `baton` commands of one shell line: split at unquoted `&&`, `||`, `|`, `;`, with
/// redirections and their targets dropped, then their arguments as the docs write them
/// (`[--junit FILE]` → `--junit FILE`, `table|json` → `table`, `RESULTS...` → `RESULTS`).
fn baton_commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = vec![Vec::new()];
    let mut skip_next = false;
    for w in words(line) {
        if skip_next {
            skip_next = false;
            continue;
        }
        if !w.quoted {
            match w.text.as_str() {
                "&&" | "||" | "|" | ";" | "&" => {
                    commands.push(Vec::new());
                    continue;
                }
                ">" | ">>" | "2>" | "<" | "2>&1" => {
                    skip_next = w.text != "2>&1";
                    continue;
                }
                t if t.starts_with('>') || t.starts_with("2>") => continue,
                _ => {}
            }
        }
        let mut t = w.text.clone();
        if !w.quoted {
            t = t.trim_matches(|c| c == '[' || c == ']').to_string();
            if let Some((first, _)) = t.split_once('|') {
                t = first.to_string();
            }
            t = t.trim_end_matches("...").to_string();
            if t.is_empty() {
                continue;
            }
        }
        commands.last_mut().unwrap().push(t);
    }
    // Output shown in untagged blocks starts with `baton` too (`baton target/release/baton vs
    // mpi4py …`): a command's next word is a subcommand or an option.
    let command_word =
        |w: &String| w.starts_with('-') || w.chars().all(|c| c.is_ascii_lowercase() || c == '-');
    commands
        .into_iter()
        .filter(|c| c.first().is_some_and(|w| w == "baton"))
        .filter(|c| c.get(1).is_none_or(command_word))
        .map(|mut c| {
            c.remove(0);
            placeholders(c)
        })
        .collect()
}

/// An all-caps word after an option is a placeholder for its value (`--env-set K`, `-o DIR`):
/// `1` stands in, which every option's value type accepts.
fn placeholders(args: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in args {
        let after_option = out.last().is_some_and(|p| p.starts_with('-'));
        let caps = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_' || c == '-')
            && a.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        out.push(if after_option && caps { "1".into() } else { a });
    }
    out
}

#[test]
fn every_command_shown_in_the_docs_parses() {
    let mut checked = 0;
    let mut broken = Vec::new();
    for doc in documents() {
        let text = read(&doc);
        for (line_no, line) in shell_lines(&text) {
            for args in baton_commands(&line) {
                let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
                a.push("--help");
                let o = baton(&a);
                checked += 1;
                if code(&o) != 0 {
                    broken.push(format!(
                        "{}:{line_no}: baton {}\n{}",
                        doc.file_name().unwrap().to_string_lossy(),
                        args.join(" "),
                        stderr(&o).lines().take(3).collect::<Vec<_>>().join("\n")
                    ));
                }
            }
        }
    }
    eprintln!("{checked} commands checked");
    assert!(
        checked >= 30,
        "only {checked} commands found: is the extraction broken?"
    );
    assert!(broken.is_empty(), "{}", broken.join("\n\n"));
}

#[test]
fn the_extraction_reads_commands_as_a_shell_would() {
    let cmds = baton_commands(
        "baton ingest a.log -o nt.json && baton grade p.yaml nt.json --format json > v.json # c",
    );
    assert_eq!(
        cmds,
        [
            vec!["ingest", "a.log", "-o", "nt.json"],
            vec!["grade", "p.yaml", "nt.json", "--format", "json"]
        ]
    );
    assert_eq!(
        baton_commands("baton expand PLAN [--format table|json] --env-set K \"a b\""),
        [vec![
            "expand",
            "PLAN",
            "--format",
            "table",
            "--env-set",
            "1",
            "a b"
        ]]
    );
    assert!(baton_commands("mpirun -np 2 baton-mpi run p.yaml").is_empty());
    // A flag that does not exist makes the binary fail before it prints help.
    let o = baton(&["grade", "p.yaml", "--no-such-flag", "--help"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
    let o = baton(&["grade", "p.yaml", "--format", "yaml", "--help"]);
    assert_eq!(code(&o), 2, "{}", show(&o));
}
