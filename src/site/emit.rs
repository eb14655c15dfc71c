//! The layered plan written back as YAML: one value per line, so that every line of the text
//! the plan's checks read is known to come from one layer's line, and a diagnostic about it
//! can be told at the place its layer wrote it.

use std::fmt::Write;

use super::tree::{At, Item, Source, Tree};
use crate::plan::Scalar;

/// What one emitted line holds: a key (when it has one) and the value after it, whose text
/// starts at `value_col`.
#[derive(Debug, Clone, Copy)]
pub struct Line {
    pub key: Option<At>,
    pub value: At,
    pub value_col: u64,
    /// Its indentation: the lines after it indented deeper are its value's.
    pub indent: usize,
}

/// The text, and each of its lines' origins (line `n` is `lines[n - 1]`).
pub struct Emitted {
    pub text: String,
    pub lines: Vec<Line>,
}

impl Emitted {
    /// Where the layered text's `line:col` was written.
    pub fn origin(&self, line: u64, col: u64) -> Option<At> {
        let l = self
            .lines
            .get(usize::try_from(line).ok()?.checked_sub(1)?)?;
        Some(match l.key {
            Some(k) if col < l.value_col => k,
            _ => l.value,
        })
    }

    /// Whether everything the entry at `line` holds — its key, its value and every line nested
    /// under it — was written by `source`'s layer: what that layer vouches for. A key the site
    /// wrote whose value a `--set` replaced is not the site's.
    pub fn all_from(&self, line: u64, source: Source) -> bool {
        let Some(i) = usize::try_from(line).ok().and_then(|l| l.checked_sub(1)) else {
            return false;
        };
        let Some(first) = self.lines.get(i) else {
            return false;
        };
        let from = |l: &Line| l.value.source == source && l.key.is_none_or(|k| k.source == source);
        from(first)
            && self.lines[i + 1..]
                .iter()
                .take_while(|l| l.indent > first.indent)
                .all(from)
    }
}

pub fn emit(root: &Item, header: &str) -> Emitted {
    let mut e = Emitted {
        text: String::new(),
        lines: Vec::new(),
    };
    for line in header.lines() {
        e.text.push_str(line);
        e.text.push('\n');
        e.lines.push(Line {
            key: None,
            value: root.at,
            value_col: 1,
            indent: 0,
        });
    }
    match &root.value {
        Tree::Map(entries) => {
            for (k, v) in entries {
                entry(&mut e, 0, Some((quoted(&k.name), k.at)), v);
            }
        }
        _ => entry(&mut e, 0, None, root),
    }
    e
}

/// One value at `indent`: `key: value` (or `- value` in a list, `key` `None`).
fn entry(e: &mut Emitted, indent: usize, key: Option<(String, At)>, v: &Item) {
    let lead = match &key {
        Some((k, _)) => format!("{:indent$}{k}:", ""),
        None => format!("{:indent$}-", ""),
    };
    let value_col = lead.chars().count() as u64 + 2;
    let inline = match &v.value {
        Tree::Scalar(s) => Some(v.written.clone().unwrap_or_else(|| scalar(s))),
        Tree::Seq(items) if items.is_empty() => Some("[]".into()),
        Tree::Map(entries) if entries.is_empty() => Some("{}".into()),
        _ => None,
    };
    let _ = match &inline {
        Some(text) => writeln!(e.text, "{lead} {text}"),
        None => writeln!(e.text, "{lead}"),
    };
    e.lines.push(Line {
        key: key.as_ref().map(|(_, at)| *at),
        value: v.at,
        value_col,
        indent,
    });
    if inline.is_some() {
        return;
    }
    match &v.value {
        Tree::Seq(items) => items.iter().for_each(|i| entry(e, indent + 2, None, i)),
        Tree::Map(entries) => entries
            .iter()
            .for_each(|(k, i)| entry(e, indent + 2, Some((quoted(&k.name), k.at)), i)),
        Tree::Scalar(_) => {}
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

/// A scalar as YAML reads it back with the same type: strings double-quoted (JSON's escapes
/// are YAML's), floats always with a point or an exponent.
pub fn scalar(s: &Scalar) -> String {
    match s {
        Scalar::Null => "null".into(),
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) if f.is_nan() => ".nan".into(),
        Scalar::Float(f) if f.is_infinite() => if *f > 0.0 { ".inf" } else { "-.inf" }.into(),
        Scalar::Float(f) => format!("{f:?}"),
        Scalar::Str(t) => quoted(t),
    }
}
