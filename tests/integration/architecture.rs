//! The house rules that the compiler does not check, checked on the source text: every import of
//! the library runs down the layer order of docs/ARCHITECTURE.md ("The layers"), and only the
//! CLI's UI module prints. Plain text scanning, with comments and literals blanked first, is
//! enough: a path written out (`crate::x`, `super::super::x`) is the only way one module names
//! another. Test code may use any layer (a test builds its fixtures with later stages), so
//! `#[cfg(test)]` items and `tests.rs`/`*_tests.rs` files are left out of both checks.

use std::path::{Path, PathBuf};

/// The library's layers, lowest first (docs/ARCHITECTURE.md, "The layers"). A module may use the
/// modules of lower layers only; the modules of one layer do not use each other. The CLI (the
/// binary's `src/main.rs`, `src/cli/`, `src/bin/`) is the top and may use every layer.
const LAYERS: &[(&str, &[&str])] = &[
    ("time", &["deadline"]),
    (
        "foundations",
        &[
            "units",
            "input",
            "secrets",
            "stdout",
            "exit",
            "collective",
            "split",
            "stats",
            "child",
            "shell",
            "host",
            "world",
            "notify",
            "digest",
        ],
    ),
    ("node evidence", &["probe"]),
    ("NCCL's evidence", &["ras"]),
    ("output", &["output"]),
    ("node sets", &["nodeset"]),
    ("plan", &["plan"]),
    ("site", &["site"]),
    ("results", &["results"]),
    ("expand", &["expand"]),
    (
        "what grading and launching read",
        &["launch", "ingest", "profile", "baseline", "history"],
    ),
    ("grade", &["grade"]),
    (
        "what the stages make",
        &["report", "render", "rendezvous", "metrics"],
    ),
    ("runner", &["runner"]),
    ("session", &["session"]),
    ("acceptance", &["acceptance"]),
];

/// Where printing is the job: the CLI's UI module, and `baton::stdout`, the guarded writer it
/// prints through.
fn may_print(file: &str) -> bool {
    file.starts_with("src/cli/ui/") || file == "src/stdout.rs"
}

#[test]
fn imports_run_down_the_layer_order() {
    let mut bad = Vec::new();
    for (file, text) in library_sources() {
        bad.extend(layer_violations(&file, &text));
    }
    assert!(
        bad.is_empty(),
        "imports that run up the layer order (docs/ARCHITECTURE.md, \"The layers\"):\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_library_module_has_a_layer() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let missing: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        missing.is_empty(),
        "modules in no layer: {missing:?}; add each to LAYERS here and to docs/ARCHITECTURE.md"
    );
}

#[test]
fn only_the_ui_module_prints() {
    let mut bad = Vec::new();
    for (file, text) in all_sources() {
        bad.extend(print_violations(&file, &text));
    }
    assert!(
        bad.is_empty(),
        "prints outside the CLI's UI module (src/cli/ui): report through it instead:\n{}",
        bad.join("\n")
    );
}

/// Every way a command fails is one type, `CliError` (src/cli/error.rs), said once by `main`:
/// no command returns `anyhow::Result<Exit>`, nor `Result<_, Exit>` after printing.
#[test]
fn the_cli_fails_one_way() {
    let mut bad = Vec::new();
    for (file, text) in all_sources() {
        if file.starts_with("src/cli/") || file.starts_with("src/bin/") {
            bad.extend(convention_violations(&file, &text));
        }
    }
    assert!(
        bad.is_empty(),
        "error conventions other than `Result<Exit, CliError>` in the CLI:\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_planted_second_convention_fails() {
    for p in [
        "fn f() -> anyhow::Result<Exit> {}",
        "fn f() -> Result<Vec<u8>, Exit> {}",
        "fn f() -> anyhow::Result< Exit > {}",
    ] {
        let v = convention_violations("src/cli/x.rs", &format!("\n{p}\n"));
        assert_eq!(v.len(), 1, "{p}: {v:?}");
        assert!(v[0].starts_with("src/cli/x.rs:2"), "{v:?}");
    }
    let fine = "fn f() -> Result<Exit, CliError> {}\n// -> anyhow::Result<Exit>\n";
    assert!(convention_violations("src/cli/x.rs", fine).is_empty());
}

/// Each line of `text` (the file `file`) with a return type of another error convention.
fn convention_violations(file: &str, text: &str) -> Vec<String> {
    let code = without_tests(&code_only(text));
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let tight: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if tight.contains("Result<Exit>") || tight.contains(",Exit>") {
            out.push(format!("{file}:{}: {}", n + 1, line.trim()));
        }
    }
    out
}

#[test]
fn a_planted_upward_import_fails() {
    let v = layer_violations(
        "src/plan/check/relative.rs",
        "use crate::plan::model::*;\nfn f() { let j = crate::expand::expand(p); }\n",
    );
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("src/plan/check/relative.rs:2"), "{v:?}");
    assert!(v[0].contains("crate::expand"), "{v:?}");
    let grouped = layer_violations("src/results/io.rs", "use crate::{input, grade::Grade};\n");
    assert_eq!(grouped.len(), 1, "{grouped:?}");
    let climbing = layer_violations("src/nodeset/export.rs", "use super::super::render::x;\n");
    assert_eq!(climbing.len(), 1, "{climbing:?}");
    let sideways = layer_violations("src/report/x.rs", "use crate::render::quote;\n");
    assert_eq!(
        sideways.len(),
        1,
        "one layer does not use itself: {sideways:?}"
    );
    // Down is fine; so are comments, strings and test code.
    let fine = "use crate::units::Size;\n// crate::runner::x\nconst S: &str = \"crate::grade\";\n\
                #[cfg(test)]\nmod tests {\n    use crate::runner::worker;\n}\n";
    assert!(layer_violations("src/plan/x.rs", fine).is_empty());
    assert!(layer_violations("src/plan/tests.rs", "use crate::runner::x;").is_empty());
}

#[test]
fn a_planted_print_fails() {
    for p in [
        "println!(\"x\")",
        "print!(\"x\")",
        "eprintln!(\"x\")",
        "eprint!(\"x\")",
        "std::io::stdout().flush()",
        "io::stderr().write_all(b)",
        "baton::stdout::print(&text)?",
        "baton::stdout::write_with(|o| o.flush())",
    ] {
        let v = print_violations("src/runner/x.rs", &format!("fn f() {{\n    {p};\n}}\n"));
        assert_eq!(v.len(), 1, "{p}: {v:?}");
        assert!(v[0].starts_with("src/runner/x.rs:2"), "{v:?}");
    }
    let fine = "// println!(\"x\")\nfn f() { let s = \"eprintln!\"; writeln!(w, \"x\"); }\n\
                #[cfg(test)]\nmod tests {\n    fn g() { println!(\"x\"); }\n}\n";
    assert!(print_violations("src/runner/x.rs", fine).is_empty());
    assert!(print_violations("src/cli/ui/bar.rs", "fn f() { eprint!(\"x\"); }").is_empty());
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `src/`, as (`src/…` path, text).
fn all_sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    walk(&root().join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(root()).ok()?.to_str()?.to_string();
            let text = std::fs::read_to_string(&p).ok()?;
            Some((rel, text))
        })
        .collect()
}

/// The library's files: not the binary's `main.rs`, `cli/` and `bin/`.
fn library_sources() -> Vec<(String, String)> {
    all_sources()
        .into_iter()
        .filter(|(f, _)| {
            !(f == "src/main.rs" || f.starts_with("src/cli/") || f.starts_with("src/bin/"))
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "tests.rs" || name.ends_with("_tests.rs")
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

/// The module path of a file: `src/plan/check/relative.rs` → `plan::check::relative`,
/// `src/plan/mod.rs` → `plan`.
fn module_path(file: &str) -> Vec<String> {
    let rel = file.trim_start_matches("src/").trim_end_matches(".rs");
    let mut parts: Vec<String> = rel.split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Each import of `text` (the file `file`) that runs up the layer order, as `file:line: why`.
fn layer_violations(file: &str, text: &str) -> Vec<String> {
    if is_test_file(file) {
        return Vec::new();
    }
    let path = module_path(file);
    let Some(own) = path.first().and_then(|m| layer_of(m)) else {
        return Vec::new();
    };
    let code = without_tests(&code_only(text));
    let mut out = Vec::new();
    for (at, target) in crate_references(&code, path.len()) {
        if target == path[0] {
            continue;
        }
        let Some(theirs) = layer_of(&target) else {
            continue;
        };
        if theirs >= own {
            let line = code[..at].matches('\n').count() + 1;
            out.push(format!(
                "{file}:{line}: `{}` (layer {:?}) uses `crate::{target}` (layer {:?}), which is not below it",
                path[0], LAYERS[own].0, LAYERS[theirs].0
            ));
        }
    }
    out
}

/// The top-level module each crate path of `code` names, with its offset: `crate::x`, every
/// member of `crate::{x, y::z}`, and `super::` chains that climb `depth` levels to the root.
fn crate_references(code: &str, depth: usize) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < code.len() {
        let starts_word = i == 0 || !is_ident(bytes[i - 1]);
        let rest = &code[i..];
        if starts_word && let Some(after) = rest.strip_prefix("crate::") {
            let at = i + "crate::".len();
            if after.starts_with('{') {
                out.extend(group_members(after).into_iter().map(|m| (i, m)));
            } else {
                out.push((i, ident(&code[at..]).to_string()));
            }
            i = at;
            continue;
        }
        if starts_word && rest.starts_with("super::") {
            let mut k = 0;
            let mut j = i;
            while code[j..].starts_with("super::") {
                k += 1;
                j += "super::".len();
            }
            if k >= depth {
                if code[j..].starts_with('{') {
                    out.extend(group_members(&code[j..]).into_iter().map(|m| (i, m)));
                } else {
                    out.push((i, ident(&code[j..]).to_string()));
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// The first segment of each member of a `{a::b, c, d::{e}}` group.
fn group_members(group: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut expect = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => {
                depth += 1;
                expect = depth == 1;
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_alphanumeric() || c == '_') => {
                out.push(ident(&group[i..]).to_string());
                expect = false;
            }
            _ => {}
        }
    }
    out.retain(|m| m != "self");
    out
}

fn ident(s: &str) -> &str {
    let end = s.bytes().position(|b| !is_ident(b)).unwrap_or(s.len());
    &s[..end]
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Each print of `text` (the file `file`) outside the places that may print.
fn print_violations(file: &str, text: &str) -> Vec<String> {
    if may_print(file) || is_test_file(file) {
        return Vec::new();
    }
    let code = without_tests(&code_only(text));
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let offset = line.as_ptr() as usize - code.as_ptr() as usize;
        let hit = ["print!", "println!", "eprint!", "eprintln!"]
            .iter()
            .any(|m| {
                line.match_indices(m)
                    .any(|(i, _)| offset + i == 0 || !is_ident(bytes[offset + i - 1]))
            })
            || [
                "io::stdout()",
                "io::stderr()",
                "stdout::print(",
                "stdout::write_with(",
            ]
            .iter()
            .any(|m| line.contains(m));
        if hit {
            out.push(format!("{file}:{}: {}", n + 1, line.trim()));
        }
    }
    out
}

/// `code` with every `#[cfg(test)]` item blanked: a `mod tests { … }`, a `fn`, a `use …;`.
fn without_tests(code: &str) -> String {
    let mut out: Vec<u8> = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let start = from + found;
        let mut i = start;
        let mut depth = 0usize;
        let end = loop {
            match out.get(i) {
                None => break out.len(),
                Some(b'{') => depth += 1,
                // A `}` before any `{`: the attribute was on a field or an arm; it ends there.
                Some(b'}') if depth == 0 => break i,
                Some(b'}') => {
                    depth -= 1;
                    if depth == 0 {
                        break i + 1;
                    }
                }
                Some(b';' | b',') if depth == 0 => break i + 1,
                _ => {}
            }
            i += 1;
        };
        for b in &mut out[start..end] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
        from = end;
    }
    String::from_utf8(out).expect("only ASCII bytes were blanked")
}

/// `text` with comments and string and character literals blanked (newlines kept, so lines
/// still count), leaving only code.
fn code_only(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(s.len());
    let mut i = 0;
    let blank = |out: &mut Vec<char>, c: char| out.push(if c == '\n' { '\n' } else { ' ' });
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < s.len() && s[i] != '\n' {
                blank(&mut out, s[i]);
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            loop {
                match (s.get(i), s.get(i + 1)) {
                    (None, _) => break,
                    (Some('/'), Some('*')) => depth += 1,
                    (Some('*'), Some('/')) => depth -= 1,
                    _ => {}
                }
                if depth == 0 {
                    blank(&mut out, s[i]);
                    blank(&mut out, s[i + 1]);
                    i += 2;
                    break;
                }
                blank(&mut out, s[i]);
                i += 1;
            }
        } else if let Some(hashes) = raw_string_start(&s, i) {
            let open = hashes + 2 + usize::from(s[i] == 'b');
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let mut j = i + open;
            while j < s.len() && !s[j..].starts_with(&close) {
                j += 1;
            }
            let end = (j + close.len()).min(s.len());
            out.extend_from_slice(&s[i..i + open]);
            for &c in &s[i + open..end] {
                blank(&mut out, c);
            }
            i = end;
        } else if c == '"' || (c == '\'' && is_char_literal(&s, i)) {
            i = blank_quoted(&s, i, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.into_iter().collect()
}

/// Blanks the string or character literal opening at `i` (its quotes kept), escapes included;
/// returns where it ends.
fn blank_quoted(s: &[char], i: usize, out: &mut Vec<char>) -> usize {
    let quote = s[i];
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    out.push(quote);
    let mut i = i + 1;
    while i < s.len() && s[i] != quote {
        if s[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if i < s.len() {
            out.push(blank(s[i]));
            i += 1;
        }
    }
    out.push(quote);
    i + 1
}

/// The number of `#` of a raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `i`.
fn raw_string_start(s: &[char], i: usize) -> Option<usize> {
    if i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if s.get(j) == Some(&'b') {
        j += 1;
    }
    if s.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = s[j..].iter().take_while(|c| **c == '#').count();
    (s.get(j + hashes) == Some(&'"')).then_some(hashes)
}

/// Whether the `'` at `i` opens a character literal (`'x'`, `'\n'`, `'\u{1F600}'`) rather than
/// a lifetime or label (`'a`, `'static`).
fn is_char_literal(s: &[char], i: usize) -> bool {
    matches!(
        (s.get(i + 1), s.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}
